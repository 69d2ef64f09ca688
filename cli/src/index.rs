//! The crates read: their module trees (inline and file modules), the items of each module,
//! its `use`s, every function with its contract, and the resolution of a path written in a
//! module to what it names.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::source::{FileId, Sources};
use crate::workspace::Target;
use candle_contracts_shapes::Contract;

/// Index of a module in [`Index::modules`].
pub type ModId = usize;
/// Index of a function in [`Index::fns`].
pub type FnId = usize;

/// What a name in a module stands for.
#[derive(Clone, Debug)]
pub enum Item {
    /// A module.
    Mod(ModId),
    /// A function.
    Fn(FnId),
    /// A struct, enum, union, trait or type alias, by its key (see [`Index::type_key`]).
    Type(String),
    /// A `const` or `static`, with its value when it is an integer literal.
    Const(Option<u64>),
    /// Anything else (a macro, an item the checker does not read).
    Other,
}

/// What a path resolves to.
#[derive(Clone, Debug)]
pub enum Resolved {
    /// A function of the crates read.
    Fn(FnId),
    /// A function associated with a type of the crates read (`Model::forward`), by name.
    Assoc(String, String),
    /// A type of the crates read.
    Type(String),
    /// A module of the crates read.
    Mod(ModId),
    /// A constant, with its integer value where known.
    Const(Option<u64>),
    /// A path into another crate, with the crate's real name first (`candle_core::Tensor`).
    External(Vec<String>),
    /// Nothing the checker can name.
    Unknown,
}

/// One module.
#[derive(Debug)]
pub struct Module {
    /// The crate it belongs to.
    pub krate: usize,
    /// The enclosing module.
    pub parent: Option<ModId>,
    /// `crate`, `crate::model`, ...
    pub path: Vec<String>,
    /// Its items by name.
    pub items: BTreeMap<String, Item>,
    /// Its `use`s: the name brought in, and the path it names (resolved in this module;
    /// empty when two `use`s of the name disagree).
    pub uses: BTreeMap<String, Vec<String>>,
    /// Its glob imports (`use super::*`).
    pub globs: Vec<Vec<String>>,
    /// Whether a macro invocation among its items may define names the index cannot see.
    pub opaque: bool,
}

/// A function's contract as written in a file: the text of each `#[contract(...)]` (two
/// attributes join into one contract, as the macro joins them).
#[derive(Debug)]
pub struct ContractText {
    /// Each attribute's clauses, as between its parentheses, with the byte offset of the text
    /// in the file.
    pub pieces: Vec<(String, usize)>,
    /// The clauses read by the engine; `None` when the engine cannot read them (the macro
    /// reports it).
    pub parsed: Option<Contract>,
    /// Whether an attribute says `static = false`: the body is not checked (the contract still
    /// is what callers see).
    pub analysis_off: bool,
}

/// One function (free, in an `impl` block, or a trait's provided method).
pub struct FnDef {
    /// Its name.
    pub name: String,
    /// As messages name it: `model::forward`, `Mlp::forward`.
    pub display: String,
    /// The module it is written in.
    pub module: ModId,
    /// The key of the `impl` block's type, for methods and associated functions.
    pub owner: Option<String>,
    /// The signature.
    pub sig: &'static syn::Signature,
    /// The body.
    pub block: &'static syn::Block,
    /// The file it is written in.
    pub file: FileId,
    /// Its `#[contract(...)]`s, if it has any.
    pub contract: Option<ContractText>,
    /// The generic parameters of its `impl` block (which shadow the module's names).
    pub impl_generics: Vec<String>,
}

impl std::fmt::Debug for FnDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FnDef")
            .field("display", &self.display)
            .field("contract", &self.contract)
            .finish_non_exhaustive()
    }
}

/// One crate read.
#[derive(Debug)]
struct CrateInfo {
    root: ModId,
    externs: BTreeMap<String, String>,
    lib_name: Option<String>,
}

