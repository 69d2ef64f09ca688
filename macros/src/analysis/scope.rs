//! What a body's calls can refer to: the `use`s and items of the body (and of an enclosing
//! `#[contract]` module), the names it may rebind, and the other contracted functions of an
//! enclosing `#[contract]` `impl` block or module.

use std::collections::{BTreeMap, BTreeSet};

use candle_contracts_shapes::Contract;
use candle_contracts_shapes::rules::contract_ops;
use proc_macro2::{TokenStream, TokenTree};
use syn::{ReturnType, Signature, Type, UseTree};

/// Another contracted function the body can call.
pub struct Sibling {
    /// The function's name.
    pub name: String,
    /// Whether it takes `self` (called as `self.name(...)`).
    pub method: bool,
    /// Its parameters after `self`, in order: the name of each one that is a `Tensor` (or a
    /// reference to one), `None` for the others.
    pub params: Vec<Option<String>>,
    /// Its contract's tensor clauses.
    pub contract: Contract,
    /// The name messages use: `Model::forward`, `loss`.
    pub display: String,
    /// Whether it returns a `Tensor` (or a `Result` of one), so its `return` clause is the
    /// type of the call.
    pub returns_tensor: bool,
}

/// The contracts visible to each other inside a `#[contract]` `impl` block or module.
#[derive(Default)]
pub struct Scope {
    /// The contracted functions inside.
    pub siblings: Vec<Sibling>,
    /// An inherent `impl`: `self.name(...)` is certainly the block's own method (no trait
    /// method takes precedence over an inherent one).
    pub methods_on_self: bool,
    /// A module: a one-segment call may be of one of its contracted functions (in an `impl`,
    /// an associated function is only ever `Self::name`).
    pub free_functions: bool,
    /// The module's own `use` trees and item names, seen by every body inside.
    pub uses: Vec<UseTree>,
    /// The names of the module's items (functions, modules, types, constants).
    pub items: BTreeSet<String>,
}

impl Scope {
    /// The contracted function `name` (a method when `method`).
    pub fn sibling(&self, name: &str, method: bool) -> Option<&Sibling> {
        self.siblings
            .iter()
            .find(|s| s.name == name && s.method == method)
    }
}

impl Sibling {
    /// The sibling of `sig` with `contract`; `owner` names the `impl`'s type.
    pub fn new(sig: &Signature, contract: Contract, owner: Option<&str>) -> Sibling {
        let name = sig.ident.to_string();
        Sibling {
            display: match owner {
                Some(owner) => format!("{owner}::{name}"),
                None => name.clone(),
            },
            method: sig.receiver().is_some(),
            params: sig
                .inputs
                .iter()
                .filter_map(|input| match input {
                    syn::FnArg::Typed(typed) => Some(match &*typed.pat {
                        syn::Pat::Ident(ident) if is_tensor_type(&typed.ty) => {
                            Some(ident.ident.to_string())
                        }
                        _ => None,
                    }),
                    syn::FnArg::Receiver(_) => None,
                })
                .collect(),
            // An `async fn`'s call is a future; its tensor comes after `.await`.
            returns_tensor: returns_tensor(sig) && sig.asyncness.is_none(),
            contract,
            name,
        }
    }
}

/// `Tensor`, `&Tensor`, `candle_core::Tensor`: a type that is certainly candle's tensor (the
/// contract's `TensorArg` bound makes a `Tensor` in scope candle's). `&mut` is not: a callee
/// may replace it.
pub fn is_tensor_type(ty: &Type) -> bool {
    match ty {
        Type::Reference(reference) => {
            reference.mutability.is_none() && is_tensor_type(&reference.elem)
        }
        Type::Paren(paren) => is_tensor_type(&paren.elem),
        Type::Path(path) => {
            path.qself.is_none()
                && path.path.segments.last().is_some_and(|s| {
                    s.ident == "Tensor" && matches!(s.arguments, syn::PathArguments::None)
                })
        }
        _ => false,
    }
}

/// Whether the function returns a `Tensor` or a `Result` whose value is one.
pub fn returns_tensor(sig: &Signature) -> bool {
    let ReturnType::Type(_, ty) = &sig.output else {
        return false;
    };
    if is_tensor_type(ty) {
        return true;
    }
    let Type::Path(path) = &**ty else {
        return false;
    };
    let Some(last) = path.path.segments.last() else {
        return false;
    };
    let syn::PathArguments::AngleBracketed(args) = &last.arguments else {
        return false;
    };
    last.ident == "Result"
        && matches!(args.args.first(), Some(syn::GenericArgument::Type(ty)) if is_tensor_type(ty))
}

