//! Compile-time shape and dtype checking of a contracted function's body, with the analysis
//! the CLI runs too (`candle-contracts-analysis`): the body is parsed read-only and walked over
//! an index of what the macro can see (`file`: its crate, its own source file, or its item
//! alone); each call that certainly fails becomes a spanned error. The expansion never sees the parse: it
//! emits the user's tokens, and a body that does not parse is not analysed.
//!
//! `text` holds how messages quote code (printed from tokens).

mod file;
mod text;

#[cfg(test)]
mod tests;

use candle_contracts_analysis::contract::read as read_contract;
use candle_contracts_analysis::{
    FileId, Finding, FnId, Function, Index, ModId, SourceText, walk_for_findings,
};
use candle_contracts_shapes::Contract;
use proc_macro2::{Delimiter, Group, Punct, Spacing, Span, TokenStream, TokenTree};
use quote::quote;
use std::collections::BTreeMap;
use syn::{Block, ImplItem, Item, Signature};

/// The errors of the body of `sig` against its contract's tensor clauses (`contract`, as the
/// macro lowered its validated clauses).
pub fn check_function(contract: &Contract, sig: &Signature, body: &Group) -> Vec<syn::Error> {
    let Ok(block) = syn::parse2::<Block>(TokenTree::Group(body.clone()).into()) else {
        return Vec::new();
    };
    let name = sig.ident.to_string();
    if let Some(view) = file::of_file()
        && let Some(id) = view.locate(&name, &block)
    {
        return check(&view.index, id, sig, &block, contract);
    }
    let alone = Item::Fn(syn::ItemFn {
        attrs: Vec::new(),
        vis: syn::Visibility::Inherited,
        sig: sig.clone(),
        block: Box::new(block.clone()),
    });
    let view = file::of_item(alone);
    match view.locate(&name, &block) {
        Some(id) => check(&view.index, id, sig, &block, contract),
        None => Vec::new(),
    }
}

/// The errors of `sig` and `block` (the macro's own tokens) with `contract`, standing where
/// the function `id` of `index` stands.
fn check(
    index: &Index,
    id: FnId,
    sig: &Signature,
    block: &Block,
    contract: &Contract,
) -> Vec<syn::Error> {
    let def = &index.fns[id];
    let function = Function {
        sig,
        block,
        contract,
        ..Function::of(def, contract)
    };
    walk_for_findings(index, &Tokens, function)
        .into_iter()
        .map(error)
        .collect()
}

/// A finding as a compile error: the message, its note and its help, spanned on the code it
/// is about.
fn error(finding: Finding) -> syn::Error {
    let mut message = finding.message;
    message.push_str(&format!("\n= note: {}", finding.note));
    if let Some(help) = finding.help {
        message.push_str(&format!("\n= help: {help}"));
    }
    // Stand-in tokens carrying the first and the last span: the error covers what lies between.
    let spanned = |span: Span| {
        let mut punct = Punct::new('.', Spacing::Alone);
        punct.set_span(span);
        TokenTree::Punct(punct)
    };
    let tokens: TokenStream = [spanned(finding.site.first), spanned(finding.site.last)]
        .into_iter()
        .collect();
    syn::Error::new_spanned(tokens, message)
}

/// How the macro quotes code: printed from its tokens (a span's own text needs `Span::join`,
/// which stable proc macros lack).
struct Tokens;

impl SourceText for Tokens {
    fn text(&self, _: FileId, tokens: &TokenStream) -> String {
        text::compact(tokens)
    }
}