/// Every crate read, and what its paths name.
#[derive(Debug, Default)]
pub struct Index {
    /// Every module.
    pub modules: Vec<Module>,
    /// Every function.
    pub fns: Vec<FnDef>,
    /// Files that cannot be read, or read as UTF-8 text: the message, naming the file.
    pub unreadable: Vec<String>,
    /// Files that do not parse: the message, with the parser's words and place.
    pub unparsable: Vec<String>,
    crates: Vec<CrateInfo>,
    methods: BTreeMap<(String, String), Vec<FnId>>,
    libs: BTreeMap<String, usize>,
    pending_impls: Vec<(ModId, Vec<String>, Vec<FnId>)>,
    external_methods: std::collections::BTreeSet<(String, String)>,
    fields: BTreeMap<String, (ModId, BTreeMap<String, FieldType>)>,
}

/// A field's declared type.
struct FieldType(&'static syn::Type);

impl std::fmt::Debug for FieldType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FieldType")
    }
}

impl Index {
    /// Reads the crates of `targets`, following each root's `mod` declarations.
    pub fn build(targets: &[Target], sources: &mut Sources) -> Index {
        let mut index = Index::default();
        // Libraries first, so that the other targets of their package can name them.
        let mut order: Vec<&Target> = targets.iter().filter(|t| t.is_lib).collect();
        order.extend(targets.iter().filter(|t| !t.is_lib));
        for target in order {
            let Some(file) = index.parse(&target.root, sources) else {
                continue;
            };
            let krate = index.crates.len();
            let root = index.add_module(krate, None, vec!["crate".to_string()]);
            index.crates.push(CrateInfo {
                root,
                externs: target.externs.clone(),
                lib_name: target.lib_name.clone().filter(|_| !target.is_lib),
            });
            if target.is_lib
                && let Some(name) = &target.lib_name
            {
                index.libs.insert(name.clone(), krate);
            }
            let dir = target
                .root
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_default();
            index.read_items(root, &file.1.items, file.0, &dir, sources);
        }
        for (module, self_ty, ids) in std::mem::take(&mut index.pending_impls) {
            let key = match index.resolve(module, &self_ty) {
                Resolved::Type(key) => key,
                // A method the crate adds to another crate's type (through its own trait).
                Resolved::External(path) => {
                    for id in ids {
                        let name = index.fns[id].name.clone();
                        index.external_methods.insert((path.join("::"), name));
                    }
                    continue;
                }
                _ => continue,
            };
            let type_name = self_ty.last().cloned().unwrap_or_default();
            for id in ids {
                let f = &mut index.fns[id];
                f.display = format!("{type_name}::{}", f.name);
                f.owner = Some(key.clone());
                index
                    .methods
                    .entry((key.clone(), f.name.clone()))
                    .or_default()
                    .push(id);
            }
        }
        index
    }

    fn parse(
        &mut self,
        path: &Path,
        sources: &mut Sources,
    ) -> Option<(FileId, &'static syn::File)> {
        let id = match sources.load(path) {
            Ok(id) => id,
            Err(error) => {
                self.unreadable
                    .push(format!("cannot read `{}`: {error}", path.display()));
                return None;
            }
        };
        match syn::parse_file(&sources.get(id).text) {
            // The syntax trees live as long as the run: the functions' bodies point into them.
            Ok(file) => Some((id, Box::leak(Box::new(file)))),
            Err(error) => {
                let start = error.span().start();
                self.unparsable.push(format!(
                    "`{}` does not parse: {error} at {}:{}",
                    sources.get(id).name,
                    start.line,
                    start.column + 1
                ));
                None
            }
        }
    }

    fn add_module(&mut self, krate: usize, parent: Option<ModId>, path: Vec<String>) -> ModId {
        self.modules.push(Module {
            krate,
            parent,
            path,
            items: BTreeMap::new(),
            uses: BTreeMap::new(),
            globs: Vec::new(),
            opaque: false,
        });
        self.modules.len() - 1
    }

    /// The key of a type named `name` in `module`: its crate and full path.
    pub fn type_key(&self, module: ModId, name: &str) -> String {
        let m = &self.modules[module];
        format!("{}:{}::{name}", m.krate, m.path.join("::"))
    }

