//! `arbitrary!(f, k = 3, dims = [N in 1..=64, C = 10])`: parsed and checked here, expanded to
//! one call of the runtime's `__private::arbitrary::function` (or `method`, with a receiver),
//! which asks `f`'s own guard for its contract. Nothing is emitted beside a contracted function
//! for it: the function's type says which parameters are tensors. `violations!` and
//! `exemptions!` take the same arguments and call the strategy's `violations` or `exemptions`;
//! `assert_contract!` takes them and
//! `cases = N`, and calls `assert_function` (or `assert_method`).

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, quote, quote_spanned};
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Expr, ExprPath, Ident, RangeLimits, Token};

use crate::ctxt::Ctxt;

/// `N = 10`, or `N in 1..=64` / `N in 1..64`.
struct DimSetting {
    name: Ident,
    value: DimValue,
}

enum DimValue {
    Fixed(Box<Expr>),
    Range {
        lo: Box<Expr>,
        hi: Box<Expr>,
        inclusive: bool,
    },
}

/// One argument after the function.
enum Item {
    /// `name = value`: a parameter's value.
    Given(Ident, Expr),
    /// `dims = [...]`.
    Dims(Vec<DimSetting>, Span),
    /// An expression without a name: the receiver of a method.
    Receiver(Expr),
}

struct Input {
    function: ExprPath,
    items: Vec<Item>,
}

impl Parse for DimSetting {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let name: Ident = input.parse()?;
        if input.peek(Token![=]) {
            input.parse::<Token![=]>()?;
            let value: Expr = input.parse()?;
            return Ok(Self {
                name,
                value: DimValue::Fixed(Box::new(value)),
            });
        }
        if !input.peek(Token![in]) {
            return Err(input.error(format!(
                "expected `{name} = size` or `{name} in lo..=hi` in `dims`"
            )));
        }
        input.parse::<Token![in]>()?;
        let range: Expr = input.parse()?;
        let Expr::Range(range) = range else {
            return Err(syn::Error::new(
                range.span(),
                format!("`{name} in` takes a range, e.g. `{name} in 1..=64`"),
            ));
        };
        let span = range.span();
        let (Some(lo), Some(hi)) = (range.start, range.end) else {
            return Err(syn::Error::new(
                span,
                format!("a dim's range needs both ends, e.g. `{name} in 1..=64`"),
            ));
        };
        Ok(Self {
            name,
            value: DimValue::Range {
                lo,
                hi,
                inclusive: matches!(range.limits, RangeLimits::Closed(_)),
            },
        })
    }
}

impl Parse for Item {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        if input.peek(Ident) && input.peek2(Token![=]) && !input.peek2(Token![==]) {
            let name: Ident = input.parse()?;
            input.parse::<Token![=]>()?;
            if name == "dims" {
                let content;
                let brackets = syn::bracketed!(content in input);
                let dims = Punctuated::<DimSetting, Token![,]>::parse_terminated(&content)?;
                return Ok(Item::Dims(dims.into_iter().collect(), brackets.span.join()));
            }
            return Ok(Item::Given(name, input.parse()?));
        }
        Ok(Item::Receiver(input.parse()?))
    }
}

impl Parse for Input {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        if input.is_empty() {
            return Err(input.error(
                "expected a function with a contract, e.g. `arbitrary!(loss)` or \
                 `arbitrary!(Net::forward, &net)`",
            ));
        }
        let function: ExprPath = input.parse().map_err(|error| {
            syn::Error::new(
                error.span(),
                "expected the path of a function with a contract, e.g. `loss`, `nn::loss` or \
                 `Net::forward`",
            )
        })?;
        let mut items = Vec::new();
        while !input.is_empty() {
            input.parse::<Token![,]>()?;
            if input.is_empty() {
                break;
            }
            items.push(input.parse()?);
        }
        Ok(Self { function, items })
    }
}