/// `#[contract]` without clauses on an `impl` block or an inline module: the contracted
/// functions inside are checked with each other's contracts in sight, and each inner
/// `#[contract(...)]` is told so (it then skips its own analysis). `None` for any other item.
pub fn expand_scope(input: &TokenStream) -> Option<TokenStream> {
    let item = syn::parse2::<Item>(input.clone()).ok()?;
    // Each contracted function, with the clauses of its struct's contract where it is a
    // method of a struct whose contract is in sight.
    let mut functions: Vec<(&Signature, &Block, TokenStream, Option<TokenStream>)> = Vec::new();
    let file = file::of_file();
    // Struct contracts by the struct's name: an inline module's own (its tokens, with their
    // spans), or for an `impl`, the file's (where the macro can read it).
    let mut by_name: BTreeMap<String, StructClauses> = BTreeMap::new();
    // The struct contract of an `impl`'s type where the file shows it (a struct declared in
    // another module: `use super::Model; impl Model`).
    let in_file = |block: &syn::ItemImpl| file.as_ref().and_then(|view| file_clauses(view, block));
    match &item {
        Item::Impl(block) => {
            if let (Some(clauses), Some(name)) = (in_file(block), self_type_name(&block.self_ty)) {
                by_name.insert(name, clauses);
            }
            for member in &block.items {
                if let ImplItem::Fn(function) = member
                    && !conditional(&function.attrs)
                    && let Some(args) = contract_args_or_bare(&function.attrs)
                {
                    let extra = self_type_name(&block.self_ty)
                        .and_then(|name| by_name.get(&name))
                        .and_then(StructClauses::always)
                        .filter(|_| !bare_contract(&function.attrs));
                    functions.push((&function.sig, &function.block, args, extra));
                }
            }
        }
        Item::Mod(module) => {
            let (_, items) = module.content.as_ref()?;
            for member in items {
                let Item::Struct(s) = member else {
                    continue;
                };
                let variants = candle_contracts_analysis::contract::fields::variants_of_struct(s);
                if !variants.is_empty() {
                    by_name
                        .entry(s.ident.to_string())
                        .or_insert_with(|| StructClauses {
                            variants: Vec::new(),
                        })
                        .variants
                        .extend(variants);
                }
            }
            for member in items {
                match member {
                    // Under `cfg`: it may not be compiled, and checks itself where it is.
                    Item::Fn(function) if conditional(&function.attrs) => {}
                    Item::Impl(block) if conditional(&block.attrs) => {}
                    Item::Fn(function) => {
                        if let Some(args) = contract_args_or_bare(&function.attrs) {
                            functions.push((&function.sig, &function.block, args, None));
                        }
                    }
                    Item::Impl(block) => {
                        let extra = own_clauses(block, &by_name)
                            .or_else(|| in_file(block))
                            .as_ref()
                            .and_then(StructClauses::always);
                        for member in &block.items {
                            if let ImplItem::Fn(function) = member
                                && !conditional(&function.attrs)
                                && let Some(args) = contract_args_or_bare(&function.attrs)
                            {
                                // A bare `#[contract]` adds no guard: the struct's clauses are
                                // not checked on its calls.
                                let extra = match bare_contract(&function.attrs) {
                                    true => None,
                                    false => extra.clone(),
                                };
                                functions.push((&function.sig, &function.block, args, extra));
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
        _ => return None,
    }
    let mut alone = None;
    let mut errors = Vec::new();
    for (sig, block, args, extra) in &functions {
        let mut args = args.clone();
        if let Some(clauses) = extra
            && sig.receiver().is_some()
        {
            // After the method's own clauses, which may end with a comma (rustfmt's style for
            // a list over several lines): `,,` would not parse, and the method go unchecked.
            let ends_with_comma = args
                .clone()
                .into_iter()
                .last()
                .is_some_and(|t| matches!(&t, TokenTree::Punct(p) if p.as_char() == ','));
            if args.is_empty() || ends_with_comma {
                args.extend(quote!(#clauses));
            } else {
                args.extend(quote!(, #clauses));
            }
        }
        let args = &args;
        // Checked already by an outer `#[contract] mod` (a `#[contract] impl` inside one).
        if marked_by_scope(args) {
            continue;
        }
        // An inner contract that does not parse reports itself when it expands. One without
        // clauses (`#[contract]`) is the body's check alone, with the scope in sight.
        let read = match args.is_empty() {
            true => Some((Contract::default(), false)),
            false => read_contract(args),
        };
        let Some((contract, analysis_off)) = read else {
            continue;
        };
        if analysis_off {
            continue;
        }
        let name = sig.ident.to_string();
        if let Some(view) = &file
            && let Some(id) = view.locate(&name, block)
        {
            errors.extend(check(&view.index, id, sig, block, &contract));
            continue;
        }
        let view = alone.get_or_insert_with(|| file::of_item(item.clone()));
        if let Some(id) = view.locate(&name, block) {
            errors.extend(check(&view.index, id, sig, block, &contract));
        }
    }
    let errors = errors.into_iter().map(|e| e.to_compile_error());
    let marked = mark_inner_contracts(input.clone(), &by_name, &in_file);
    Some(quote! {
        #(#errors)*
        #marked
    })
}

/// A struct contract as the `#[contract] impl` hands it to its methods: the clauses of each
/// struct of the name (twins under opposite `cfg`s), each with the predicate of the `cfg` it
/// is compiled under (`None`: wherever the `impl` is).
#[derive(Clone)]
struct StructClauses {
    variants: Vec<(Option<TokenStream>, TokenStream)>,
}

impl StructClauses {
    /// The clauses where the struct's contract is there under every `cfg` (the analysis takes
    /// facts only from those).
    fn always(&self) -> Option<TokenStream> {
        match self.variants.as_slice() {
            [(None, clauses)] => Some(clauses.clone()),
            _ => None,
        }
    }
}

/// The struct contract of an `impl`'s type, found in the file by the owner of one of its
/// methods (whatever path the header writes the type by).
fn file_clauses(view: &file::View, block: &syn::ItemImpl) -> Option<StructClauses> {
    // Every method of the block has one owner and one module: the first found decides.
    let (key, module) = block
        .items
        .iter()
        .find_map(|member| {
            let ImplItem::Fn(function) = member else {
                return None;
            };
            let name = function.sig.ident.to_string();
            let name = name.strip_prefix("r#").unwrap_or(&name);
            view.method_place(name, &function.block)
        })
        .map_or((None, None), |(key, module): (Option<String>, _)| {
            (key, Some(module))
        });
    // A struct the index resolved the `impl` to (one there under every `cfg`): its contract,
    // or its contracts under `cfg_attr`s.
    if let Some(key) = &key {
        let variants = match view.index.struct_clauses(key) {
            Some(clauses) => reparse_variants(&[(None, clauses.clone())])?,
            None => reparse_variants(view.index.struct_contracts_under_cfg(key))?,
        };
        return (!variants.is_empty()).then_some(StructClauses { variants });
    }
    // An `impl` under `cfg` (or in a module under one), which the index does not resolve:
    // its type as the header writes it, from its module (`use super::Net; impl Net`), where
    // that is a struct there under every `cfg`.
    let module = module?;
    let syn::Type::Path(path) = &*block.self_ty else {
        return None;
    };
    if path.qself.is_some() {
        return None;
    }
    let segments: Vec<String> = path
        .path
        .segments
        .iter()
        .map(|segment| segment.ident.to_string())
        .collect();
    if let Some(key) = resolved_type(view, module, &segments) {
        let variants = match view.index.struct_clauses(&key) {
            Some(clauses) => reparse_variants(&[(None, clauses.clone())])?,
            None => reparse_variants(view.index.struct_contracts_under_cfg(&key))?,
        };
        if !variants.is_empty() {
            return Some(StructClauses { variants });
        }
    }
    // A struct under `cfg` (or in a module under one, which the index leaves unresolved): the
    // struct of the name the `impl` writes, declared in the module its path names (`impl P`,
    // `impl self::P`: the `impl`'s own; `impl super::P`: its parent).
    // `use super::Net; impl Net`: the path the `use` (or each `use` under `cfg`) names.
    let home = &view.index.modules[module];
    let segments = match segments.as_slice() {
        [name] if !home.items.contains_key(name) => match home.uses.get(name) {
            Some(path) if !path.is_empty() => path.clone(),
            Some(_) => return None,
            None => match home.conditional_uses.get(name).map(Vec::as_slice) {
                Some([first, rest @ ..])
                    if rest
                        .iter()
                        .all(|path| same_declaration(view, module, path, first)) =>
                {
                    first.clone()
                }
                _ => segments,
            },
        },
        _ => segments,
    };
    let (name, prefix) = segments.split_last()?;
    let declared_in = match prefix {
        [] => module,
        prefix => match view.index.resolve(module, prefix) {
            candle_contracts_analysis::Resolved::Mod(declared_in) => declared_in,
            _ => return None,
        },
    };
    let variants = reparse_variants(view.index.struct_contracts_in(declared_in, name))?;
    (!variants.is_empty()).then_some(StructClauses { variants })
}

/// The type a path names from `module`: as the index resolves it, or, for one name that only
/// `use`s under `cfg` bring (`#[cfg(test)] use crate::Net; #[cfg(not(test))] use
/// super::Net;`), the one type every such `use` names, where no glob may bring another (one of
/// them is compiled wherever the `impl` that names it compiles).
fn resolved_type(view: &file::View, module: ModId, segments: &[String]) -> Option<String> {
    use candle_contracts_analysis::Resolved;
    if let Resolved::Type(key) = view.index.resolve(module, segments) {
        return Some(key);
    }
    let [name] = segments else {
        return None;
    };
    let home = &view.index.modules[module];
    if !home.globs.is_empty() || home.items.contains_key(name) {
        return None;
    }
    let paths = home.conditional_uses.get(name)?;
    let mut keys = paths
        .iter()
        .map(|path| match view.index.resolve(module, path) {
            Resolved::Type(key) => Some(key),
            _ => None,
        });
    let first = keys.next()??;
    keys.all(|key| key.as_ref() == Some(&first))
        .then_some(first)
}

/// Whether two paths from `module` name one item: the same last name in the same module.
fn same_declaration(view: &file::View, module: ModId, a: &[String], b: &[String]) -> bool {
    let (Some((name_a, prefix_a)), Some((name_b, prefix_b))) = (a.split_last(), b.split_last())
    else {
        return false;
    };
    let home = |prefix: &[String]| match prefix {
        [] => Some(module),
        prefix => match view.index.resolve(module, prefix) {
            candle_contracts_analysis::Resolved::Mod(id) => Some(id),
            _ => None,
        },
    };
    name_a == name_b && home(prefix_a).is_some_and(|id| home(prefix_b) == Some(id))
}

/// A struct's contracts as the index holds them, in the compiler's own tokens (from their
/// text: the file's index holds proc-macro2's own).
fn reparse_variants(
    variants: &[(Option<TokenStream>, TokenStream)],
) -> Option<Vec<(Option<TokenStream>, TokenStream)>> {
    let reparse = |tokens: &TokenStream| tokens.to_string().parse::<TokenStream>().ok();
    variants
        .iter()
        .map(|(predicate, clauses)| {
            let predicate = match predicate {
                Some(predicate) => Some(reparse(predicate)?),
                None => None,
            };
            Some((predicate, reparse(clauses)?))
        })
        .collect()
}

/// The contract of a struct declared in the module, of an `impl` that names it without a
/// path (`impl inner::Attention` is not the `Attention` declared beside it).
fn own_clauses(
    block: &syn::ItemImpl,
    by_name: &BTreeMap<String, StructClauses>,
) -> Option<StructClauses> {
    match &*block.self_ty {
        syn::Type::Path(path) if path.qself.is_none() && path.path.segments.len() == 1 => by_name
            .get(&path.path.segments[0].ident.to_string())
            .cloned(),
        _ => None,
    }
}

/// The tokens of a `#[contract(...)]` attribute, or none for a bare `#[contract]`; `None`
/// where the item has neither.
fn contract_args_or_bare(attrs: &[syn::Attribute]) -> Option<TokenStream> {
    contract_args(attrs).or_else(|| bare_contract(attrs).then(TokenStream::new))
}

/// Whether an item is under `cfg` (its own `#[cfg(..)]`).
fn conditional(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| attr.path().is_ident("cfg"))
}

/// Whether the item's contract is a bare `#[contract]` (no list).
fn bare_contract(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| {
        candle_contracts_analysis::contract::is_contract(attr)
            && matches!(attr.meta, syn::Meta::Path(_))
    })
}

/// The tokens of a `#[contract(...)]` (or `#[candle_contracts::contract(...)]`) attribute.
fn contract_args(attrs: &[syn::Attribute]) -> Option<TokenStream> {
    candle_contracts_analysis::contract::contract_list(attrs)
}

/// The item's own tokens, with `__checked_by_scope = true` (and `__struct_contract(...)`, the
/// struct's clauses, for an `impl` of a struct with a contract) added to each non-empty
/// `#[contract(...)]` directly inside its braces.
fn mark_inner_contracts(
    input: TokenStream,
    by_name: &BTreeMap<String, StructClauses>,
    in_file: &dyn Fn(&syn::ItemImpl) -> Option<StructClauses>,
) -> TokenStream {
    // An `impl` item: its own type's clauses; a module: each of its `impl`s finds its own.
    let header: Vec<TokenTree> = input.clone().into_iter().collect();
    let own = match header
        .iter()
        .any(|t| matches!(t, TokenTree::Ident(i) if i == "impl"))
    {
        // The file's contract of the type this `impl` is of, found by its method (whatever
        // path the header writes it by).
        true => impl_type_name(&header).and_then(|(name, _)| by_name.get(&name)),
        false => None,
    };
    input
        .into_iter()
        .map(|tree| match tree {
            TokenTree::Group(group) if group.delimiter() == Delimiter::Brace => {
                let mut marked = Group::new(
                    Delimiter::Brace,
                    mark_attributes(group.stream(), own, by_name, in_file, true),
                );
                marked.set_span(group.span());
                TokenTree::Group(marked)
            }
            other => other,
        })
        .collect()
}

fn mark_attributes(
    stream: TokenStream,
    struct_clauses: Option<&StructClauses>,
    by_name: &BTreeMap<String, StructClauses>,
    in_file: &dyn Fn(&syn::ItemImpl) -> Option<StructClauses>,
    checked: bool,
) -> TokenStream {
    let mut out: Vec<TokenTree> = Vec::new();
    // Where the `impl` being read starts in `out`, to name its type at its brace.
    let mut impl_start = 0;
    // Inside a module, the methods of its `impl` blocks are the scope's too: an `impl` that
    // starts an item (not `-> impl Trait`) opens its block at the next brace.
    let (mut item_start, mut impl_header) = (true, false);
    // The `#[contract]`s of the item being read (their places in `out`, and whether each is
    // bare), marked once its kind is known; and whether the item is under `cfg` (the scope
    // does not check it: it checks itself where it is compiled).
    let mut pending: Vec<(usize, bool)> = Vec::new();
    let mut item_cfg = false;
    // A module inside (`pub mod inner { impl Model { .. } }`): the methods of its `impl`s
    // take their struct's clauses too, unless it is a `#[contract] mod` itself (it marks its
    // own). The scope does not check them: each checks itself.
    let (mut mod_header, mut item_contracted) = (false, false);
    for tree in stream {
        if let TokenTree::Ident(ident) = &tree
            && !pending.is_empty()
        {
            match ident.to_string().as_str() {
                "pub" | "async" | "unsafe" | "const" | "extern" | "default" => {}
                word => {
                    let function = word == "fn";
                    item_contracted = true;
                    for (at, bare) in pending.drain(..) {
                        let TokenTree::Group(attribute) = &out[at] else {
                            continue;
                        };
                        out[at] = match bare {
                            // A bare one only on a function the scope checked.
                            true if !function || item_cfg || !checked => continue,
                            true => mark_bare(attribute),
                            // One under `cfg` (or in an `impl` under `cfg`) takes the struct's
                            // clauses, and checks itself.
                            false => {
                                let checked = checked && !(function && item_cfg);
                                let mut marked = Group::new(
                                    Delimiter::Bracket,
                                    mark_contract(attribute.stream(), struct_clauses, checked),
                                );
                                marked.set_span(attribute.span());
                                TokenTree::Group(marked)
                            }
                        };
                    }
                }
            }
        }
        let after_hash = matches!(out.last(), Some(TokenTree::Punct(p)) if p.as_char() == '#');
        match tree {
            TokenTree::Group(group) if after_hash && group.delimiter() == Delimiter::Bracket => {
                let trees: Vec<TokenTree> = group.stream().into_iter().collect();
                let is_contract = is_bare_contract(&trees)
                    || (trees.len() >= 2
                        && matches!(&trees[trees.len() - 2], TokenTree::Ident(i) if i == "contract")
                        && matches!(trees.last(), Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Parenthesis))
                    || contract_under_cfg(&trees);
                if is_contract {
                    pending.push((out.len(), is_bare_contract(&trees)));
                }
                item_cfg |= matches!(trees.first(), Some(TokenTree::Ident(i)) if i == "cfg");
                out.push(TokenTree::Group(group));
                item_start = true;
            }
            TokenTree::Group(group) if group.delimiter() == Delimiter::Brace => {
                pending.clear();
                let stream = match impl_header {
                    true => {
                        // `impl inner::Attention` in the module is not the `Attention`
                        // declared beside it; the file may show which it is.
                        let own = impl_type_name(&out[impl_start..])
                            .filter(|(_, qualified)| !qualified)
                            .and_then(|(name, _)| by_name.get(&name).cloned())
                            .or_else(|| {
                                let mut tokens: TokenStream =
                                    out[impl_start..].iter().cloned().collect();
                                tokens.extend([TokenTree::Group(group.clone())]);
                                in_file(&syn::parse2(tokens).ok()?)
                            });
                        // An `impl` under `cfg` is not checked by the scope.
                        let checked = checked && !item_cfg;
                        mark_attributes(group.stream(), own.as_ref(), by_name, in_file, checked)
                    }
                    false if mod_header && !item_contracted => {
                        mark_attributes(group.stream(), None, &BTreeMap::new(), in_file, false)
                    }
                    false => group.stream(),
                };
                let mut marked = Group::new(Delimiter::Brace, stream);
                marked.set_span(group.span());
                out.push(TokenTree::Group(marked));
                (item_start, impl_header, item_cfg) = (true, false, false);
                (mod_header, item_contracted) = (false, false);
            }
            TokenTree::Ident(ident) => {
                if ident == "impl" && item_start {
                    impl_header = true;
                    impl_start = out.len();
                }
                mod_header |= ident == "mod" && item_start;
                item_start = ident == "pub" || ident == "unsafe" || ident == "default";
                out.push(TokenTree::Ident(ident));
            }
            TokenTree::Punct(p) => {
                // `#` of an attribute, `;` ending an item.
                item_start = p.as_char() == ';' || p.as_char() == '#' || p.as_char() == '!';
                if p.as_char() == ';' {
                    pending.clear();
                    impl_header = false;
                    item_cfg = false;
                    (mod_header, item_contracted) = (false, false);
                }
                out.push(TokenTree::Punct(p));
            }
            // `pub(crate)`'s parentheses.
            TokenTree::Group(group) => {
                item_start = group.delimiter() == Delimiter::Parenthesis
                    && matches!(out.last(), Some(TokenTree::Ident(i)) if i == "pub");
                out.push(TokenTree::Group(group));
            }
            other => {
                item_start = false;
                out.push(other);
            }
        }
    }
    out.into_iter().collect()
}

/// The name of the type an `impl` header (`impl<T> Trait for Model<T> where ..`) is for: its
/// last identifier outside angle brackets, before any `where`; and whether it is written by a
/// path (`impl inner::Model`).
fn impl_type_name(header: &[TokenTree]) -> Option<(String, bool)> {
    let mut depth = 0i32;
    let mut last = None;
    // `impl inner::Attention`: written by a path (`true` with the name).
    let mut qualified = false;
    let mut after_minus = false;
    for tree in header {
        let arrow = std::mem::replace(
            &mut after_minus,
            matches!(tree, TokenTree::Punct(p) if p.as_char() == '-'),
        );
        match tree {
            TokenTree::Punct(p) if p.as_char() == '<' => depth += 1,
            // The `>` of `->` (`F: Fn(&Tensor) -> Result<Tensor>`) closes nothing.
            TokenTree::Punct(p) if p.as_char() == '>' && arrow => {}
            TokenTree::Punct(p) if p.as_char() == '>' && depth > 0 => depth -= 1,
            // `self::Model` is this module's.
            TokenTree::Punct(p) if depth == 0 && p.as_char() == ':' => {
                qualified |= last.as_deref() != Some("self");
            }
            TokenTree::Ident(i) if depth == 0 && i == "where" => break,
            TokenTree::Ident(i) if depth == 0 && i == "for" => qualified = false,
            TokenTree::Ident(i) if depth == 0 && i != "impl" && i != "unsafe" => {
                last = Some(i.to_string());
            }
            TokenTree::Group(g) if g.delimiter() == Delimiter::Brace => break,
            _ => {}
        }
    }
    last.map(|name| (name, qualified))
}

/// The name of an `impl`'s type: its path's last segment.
fn self_type_name(ty: &syn::Type) -> Option<String> {
    match ty {
        syn::Type::Path(path) if path.qself.is_none() => {
            path.path.segments.last().map(|s| s.ident.to_string())
        }
        _ => None,
    }
}

/// Whether a contract's tokens hold `__checked_by_scope` (with the struct's clauses, where
/// it has them): an outer `#[contract] mod` marked it, so an inner `#[contract] impl`
/// neither checks nor marks it again.
fn marked_by_scope(args: &TokenStream) -> bool {
    args.clone()
        .into_iter()
        .any(|tree| matches!(tree, TokenTree::Ident(i) if i == crate::syntax::kw::CHECKED_BY_SCOPE))
}

/// Whether an attribute's tokens are a bare `contract` (`#[contract]`,
/// `#[candle_contracts::contract]`).
fn is_bare_contract(trees: &[TokenTree]) -> bool {
    matches!(trees.last(), Some(TokenTree::Ident(i)) if i == "contract")
        && (trees.len() == 1
            || matches!(&trees[trees.len() - 2], TokenTree::Punct(p) if p.as_char() == ':'))
}

/// A bare `#[contract]` on a function the scope checked: `#[contract(__checked_by_scope =
/// true)]`, which adds nothing to what runs either.
fn mark_bare(attribute: &Group) -> TokenTree {
    let mut trees: Vec<TokenTree> = attribute.stream().into_iter().collect();
    let option = syn::Ident::new(crate::syntax::kw::CHECKED_BY_SCOPE, Span::call_site());
    trees.push(TokenTree::Group(Group::new(
        Delimiter::Parenthesis,
        quote!(#option = true),
    )));
    let mut marked = Group::new(Delimiter::Bracket, trees.into_iter().collect());
    marked.set_span(attribute.span());
    TokenTree::Group(marked)
}

/// Whether an attribute's tokens are a `cfg_attr(..)` that may hold a contract.
fn contract_under_cfg(trees: &[TokenTree]) -> bool {
    fn names_contract(stream: TokenStream) -> bool {
        stream.into_iter().any(|tree| match tree {
            TokenTree::Ident(i) => i == "contract",
            TokenTree::Group(g) => names_contract(g.stream()),
            _ => false,
        })
    }
    matches!(trees, [TokenTree::Ident(name), TokenTree::Group(list)]
        if name == "cfg_attr" && names_contract(list.stream()))
}

/// A contract attribute's tokens marked for the scope (see [`mark_attribute`]); a struct
/// contract under `cfg_attr(p, ..)` is handed on under that `cfg`:
/// `cfg_attr(all(), cfg_attr(p, contract(.., __struct_contract(..))), cfg_attr(not(p),
/// contract(..)))`.
fn mark_contract(
    stream: TokenStream,
    struct_clauses: Option<&StructClauses>,
    checked: bool,
) -> TokenStream {
    let mut attributes = mark_piece(stream, struct_clauses, checked);
    match attributes.len() {
        1 => attributes.remove(0),
        _ => quote!(cfg_attr(all(), #(#attributes),*)),
    }
}

/// One attribute (`contract(..)`, `cfg_attr(p, ..)`) marked, as the attributes it becomes. A
/// contract under `cfg_attr` takes the struct's clauses and checks itself where compiled.
fn mark_piece(
    stream: TokenStream,
    struct_clauses: Option<&StructClauses>,
    checked: bool,
) -> Vec<TokenStream> {
    let trees: Vec<TokenTree> = stream.clone().into_iter().collect();
    if let [TokenTree::Ident(name), TokenTree::Group(list)] = trees.as_slice()
        && name == "cfg_attr"
        && list.delimiter() == Delimiter::Parenthesis
    {
        let mut pieces = crate::parse::split_commas(list.stream()).into_iter();
        let Some(predicate) = pieces.next() else {
            return vec![stream];
        };
        let mut inner = vec![predicate];
        for piece in pieces.filter(|piece| !piece.is_empty()) {
            inner.extend(mark_piece(piece, struct_clauses, false));
        }
        let mut marked = Group::new(Delimiter::Parenthesis, quote!(#(#inner),*));
        marked.set_span(list.span());
        return vec![quote!(#name #marked)];
    }
    let Some(struct_clauses) = struct_clauses else {
        return vec![mark_attribute(stream, None, checked)];
    };
    if let Some(clauses) = struct_clauses.always() {
        return vec![mark_attribute(stream, Some(&clauses), checked)];
    }
    // Each struct's clauses under its `cfg`, and none where no struct of the name is there.
    let without = mark_attribute(stream.clone(), None, checked);
    let mut attributes = Vec::new();
    let mut predicates = Vec::new();
    for (predicate, clauses) in &struct_clauses.variants {
        let with = mark_attribute(stream.clone(), Some(clauses), checked);
        if with.to_string() == without.to_string() {
            return vec![without];
        }
        let predicate = predicate.clone().unwrap_or_else(|| quote!(all()));
        attributes.push(quote!(cfg_attr(#predicate, #with)));
        predicates.push(predicate);
    }
    attributes.push(quote!(cfg_attr(not(any(#(#predicates),*)), #without)));
    attributes
}

/// `contract(x: f32[N])` → `contract(x: f32[N], __checked_by_scope = true)` (where `checked`;
/// the struct's clauses either way).
fn mark_attribute(
    stream: TokenStream,
    struct_clauses: Option<&TokenStream>,
    checked: bool,
) -> TokenStream {
    let mut trees: Vec<TokenTree> = stream.into_iter().collect();
    let is_contract = trees.len() >= 2
        && matches!(&trees[trees.len() - 2], TokenTree::Ident(i) if i == "contract");
    // An empty `#[contract()]` takes the struct's clauses too (the analysis gives them to
    // every method with a contract list), and is then checked by them; without any, it is
    // marked as a bare one is.
    // Marked by an outer scope already (a `#[contract] impl` in a `#[contract] mod`): its
    // mark or the struct's clauses it handed on.
    let handed_on = |args: &TokenStream| {
        args.clone().into_iter().any(|tree| {
            matches!(tree, TokenTree::Ident(i) if i == crate::syntax::kw::CHECKED_BY_SCOPE
                || i == crate::syntax::kw::STRUCT_CONTRACT)
        })
    };
    if let (true, Some(TokenTree::Group(args))) = (is_contract, trees.last())
        && args.delimiter() == Delimiter::Parenthesis
        && !handed_on(&args.stream())
    {
        let mut stream = args.stream();
        let mut added = Vec::new();
        if checked {
            let option = syn::Ident::new(crate::syntax::kw::CHECKED_BY_SCOPE, Span::call_site());
            added.push(quote!(#option = true));
        }
        if let Some(clauses) = struct_clauses {
            let name = syn::Ident::new(crate::syntax::kw::STRUCT_CONTRACT, Span::call_site());
            added.push(quote!(#name(#clauses)));
        }
        for option in added {
            let ends_with_comma = stream
                .clone()
                .into_iter()
                .last()
                .is_some_and(|t| matches!(&t, TokenTree::Punct(p) if p.as_char() == ','));
            stream.extend(if ends_with_comma || stream.is_empty() {
                option
            } else {
                quote!(, #option)
            });
        }
        let mut marked = Group::new(Delimiter::Parenthesis, stream);
        marked.set_span(args.span());
        let last = trees.len() - 1;
        trees[last] = TokenTree::Group(marked);
    }
    trees.into_iter().collect()
}
