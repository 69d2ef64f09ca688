//! A struct contract (`#[contract(c_attn: Linear[E -> 3 * E], n_head = H, E == H * D)]` on a
//! struct) read as the clauses every contracted method of the struct gets: each clause whose
//! subject is a field gets `self.` in front (`self.c_attn: Linear[E -> 3 * E]`,
//! `self.n_head = H`); relations stay as written. The macro (on the struct and on its
//! `#[contract] impl`) and the CLI share this reading.

use proc_macro2::{Ident, Span, TokenStream, TokenTree};
use quote::quote;

use super::parse::{is_setting_piece, split_commas, split_settings};
use super::syntax::{ACTIVATION_VARIANTS, kw};

/// Why a struct contract cannot be read as method clauses, and where.
#[derive(Debug)]
pub struct FieldError {
    /// The token the problem is at.
    pub span: Span,
    /// What is wrong.
    pub message: String,
}

/// The clauses of a struct contract over the struct's named `fields`, as its methods take
/// them. A clause on a name that is no field, a `return` clause and an option other than
/// `crate = ..` are errors: a struct contract states fields and dims.
pub fn method_clauses(
    tokens: &TokenStream,
    fields: &[String],
) -> Result<TokenStream, Vec<FieldError>> {
    let mut out = TokenStream::new();
    let mut errors = Vec::new();
    // After `conv: Conv2d[..] with stride = 2`, the next `padding = 1` is the convolution's.
    let mut settings_open = false;
    for piece in split_commas(tokens.clone()) {
        let trees: Vec<TokenTree> = piece.clone().into_iter().collect();
        let Some(first) = trees.first() else {
            continue;
        };
        if !out.is_empty() {
            out.extend(quote!(,));
        }
        if settings_open && is_setting_piece(&piece) {
            out.extend(piece);
            continue;
        }
        settings_open = split_settings(piece.clone()).1.is_some();
        let next = trees.get(1);
        let punct = |tree: Option<&TokenTree>, c: char| matches!(tree, Some(TokenTree::Punct(p)) if p.as_char() == c);
        let single = |at: usize, c: char| {
            punct(trees.get(at), c)
                && !matches!(trees.get(at), Some(TokenTree::Punct(p))
                    if p.spacing() == proc_macro2::Spacing::Joint
                        && punct(trees.get(at + 1), if c == ':' { ':' } else { '=' }))
        };
        match first {
            TokenTree::Ident(ident) if ident == "return" => {
                errors.push(FieldError {
                    span: ident.span(),
                    message: "a struct contract states the struct's fields; a `return` clause \
                              goes on a method"
                        .to_string(),
                });
            }
            TokenTree::Ident(ident) if ident == "self" => out.extend(piece),
            TokenTree::Ident(ident) => {
                let name = ident.to_string();
                let name = name.strip_prefix("r#").unwrap_or(&name);
                let is_field = fields.iter().any(|f| f == name);
                let starts_path = single(1, ':')
                    || punct(next, '.')
                    || punct(next, '?')
                    || matches!(next, Some(TokenTree::Group(g))
                        if g.delimiter() == proc_macro2::Delimiter::Bracket);
                let binds = single(1, '=');
                // `act_fn != Swiglu` (a field and another variant of candle-nn's `Activation`
                // is read so, to be told which one to name).
                let differs = punct(next, '!')
                    && punct(trees.get(2), '=')
                    && matches!(trees.get(3), Some(TokenTree::Ident(v))
                        if v == "Swiglu"
                            || (is_field
                                && (v == "Activation"
                                    || v == "candle_nn"
                                    || ACTIVATION_VARIANTS.iter().any(|a| v == a))));
                if is_field && (starts_path || binds || differs) {
                    let self_token = Ident::new("self", ident.span());
                    out.extend(quote!(#self_token .));
                    out.extend(piece);
                } else if name == kw::CRATE || name == kw::CHECKED_BY_SCOPE {
                    out.extend(piece);
                } else if binds && kw::OPTIONS.contains(&name) {
                    errors.push(FieldError {
                        span: ident.span(),
                        message: format!(
                            "option `{name}` goes on the methods' contracts, not on the struct's"
                        ),
                    });
                } else if starts_path || binds || differs {
                    errors.push(FieldError {
                        span: ident.span(),
                        message: format!(
                            "`{name}` is no named field of this struct ({})",
                            match fields.is_empty() {
                                true => "it has none".to_string(),
                                false => fields
                                    .iter()
                                    .map(|f| format!("`{f}`"))
                                    .collect::<Vec<_>>()
                                    .join(", "),
                            }
                        ),
                    });
                } else {
                    // A relation between dims (`E == H * D`).
                    out.extend(piece);
                }
            }
            _ => out.extend(piece),
        }
    }
    match errors.is_empty() {
        true => Ok(out),
        false => Err(errors),
    }
}

/// The struct contract's tokens, method clauses, of a struct item: `None` without a
/// `#[contract(...)]` or where the contract does not read (the struct's macro reports why).
pub fn of_struct(item: &syn::ItemStruct) -> Option<TokenStream> {
    let tokens = super::contract_list(&item.attrs)?;
    method_clauses(&tokens, &field_names(item)).ok()
}

/// A struct's contracts with the `cfg` each is compiled under: the predicate of its own
/// `#[cfg(..)]`s and of a `cfg_attr(p, contract(...))` (`all(..)` of several; `None` where
/// it is there under every `cfg` of its module), and the method clauses. One for a
/// `#[contract(...)]`, one per `cfg_attr` contract (`cfg_attr(p, contract(A))` beside
/// `cfg_attr(not(p), contract(B))`); none without a contract that reads.
pub fn variants_of_struct(item: &syn::ItemStruct) -> Vec<(Option<TokenStream>, TokenStream)> {
    let own: Vec<TokenStream> = item
        .attrs
        .iter()
        .filter(|attr| attr.path().is_ident("cfg"))
        .filter_map(|attr| match &attr.meta {
            syn::Meta::List(list) => Some(list.tokens.clone()),
            _ => None,
        })
        .collect();
    let under = |extra: Option<TokenStream>| {
        let mut predicates = own.clone();
        predicates.extend(extra);
        match predicates.len() {
            0 => None,
            1 => predicates.pop(),
            _ => Some(quote!(all(#(#predicates),*))),
        }
    };
    if let Some(clauses) = of_struct(item) {
        return vec![(under(None), clauses)];
    }
    let fields = field_names(item);
    super::contract_lists_under_cfg(&item.attrs)
        .into_iter()
        .filter_map(|(predicate, tokens)| {
            let clauses = method_clauses(&tokens, &fields).ok()?;
            Some((under(Some(predicate)), clauses))
        })
        .collect()
}

/// The names of a struct's named fields (`r#type` is `type`).
pub fn field_names(item: &syn::ItemStruct) -> Vec<String> {
    item.fields
        .iter()
        .filter_map(|f| f.ident.as_ref())
        .map(super::syntax::name_of)
        .collect()
}
