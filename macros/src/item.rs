//! The function a contract stands on: attributes, visibility and signature parsed so the
//! contract can be checked against them, the body kept as untouched tokens.

use proc_macro2::{Delimiter, Group, Span, TokenStream, TokenTree};
use syn::ext::IdentExt;
use syn::parse::{Parse, ParseStream};
use syn::{Attribute, FnArg, Ident, Pat, ReturnType, Signature, Token, Type, Visibility};

pub struct ContractFn {
    pub attrs: Vec<Attribute>,
    pub vis: Visibility,
    pub defaultness: Option<Token![default]>,
    pub sig: Signature,
    /// `None` for a trait method declaration (`fn f(&self);`).
    pub body: Option<Group>,
    pub semi: Option<Token![;]>,
}

impl Parse for ContractFn {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let attrs = input.call(Attribute::parse_outer)?;
        let vis: Visibility = input.parse()?;
        let defaultness: Option<Token![default]> = input.parse()?;
        let sig: Signature = input.parse()?;
        if input.peek(Token![;]) {
            let semi: Token![;] = input.parse()?;
            return Ok(Self {
                attrs,
                vis,
                defaultness,
                sig,
                body: None,
                semi: Some(semi),
            });
        }
        let body = match input.parse::<TokenTree>()? {
            TokenTree::Group(group) if group.delimiter() == Delimiter::Brace => group,
            other => return Err(syn::Error::new(other.span(), "expected the function body")),
        };
        if !input.is_empty() {
            return Err(input.error("unexpected tokens after the function body"));
        }
        Ok(Self {
            attrs,
            vis,
            defaultness,
            sig,
            body: Some(body),
            semi: None,
        })
    }
}

impl quote::ToTokens for ContractFn {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        let Self {
            attrs,
            vis,
            defaultness,
            sig,
            body,
            semi,
        } = self;
        tokens.extend(quote::quote!(#(#attrs)* #vis #defaultness #sig #body #semi));
    }
}

/// A named parameter of the signature.
pub struct Param {
    pub ident: Ident,
    pub ty: Type,
}

/// What the function returns, as far as the contract cares.
pub enum Output {
    /// No return type, or `()`.
    Unit,
    /// A type whose last path segment is `Result`: violations become `Err`.
    Result(Type),
    /// `Pin<Box<dyn Future<Output = R> + ..>>`, as `#[async_trait]` leaves an `async fn`:
    /// a violation is returned as a ready future of `Err` when `R` is a `Result`.
    BoxedFuture { ty: Type, output: Box<Type> },
    /// Anything else: violations panic.
    Other(Type),
}

impl Output {
    pub fn of(sig: &Signature) -> Self {
        match &sig.output {
            ReturnType::Default => Output::Unit,
            ReturnType::Type(_, ty) => match &**ty {
                Type::Tuple(tuple) if tuple.elems.is_empty() => Output::Unit,
                other if is_result(other) => Output::Result(other.clone()),
                other => match boxed_future_output(other) {
                    Some(output) => Output::BoxedFuture {
                        ty: other.clone(),
                        output: Box::new(output),
                    },
                    None => Output::Other(other.clone()),
                },
            },
        }
    }

    pub fn ty(&self) -> Option<&Type> {
        match self {
            Output::Unit => None,
            Output::Result(ty) | Output::Other(ty) | Output::BoxedFuture { ty, .. } => Some(ty),
        }
    }

    /// Whether a violation can be returned as an `Err` (a `Result`, or a boxed future of one).
    pub fn returns_result(&self) -> bool {
        match self {
            Output::Result(_) => true,
            Output::BoxedFuture { output, .. } => is_result(output),
            Output::Unit | Output::Other(_) => false,
        }
    }

