//! What the macro sees beyond its item: the `use`s and item names of the module the item stands
//! in, read from the item's own source file (`proc_macro::Span::local_file`, stable since Rust
//! 1.88). Without them a bare `nn::`, `loss::` or `ops::` is unknown, since the file may have a
//! module of its own by that name.
//!
//! Silent where the file is not to be had or does not hold the item as written: no proc-macro
//! context (unit tests), no local file (rust-analyzer's server may give none), code another
//! macro generated, a file that does not parse, or a body that is not found exactly once. Then
//! the item alone is what the analysis sees, as before.
//!
//! Each file is parsed once per compiler process: its index is kept by the file's text (spans
//! cannot outlive one expansion, so the index holds text only, and a `use` is parsed again in
//! the expansion that needs it).

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use proc_macro2::{Delimiter, Group, TokenStream, TokenTree};
use quote::ToTokens;
use syn::{ImplItem, Item, Signature};

use super::scope::Scope;

/// A file, as text: its modules, and every token of it in order (macro bodies included).
struct FileIndex {
    modules: Vec<ModuleIndex>,
    tokens: Vec<String>,
}

/// One module of a file, as text.
struct ModuleIndex {
    /// Each function (free or in an `impl` block): its name, its body's tokens, and the
    /// generic parameters of its `impl` block.
    functions: Vec<(String, Vec<String>, Vec<String>)>,
    /// Each `use` tree without a `cfg`, printed.
    uses: Vec<String>,
    /// The names of its items.
    items: Vec<String>,
    /// Whether a macro call stands among its items (it may define any name).
    macro_call: bool,
}

thread_local! {
    static FILES: RefCell<HashMap<String, Rc<FileIndex>>> = RefCell::new(HashMap::new());
}

/// The scope of the module that holds the function `sig` with `body`, from its source file.
pub fn module_scope(sig: &Signature, body: &Group) -> Option<Scope> {
    if !proc_macro::is_available() {
        return None;
    }
    let path = proc_macro::Span::call_site().local_file()?;
    let text = std::fs::read_to_string(path).ok()?;
    let index = FILES.with(|files| {
        if let Some(index) = files.borrow().get(&text) {
            return Some(Rc::clone(index));
        }
        let tokens: TokenStream = text.parse().ok()?;
        let file = syn::parse2::<syn::File>(tokens.clone()).ok()?;
        let mut modules = Vec::new();
        index_module(&file.items, &mut modules);
        let index = Rc::new(FileIndex {
            modules,
            tokens: token_texts(tokens),
        });
        files.borrow_mut().insert(text, Rc::clone(&index));
        Some(index)
    })?;
    let name = sig.ident.to_string();
    let tokens = token_texts(body.to_token_stream());
    // The body's tokens once in the whole file, or the function found may be a twin of the one
    // expanding (in a fn body, a `const` block, a trait, a `macro_rules!` the index skips).
    if occurrences(&index.tokens, &tokens) != 1 {
        return None;
    }
    let mut holding = index.modules.iter().filter(|module| {
        module
            .functions
            .iter()
            .any(|(n, body, _)| *n == name && *body == tokens)
    });
    let module = holding.next()?;
    if holding.next().is_some() || module.macro_call {
        return None;
    }
    let mut scope = Scope::default();
    if let Some((_, _, generics)) = module
        .functions
        .iter()
        .find(|(n, body, _)| *n == name && *body == tokens)
    {
        scope.impl_generics.extend(generics.iter().cloned());
    }
    for tree in &module.uses {
        scope.uses.push(syn::parse_str(tree).ok()?);
    }
    scope.items.extend(module.items.iter().cloned());
    Some(scope)
}

/// Indexes the module of `items` and, after it, every inline module inside.
fn index_module(items: &[Item], modules: &mut Vec<ModuleIndex>) {
    let mut module = ModuleIndex {
        functions: Vec::new(),
        uses: Vec::new(),
        items: Vec::new(),
        macro_call: false,
    };
    let mut inner = Vec::new();
    for item in items {
        match item {
            Item::Fn(function) => {
                module.items.push(function.sig.ident.to_string());
                module.functions.push((
                    function.sig.ident.to_string(),
                    token_texts(function.block.to_token_stream()),
                    Vec::new(),
                ));
            }
            Item::Impl(block) => {
                let generics: Vec<String> =
                    super::generic_names(&block.generics).into_iter().collect();
                for member in &block.items {
                    if let ImplItem::Fn(function) = member {
                        module.functions.push((
                            function.sig.ident.to_string(),
                            token_texts(function.block.to_token_stream()),
                            generics.clone(),
                        ));
                    }
                }
            }
            // A `use` under `cfg` may be compiled out, leaving the name to a glob or the
            // prelude: what it names is unknown.
            Item::Use(tree) if super::is_conditional(&tree.attrs) => {
                use_names(&tree.tree, &mut module.items, &mut module.macro_call);
            }
            Item::Use(tree) => module.uses.push(tree.tree.to_token_stream().to_string()),
            Item::Macro(mac) if mac.ident.is_none() => module.macro_call = true,
            Item::Mod(inline) => {
                module.items.push(inline.ident.to_string());
                if let Some((_, content)) = &inline.content {
                    inner.push(content);
                }
            }
            other => module.items.extend(super::item_name(other)),
        }
    }
    modules.push(module);
    for content in inner {
        index_module(content, modules);
    }
}

/// The names a `use` tree binds; a glob may bind any name, as a macro call may.
fn use_names(tree: &syn::UseTree, names: &mut Vec<String>, any: &mut bool) {
    match tree {
        syn::UseTree::Path(path) if matches!(&*path.tree, syn::UseTree::Name(n) if n.ident == "self") =>
        {
            names.push(path.ident.to_string());
        }
        syn::UseTree::Path(path) => use_names(&path.tree, names, any),
        syn::UseTree::Name(name) => names.push(name.ident.to_string()),
        syn::UseTree::Rename(rename) => names.push(rename.rename.to_string()),
        syn::UseTree::Glob(_) => *any = true,
        syn::UseTree::Group(group) => {
            for tree in &group.items {
                use_names(tree, names, any);
            }
        }
    }
}

/// How many times `needle` stands in `haystack`, as a run of tokens.
fn occurrences(haystack: &[String], needle: &[String]) -> usize {
    if needle.is_empty() || needle.len() > haystack.len() {
        return 0;
    }
    haystack
        .windows(needle.len())
        .filter(|window| window == &needle)
        .count()
}

/// Each token's text, groups as their delimiters around their contents: the same for the
/// body the macro was given and the body parsed from the file, whatever the spacing.
fn token_texts(tokens: TokenStream) -> Vec<String> {
    let mut texts = Vec::new();
    push_texts(tokens, &mut texts);
    texts
}

fn push_texts(tokens: TokenStream, texts: &mut Vec<String>) {
    for token in tokens {
        match token {
            TokenTree::Group(group) => {
                let (open, close) = match group.delimiter() {
                    Delimiter::Parenthesis => ("(", ")"),
                    Delimiter::Brace => ("{", "}"),
                    Delimiter::Bracket => ("[", "]"),
                    Delimiter::None => ("", ""),
                };
                texts.push(open.to_string());
                push_texts(group.stream(), texts);
                texts.push(close.to_string());
            }
            other => texts.push(other.to_string()),
        }
    }
}
