//! The contract language's grammar, shared by the macro and the CLI: `syntax` (the contract as
//! written, every node with its spans), `parse` (its `Parse` impls, from an attribute's
//! tokens), `ctxt` (the error accumulator), `suggest` (did-you-mean), and `lower` (the tensor
//! clauses as the engine's types, for the analysis), and `fields` (a struct contract read as
//! the clauses of its methods).
//!
//! The macro validates what it parses and lowers the valid clauses; the CLI parses the same
//! attributes with the same grammar (with span locations) and lowers them the same way.

pub mod ctxt;
pub mod fields;
pub mod lower;
pub mod parse;
pub mod suggest;
pub mod syntax;

use candle_contracts_shapes::Contract;
use proc_macro2::TokenStream;
use quote::ToTokens;

/// Whether an attribute is `#[contract]` (any path ending in `contract`, such as
/// `#[candle_contracts::contract(..)]`).
pub fn is_contract(attr: &syn::Attribute) -> bool {
    attr.path()
        .segments
        .last()
        .is_some_and(|last| last.ident == "contract")
}

/// A `#[cfg_attr(predicate, attr, ..)]`'s predicate and attributes (each one's tokens, as
/// `contract(x: f32[N])`); `None` for any other attribute.
pub fn cfg_attr_parts(attr: &syn::Attribute) -> Option<(TokenStream, Vec<TokenStream>)> {
    let syn::Meta::List(list) = &attr.meta else {
        return None;
    };
    if !list.path.is_ident("cfg_attr") {
        return None;
    }
    let mut pieces = parse::split_commas(list.tokens.clone()).into_iter();
    let predicate = pieces.next()?;
    Some((predicate, pieces.filter(|p| !p.is_empty()).collect()))
}

/// Whether an attribute's tokens (`contract`, `contract(..)`, `candle_contracts::contract(..)`)
/// are a contract.
pub fn is_contract_tokens(tokens: &TokenStream) -> bool {
    syn::parse2::<syn::Meta>(tokens.clone()).is_ok_and(|meta| {
        meta.path()
            .segments
            .last()
            .is_some_and(|s| s.ident == "contract")
    })
}

/// Whether an attribute is a `#[cfg_attr(..)]` that only adds contracts: it adds guards and
/// checks, and leaves the item there under every `cfg`.
pub fn only_contracts_under_cfg(attr: &syn::Attribute) -> bool {
    cfg_attr_parts(attr).is_some_and(|(_, attributes)| {
        !attributes.is_empty() && attributes.iter().all(is_contract_tokens)
    })
}

/// The predicate and the list of each contract written `#[cfg_attr(predicate,
/// contract(...))]` among `attrs`; under nested ones (`cfg_attr(p, cfg_attr(q, contract(..)))`)
/// with the predicate `all(p, q)`.
pub fn contract_lists_under_cfg(attrs: &[syn::Attribute]) -> Vec<(TokenStream, TokenStream)> {
    fn under(
        predicate: &TokenStream,
        attributes: &[TokenStream],
        out: &mut Vec<(TokenStream, TokenStream)>,
    ) {
        for tokens in attributes {
            match syn::parse2::<syn::Meta>(tokens.clone()) {
                Ok(syn::Meta::List(list)) if is_contract_tokens(tokens) => {
                    out.push((predicate.clone(), list.tokens));
                }
                Ok(syn::Meta::List(list)) if list.path.is_ident("cfg_attr") => {
                    let mut pieces = parse::split_commas(list.tokens).into_iter();
                    let Some(inner) = pieces.next() else {
                        continue;
                    };
                    let nested: Vec<TokenStream> = pieces.filter(|p| !p.is_empty()).collect();
                    under(&quote::quote!(all(#predicate, #inner)), &nested, out);
                }
                _ => {}
            }
        }
    }
    let mut out = Vec::new();
    for attr in attrs {
        if let Some((predicate, attributes)) = cfg_attr_parts(attr) {
            under(&predicate, &attributes, &mut out);
        }
    }
    out
}

/// Every contract among `attrs`, as its meta (`contract`, `contract(x: f32[N])`): those written
/// as attributes and those under `cfg_attr` (read as where the `cfg` holds, as the macro then
/// checks them).
pub fn contract_metas(attrs: &[syn::Attribute]) -> Vec<syn::Meta> {
    fn under_cfg(attribute: &TokenStream, out: &mut Vec<syn::Meta>) {
        let Ok(meta) = syn::parse2::<syn::Meta>(attribute.clone()) else {
            return;
        };
        match &meta {
            syn::Meta::List(list) if list.path.is_ident("cfg_attr") => {
                for piece in parse::split_commas(list.tokens.clone()).iter().skip(1) {
                    under_cfg(piece, out);
                }
            }
            _ if is_contract_tokens(attribute) => out.push(meta),
            _ => {}
        }
    }
    let mut out = Vec::new();
    for attr in attrs {
        match is_contract(attr) {
            true => out.push(attr.meta.clone()),
            false => under_cfg(&attr.meta.to_token_stream(), &mut out),
        }
    }
    out
}

/// The tokens of the first `#[contract(...)]` among `attrs`.
pub fn contract_list(attrs: &[syn::Attribute]) -> Option<TokenStream> {
    attrs.iter().find_map(|attr| match &attr.meta {
        syn::Meta::List(list) if is_contract(attr) => Some(list.tokens.clone()),
        _ => None,
    })
}

/// The tensor clauses of a contract's tokens (what `#[contract(...)]` holds), and whether it
/// says `static = false`; `None` where the tokens are no valid contract syntax, or name an
/// option there is none of (`heads = NH` on a function: the macro reports why).
pub fn read(tokens: &TokenStream) -> Option<(Contract, bool)> {
    let errors = ctxt::Ctxt::new();
    let clauses = parse::parse_clauses(tokens.clone(), &errors);
    errors.check().ok()?;
    let unknown_option = clauses.iter().any(|clause| {
        matches!(clause, syntax::Clause::Option(option)
            if !syntax::kw::OPTIONS.iter().any(|known| option.name == known))
    });
    if unknown_option {
        return None;
    }
    Some((lower::contract(&clauses)?, lower::analysis_off(&clauses)))
}