    /// Whether the return type mentions `impl Trait` anywhere (`(impl Fn(), Tensor)` too),
    /// which a closure's return type cannot name.
    pub fn is_opaque(&self) -> bool {
        fn mentions_impl(tokens: TokenStream) -> bool {
            tokens.into_iter().any(|t| match t {
                TokenTree::Ident(i) => i == "impl",
                TokenTree::Group(g) => mentions_impl(g.stream()),
                _ => false,
            })
        }
        self.ty()
            .is_some_and(|ty| mentions_impl(quote::quote!(#ty)))
    }
}

fn is_result(ty: &Type) -> bool {
    matches!(ty, Type::Path(path) if path.qself.is_none()
        && path.path.segments.last().is_some_and(|s| s.ident == "Result"))
}

/// The first type argument of `ty` if its last path segment is `name`: `T` of `Box<T>`.
fn type_argument(ty: &Type, name: &str) -> Option<Type> {
    let Type::Path(path) = ty else { return None };
    let last = path.path.segments.last()?;
    if last.ident != name {
        return None;
    }
    let syn::PathArguments::AngleBracketed(args) = &last.arguments else {
        return None;
    };
    args.args.iter().find_map(|arg| match arg {
        syn::GenericArgument::Type(ty) => Some(ty.clone()),
        _ => None,
    })
}

/// `R` of `Pin<Box<dyn Future<Output = R> + ..>>`.
fn boxed_future_output(ty: &Type) -> Option<Type> {
    let boxed = type_argument(ty, "Pin")?;
    let Type::TraitObject(object) = type_argument(&boxed, "Box")? else {
        return None;
    };
    object.bounds.iter().find_map(|bound| {
        let syn::TypeParamBound::Trait(bound) = bound else {
            return None;
        };
        let last = bound.path.segments.last()?;
        if last.ident != "Future" {
            return None;
        }
        let syn::PathArguments::AngleBracketed(args) = &last.arguments else {
            return None;
        };
        args.args.iter().find_map(|arg| match arg {
            syn::GenericArgument::AssocType(assoc) if assoc.ident == "Output" => {
                Some(assoc.ty.clone())
            }
            _ => None,
        })
    })
}

pub fn params(sig: &Signature) -> Vec<Param> {
    sig.inputs
        .iter()
        .filter_map(|arg| match arg {
            FnArg::Typed(typed) => match &*typed.pat {
                Pat::Ident(pat) => Some(Param {
                    ident: pat.ident.clone(),
                    ty: (*typed.ty).clone(),
                }),
                _ => None,
            },
            FnArg::Receiver(_) => None,
        })
        .collect()
}

/// Every parameter's name but the receiver's, in order, as a contract names it (`type` for
/// `r#type`); `_` for a parameter written as a pattern.
pub fn param_names(sig: &Signature) -> Vec<String> {
    sig.inputs
        .iter()
        .filter_map(|arg| match arg {
            FnArg::Typed(typed) => Some(match &*typed.pat {
                Pat::Ident(pat) => pat.ident.unraw().to_string(),
                _ => "_".to_string(),
            }),
            FnArg::Receiver(_) => None,
        })
        .collect()
}

/// Names a type that is certainly not a tensor (a number, a string, a collection, a device),
/// for a spanned error before rustc's trait error.
pub fn plainly_not_a_tensor(ty: &Type) -> Option<String> {
    match ty {
        Type::Reference(reference) => plainly_not_a_tensor(&reference.elem),
        Type::Paren(paren) => plainly_not_a_tensor(&paren.elem),
        Type::Group(group) => plainly_not_a_tensor(&group.elem),
        Type::Tuple(_) | Type::Array(_) | Type::Slice(_) | Type::BareFn(_) | Type::Never(_) => {
            let ty = crate::syntax::code_text(&quote::quote!(#ty));
            Some(ty)
        }
        Type::Path(path) if path.qself.is_none() => {
            let last = path.path.segments.last()?;
            let name = last.ident.to_string();
            const NOT_TENSORS: &[&str] = &[
                "bool", "char", "str", "String", "u8", "u16", "u32", "u64", "u128", "usize", "i8",
                "i16", "i32", "i64", "i128", "isize", "f32", "f64", "Vec", "HashMap", "Device",
                "DType", "Shape",
            ];
            if NOT_TENSORS.contains(&name.as_str()) && path.path.segments.len() <= 2 {
                return Some(name);
            }
            if name == "Option"
                && let syn::PathArguments::AngleBracketed(args) = &last.arguments
                && let Some(syn::GenericArgument::Type(inner)) = args.args.first()
            {
                return plainly_not_a_tensor(inner);
            }
            None
        }
        _ => None,
    }
}

/// Whether a type is a slice, array or `Vec` (behind references), as sequence clauses take.
pub fn is_sequence_type(ty: &Type) -> bool {
    match ty {
        Type::Reference(reference) => is_sequence_type(&reference.elem),
        Type::Paren(paren) => is_sequence_type(&paren.elem),
        Type::Group(group) => is_sequence_type(&group.elem),
        Type::Slice(_) | Type::Array(_) => true,
        Type::Path(path) => path.path.segments.last().is_some_and(|s| s.ident == "Vec"),
        _ => false,
    }
}

/// The span of the signature's `fn` name, for errors about the function as a whole.
pub fn name_span(sig: &Signature) -> Span {
    sig.ident.span()
}

/// A function body cut where the guard goes: the inner attributes (`#![allow(..)]`) and the
/// rest. Tokens stay untouched.
pub struct BodyParts {
    pub inner_attrs: TokenStream,
    pub rest: TokenStream,
    pub span: Span,
}

impl BodyParts {
    pub fn of(body: &Group) -> Self {
        let tokens: Vec<TokenTree> = body.stream().into_iter().collect();
        let mut attrs_end = 0;
        while let [
            TokenTree::Punct(hash),
            TokenTree::Punct(bang),
            TokenTree::Group(attr),
            ..,
        ] = &tokens[attrs_end..]
            && hash.as_char() == '#'
            && bang.as_char() == '!'
            && attr.delimiter() == Delimiter::Bracket
        {
            attrs_end += 3;
        }
        let collect = |range: &[TokenTree]| range.iter().cloned().collect::<TokenStream>();
        Self {
            inner_attrs: collect(&tokens[..attrs_end]),
            rest: collect(&tokens[attrs_end..]),
            span: body.span(),
        }
    }

    /// `{ prefix { body } }`: the guard in `prefix` runs first, in a scope the body's own items
    /// (a `const`, a `use`) do not reach, since a contract's names resolve as in the signature;
    /// the body keeps its items first in its own block (no `items_after_statements`).
    /// `with_attrs` keeps the inner attributes (they are not allowed on a closure's or an
    /// `async` block's body, so there they go on the function's own block instead).
    pub fn with(&self, prefix: TokenStream, with_attrs: bool) -> TokenStream {
        let mut stream = if with_attrs {
            self.inner_attrs.clone()
        } else {
            TokenStream::new()
        };
        stream.extend(prefix);
        // Our own span on the inner braces, so that rustc's `unused_braces` (which skips
        // expansions) does not flag them on a one-line body.
        let mut body = Group::new(Delimiter::Brace, self.rest.clone());
        body.set_span(Span::call_site().located_at(self.span));
        stream.extend([TokenTree::Group(body)]);
        let mut block = Group::new(Delimiter::Brace, stream);
        block.set_span(self.span);
        TokenTree::Group(block).into()
    }
}