/// What a body's paths and names mean, read from its tokens before the walk.
pub struct Body {
    /// Names declared `mut` anywhere (or rebound where the walk cannot see): never known.
    pub unstable: BTreeSet<String>,
    /// The first segment a `use` gives a name: `nn` → `candle_contracts::nn`; `None` where
    /// two `use`s disagree or the target is outside candle.
    uses: BTreeMap<String, Option<String>>,
    /// Items the body defines: a path through one of them is the user's own.
    items: BTreeSet<String>,
    /// Items of the enclosing `#[contract]` module (its contracted functions among them).
    scope_items: BTreeSet<String>,
    /// Names used other than as a call (`let helper = ...`, `|helper|`): a call of one may be
    /// a local closure.
    not_only_called: BTreeSet<String>,
    /// A glob `use` outside candle: any short path may come from it.
    foreign_glob: bool,
    /// The signature names candle's tensor `Tensor` (a parameter of type `Tensor`).
    tensor_named: bool,
}

impl Body {
    /// Reads the body's `tokens`, with the parameters of `sig` and the enclosing `scope`.
    pub fn new(tokens: TokenStream, sig: &Signature, scope: &Scope) -> Body {
        let mut body = Body {
            unstable: BTreeSet::new(),
            uses: BTreeMap::new(),
            items: BTreeSet::new(),
            scope_items: scope.items.clone(),
            not_only_called: BTreeSet::new(),
            foreign_glob: false,
            tensor_named: sig.inputs.iter().any(|input| match input {
                syn::FnArg::Typed(typed) => names_tensor(&typed.ty),
                syn::FnArg::Receiver(_) => false,
            }),
        };
        for tree in &scope.uses {
            body.add_use(String::new(), tree);
        }
        for input in &sig.inputs {
            if let syn::FnArg::Typed(typed) = input
                && let syn::Pat::Ident(ident) = &*typed.pat
            {
                // A parameter may hold a closure: a call of its name is not a sibling's.
                body.not_only_called.insert(ident.ident.to_string());
                if ident.mutability.is_some() {
                    body.unstable.insert(ident.ident.to_string());
                }
            }
        }
        body.scan(tokens);
        body
    }

    fn scan(&mut self, tokens: TokenStream) {
        let trees: Vec<TokenTree> = tokens.into_iter().collect();
        let mut i = 0;
        let mut skip_to = 0;
        while i < trees.len() {
            if i < skip_to {
                i = skip_to;
                continue;
            }
            let tree = &trees[i];
            i += 1;
            let i = i - 1;
            match tree {
                TokenTree::Group(group) => self.scan(group.stream()),
                TokenTree::Ident(ident) => {
                    let word = ident.to_string();
                    let next = trees.get(i + 1);
                    let next_ident = match next {
                        Some(TokenTree::Ident(next)) => Some(next.to_string()),
                        _ => None,
                    };
                    match word.as_str() {
                        "mut" => self.unstable.extend(next_ident),
                        "fn" | "mod" | "struct" | "enum" | "union" | "trait" | "type" | "const"
                        | "static" => self.items.extend(next_ident),
                        "macro_rules" => {
                            if let Some(TokenTree::Ident(name)) = trees.get(i + 2) {
                                self.items.insert(name.to_string());
                            }
                        }
                        "use" => {
                            let end = trees[i..]
                                .iter()
                                .position(
                                    |t| matches!(t, TokenTree::Punct(p) if p.as_char() == ';'),
                                )
                                .map_or(trees.len(), |k| i + k + 1);
                            let item: TokenStream = trees[i..end].iter().cloned().collect();
                            match syn::parse2::<syn::ItemUse>(item) {
                                Ok(item) => self.add_use(String::new(), &item.tree),
                                // A `use` the walk cannot read: any short path may be its.
                                Err(_) => self.foreign_glob = true,
                            }
                            skip_to = end;
                        }
                        _ => {
                            // A call, a path's head (`nn::`) or a macro (`vec!`).
                            let called = match next {
                                Some(TokenTree::Group(g)) => {
                                    g.delimiter() == proc_macro2::Delimiter::Parenthesis
                                }
                                Some(TokenTree::Punct(p)) => matches!(p.as_char(), ':' | '!'),
                                _ => false,
                            };
                            let after_path = i > 0
                                && matches!(&trees[i - 1], TokenTree::Punct(p)
                                    if p.as_char() == '.' || p.as_char() == ':');
                            if !called && !after_path {
                                self.not_only_called.insert(word);
                            }
                        }
                    }
                }
                _ => {}
            }
        }
    }

