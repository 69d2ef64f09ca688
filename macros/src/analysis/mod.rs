//! Compile-time shape and dtype checking of a contracted function's body: the body is parsed
//! read-only and walked with the engine of `candle-contracts-shapes`; each call that certainly
//! fails becomes a spanned error. The expansion never sees the parse: it emits the user's
//! tokens, and a body that does not parse is not analysed.
//!
//! `scope` holds what calls can refer to (`use`s, items, the other contracts of a
//! `#[contract]` `impl` block or module), `file` what the item's own source file adds (the
//! `use`s and items of its module), `walk` the walk itself, `text` the source text messages
//! quote.

mod file;
mod scope;
mod text;
mod walk;

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};

use candle_contracts_shapes::{Contract, Env};
use proc_macro2::{Delimiter, Group, Span, TokenStream, TokenTree};
use quote::quote;
use syn::{Block, ImplItem, Item, Signature};

use scope::{Body, Scope, Sibling};
use walk::{Local, Val, Walker};

/// The errors of the body of `sig` against its contract `args` (the attribute's tokens).
pub fn check_function(args: &TokenStream, sig: &Signature, body: &Group) -> Vec<syn::Error> {
    let Ok(block) = syn::parse2::<Block>(TokenTree::Group(body.clone()).into()) else {
        return Vec::new();
    };
    match parse_contract(args) {
        Some(contract) => {
            let scope = file::module_scope(sig, body).unwrap_or_default();
            check(&contract, sig, &block, &scope)
        }
        None => Vec::new(),
    }
}

/// The contract's tensor clauses, subjects without the token printer's spaces
/// (`self . weight` is `self.weight`); `None` if the engine cannot read it.
fn parse_contract(args: &TokenStream) -> Option<Contract> {
    let mut contract = Contract::parse(&args.to_string()).ok()?;
    for clause in &mut contract.clauses {
        clause.subject.retain(|c| !c.is_whitespace());
    }
    Some(contract)
}