    fn read_items(
        &mut self,
        module: ModId,
        items: &'static [syn::Item],
        file: FileId,
        dir: &Path,
        sources: &mut Sources,
    ) {
        for item in items {
            match item {
                syn::Item::Fn(f) => {
                    let id = self.add_fn(module, None, &f.sig, &f.block, &f.attrs, file, sources);
                    self.insert(module, f.sig.ident.to_string(), Item::Fn(id));
                }
                syn::Item::Mod(m) => self.read_mod(module, m, file, dir, sources),
                // Under `cfg` it may be compiled out, leaving the name to a glob or the
                // prelude: what it names is unknown.
                syn::Item::Use(u) if crate::walk::is_conditional(&u.attrs) => {
                    let mut names = BTreeMap::new();
                    crate::walk::use_names(&u.tree, Vec::new(), &mut names);
                    for name in names.into_keys() {
                        self.modules[module].uses.insert(name, Vec::new());
                    }
                }
                syn::Item::Use(u) => self.read_use(module, &u.tree, Vec::new()),
                syn::Item::Struct(s) => {
                    self.add_type(module, &s.ident);
                    let key = self.type_key(module, &s.ident.to_string());
                    // A field typed by a generic parameter is of no type the index knows.
                    let generics = generic_names(&s.generics);
                    let fields = s
                        .fields
                        .iter()
                        .filter(|f| !starts_with_any(&f.ty, &generics))
                        .filter_map(|f| Some((f.ident.as_ref()?.to_string(), FieldType(&f.ty))))
                        .collect();
                    self.fields.insert(key, (module, fields));
                }
                syn::Item::Enum(e) => self.add_type(module, &e.ident),
                syn::Item::Union(u) => self.add_type(module, &u.ident),
                syn::Item::Type(t) => self.add_type(module, &t.ident),
                syn::Item::Trait(t) => {
                    self.add_type(module, &t.ident);
                    for trait_item in &t.items {
                        if let syn::TraitItem::Fn(f) = trait_item
                            && let Some(block) = &f.default
                        {
                            self.add_fn(module, None, &f.sig, block, &f.attrs, file, sources);
                        }
                    }
                }
                syn::Item::Const(c) => {
                    let value = int_literal(&c.expr);
                    self.insert(module, c.ident.to_string(), Item::Const(value));
                }
                syn::Item::Static(s) => {
                    self.insert(module, s.ident.to_string(), Item::Const(None));
                }
                syn::Item::Impl(i) => {
                    // The type is resolved once every module is read (it may be imported
                    // from one read later).
                    let self_ty = match &*i.self_ty {
                        syn::Type::Path(p) if p.qself.is_none() => p
                            .path
                            .segments
                            .iter()
                            .map(|s| s.ident.to_string())
                            .collect(),
                        _ => Vec::new(),
                    };
                    let generics = generic_names(&i.generics);
                    let mut ids = Vec::new();
                    for impl_item in &i.items {
                        if let syn::ImplItem::Fn(f) = impl_item {
                            let id = self
                                .add_fn(module, None, &f.sig, &f.block, &f.attrs, file, sources);
                            self.fns[id].impl_generics = generics.clone();
                            ids.push(id);
                        }
                    }
                    self.pending_impls.push((module, self_ty, ids));
                }
                syn::Item::Macro(m) => match &m.ident {
                    Some(ident) => self.insert(module, ident.to_string(), Item::Other),
                    // It may define any item, which would shadow a glob import or a crate.
                    None => self.modules[module].opaque = true,
                },
                _ => {}
            }
        }
    }

    fn add_type(&mut self, module: ModId, ident: &syn::Ident) {
        let key = self.type_key(module, &ident.to_string());
        self.insert(module, ident.to_string(), Item::Type(key));
    }

    /// Adds an item; a name defined twice (once per `cfg`, say) may be either: unknown.
    fn insert(&mut self, module: ModId, name: String, item: Item) {
        let items = &mut self.modules[module].items;
        let item = if items.contains_key(&name) {
            Item::Other
        } else {
            item
        };
        items.insert(name, item);
    }

    /// Adds a `use`; a name imported twice may be either: unknown.
    fn insert_use(&mut self, module: ModId, name: String, path: Vec<String>) {
        let uses = &mut self.modules[module].uses;
        let path = match uses.get(&name) {
            Some(old) if *old != path => Vec::new(),
            _ => path,
        };
        uses.insert(name, path);
    }