/// `f` as text without spaces, for messages and to find the function's own guard.
fn path_text(path: &ExprPath) -> String {
    path.to_token_stream()
        .to_string()
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect()
}

/// Which macro is expanded: they share their arguments.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Macro {
    /// `arbitrary!`: the strategy.
    Arbitrary,
    /// `violations!`: the strategy's violation cases.
    Violations,
    /// `exemptions!`: the strategy's exempt cases.
    Exemptions,
    /// `assert_contract!`: the test, with `cases = N`.
    AssertContract,
}

pub fn arbitrary(input: TokenStream) -> TokenStream {
    expand(Macro::Arbitrary, input)
}

pub fn violations(input: TokenStream) -> TokenStream {
    expand(Macro::Violations, input)
}

pub fn exemptions(input: TokenStream) -> TokenStream {
    expand(Macro::Exemptions, input)
}

pub fn assert_contract(input: TokenStream) -> TokenStream {
    expand(Macro::AssertContract, input)
}

fn expand(which: Macro, input: TokenStream) -> TokenStream {
    let input: Input = match syn::parse2(input) {
        Ok(input) => input,
        Err(error) => return fallback(error),
    };
    let errors = Ctxt::new();
    let p = quote!(::candle_contracts::__private::arbitrary);
    let settings = Ident::new("__cc_settings", Span::mixed_site());
    let name = path_text(&input.function);
    let mut calls = TokenStream::new();
    let mut receiver = None;
    let mut given: Vec<String> = Vec::new();
    let mut dims: Vec<String> = Vec::new();
    let mut dims_seen = false;
    let mut cases = None;
    for (position, item) in input.items.iter().enumerate() {
        match item {
            Item::Given(ident, value) if which == Macro::AssertContract && ident == "cases" => {
                if cases.is_some() {
                    errors.push(syn::Error::new(ident.span(), "`cases` is given twice"));
                }
                cases = Some(value);
            }
            Item::Receiver(expr) if position == 0 => receiver = Some(expr),
            Item::Receiver(expr) => errors.push(syn::Error::new(
                expr.span(),
                "after the function and its receiver, `arbitrary!` takes `name = value` and \
                 `dims = [...]`",
            )),
            Item::Given(ident, value) => {
                let text = ident.to_string();
                if given.contains(&text) {
                    errors.push(syn::Error::new(
                        ident.span(),
                        format!("`{text}` is given twice"),
                    ));
                }
                given.push(text.clone());
                let text = syn::ext::IdentExt::unraw(ident).to_string();
                calls.extend(quote_spanned!(value.span()=> .given(#text, #value)));
            }
            Item::Dims(settings, span) => {
                if dims_seen {
                    errors.push(syn::Error::new(*span, "`dims` is given twice"));
                }
                dims_seen = true;
                for setting in settings {
                    let text = setting.name.to_string();
                    if dims.contains(&text) {
                        errors.push(syn::Error::new(
                            setting.name.span(),
                            format!("`{text}` appears twice in `dims`"),
                        ));
                    }
                    dims.push(text.clone());
                    calls.extend(match &setting.value {
                        DimValue::Fixed(size) => quote!(.dim(#text, #size, #size)),
                        DimValue::Range {
                            lo,
                            hi,
                            inclusive: true,
                        } => quote!(.dim(#text, #lo, #hi)),
                        DimValue::Range {
                            lo,
                            hi,
                            inclusive: false,
                        } => quote!(.dim_below(#text, #lo, #hi)),
                    });
                }
            }
        }
    }
    if let Err(error) = errors.check() {
        return fallback(error);
    }
    let function = &input.function;
    let span = function.span();
    let call = match (which, receiver) {
        (Macro::AssertContract, receiver) => {
            let cases = match cases {
                Some(cases) => quote_spanned!(cases.span()=> #cases),
                None => quote!(256),
            };
            match receiver {
                None => quote_spanned!(span=> #p::assert_function(#function, #settings, #cases)),
                Some(receiver) => quote_spanned!(span=>
                    #p::assert_method(#function, #receiver, #settings, #cases)
                ),
            }
        }
        (_, None) => quote_spanned!(span=> #p::function(#function, #settings)),
        (_, Some(receiver)) => quote_spanned!(span=> #p::method(#function, #receiver, #settings)),
    };
    let call = match which {
        Macro::Violations => quote!(#call.violations()),
        Macro::Exemptions => quote!(#call.exemptions()),
        _ => call,
    };
    quote! {
        {
            let #settings = #p::Settings::new(#name) #calls;
            #call
        }
    }
}

/// The errors, in place of the strategy.
fn fallback(error: syn::Error) -> TokenStream {
    let error = error.to_compile_error();
    quote! {
        {
            #error
            ::core::unreachable!()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expand(text: &str) -> String {
        arbitrary(text.parse().expect("tokens")).to_string()
    }

    #[test]
    fn given_values_and_dims_become_settings() {
        let out = expand("loss, k = 3, dims = [N in 1..=64, C = 10, T in 1..9]");
        assert!(out.contains("function (loss"), "{out}");
        assert!(out.contains(". given (\"k\" , 3)"), "{out}");
        assert!(out.contains(". dim (\"N\" , 1 , 64)"), "{out}");
        assert!(out.contains(". dim (\"C\" , 10 , 10)"), "{out}");
        assert!(out.contains(". dim_below (\"T\" , 1 , 9)"), "{out}");
        let out = expand("Net::<f32>::forward, &net");
        assert!(
            out.contains("method (Net :: < f32 > :: forward , & net"),
            "{out}"
        );
        assert!(
            out.contains("Settings :: new (\"Net::<f32>::forward\")"),
            "{out}"
        );
    }

    #[test]
    fn violations_and_assert_contract_share_the_arguments() {
        let out = violations("loss, k = 3, dims = [N = 2]".parse().expect("tokens")).to_string();
        assert!(out.contains("function (loss"), "{out}");
        assert!(out.contains(". violations ()"), "{out}");
        let out = exemptions("loss, k = 3".parse().expect("tokens")).to_string();
        assert!(out.contains(". exemptions ()"), "{out}");
        let out = assert_contract("loss, cases = 16, k = 3".parse().expect("tokens")).to_string();
        assert!(out.contains("assert_function (loss"), "{out}");
        assert!(out.contains(", 16)"), "{out}");
        assert!(!out.contains("\"cases\""), "{out}");
        let out = assert_contract("Net::forward, &net".parse().expect("tokens")).to_string();
        assert!(
            out.contains("assert_method (Net :: forward , & net"),
            "{out}"
        );
        assert!(out.contains(", 256)"), "{out}");
        // `arbitrary!` gives a parameter named `cases`.
        assert!(expand("loss, cases = 2").contains(". given (\"cases\" , 2)"));
        let out = assert_contract("loss, cases = 1, cases = 2".parse().expect("tokens"));
        assert!(out.to_string().contains("`cases` is given twice"));
    }

    #[test]
    fn mistakes_are_spanned_errors() {
        for (text, message) in [
            ("", "expected a function with a contract"),
            ("loss, k = 1, k = 2", "`k` is given twice"),
            ("loss, dims = [N in 1.., ]", "a dim's range needs both ends"),
            (
                "loss, dims = [N 3]",
                "expected `N = size` or `N in lo..=hi`",
            ),
            ("loss, dims = [N = 1, N = 2]", "`N` appears twice in `dims`"),
            ("loss, k = 1, &net", "after the function and its receiver"),
            ("3", "expected the path of a function"),
        ] {
            let out = expand(text);
            assert!(out.contains("compile_error"), "{text}: {out}");
            assert!(out.contains(message), "{text}: {out}");
        }
    }
}