fn check(contract: &Contract, sig: &Signature, block: &Block, scope: &Scope) -> Vec<syn::Error> {
    // The `return` clause is read against the tail only where the value is the tensor
    // (`Tensor`, `Result<Tensor>`), not an `Option` or a tuple of it.
    let env = if scope::returns_tensor(sig) {
        Env::for_function(sig.ident.to_string(), contract)
    } else {
        let mut inputs = contract.clone();
        inputs.clauses.retain(|clause| clause.subject != "return");
        Env::for_function(sig.ident.to_string(), &inputs)
    };
    let body = Body::new(quote!(#block), sig, scope);
    // The parameters, each with its clause's type where it is certainly a candle tensor;
    // `&mut self` may replace its fields before they are used, `&mut` and `mut` parameters
    // theirs.
    let mut params = BTreeMap::new();
    let mut fixed_roots = Vec::new();
    for input in &sig.inputs {
        match input {
            syn::FnArg::Receiver(receiver) => {
                params.insert("self".to_string(), Local::new(Val::Unknown, false));
                if receiver.mutability.is_none() && !scope::is_mut_ref(&receiver.ty) {
                    fixed_roots.push("self".to_string());
                }
            }
            syn::FnArg::Typed(typed) => match &*typed.pat {
                syn::Pat::Ident(ident) if ident.subpat.is_none() && ident.by_ref.is_none() => {
                    let name = ident.ident.to_string();
                    // A parameter of candle's `Tensor` without a clause is a tensor of unknown
                    // dtype and shape: its methods are candle's, their rules apply as far as
                    // they can.
                    let val = match contract.clause(&name) {
                        Some(clause) if scope::is_tensor_type(&typed.ty) => {
                            Val::Tensor(clause.spec.clone())
                        }
                        // By value, a trait method taking `self` would win over candle's
                        // `&self` one of the same name: only references are certain.
                        None if matches!(&*typed.ty, syn::Type::Reference(_))
                            && body.is_candle_tensor(&typed.ty) =>
                        {
                            Val::Tensor(candle_contracts_shapes::TensorType::unknown())
                        }
                        _ => Val::Unknown,
                    };
                    let mutable = ident.mutability.is_some();
                    if !mutable && !scope::is_mut_ref(&typed.ty) {
                        fixed_roots.push(name.clone());
                    }
                    params.insert(name, Local::new(val, mutable));
                }
                other => {
                    let mut names = BTreeSet::new();
                    walk::pattern_names(other, &mut names);
                    for name in names {
                        params.insert(name, Local::new(Val::Unknown, true));
                    }
                }
            },
        }
    }
    // Clauses on fields of those (`self.weight`, `cache.cos`), by their text without spaces.
    let subjects = contract
        .clauses
        .iter()
        .filter(|clause| {
            let subject = clause.subject.as_str();
            subject.split_once('.').is_some_and(|(root, _)| {
                fixed_roots.iter().any(|r| r == root) && !subject.contains(['?', '[', '('])
            })
        })
        .map(|clause| (clause.subject.clone(), clause.spec.clone()))
        .collect();
    let mut walker = Walker::new(env, params, subjects, &body, scope);
    walker.returns_result = returns_result(sig);
    walker.function_body(block);
    walker.errors
}

/// `#[contract]` without clauses on an `impl` block or an inline module: the contracted
/// functions inside are checked with each other's contracts in sight, and each inner
/// `#[contract(...)]` is told so (it then skips its own analysis). `None` for any other item.
pub fn expand_scope(input: &TokenStream) -> Option<TokenStream> {
    let item = syn::parse2::<Item>(input.clone()).ok()?;
    let mut scope = Scope::default();
    let mut functions: Vec<(&Signature, &Block, TokenStream)> = Vec::new();
    match &item {
        Item::Impl(block) => {
            scope.methods_on_self = block.trait_.is_none();
            scope.impl_generics = generic_names(&block.generics);
            let owner = match &*block.self_ty {
                syn::Type::Path(path) => path.path.segments.last().map(|s| s.ident.to_string()),
                _ => None,
            };
            for member in &block.items {
                if let ImplItem::Fn(function) = member
                    && let Some(args) = contract_args(&function.attrs)
                {
                    functions.push((&function.sig, &function.block, args));
                }
            }
            for (sig, _, args) in &functions {
                if let Some(contract) = parse_contract(args) {
                    scope
                        .siblings
                        .push(Sibling::new(sig, contract, owner.as_deref()));
                }
            }
        }
        Item::Mod(module) => {
            let (_, items) = module.content.as_ref()?;
            scope.free_functions = true;
            for member in items {
                match member {
                    Item::Fn(function) => {
                        scope.items.insert(function.sig.ident.to_string());
                        if let Some(args) = contract_args(&function.attrs) {
                            functions.push((&function.sig, &function.block, args));
                        }
                    }
                    Item::Use(item) => scope.uses.push(item.tree.clone()),
                    other => scope.items.extend(item_name(other)),
                }
            }
            for (sig, _, args) in &functions {
                if let Some(contract) = parse_contract(args) {
                    scope.siblings.push(Sibling::new(sig, contract, None));
                }
            }
        }
        _ => return None,
    }
    // A sibling under `cfg` may be compiled out, and two of one name (a `#[cfg(test)]` pair)
    // leave unsure which one a call reaches: neither is a sibling, and the name is unknown.
    let conditional: BTreeSet<String> = match &item {
        Item::Impl(block) => block
            .items
            .iter()
            .filter_map(|member| match member {
                ImplItem::Fn(f) if is_conditional(&f.attrs) => Some(f.sig.ident.to_string()),
                _ => None,
            })
            .collect(),
        Item::Mod(module) => module
            .content
            .iter()
            .flat_map(|(_, items)| items)
            .filter_map(|member| match member {
                Item::Fn(f) if is_conditional(&f.attrs) => Some(f.sig.ident.to_string()),
                _ => None,
            })
            .collect(),
        _ => BTreeSet::new(),
    };
    let defined_twice = |name: &str| {
        let all = match &item {
            Item::Impl(block) => block
                .items
                .iter()
                .filter(|m| matches!(m, ImplItem::Fn(f) if f.sig.ident == name))
                .count(),
            Item::Mod(module) => module
                .content
                .iter()
                .flat_map(|(_, items)| items)
                .filter(|m| matches!(m, Item::Fn(f) if f.sig.ident == name))
                .count(),
            _ => 0,
        };
        all > 1
    };
    scope
        .siblings
        .retain(|s| !conditional.contains(&s.name) && !defined_twice(&s.name));
    let mut errors = Vec::new();
    for (sig, block, args) in &functions {
        if analysis_off(args) {
            continue;
        }
        if let Some(contract) = parse_contract(args) {
            errors.extend(check(&contract, sig, block, &scope));
        }
    }
    let errors = errors.into_iter().map(|e| e.to_compile_error());
    let marked = mark_inner_contracts(input.clone());
    Some(quote! {
        #(#errors)*
        #marked
    })
}

/// The tokens of a `#[contract(...)]` (or `#[candle_contracts::contract(...)]`) attribute.
fn contract_args(attrs: &[syn::Attribute]) -> Option<TokenStream> {
    attrs.iter().find_map(|attr| match &attr.meta {
        syn::Meta::List(list)
            if list
                .path
                .segments
                .last()
                .is_some_and(|s| s.ident == "contract") =>
        {
            Some(list.tokens.clone())
        }
        _ => None,
    })
}

/// Whether `sig` returns a `Result` (`Result<Tensor>`, `candle_core::Result<_>`,
/// `anyhow::Result<_>`).
fn returns_result(sig: &Signature) -> bool {
    match &sig.output {
        syn::ReturnType::Type(_, ty) => match &**ty {
            syn::Type::Path(path) => path
                .path
                .segments
                .last()
                .is_some_and(|segment| segment.ident == "Result"),
            _ => false,
        },
        syn::ReturnType::Default => false,
    }
}

/// Whether a contract says `static = false`.
fn analysis_off(args: &TokenStream) -> bool {
    let trees: Vec<TokenTree> = args.clone().into_iter().collect();
    trees.windows(3).any(|w| {
        matches!(&w[0], TokenTree::Ident(i) if i == "static")
            && matches!(&w[1], TokenTree::Punct(p) if p.as_char() == '=')
            && matches!(&w[2], TokenTree::Ident(i) if i == "false")
    })
}

fn item_name(item: &Item) -> Option<String> {
    let ident = match item {
        Item::Const(i) => &i.ident,
        Item::Enum(i) => &i.ident,
        Item::Mod(i) => &i.ident,
        Item::Static(i) => &i.ident,
        Item::Struct(i) => &i.ident,
        Item::Trait(i) => &i.ident,
        Item::Type(i) => &i.ident,
        Item::Union(i) => &i.ident,
        Item::Macro(i) => i.ident.as_ref()?,
        Item::ExternCrate(i) => i.rename.as_ref().map_or(&i.ident, |(_, r)| r),
        _ => return None,
    };
    Some(ident.to_string())
}

/// The item's own tokens, with `__checked_by_scope = true` added to each non-empty
/// `#[contract(...)]` directly inside its braces.
fn mark_inner_contracts(input: TokenStream) -> TokenStream {
    input
        .into_iter()
        .map(|tree| match tree {
            TokenTree::Group(group) if group.delimiter() == Delimiter::Brace => {
                let mut marked = Group::new(Delimiter::Brace, mark_attributes(group.stream()));
                marked.set_span(group.span());
                TokenTree::Group(marked)
            }
            other => other,
        })
        .collect()
}

fn mark_attributes(stream: TokenStream) -> TokenStream {
    let mut out: Vec<TokenTree> = Vec::new();
    for tree in stream {
        let after_hash = matches!(out.last(), Some(TokenTree::Punct(p)) if p.as_char() == '#');
        match tree {
            TokenTree::Group(group) if after_hash && group.delimiter() == Delimiter::Bracket => {
                let mut marked = Group::new(Delimiter::Bracket, mark_attribute(group.stream()));
                marked.set_span(group.span());
                out.push(TokenTree::Group(marked));
            }
            other => out.push(other),
        }
    }
    out.into_iter().collect()
}

/// `contract(x: f32[N])` → `contract(x: f32[N], __checked_by_scope = true)`.
fn mark_attribute(stream: TokenStream) -> TokenStream {
    let mut trees: Vec<TokenTree> = stream.into_iter().collect();
    let is_contract = trees.len() >= 2
        && matches!(&trees[trees.len() - 2], TokenTree::Ident(i) if i == "contract");
    if let (true, Some(TokenTree::Group(args))) = (is_contract, trees.last())
        && args.delimiter() == Delimiter::Parenthesis
        && !args.stream().is_empty()
    {
        let mut stream = args.stream();
        let ends_with_comma = stream
            .clone()
            .into_iter()
            .last()
            .is_some_and(|t| matches!(&t, TokenTree::Punct(p) if p.as_char() == ','));
        let option = syn::Ident::new(crate::syntax::kw::CHECKED_BY_SCOPE, Span::call_site());
        stream.extend(if ends_with_comma {
            quote!(#option = true)
        } else {
            quote!(, #option = true)
        });
        let mut marked = Group::new(Delimiter::Parenthesis, stream);
        marked.set_span(args.span());
        let last = trees.len() - 1;
        trees[last] = TokenTree::Group(marked);
    }
    trees.into_iter().collect()
}

/// Whether an item stands under `#[cfg(..)]` (or a `cfg_attr` that may add one).
fn is_conditional(attrs: &[syn::Attribute]) -> bool {
    attrs
        .iter()
        .any(|attr| attr.path().is_ident("cfg") || attr.path().is_ident("cfg_attr"))
}

/// The names of the type and const parameters of `generics`.
fn generic_names(generics: &syn::Generics) -> BTreeSet<String> {
    generics
        .params
        .iter()
        .filter_map(|param| match param {
            syn::GenericParam::Type(ty) => Some(ty.ident.to_string()),
            syn::GenericParam::Const(c) => Some(c.ident.to_string()),
            syn::GenericParam::Lifetime(_) => None,
        })
        .collect()
}