    #[allow(clippy::too_many_arguments)]
    fn add_fn(
        &mut self,
        module: ModId,
        owner: Option<String>,
        sig: &'static syn::Signature,
        block: &'static syn::Block,
        attrs: &'static [syn::Attribute],
        file: FileId,
        sources: &Sources,
    ) -> FnId {
        let name = sig.ident.to_string();
        let display = match &owner {
            Some(key) => format!("{}::{name}", key.rsplit("::").next().unwrap_or(key)),
            None => {
                let mut path: Vec<&str> = self.modules[module]
                    .path
                    .iter()
                    .skip(1)
                    .map(String::as_str)
                    .collect();
                path.push(&name);
                path.join("::")
            }
        };
        let pieces: Vec<(String, usize)> = attrs
            .iter()
            .filter_map(|attr| contract_text(attr, file, sources))
            .collect();
        let contract = (!pieces.is_empty()).then(|| {
            let parsed = pieces
                .iter()
                .map(|(text, _)| Contract::parse(text).ok())
                .collect::<Option<Vec<Contract>>>()
                .map(|contracts| Contract {
                    clauses: contracts.into_iter().flat_map(|c| c.clauses).collect(),
                });
            ContractText {
                pieces,
                parsed,
                analysis_off: attrs.iter().any(analysis_off),
            }
        });
        self.fns.push(FnDef {
            name,
            display,
            module,
            owner,
            sig,
            block,
            file,
            contract,
            impl_generics: Vec::new(),
        });
        self.fns.len() - 1
    }