    fn add_use(&mut self, prefix: String, tree: &UseTree) {
        let join = |name: &str| {
            if prefix.is_empty() {
                name.to_string()
            } else {
                format!("{prefix}::{name}")
            }
        };
        match tree {
            UseTree::Path(path) => self.add_use(join(&path.ident.to_string()), &path.tree),
            UseTree::Name(name) => {
                let name = name.ident.to_string();
                if name == "self" {
                    let last = prefix.rsplit("::").next().unwrap_or_default().to_string();
                    self.add_name(last, prefix.clone());
                } else {
                    self.add_name(name.clone(), join(&name));
                }
            }
            UseTree::Rename(rename) => {
                let target = if rename.ident == "self" {
                    prefix.clone()
                } else {
                    join(&rename.ident.to_string())
                };
                self.add_name(rename.rename.to_string(), target);
            }
            UseTree::Glob(_) => {
                if !is_candle(&prefix) {
                    self.foreign_glob = true;
                }
            }
            UseTree::Group(group) => {
                for tree in &group.items {
                    self.add_use(prefix.clone(), tree);
                }
            }
        }
    }

    fn add_name(&mut self, name: String, target: String) {
        let target = target.trim_start_matches("::").to_string();
        let entry = self
            .uses
            .entry(name)
            .or_insert_with(|| Some(target.clone()));
        if entry.as_deref() != Some(target.as_str()) {
            *entry = None;
        }
    }

    /// Whether the body defines an item (a function, a macro) named `name`.
    pub fn defines(&self, name: &str) -> bool {
        self.items.contains(name) || self.scope_items.contains(name)
    }

    /// Whether a call of `name` may be of something the body defines or binds.
    pub fn shadows(&self, name: &str) -> bool {
        self.items.contains(name) || self.not_only_called.contains(name)
    }

    /// The full path of a call's path, when it certainly names candle's, candle-nn's or
    /// candle-contracts' item; `None` when it may be the user's own.
    pub fn resolve(&self, segments: &[String], absolute: bool) -> Option<String> {
        let (first, rest) = segments.split_first()?;
        let root = if absolute {
            first.clone()
        } else if self.items.contains(first)
            || self.scope_items.contains(first)
            || self.not_only_called.contains(first)
        {
            return None;
        } else if let Some(target) = self.uses.get(first) {
            target.clone()?
        } else if self.foreign_glob {
            return None;
        } else {
            self.default_root(first, rest)?
        };
        let mut path = root;
        for segment in rest {
            path.push_str("::");
            path.push_str(segment);
        }
        let path = match path.strip_prefix("candle::") {
            Some(tail) => format!("candle_core::{tail}"),
            None => path,
        };
        is_candle(&path).then_some(path)
    }

    /// What a path's first segment means with no `use` in sight: the file's `use`s are not
    /// visible to an attribute macro, so only names whose meaning is not in doubt.
    fn default_root(&self, first: &str, rest: &[String]) -> Option<String> {
        match (first, rest) {
            ("candle_core" | "candle_nn" | "candle_contracts" | "candle", _) => Some(first.into()),
            ("Tensor", [_]) if self.tensor_named => Some("candle_core::Tensor".into()),
            // `nn::cross_entropy` is `candle_contracts::nn`'s (candle-nn has none at its
            // root); `nn::embedding` may be either, and is left unknown.
            ("nn", [op]) if op != "embedding" && is_contract_op(op) => {
                Some("candle_contracts::nn".into())
            }
            ("nn", [module, _]) if module == "ops" || module == "loss" => Some("candle_nn".into()),
            ("ops", [_]) => Some("candle_nn::ops".into()),
            ("loss", [_]) => Some("candle_nn::loss".into()),
            _ => None,
        }
    }

    /// The full path of a one-segment call brought in by a `use`.
    pub fn imported(&self, name: &str) -> Option<String> {
        if self.items.contains(name) || self.not_only_called.contains(name) {
            return None;
        }
        let target = self.uses.get(name)?.clone()?;
        is_candle(&target).then_some(target)
    }
}

fn is_contract_op(name: &str) -> bool {
    contract_ops()
        .iter()
        .any(|op| op.path.strip_prefix("candle_contracts::nn::") == Some(name))
}

fn is_candle(path: &str) -> bool {
    let head = path.split("::").next().unwrap_or_default();
    matches!(
        head,
        "candle_core" | "candle_nn" | "candle_contracts" | "candle"
    )
}

/// Whether `ty` names `Tensor` with a one-segment path.
fn names_tensor(ty: &Type) -> bool {
    match ty {
        Type::Reference(reference) => names_tensor(&reference.elem),
        Type::Path(path) => path.qself.is_none() && path.path.is_ident("Tensor"),
        _ => false,
    }
}
