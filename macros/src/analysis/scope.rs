//! What a body's calls can refer to: the `use`s and items of the body (and of an enclosing
//! `#[contract]` module), the names it may rebind, and the other contracted functions of an
//! enclosing `#[contract]` `impl` block or module.

use std::collections::{BTreeMap, BTreeSet};

use candle_contracts_shapes::Contract;
use proc_macro2::{Spacing, TokenStream, TokenTree};
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
    /// The generic parameters of the enclosing `impl` block, which hide items as the
    /// signature's own do.
    pub impl_generics: BTreeSet<String>,
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

/// Whether `ty` is a `&mut` reference (through parentheses).
pub fn is_mut_ref(ty: &Type) -> bool {
    match ty {
        Type::Reference(reference) => reference.mutability.is_some(),
        Type::Paren(paren) => is_mut_ref(&paren.elem),
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
    /// The first segment a `use` gives a name: `nn` → `candle_contracts::nn`; `None` where
    /// two `use`s disagree or the target is outside candle.
    uses: BTreeMap<String, Option<String>>,
    /// The names the body's own `use`s bring in (whatever they name): in the body's blocks
    /// they hide the enclosing module's functions of those names.
    body_uses: BTreeSet<String>,
    /// The body has a glob `use` (or one the walk cannot read), or a macro that may define
    /// items: any name may be its.
    body_glob: bool,
    /// The `macro_rules!` the body defines, each with the names its definition holds: where
    /// it is defined it sees the body's names, so a call may assign them without naming them.
    macros: BTreeMap<String, BTreeSet<String>>,
    /// Items the body defines, and the signature's generic parameters: a path through one
    /// of them is the user's own.
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
            uses: BTreeMap::new(),
            body_uses: BTreeSet::new(),
            body_glob: false,
            macros: BTreeMap::new(),
            items: sig
                .generics
                .params
                .iter()
                .filter_map(|param| match param {
                    syn::GenericParam::Type(ty) => Some(ty.ident.to_string()),
                    syn::GenericParam::Const(c) => Some(c.ident.to_string()),
                    syn::GenericParam::Lifetime(_) => None,
                })
                .chain(scope.impl_generics.iter().cloned())
                .collect(),
            scope_items: scope.items.clone(),
            not_only_called: BTreeSet::new(),
            foreign_glob: false,
            tensor_named: sig.inputs.iter().any(|input| match input {
                syn::FnArg::Typed(typed) => names_tensor(&typed.ty),
                syn::FnArg::Receiver(_) => false,
            }),
        };
        for tree in &scope.uses {
            body.add_use(String::new(), tree, false);
        }
        for input in &sig.inputs {
            if let syn::FnArg::Typed(typed) = input
                && let syn::Pat::Ident(ident) = &*typed.pat
            {
                // A parameter may hold a closure: a call of its name is not a sibling's.
                body.not_only_called.insert(ident.ident.to_string());
            }
        }
        body.scan(tokens, 0);
        body
    }

    /// `depth` 1 is the body's own statements (its braces are depth 0's one group).
    fn scan(&mut self, tokens: TokenStream, depth: usize) {
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
                TokenTree::Group(group) => self.scan(group.stream(), depth + 1),
                TokenTree::Ident(ident) => {
                    let word = ident.to_string();
                    let next = trees.get(i + 1);
                    let next_ident = match next {
                        Some(TokenTree::Ident(next)) => Some(next.to_string()),
                        _ => None,
                    };
                    match word.as_str() {
                        "fn" | "mod" | "struct" | "enum" | "union" | "trait" | "type" | "const"
                        | "static" => self.items.extend(next_ident),
                        "macro_rules" => {
                            if let Some(TokenTree::Ident(name)) = trees.get(i + 2) {
                                self.items.insert(name.to_string());
                                let names = self.macros.entry(name.to_string()).or_default();
                                if let Some(TokenTree::Group(definition)) = trees.get(i + 3) {
                                    super::walk::idents(definition.stream(), names);
                                }
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
                            // A `use` in a nested block is in effect only there, and one under
                            // `#[cfg]` maybe not at all: what it names is unknown.
                            let conditional = depth != 1 || after_cfg(&trees[..i]);
                            match syn::parse2::<syn::ItemUse>(item) {
                                Ok(item) if conditional => self.hide_use(String::new(), &item.tree),
                                Ok(item) => self.add_use(String::new(), &item.tree, true),
                                // A `use` the walk cannot read: any short path may be its.
                                Err(_) => {
                                    self.foreign_glob = true;
                                    self.body_glob = true;
                                }
                            }
                            skip_to = end;
                        }
                        _ => {
                            // A call, a path's head (`nn::`) or a macro (`vec!`); a single
                            // `:` is a type annotation (`let features: fn(..) = ..`,
                            // `|features: &dyn Fn(..)|`), so the name is a binding.
                            let called = match next {
                                Some(TokenTree::Group(g)) => {
                                    g.delimiter() == proc_macro2::Delimiter::Parenthesis
                                }
                                Some(TokenTree::Punct(p)) => {
                                    p.as_char() == '!'
                                        || (p.as_char() == ':' && p.spacing() == Spacing::Joint)
                                }
                                _ => false,
                            };
                            let after_path = i > 0
                                && matches!(&trees[i - 1], TokenTree::Punct(p)
                                    if p.as_char() == '.' || p.as_char() == ':');
                            // `name!(..)`: a macro that may expand to items (`fn features`).
                            let invoked = matches!(next, Some(TokenTree::Punct(p))
                                    if p.as_char() == '!' && p.spacing() == Spacing::Alone)
                                && matches!(trees.get(i + 2), Some(TokenTree::Group(_)));
                            let own =
                                self.macros.contains_key(&word) || self.scope_items.contains(&word);
                            if invoked && (own || !DEFINE_NOTHING.contains(&word.as_str())) {
                                self.body_glob = true;
                            }
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

    /// The names a `use` tree binds, as names the body may define: they hide the module's
    /// functions and resolve to nothing (a glob hides every name).
    fn hide_use(&mut self, prefix: String, tree: &UseTree) {
        match tree {
            UseTree::Path(path) => self.hide_use(path.ident.to_string(), &path.tree),
            UseTree::Name(name) => {
                let name = if name.ident == "self" {
                    prefix
                } else {
                    name.ident.to_string()
                };
                self.body_uses.insert(name.clone());
                self.items.insert(name);
            }
            UseTree::Rename(rename) => {
                self.body_uses.insert(rename.rename.to_string());
                self.items.insert(rename.rename.to_string());
            }
            UseTree::Glob(_) => {
                self.body_glob = true;
                self.foreign_glob = true;
            }
            UseTree::Group(group) => {
                for tree in &group.items {
                    self.hide_use(prefix.clone(), tree);
                }
            }
        }
    }

    /// Reads one `use` tree under `prefix`; `in_body` for a `use` of the body itself.
    fn add_use(&mut self, prefix: String, tree: &UseTree, in_body: bool) {
        let join = |name: &str| {
            if prefix.is_empty() {
                name.to_string()
            } else {
                format!("{prefix}::{name}")
            }
        };
        match tree {
            UseTree::Path(path) => self.add_use(join(&path.ident.to_string()), &path.tree, in_body),
            UseTree::Name(name) => {
                let name = name.ident.to_string();
                let (name, target) = if name == "self" {
                    let last = prefix.rsplit("::").next().unwrap_or_default().to_string();
                    (last, prefix.clone())
                } else {
                    (name.clone(), join(&name))
                };
                if in_body {
                    self.body_uses.insert(name.clone());
                }
                self.add_name(name, target);
            }
            UseTree::Rename(rename) => {
                let target = if rename.ident == "self" {
                    prefix.clone()
                } else {
                    join(&rename.ident.to_string())
                };
                if in_body {
                    self.body_uses.insert(rename.rename.to_string());
                }
                self.add_name(rename.rename.to_string(), target);
            }
            UseTree::Glob(_) => {
                // A glob of the body's own hides the module's functions of every name it
                // brings, candle's too (`use candle_nn::*` brings a `linear`).
                if in_body {
                    self.body_glob = true;
                }
                if !is_candle(&prefix) {
                    self.foreign_glob = true;
                }
            }
            UseTree::Group(group) => {
                for tree in &group.items {
                    self.add_use(prefix.clone(), tree, in_body);
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

    /// The names the definition of the body's own `macro_rules! name` holds, if it has one.
    pub fn body_macro(&self, name: &str) -> Option<&BTreeSet<String>> {
        self.macros.get(name)
    }

    /// Whether a call of `name` may be of something the body defines, binds or imports
    /// (a `use crate::other::features;` in the body hides the module's own `features`).
    pub fn shadows(&self, name: &str) -> bool {
        self.items.contains(name)
            || self.not_only_called.contains(name)
            || self.body_uses.contains(name)
            || self.body_glob
    }

    /// The full path of a call's path of two segments or more, when it certainly names
    /// candle's, candle-nn's or candle-contracts' item; `None` when it may be the user's own.
    /// A path's first segment is a module or a type, never a local: `let loss = ...` does not
    /// hide `loss::nll`.
    pub fn resolve(&self, segments: &[String], absolute: bool) -> Option<String> {
        let (first, rest) = segments.split_first()?;
        let root = if absolute {
            first.clone()
        } else if self.items.contains(first) || self.scope_items.contains(first) {
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

    /// What a path's first segment means with no `use` in sight: only the crates' own names.
    /// The file's `use`s are not visible to an attribute macro, and a file may have a module
    /// of its own named `nn`, `ops` or `loss` (a soft-label `loss::nll`, an `ops::softmax`
    /// with a temperature), so a bare `nn::`, `ops::` or `loss::` is unknown: the arguments
    /// cannot tell candle's function from one of the same name and arity in the crate.
    fn default_root(&self, first: &str, rest: &[String]) -> Option<String> {
        match (first, rest) {
            ("candle_core" | "candle_nn" | "candle_contracts" | "candle", _) => Some(first.into()),
            ("Tensor", [_]) if self.tensor_named => Some("candle_core::Tensor".into()),
            _ => None,
        }
    }

    /// Whether `ty` (a `Tensor`, `&Tensor`) is certainly candle's: written in full, or named
    /// through a `use` in sight of candle's `Tensor`.
    pub fn is_candle_tensor(&self, ty: &Type) -> bool {
        let path = match ty {
            Type::Reference(reference) => return self.is_candle_tensor(&reference.elem),
            Type::Paren(paren) => return self.is_candle_tensor(&paren.elem),
            Type::Path(path) if is_tensor_type(ty) => path,
            _ => return false,
        };
        let segments: Vec<String> = path
            .path
            .segments
            .iter()
            .map(|s| s.ident.to_string())
            .collect();
        // The signature is read outside the body: the body's own `use`s do not count.
        let first = segments.first().map(String::as_str).unwrap_or_default();
        if self.body_uses.contains(first) || self.body_glob {
            return false;
        }
        let full = match segments.as_slice() {
            [single] => self.imported(single),
            _ => self.resolve(&segments, path.path.leading_colon.is_some()),
        };
        full.as_deref() == Some("candle_core::Tensor")
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

fn is_candle(path: &str) -> bool {
    let head = path.split("::").next().unwrap_or_default();
    matches!(
        head,
        "candle_core" | "candle_nn" | "candle_contracts" | "candle"
    )
}

/// The standard library's macros, which expand to expressions and define no items (unless
/// the code defines its own of the name, which makes a body's items unknown anyway).
const DEFINE_NOTHING: &[&str] = &[
    "println",
    "print",
    "eprintln",
    "eprint",
    "format",
    "format_args",
    "write",
    "writeln",
    "assert",
    "assert_eq",
    "assert_ne",
    "debug_assert",
    "debug_assert_eq",
    "debug_assert_ne",
    "panic",
    "todo",
    "unreachable",
    "unimplemented",
    "vec",
    "matches",
    "dbg",
    "concat",
    "stringify",
    "line",
    "column",
    "file",
    "module_path",
    "cfg",
    "env",
    "option_env",
    "include_str",
    "include_bytes",
];

/// Whether `ty` names `Tensor` with a one-segment path.
fn names_tensor(ty: &Type) -> bool {
    match ty {
        Type::Reference(reference) => names_tensor(&reference.elem),
        Type::Path(path) => path.qself.is_none() && path.path.is_ident("Tensor"),
        _ => false,
    }
}

/// Whether the tokens before a `use` end with a `#[cfg(..)]` or `#[cfg_attr(..)]` attribute
/// (a `pub` or `pub(crate)` between them included).
fn after_cfg(before: &[TokenTree]) -> bool {
    let mut end = before.len();
    while end > 0 {
        match &before[end - 1] {
            TokenTree::Ident(ident) if ident == "pub" => end -= 1,
            TokenTree::Group(group)
                if group.delimiter() == proc_macro2::Delimiter::Parenthesis
                    && matches!(before.get(end.wrapping_sub(2)), Some(TokenTree::Ident(i)) if i == "pub") =>
            {
                end -= 1;
            }
            TokenTree::Group(group) if group.delimiter() == proc_macro2::Delimiter::Bracket => {
                let is_cfg = group.stream().into_iter().next().is_some_and(
                    |t| matches!(t, TokenTree::Ident(i) if i == "cfg" || i == "cfg_attr"),
                );
                if is_cfg {
                    return true;
                }
                // Another attribute (`#[allow(..)]`): look before it.
                end = end.saturating_sub(2);
            }
            _ => return false,
        }
    }
    false
}