    fn read_mod(
        &mut self,
        parent: ModId,
        m: &'static syn::ItemMod,
        file: FileId,
        dir: &Path,
        sources: &mut Sources,
    ) {
        let name = m.ident.to_string();
        let mut path = self.modules[parent].path.clone();
        path.push(name.clone());
        let krate = self.modules[parent].krate;
        let path_attr = m.attrs.iter().find_map(|attr| match &attr.meta {
            syn::Meta::NameValue(nv) if nv.path.is_ident("path") => match &nv.value {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s),
                    ..
                }) => Some(s.value()),
                _ => None,
            },
            _ => None,
        });
        match &m.content {
            Some((_, items)) => {
                let id = self.add_module(krate, Some(parent), path);
                self.modules[parent]
                    .items
                    .insert(name.clone(), Item::Mod(id));
                let inner = match &path_attr {
                    Some(p) => dir.join(p),
                    None => dir.join(&name),
                };
                self.read_items(id, items, file, &inner, sources);
            }
            None => {
                let candidates: Vec<PathBuf> = match &path_attr {
                    Some(p) => {
                        let here = sources.get(file).path.parent().map(Path::to_path_buf);
                        vec![here.unwrap_or_default().join(p)]
                    }
                    None => vec![
                        dir.join(format!("{name}.rs")),
                        dir.join(&name).join("mod.rs"),
                    ],
                };
                let Some(found) = candidates.iter().find(|c| c.is_file()).cloned() else {
                    // rustc refuses a missing module file, unless a `cfg` leaves the module out.
                    let conditional = m.attrs.iter().any(|attr| attr.path().is_ident("cfg"));
                    if !conditional {
                        let looked: Vec<String> = candidates
                            .iter()
                            .map(|c| format!("`{}`", c.display()))
                            .collect();
                        self.unreadable.push(format!(
                            "cannot read the file of `mod {name}` in `{}`: no {}",
                            sources.get(file).name,
                            looked.join(" or ")
                        ));
                    }
                    self.insert(parent, name, Item::Other);
                    return;
                };
                let Some((child_file, ast)) = self.parse(&found, sources) else {
                    self.insert(parent, name, Item::Other);
                    return;
                };
                let id = self.add_module(krate, Some(parent), path);
                self.modules[parent]
                    .items
                    .insert(name.clone(), Item::Mod(id));
                let parent_dir = found.parent().map(Path::to_path_buf).unwrap_or_default();
                let child_dir = if found.file_name().is_some_and(|f| f == "mod.rs") {
                    parent_dir
                } else {
                    parent_dir.join(found.file_stem().unwrap_or_default())
                };
                self.read_items(id, &ast.items, child_file, &child_dir, sources);
            }
        }
    }

    fn read_use(&mut self, module: ModId, tree: &syn::UseTree, mut prefix: Vec<String>) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.read_use(module, &p.tree, prefix);
            }
            syn::UseTree::Name(n) => {
                let name = n.ident.to_string();
                if name == "self" {
                    if let Some(last) = prefix.last().cloned() {
                        self.insert_use(module, last, prefix);
                    }
                } else {
                    prefix.push(name.clone());
                    self.insert_use(module, name, prefix);
                }
            }
            syn::UseTree::Rename(r) => {
                if r.ident != "self" {
                    prefix.push(r.ident.to_string());
                }
                if r.rename != "_" {
                    self.modules[module]
                        .uses
                        .insert(r.rename.to_string(), prefix);
                }
            }
            syn::UseTree::Glob(_) => self.modules[module].globs.push(prefix),
            syn::UseTree::Group(g) => {
                for item in &g.items {
                    self.read_use(module, item, prefix.clone());
                }
            }
        }
    }

    /// What `segments`, written in `module`, names.
    pub fn resolve(&self, module: ModId, segments: &[String]) -> Resolved {
        self.resolve_at(module, segments, 0)
    }

    fn resolve_at(&self, module: ModId, segments: &[String], depth: usize) -> Resolved {
        let Some((first, rest)) = segments.split_first() else {
            return Resolved::Unknown;
        };
        if depth > 16 {
            return Resolved::Unknown;
        }
        let m = &self.modules[module];
        let start = match first.as_str() {
            "crate" => Resolved::Mod(self.crates[m.krate].root),
            "self" => Resolved::Mod(module),
            "super" => match m.parent {
                Some(parent) => Resolved::Mod(parent),
                None => Resolved::Unknown,
            },
            name => match self.lookup(module, name, depth, false) {
                Resolved::Unknown if m.opaque => Resolved::Unknown,
                Resolved::Unknown => match self.external(m.krate, name) {
                    Resolved::Unknown => self.lookup(module, name, depth, true),
                    found => found,
                },
                found => found,
            },
        };
        let mut current = start;
        let mut rest = rest;
        // `super::super::x`
        while let (Resolved::Mod(m), Some(("super", tail))) =
            (&current, rest.split_first().map(|(s, t)| (s.as_str(), t)))
        {
            current = match self.modules[*m].parent {
                Some(parent) => Resolved::Mod(parent),
                None => Resolved::Unknown,
            };
            rest = tail;
        }
        for (i, segment) in rest.iter().enumerate() {
            current = match current {
                Resolved::Mod(m) => self.lookup(m, segment, depth, true),
                Resolved::Type(key) if i + 1 == rest.len() => Resolved::Assoc(key, segment.clone()),
                Resolved::External(mut path) => {
                    path.push(segment.clone());
                    Resolved::External(path)
                }
                _ => Resolved::Unknown,
            };
        }
        current
    }

    /// A crate's name as the first segment of a path: another crate, or the package's library.
    fn external(&self, krate: usize, name: &str) -> Resolved {
        let info = &self.crates[krate];
        if info.lib_name.as_deref() == Some(name)
            && let Some(&lib) = self.libs.get(name)
        {
            return Resolved::Mod(self.crates[lib].root);
        }
        match info.externs.get(name) {
            Some(real) => Resolved::External(vec![real.clone()]),
            None if matches!(name, "std" | "core" | "alloc") => {
                Resolved::External(vec![name.to_string()])
            }
            None => Resolved::Unknown,
        }
    }

    /// `name` in `module`'s scope: its items, its `use`s, its glob imports of modules read,
    /// then (with `external_globs`) a glob import of another crate.
    fn lookup(&self, module: ModId, name: &str, depth: usize, external_globs: bool) -> Resolved {
        let m = &self.modules[module];
        if m.items.contains_key(name) && m.uses.contains_key(name) {
            return Resolved::Unknown;
        }
        if let Some(item) = m.items.get(name) {
            return match item {
                Item::Mod(id) => Resolved::Mod(*id),
                Item::Fn(id) => Resolved::Fn(*id),
                Item::Type(key) => Resolved::Type(key.clone()),
                Item::Const(value) => Resolved::Const(*value),
                Item::Other => Resolved::Unknown,
            };
        }
        if let Some(path) = m.uses.get(name) {
            return self.resolve_at(module, path, depth + 1);
        }
        if m.opaque {
            return Resolved::Unknown;
        }
        let mut externals = Vec::new();
        for glob in &m.globs {
            match self.resolve_at(module, glob, depth + 1) {
                Resolved::Mod(g) if g != module => match self.lookup(g, name, depth + 1, true) {
                    Resolved::Unknown => {}
                    found => return found,
                },
                Resolved::External(mut path) => {
                    path.push(name.to_string());
                    externals.push(path);
                }
                _ => {}
            }
        }
        // A name from one other crate's glob; from two, it could be either.
        match externals.len() {
            1 if external_globs => Resolved::External(externals.remove(0)),
            _ => Resolved::Unknown,
        }
    }

    /// The declared type of the named field `name` of the struct `key`, and the module
    /// the struct is written in.
    pub fn field(&self, key: &str, name: &str) -> Option<(ModId, &'static syn::Type)> {
        let (module, fields) = self.fields.get(key)?;
        Some((*module, fields.get(name)?.0))
    }

    /// Whether the crates read define a method `name` on the other crate's type `path`.
    pub fn has_external_method(&self, path: &str, name: &str) -> bool {
        self.external_methods
            .contains(&(path.to_string(), name.to_string()))
    }

    /// The functions named `name` in the `impl` blocks of the type `key`.
    pub fn methods(&self, key: &str, name: &str) -> &[FnId] {
        self.methods
            .get(&(key.to_string(), name.to_string()))
            .map_or(&[], Vec::as_slice)
    }
}

/// The text of a `#[contract(...)]` attribute (any path ending in `contract`), and its
/// byte offset in the file.
fn contract_text(
    attr: &syn::Attribute,
    file: FileId,
    sources: &Sources,
) -> Option<(String, usize)> {
    let last = attr.path().segments.last()?;
    if last.ident != "contract" {
        return None;
    }
    let source = sources.get(file);
    // `#[contract]` without clauses on a function: its body is checked, with no clause.
    let list = match &attr.meta {
        syn::Meta::List(list) => list,
        syn::Meta::Path(path) => {
            let end = source.range(path.segments.last()?.ident.span()).end;
            return Some((String::new(), end));
        }
        syn::Meta::NameValue(_) => return None,
    };
    let range = source.range(list.delimiter.span().join());
    let start = range.start + 1;
    let end = range.end.saturating_sub(1).max(start);
    let text = source.text.get(start..end)?.to_string();
    Some((text, start))
}

/// Whether a `#[contract(...)]` attribute says `static = false`, as the macro reads it.
fn analysis_off(attr: &syn::Attribute) -> bool {
    let syn::Meta::List(list) = &attr.meta else {
        return false;
    };
    if attr
        .path()
        .segments
        .last()
        .is_none_or(|last| last.ident != "contract")
    {
        return false;
    }
    let trees: Vec<proc_macro2::TokenTree> = list.tokens.clone().into_iter().collect();
    trees.windows(3).any(|w| {
        matches!(&w[0], proc_macro2::TokenTree::Ident(i) if i == "static")
            && matches!(&w[1], proc_macro2::TokenTree::Punct(p) if p.as_char() == '=')
            && matches!(&w[2], proc_macro2::TokenTree::Ident(i) if i == "false")
    })
}

/// Whether `ty`'s path (behind references) starts with one of `names` (generic parameters).
pub fn starts_with_any(ty: &syn::Type, names: &[String]) -> bool {
    match ty {
        syn::Type::Reference(r) => starts_with_any(&r.elem, names),
        syn::Type::Paren(p) => starts_with_any(&p.elem, names),
        syn::Type::Group(g) => starts_with_any(&g.elem, names),
        syn::Type::Path(p) => {
            p.qself.is_some()
                || p.path
                    .segments
                    .first()
                    .is_some_and(|s| names.iter().any(|n| s.ident == n))
        }
        _ => false,
    }
}

/// The names of generic type and const parameters (`B`, `N`).
pub fn generic_names(generics: &syn::Generics) -> Vec<String> {
    generics
        .params
        .iter()
        .filter_map(|param| match param {
            syn::GenericParam::Type(t) => Some(t.ident.to_string()),
            syn::GenericParam::Const(c) => Some(c.ident.to_string()),
            syn::GenericParam::Lifetime(_) => None,
        })
        .collect()
}

/// The value of an integer literal expression (`784`, `10usize`).
pub fn int_literal(expr: &syn::Expr) -> Option<u64> {
    match expr {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(int),
            ..
        }) => int.base10_parse::<u64>().ok(),
        syn::Expr::Paren(p) => int_literal(&p.expr),
        syn::Expr::Group(g) => int_literal(&g.expr),
        _ => None,
    }
}
