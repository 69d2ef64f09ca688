//! The crates read: their module trees (inline and file modules), the items of each module,
//! its `use`s, every function with its contract, and the resolution of a path written in a
//! module to what it names.
//!
//! The CLI reads whole crates from disk; the macro reads the one file it stands in (or its item
//! alone). Both build this index through [`Files`], which says where a `mod name;` file comes
//! from.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use candle_contracts_shapes::Contract;
use proc_macro2::TokenStream;
use syn::visit::Visit;

pub use crate::contract::syntax::name_of;

/// Index of a file, as the front end numbers them.
pub type FileId = usize;

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
    /// A `const X: bool` of a literal (`const USE_POOL: bool = false;`), not under `cfg`.
    Flag(bool),
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
    /// A `bool` constant of a literal value (see [`Item::Flag`]).
    Flag(bool),
    /// A path into another crate, with the crate's real name first (`candle_core::Tensor`).
    External(Vec<String>),
    /// Nothing the checker can name.
    Unknown,
}

thread_local! {
    /// How many walks or scans of the macro's cached file are under way on this thread.
    static FILE_TOKENS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// While alive, proc-macro2's own tokens are forced where the index holds the macro's cached
/// file (parsed so): a token stream built from its syntax inside the macro must be one of
/// those too, or proc-macro2 panics on the mix. Nested guards force once; the outermost one
/// restores the compiler's tokens.
pub(crate) struct FileTokens(());

impl FileTokens {
    /// A guard where the index holds the macro's file; `None` (nothing to force) otherwise.
    pub(crate) fn enter(index: &Index) -> Option<FileTokens> {
        if !index.own_tokens {
            return None;
        }
        FILE_TOKENS.with(|depth| {
            if depth.get() == 0 {
                proc_macro2::fallback::force();
            }
            depth.set(depth.get() + 1);
        });
        Some(FileTokens(()))
    }
}

impl Drop for FileTokens {
    fn drop(&mut self) {
        FILE_TOKENS.with(|depth| {
            let left = depth.get().saturating_sub(1);
            depth.set(left);
            if left == 0 {
                proc_macro2::fallback::unforce();
            }
        });
    }
}

/// Whether a file names a `VarBuilder` backend trait (`SimpleBackend`, `Backend`) anywhere: an
/// `impl` of it under another name, in a body or a `const` block, or in a macro.
fn mentions_backend(file: &syn::File) -> bool {
    struct Names(bool);
    fn in_tokens(tokens: proc_macro2::TokenStream) -> bool {
        tokens.into_iter().any(|tree| match tree {
            proc_macro2::TokenTree::Ident(ident) => ident == "SimpleBackend" || ident == "Backend",
            proc_macro2::TokenTree::Group(group) => in_tokens(group.stream()),
            _ => false,
        })
    }
    impl<'ast> Visit<'ast> for Names {
        fn visit_ident(&mut self, ident: &'ast proc_macro2::Ident) {
            self.0 |= ident == "SimpleBackend" || ident == "Backend";
        }
        fn visit_macro(&mut self, mac: &'ast syn::Macro) {
            self.0 |= in_tokens(mac.tokens.clone());
            syn::visit::visit_macro(self, mac);
        }
    }
    let mut names = Names(false);
    names.visit_file(file);
    names.0
}

/// Crates whose traits the analysis knows the methods of: std's and candle's.
pub const KNOWN_CRATES: &[&str] = &[
    "std",
    "core",
    "alloc",
    "candle_core",
    "candle",
    "candle_nn",
    "candle_contracts",
];

/// Whether a trait (or anything) at `path`, in another crate, adds no method the analysis
/// does not know: std's, candle's and ours, and serde's `Serialize` and `Deserialize`, whose
/// methods (`serialize`, `deserialize`) are never taken as a crate's (see [`Index::finish`]).
/// candle-transformers' model files `use serde::Deserialize;` for their configs.
pub fn trait_path_known(path: &[String]) -> bool {
    match path {
        [first, ..] if KNOWN_CRATES.contains(&first.as_str()) => true,
        [serde, name] => serde == "serde" && matches!(name.as_str(), "Serialize" | "Deserialize"),
        _ => false,
    }
}

/// serde's traits' methods (see [`trait_path_known`]).
const SERDE_METHODS: &[&str] = &["serialize", "deserialize", "deserialize_in_place"];

/// std macros that never assign their arguments (their arguments are still read for `&mut`).
pub(crate) const EXPRESSION_MACROS: &[&str] = &[
    "println",
    "print",
    "eprintln",
    "eprint",
    "format",
    "write",
    "writeln",
    "assert",
    "assert_eq",
    "assert_ne",
    "debug_assert",
    "debug_assert_eq",
    "debug_assert_ne",
    "dbg",
    "format_args",
    "vec",
];
/// Macros that never return.
pub(crate) const DIVERGING_MACROS: &[&str] =
    &["panic", "unreachable", "todo", "unimplemented", "bail"];

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
    /// Its `use`s under `cfg` (or in a module under `cfg`), by the name brought in: the path
    /// of each. The name itself is unknown (which `use` is compiled is not known), but every
    /// item it may be is one of these.
    pub conditional_uses: BTreeMap<String, Vec<Vec<String>>>,
    /// Its glob imports (`use super::*`), each with whether it is `pub` (re-exported).
    pub globs: Vec<(Vec<String>, bool)>,
    /// The paths of its `use .. as _` imports: traits in scope by no name.
    pub anonymous_uses: Vec<Vec<String>>,
    /// The names of its items and `use`s that are `pub` (in any form but `pub(self)`): what
    /// a glob import of it brings.
    pub public: BTreeSet<String>,
    /// Whether other crates may name its `pub` items by its path: the crate's root, or a
    /// `pub` module of such a one (a file the macro reads alone is a root).
    pub exported: bool,
    /// Whether a macro invocation among its items may define names the index cannot see.
    pub opaque: bool,
    /// Whether a `mod name;` of it was not read (its file not to be had): code there may
    /// construct or change what this module defines.
    pub unread_children: bool,
    /// An inline module with `#[contract]`: its `impl`s are contract scopes too.
    pub contract_scope: bool,
    /// It, or a module around it, stands under a `cfg` no build enables (`#[cfg(any())]`,
    /// `#[cfg(false)]`): rustc never compiles what it holds.
    pub never_compiled: bool,
    /// Written inline (`mod a { .. }`): a `#[path]` on a `mod b;` inside it is relative to
    /// the inline modules' directory (`src/a/`), not to its file's.
    pub inline: bool,
    /// It, or a module around it, stands under `cfg` (`#[cfg(feature = "x")] mod a;`, or a
    /// file that opens with `#![cfg(..)]`): every item in it may be compiled out, as an item
    /// under `cfg` of its own may.
    pub conditional: bool,
}

/// A function's contract: its `#[contract(...)]` attributes (two join into one contract, as
/// the macro joins them).
#[derive(Debug)]
pub struct ContractText {
    /// The clauses read by the engine; `None` when the engine cannot read them (the macro
    /// reports it).
    pub parsed: Option<Contract>,
    /// Whether an attribute says `static = false`: the body is not checked (the contract still
    /// is what callers see).
    pub analysis_off: bool,
}

/// A struct contract and the predicate of the `cfg` it is compiled under (`None`: wherever its
/// module is).
pub type StructContractVariant = (Option<TokenStream>, TokenStream);

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
    /// Its attributes.
    pub attrs: &'static [syn::Attribute],
    /// The file it is written in.
    pub file: FileId,
    /// Its `#[contract(...)]`s, if it has any.
    pub contract: Option<ContractText>,
    /// The generic parameters of its `impl` block (which shadow the module's names).
    pub impl_generics: Vec<String>,
    /// It stands under `cfg` (or in an `impl` under `cfg`): it may be compiled out, leaving
    /// its name to another item, so no call is taken to be its.
    pub conditional: bool,
    /// It (its `impl`, or its module) stands under a `cfg` no build enables: rustc never
    /// compiles it, so nothing in its body runs.
    pub never_compiled: bool,
    /// The trait of its `impl` block, as resolved there, for a trait's method: a call by
    /// method syntax reaches it only where the trait is in scope.
    pub trait_of: Option<Resolved>,
    /// For a method of an inherent `impl` that is not visible everywhere in its crate
    /// (private, `pub(self)`, `pub(super)`, `pub(in path)`): the module whose code (its own
    /// and its descendants') may call it. Elsewhere rustc passes it over for a trait's method
    /// of the name.
    pub private_to: Option<ModId>,
    /// Written `pub` (a free function, or an inherent `impl`'s).
    pub public: bool,
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
    /// Whether `root` is the crate's root (a file read alone may be any module of its crate:
    /// then `crate::` and its `super::` name nothing known).
    root_known: bool,
    /// Whether it is a library (other crates may use its items); a binary, test, example or
    /// bench target is no crate's dependency.
    is_lib: bool,
    /// Whether it is an integration test (`tests/*.rs`).
    is_test: bool,
    /// Whether no Rust crate can call its functions (see [`Index::mark_closed_crate`]).
    closed: bool,
}

/// Where an `impl` of another crate's type may be called: its crate, and its trait's module
/// where the trait is private.
type ImplScope = (usize, Option<ModId>);

/// Every crate read, and what its paths name.
#[derive(Debug, Default)]
pub struct Index {
    /// Every module.
    pub modules: Vec<Module>,
    /// Every function.
    pub fns: Vec<FnDef>,
    crates: Vec<CrateInfo>,
    methods: BTreeMap<(String, String), Vec<FnId>>,
    /// The methods of each type's trait `impl`s, by type key and name, also where the rest of
    /// the crate is out of sight: `<T as Module>::forward` is that one whatever else `T` has.
    trait_impl_methods: BTreeMap<(String, String), Vec<FnId>>,
    /// The methods of the crate's trait `impl`s for types not its own (`impl<T> Run for T`,
    /// `impl Twice for Arc<Rotary>`): any value may have them, a pointer before its pointee.
    foreign_impl_names: BTreeSet<String>,
    /// Methods of trait `impl`s whose type the index cannot tell apart from candle's `Tensor`:
    /// blanket ones (`impl<T> Pick for T`), through an alias, in a function's body or a
    /// `const` block (`const _: () = { impl Pick for Tensor { .. } };`).
    any_type_methods: BTreeSet<String>,
    /// Each library read, by crate name; `None` where two packages read in one run have a
    /// library of that name (two checkouts of one package): a path through it is unknown.
    libs: BTreeMap<String, Option<usize>>,
    pending_impls: Vec<PendingImpl>,
    /// Type aliases, by key: an `impl` through one adds methods to a type the index cannot
    /// name.
    aliases: BTreeSet<String>,
    /// Method names an `impl` the index cannot place defines (through an alias, on another
    /// crate's type of several instantiations): no call of that name is certain, on any type.
    uncertain_names: BTreeSet<String>,
    /// Whether the crates read implement a `VarBuilder` backend of their own.
    var_backend: bool,
    /// The bodies (by address) of the functions inside an `impl` or inline module under an
    /// attribute macro (`#[async_trait] impl`, `#[pm::wrap] mod m`): it may rewrite them.
    wrapped_bodies: BTreeSet<usize>,
    /// Whether a `#[macro_use] extern crate` brings another crate's macros into every module.
    macro_use_extern: bool,
    /// Methods of a type that only some instantiations have (`impl Model<f32>`): no call of
    /// that name on the type is certain.
    uncertain_methods: BTreeSet<(String, String)>,
    /// Methods of inherent `impl`s under `cfg` (whose type the index does not resolve), by
    /// the type's name as the header writes it and the method's: no call of that name on a
    /// type of that name is certain.
    uncertain_by_type_name: BTreeSet<(String, String)>,
    /// Enum variants, by enum key: `Kind::Wrap(..)` is the variant, not a function.
    variants: BTreeMap<String, BTreeSet<String>>,
    /// The names of every `macro_rules!` read: a macro of one of those names is not std's.
    macro_names: BTreeSet<String>,
    /// The crate's `macro_rules!` whose tokens hold a `break` or `continue`.
    jumping_macros: BTreeSet<String>,
    /// Every identifier in each of the crate's `macro_rules!` (the macros it calls).
    macro_words: BTreeMap<String, BTreeSet<String>>,
    /// The functions a module declares, by their name: two or more under opposite `cfg`s
    /// (candle's `flash_attn` with and without its feature) are twins, one compiled in.
    twin_fns: BTreeMap<(ModId, String), Vec<FnId>>,
    /// The names a module gives something other than a function.
    not_fns: BTreeSet<(ModId, String)>,
    /// Its syntax trees hold proc-macro2's own tokens, not the compiler's (the macro's cached
    /// file): walking one of its bodies inside a macro runs with proc-macro2's own tokens.
    pub own_tokens: bool,
    /// Methods the crate adds to another crate's type through a trait, by type path and
    /// name: each `impl`'s crate, and its trait's module where the trait is private (only
    /// there and below can it be in scope), `None` where it may be in scope anywhere.
    external_methods: BTreeMap<(String, String), Vec<ImplScope>>,
    /// The crate's private traits (no `pub`), by key, with their module.
    private_traits: BTreeMap<String, ModId>,
    fields: BTreeMap<String, (ModId, BTreeMap<String, FieldType>)>,
    /// Struct contracts, as the clauses their methods take (`self.c_attn: Linear[E -> E]`),
    /// by type key.
    struct_contracts: BTreeMap<String, TokenStream>,
    /// Every struct contract (under `cfg` too: the analysis takes no facts from those, they
    /// may be compiled out), by the struct's module and name, with the predicate of the `cfg`
    /// it is compiled under (see [`crate::contract::fields::variants_of_struct`]): one per
    /// struct of that name there (twins under opposite `cfg`s).
    struct_contracts_in: BTreeMap<(ModId, String), Vec<StructContractVariant>>,
    /// The contracts of a struct there under every `cfg` whose contracts are all under
    /// `cfg_attr`, by its key.
    struct_contracts_under_cfg: BTreeMap<String, Vec<StructContractVariant>>,
    /// Every struct with named fields read, by key, with its module: where the analysis
    /// looks for who may construct it.
    structs: BTreeMap<String, (ModId, StructItem)>,
    /// Every enum read, by key, with its module: the types its variants hold.
    enums: BTreeMap<String, Option<(ModId, EnumItem)>>,
    /// Every file read, whole: where every construction of a struct is looked for.
    sources: FilesRead,
    /// Facts the layers above derive from the whole index, computed once each (what a
    /// struct's constructors give its fields: every construction is scanned for it), by a key
    /// of their own.
    pub(crate) derived: std::cell::RefCell<BTreeMap<String, Box<dyn std::any::Any>>>,
    /// The module files being read (canonical paths), from the crate's root down: a `mod` that
    /// names one of them again is not read (rustc would refuse it, or leave it out under `cfg`).
    reading: Vec<PathBuf>,
    /// How many times each file has been read as a module, by crate: a file is read at most
    /// twice in one crate (a chain of `#[path]` modules under `cfg` could name each other in
    /// every order).
    loads: BTreeMap<(usize, PathBuf), usize>,
    /// The names of the methods the crates' traits provide (a default body): an `impl` of the
    /// trait with no body of its own (`impl Run for &mut Model {}`) gives them.
    provided_names: BTreeSet<String>,
    /// The crates that may hold items the index cannot see: a macro called anywhere that is
    /// not std's or candle's, an attribute macro on an item, a `mod` file inside a function.
    hidden_items: BTreeSet<usize>,
    /// Types with a derive or attribute macro not std's (`#[derive(serde::Deserialize)]`):
    /// it may give them trait `impl`s the index cannot see.
    derived_types: BTreeSet<String>,
    /// The macros each crate calls, by their last name.
    called_macros: BTreeSet<(usize, String)>,
    /// The glob `use`s being resolved (module, number), so that none is resolved through
    /// itself.
    resolving_globs: std::cell::RefCell<BTreeSet<(ModId, usize)>>,
}

/// Where the files of a crate come from, and where a problem with one is reported.
pub trait Files {
    /// The file at `path`, parsed; `None` when it cannot be had (the implementation reports
    /// why, if it should).
    fn load(&mut self, path: &Path) -> Option<(FileId, &'static syn::File)>;
    /// Where the file `file` is.
    fn path(&self, file: FileId) -> &Path;
    /// A `mod name;` of `file` (not under `cfg`) whose file is at none of `candidates`.
    fn missing_module(&mut self, name: &str, file: FileId, candidates: &[PathBuf]);
    /// Whether there is a file at `path` to load (an editor's unsaved one too).
    fn exists(&self, path: &Path) -> bool {
        path.is_file()
    }
    /// The file of a module under `cfg`, which rustc may never read: as [`Files::load`], but
    /// one that cannot be read or parsed is no problem to report.
    fn load_if_compiled(&mut self, path: &Path) -> Option<(FileId, &'static syn::File)> {
        self.load(path)
    }
}

/// An `impl` block read, placed once every module is read.
#[derive(Debug)]
struct PendingImpl {
    module: ModId,
    /// Its type's path as written (`Model`, `model::Model`).
    self_ty: Vec<String>,
    /// Whether the type is written with generic arguments other than the block's own
    /// parameters (`impl Model<f32>`): its methods are some instantiations' only.
    specific: bool,
    /// The block's generic parameters.
    generics: Vec<String>,
    fns: Vec<FnId>,
    /// The trait's path, for a trait's `impl`.
    trait_path: Option<Vec<String>>,
    /// Whether the block says `#[contract]`: its methods with a contract take the struct's.
    contracted: bool,
}

/// A field's declared type.
struct FieldType(&'static syn::Type);

/// The syntax trees of the files read.
#[derive(Default)]
struct FilesRead(Vec<&'static syn::File>, Vec<usize>);

impl std::fmt::Debug for FilesRead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} files", self.0.len())
    }
}

/// A struct's definition.
struct StructItem(&'static syn::ItemStruct);

/// An enum's definition.
struct EnumItem(&'static syn::ItemEnum);

impl std::fmt::Debug for EnumItem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("EnumItem")
    }
}

impl std::fmt::Debug for StructItem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StructItem")
    }
}

impl std::fmt::Debug for FieldType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FieldType")
    }
}

impl Index {
    /// Reads one crate from its root file, following its `mod` declarations through `files`.
    /// `externs` maps the names its code may use for other crates to their real names
    /// (`candle` → `candle_core`); `lib_name` is its package's library, by the name its other
    /// targets use (`Some` on the library itself makes it nameable by those targets). Call
    /// [`Index::finish`] once every crate is read.
    pub fn add_crate(
        &mut self,
        root: (FileId, &'static syn::File),
        externs: BTreeMap<String, String>,
        lib_name: Option<String>,
        is_lib: bool,
        files: &mut dyn Files,
    ) {
        let krate = self.crates.len();
        let module = self.add_module(krate, None, vec!["crate".to_string()]);
        // `extern crate candle_core as candle;` at the root: `candle` names that crate
        // everywhere in it, as a manifest's rename does.
        let mut externs = externs;
        for item in &root.1.items {
            if let syn::Item::ExternCrate(e) = item
                && let Some((_, alias)) = &e.rename
                && !is_conditional(&e.attrs)
                && e.ident != "self"
                && let Some(real) = externs.get(&name_of(&e.ident)).cloned()
            {
                externs.entry(name_of(alias)).or_insert(real);
            }
        }
        self.crates.push(CrateInfo {
            root: module,
            externs,
            lib_name: lib_name.clone().filter(|_| !is_lib),
            root_known: true,
            is_lib,
            is_test: false,
            closed: false,
        });
        if is_lib && let Some(name) = lib_name {
            let entry = self.libs.entry(name).or_insert(Some(krate));
            if *entry != Some(krate) {
                *entry = None;
            }
        }
        self.sources.0.push(root.1);
        self.sources.1.push(krate);
        self.var_backend |= mentions_backend(root.1);
        let root_path = files.path(root.0).to_path_buf();
        let dir = root_path
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        self.note_hidden(krate, root.1);
        self.reading
            .push(root_path.canonicalize().unwrap_or(root_path));
        self.read_items(module, &root.1.items, root.0, &dir, files);
        self.reading.pop();
    }

    /// Reads one file of a crate whose other files are not to be had (the macro's own file, or
    /// its item alone): its root may be any module of the crate, so `crate::`, a `super::` out
    /// of it and a glob `use` of what lies outside name nothing known. `externs` as for
    /// [`Index::add_crate`]. Call [`Index::finish`] after it.
    pub fn add_file(
        &mut self,
        file: (FileId, &'static syn::File),
        externs: BTreeMap<String, String>,
        files: &mut dyn Files,
    ) {
        self.add_crate(file, externs, None, false, files);
        if let Some(info) = self.crates.last_mut() {
            info.root_known = false;
        }
    }

    /// Resolves the types of the `impl` blocks read, now that every module is known (a type
    /// may be imported from a module read later).
    pub fn finish(&mut self) {
        // serde's traits may be in scope as known ones: their methods are no crate's for sure.
        self.uncertain_names
            .extend(SERDE_METHODS.iter().map(|name| name.to_string()));
        fn visit(items: &[syn::Item], wrapped: bool, out: &mut BTreeSet<usize>) {
            for item in items {
                match item {
                    syn::Item::Impl(i) => {
                        let wrapped = wrapped || !i.attrs.iter().all(is_inert_attribute);
                        if wrapped {
                            for member in &i.items {
                                if let syn::ImplItem::Fn(f) = member {
                                    out.insert(&f.block as *const syn::Block as usize);
                                }
                            }
                        }
                    }
                    syn::Item::Mod(m) => {
                        if let Some((_, items)) = &m.content {
                            let wrapped = wrapped || !m.attrs.iter().all(is_inert_attribute);
                            visit(items, wrapped, out);
                        }
                    }
                    syn::Item::Fn(f) if wrapped => {
                        out.insert(&*f.block as *const syn::Block as usize);
                    }
                    _ => {}
                }
            }
        }
        let mut wrapped = BTreeSet::new();
        for file in self.sources() {
            visit(&file.items, false, &mut wrapped);
        }
        self.wrapped_bodies = wrapped;
        self.macro_use_extern = self.sources().iter().any(|file| {
            file.items.iter().any(|item| {
                matches!(item, syn::Item::ExternCrate(e)
                    if e.attrs.iter().any(|a| a.path().is_ident("macro_use")))
            })
        });
        for pending in std::mem::take(&mut self.pending_impls) {
            let PendingImpl {
                module,
                self_ty,
                specific,
                generics,
                fns,
                trait_path,
                contracted,
            } = pending;
            let whole_crate = self.crates[self.modules[module].krate].root_known;
            let names: Vec<String> = fns.iter().map(|&id| self.fns[id].name.clone()).collect();
            // `impl<T: Step> Run for T`: a blanket impl, of no one type.
            if self_ty
                .first()
                .is_some_and(|first| generics.contains(first))
            {
                self.any_type_methods.extend(names.iter().cloned());
                self.foreign_impl_names.extend(names);
                continue;
            }
            let trait_of = trait_path.map(|path| self.resolve(module, &path));
            let key = match self.resolve(module, &self_ty) {
                // Through an alias, the methods are another type's, which the index cannot
                // name: a call of those names is certain on no type.
                Resolved::Type(key) if self.aliases.contains(&key) => {
                    self.any_type_methods.extend(names.iter().cloned());
                    self.uncertain_names.extend(names);
                    continue;
                }
                Resolved::Type(key) => key,
                // A method the crate adds to another crate's type (through its own trait).
                Resolved::External(path) => {
                    self.foreign_impl_names.extend(names.iter().cloned());
                    let scope = match &trait_of {
                        Some(Resolved::Type(key)) => self.private_traits.get(key).copied(),
                        _ => None,
                    };
                    let krate = self.modules[module].krate;
                    for name in names {
                        self.external_methods
                            .entry((path.join("::"), name))
                            .or_default()
                            .push((krate, scope));
                    }
                    continue;
                }
                // A file read alone may implement a type of another file of its crate:
                // within the `impl`, `self` and `Self` are still that one type.
                Resolved::Unknown
                    if self_ty.len() == 1
                        && !whole_crate
                        && !self.modules[module].items.contains_key(&self_ty[0]) =>
                {
                    // (Or a type not the crate's, `Vec<Block>`, that any value may be.)
                    if trait_of.is_some() {
                        self.any_type_methods.extend(names.iter().cloned());
                        self.foreign_impl_names.extend(names.iter().cloned());
                    }
                    self.type_key(module, &self_ty[0])
                }
                // An inherent one (a struct under `cfg`, say) is of a type of the crate's own,
                // named as the header writes it: never `Tensor` or a layer.
                _ if trait_of.is_none() && !self_ty.is_empty() => {
                    let type_name = self_ty.last().cloned().unwrap_or_default();
                    for name in names {
                        self.uncertain_by_type_name
                            .insert((type_name.clone(), name));
                    }
                    continue;
                }
                _ => {
                    self.any_type_methods.extend(names.iter().cloned());
                    self.foreign_impl_names.extend(names.iter().cloned());
                    self.uncertain_names.extend(names);
                    continue;
                }
            };
            let type_name = self_ty.last().cloned().unwrap_or_default();
            // `Some(None)`: a struct contract the macro rejects (and says why, at the
            // struct and at this `impl`).
            let struct_contract = match contracted {
                true => self.struct_contracts.get(&key).map(crate::contract::read),
                false => None,
            };
            for id in fns {
                let f = &mut self.fns[id];
                if let Some(fields) = &struct_contract {
                    f.take_struct_contract(fields.as_ref().map(|(fields, _)| fields));
                }
                f.display = format!("{type_name}::{}", f.name);
                f.owner = Some(key.clone());
                f.trait_of = trait_of.clone();
                if specific {
                    self.uncertain_methods.insert((key.clone(), f.name.clone()));
                } else if trait_of.is_some() {
                    self.trait_impl_methods
                        .entry((key.clone(), f.name.clone()))
                        .or_default()
                        .push(id);
                }
                // Where the rest of the crate is out of sight, an inherent method of the same
                // name may be defined in another file, and it would win over a trait's.
                if trait_of.is_some() && !whole_crate {
                    continue;
                }
                self.methods
                    .entry((key.clone(), f.name.clone()))
                    .or_default()
                    .push(id);
            }
        }
    }

    /// The struct contract of the type `key`, as the clauses its methods take.
    pub fn struct_clauses(&self, key: &str) -> Option<&TokenStream> {
        self.struct_contracts.get(key)
    }

    /// The contracts under `cfg_attr` of the type `key` (a struct there under every `cfg`),
    /// each with its predicate.
    pub fn struct_contracts_under_cfg(&self, key: &str) -> &[StructContractVariant] {
        self.struct_contracts_under_cfg
            .get(key)
            .map_or(&[], Vec::as_slice)
    }

    /// The contracts of the structs named `name` declared in `module`, each with the `cfg` it
    /// is compiled under.
    pub fn struct_contracts_in(&self, module: ModId, name: &str) -> &[StructContractVariant] {
        self.struct_contracts_in
            .get(&(module, name.to_string()))
            .map_or(&[], Vec::as_slice)
    }

    fn add_module(&mut self, krate: usize, parent: Option<ModId>, path: Vec<String>) -> ModId {
        self.modules.push(Module {
            krate,
            parent,
            path,
            items: BTreeMap::new(),
            uses: BTreeMap::new(),
            conditional_uses: BTreeMap::new(),
            globs: Vec::new(),
            anonymous_uses: Vec::new(),
            public: BTreeSet::new(),
            exported: parent.is_none(),
            opaque: false,
            unread_children: false,
            contract_scope: false,
            inline: false,
            conditional: parent.is_some_and(|p| self.modules[p].conditional),
            never_compiled: parent.is_some_and(|p| self.modules[p].never_compiled),
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
        files: &mut dyn Files,
    ) {
        for item in items {
            if let Some(name) = public_name(item) {
                self.modules[module].public.insert(name);
            }
            // Under `cfg` it may be compiled out, leaving its name to a glob or the prelude:
            // what it names is unknown (a module's functions are still read, and checked).
            // In a module under `cfg` (`#[cfg(test)] mod tests`), an item of the module's own
            // names (a `use`, a function, a constant) is there whenever code of the module
            // runs, and paths from outside name the module as unknown. A type is known by its
            // module's path, which a twin module under the opposite `cfg` shares; an `impl`, a
            // trait or a macro reaches beyond the module: these may be compiled out with it.
            let own = item_attrs(item).is_some_and(is_conditional);
            let conditional = match item {
                syn::Item::Use(_)
                | syn::Item::Fn(_)
                | syn::Item::Const(_)
                | syn::Item::Static(_)
                | syn::Item::Mod(_) => own,
                _ => own || self.modules[module].conditional,
            };
            if let (syn::Item::Struct(_) | syn::Item::Enum(_) | syn::Item::Union(_), Some(attrs)) =
                (item, item_attrs(item))
                && attrs.iter().any(|attr| !is_std_attribute(attr))
                && let Some(name) = item_name(item)
            {
                let key = self.type_key(module, &name);
                self.derived_types.insert(key);
            }
            if let syn::Item::Struct(s) = item {
                let variants = crate::contract::fields::variants_of_struct(s);
                // One there under every `cfg` but for its `cfg_attr`s: by its key too.
                if !conditional
                    && !variants.is_empty()
                    && variants.iter().all(|(predicate, _)| predicate.is_some())
                {
                    let key = self.type_key(module, &name_of(&s.ident));
                    self.struct_contracts_under_cfg
                        .insert(key, variants.clone());
                }
                self.struct_contracts_in
                    .entry((module, name_of(&s.ident)))
                    .or_default()
                    .extend(variants);
            }
            match item {
                syn::Item::Fn(f) => {
                    let id = self.add_fn(module, &f.sig, &f.block, &f.attrs, file);
                    self.fns[id].conditional |= conditional;
                    self.fns[id].public = matches!(f.vis, syn::Visibility::Public(_));
                    self.insert(module, name_of(&f.sig.ident), Item::Fn(id));
                }
                syn::Item::Mod(m) => self.read_mod(module, m, file, dir, files),
                syn::Item::Use(u) if conditional => {
                    let mut names = BTreeMap::new();
                    use_names(&u.tree, Vec::new(), &mut names);
                    for (name, path) in names {
                        let m = &mut self.modules[module];
                        m.uses.insert(name.clone(), Vec::new());
                        // `as _` imports of one group share the name: which traits they
                        // are is not kept, and the name stays unknown.
                        if let Some(path) = path
                            && name != "_"
                        {
                            m.conditional_uses.entry(name).or_default().push(path);
                        }
                    }
                }
                syn::Item::Use(u) => {
                    let public = is_public(&u.vis);
                    let mut prefix = Vec::new();
                    if u.leading_colon.is_some() {
                        prefix.push("::".to_string());
                    }
                    self.read_use(module, &u.tree, prefix, public);
                }
                _ if conditional => {
                    if let Some(name) = item_name(item) {
                        self.insert(module, name, Item::Other);
                    }
                    if let syn::Item::Macro(m) = item
                        && let Some(ident) = &m.ident
                    {
                        self.macro_names.insert(name_of(ident));
                    }
                    if let syn::Item::Impl(i) = item {
                        for impl_item in &i.items {
                            if let syn::ImplItem::Fn(f) = impl_item {
                                let id = self.add_fn(module, &f.sig, &f.block, &f.attrs, file);
                                self.fns[id].conditional = true;
                                self.fns[id].never_compiled |= never_compiled(&i.attrs);
                                // Compiled in, it may give its type (any type, `Tensor` too)
                                // a method of the name that is found first (a review found
                                // `#[cfg(all())] impl Consume for Patches { fn forward(self,
                                // ..) }` beating the inherent `&self` one).
                                let name = name_of(&f.sig.ident);
                                // An inherent one is of a type of the crate's own (never
                                // `Tensor`'s or a layer's), named as its header writes it.
                                if i.trait_.is_none()
                                    && let syn::Type::Path(p) = &*i.self_ty
                                    && p.qself.is_none()
                                    && let Some(last) = p.path.segments.last()
                                {
                                    self.uncertain_by_type_name
                                        .insert((name_of(&last.ident), name));
                                    continue;
                                }
                                self.uncertain_names.insert(name.clone());
                                self.any_type_methods.insert(name.clone());
                                self.foreign_impl_names.insert(name);
                            }
                        }
                    }
                    // A trait under `cfg`: its methods may be any type's, as above.
                    if let syn::Item::Trait(t) = item {
                        for trait_item in &t.items {
                            if let syn::TraitItem::Fn(f) = trait_item {
                                let name = name_of(&f.sig.ident);
                                self.uncertain_names.insert(name.clone());
                                self.any_type_methods.insert(name);
                            }
                        }
                    }
                }
                syn::Item::Struct(s) => {
                    self.add_type(module, &s.ident);
                    let key = self.type_key(module, &name_of(&s.ident));
                    // A field typed by a generic parameter is of no type the index knows, and
                    // one under `cfg` may be another field of that name.
                    let generics = generic_names(&s.generics);
                    let fields = s
                        .fields
                        .iter()
                        .filter(|f| !starts_with_any(&f.ty, &generics) && !is_conditional(&f.attrs))
                        .filter_map(|f| Some((name_of(f.ident.as_ref()?), FieldType(&f.ty))))
                        .collect();
                    if let Some(tokens) = crate::contract::fields::of_struct(s) {
                        self.struct_contracts.insert(key.clone(), tokens);
                    }
                    self.fields.insert(key.clone(), (module, fields));
                    self.structs.insert(key, (module, StructItem(s)));
                }
                syn::Item::Enum(e) => {
                    self.add_type(module, &e.ident);
                    let key = self.type_key(module, &name_of(&e.ident));
                    let names = e.variants.iter().map(|v| name_of(&v.ident)).collect();
                    self.variants.insert(key.clone(), names);
                    // Under `cfg`, or two of one key: either may be the one compiled.
                    let one = !conditional && !self.enums.contains_key(&key);
                    self.enums.insert(key, one.then_some((module, EnumItem(e))));
                }
                syn::Item::Union(u) => self.add_type(module, &u.ident),
                syn::Item::Type(t) => {
                    self.add_type(module, &t.ident);
                    self.aliases
                        .insert(self.type_key(module, &name_of(&t.ident)));
                }
                syn::Item::Trait(t) => {
                    self.add_type(module, &t.ident);
                    if matches!(t.vis, syn::Visibility::Inherited) {
                        let key = self.type_key(module, &name_of(&t.ident));
                        self.private_traits.insert(key, module);
                    }
                    for trait_item in &t.items {
                        if let syn::TraitItem::Fn(f) = trait_item
                            && let Some(block) = &f.default
                        {
                            self.provided_names.insert(name_of(&f.sig.ident));
                            self.add_fn(module, &f.sig, block, &f.attrs, file);
                        }
                    }
                }
                // (An `impl` in its block is read by `note_hidden`, as every nested one.)
                syn::Item::Const(c) => {
                    let item = match (bool_literal(&c.expr), &*c.ty) {
                        (Some(value), syn::Type::Path(ty))
                            if !conditional && ty.qself.is_none() && ty.path.is_ident("bool") =>
                        {
                            Item::Flag(value)
                        }
                        _ => Item::Const(int_literal(&c.expr)),
                    };
                    self.insert(module, name_of(&c.ident), item);
                }
                syn::Item::Static(s) => {
                    self.insert(module, name_of(&s.ident), Item::Const(None));
                }
                syn::Item::Impl(i) => {
                    // A `VarBuilder` backend of the crate's own may give tensors of other
                    // shapes than asked (candle-nn's own check them).
                    if let Some((_, trait_path, _)) = &i.trait_
                        && trait_path
                            .segments
                            .last()
                            .is_some_and(|s| s.ident == "SimpleBackend" || s.ident == "Backend")
                    {
                        self.var_backend = true;
                    }
                    // The type is resolved once every module is read (it may be imported
                    // from one read later).
                    let (self_ty, args) = match &*i.self_ty {
                        syn::Type::Path(p) if p.qself.is_none() => (
                            p.path.segments.iter().map(|s| name_of(&s.ident)).collect(),
                            p.path.segments.last().map(|s| s.arguments.clone()),
                        ),
                        _ => (Vec::new(), None),
                    };
                    let generics = generic_names(&i.generics);
                    let specific = match args {
                        Some(syn::PathArguments::AngleBracketed(args)) => {
                            args.args.iter().any(|arg| match arg {
                                syn::GenericArgument::Lifetime(_) => false,
                                syn::GenericArgument::Type(syn::Type::Path(p)) => !p
                                    .path
                                    .get_ident()
                                    .is_some_and(|i| generics.contains(&name_of(i))),
                                _ => true,
                            })
                        }
                        _ => false,
                    };
                    let mut ids = Vec::new();
                    for impl_item in &i.items {
                        if let syn::ImplItem::Fn(f) = impl_item {
                            let id = self.add_fn(module, &f.sig, &f.block, &f.attrs, file);
                            self.fns[id].impl_generics = generics.clone();
                            if i.trait_.is_none() {
                                self.fns[id].public = matches!(f.vis, syn::Visibility::Public(_));
                                self.fns[id].private_to = match &f.vis {
                                    syn::Visibility::Public(_) => None,
                                    // `pub(crate)`, `pub(in crate)`.
                                    syn::Visibility::Restricted(r) if r.path.is_ident("crate") => {
                                        None
                                    }
                                    syn::Visibility::Restricted(r)
                                        if r.in_token.is_none() && r.path.is_ident("super") =>
                                    {
                                        Some(self.modules[module].parent.unwrap_or(module))
                                    }
                                    // Private, `pub(self)`, or `pub(in path)` (its own module
                                    // at least).
                                    _ => Some(module),
                                };
                            }
                            ids.push(id);
                        }
                    }
                    let trait_path = i.trait_.as_ref().map(|(_, path, _)| {
                        path.segments.iter().map(|s| name_of(&s.ident)).collect()
                    });
                    self.pending_impls.push(PendingImpl {
                        module,
                        self_ty,
                        specific,
                        generics,
                        fns: ids,
                        trait_path,
                        contracted: self.modules[module].contract_scope
                            || !crate::contract::contract_metas(&i.attrs).is_empty(),
                    });
                }
                syn::Item::Macro(m) => match &m.ident {
                    Some(ident) => {
                        self.macro_names.insert(name_of(ident));
                        let mut words = BTreeSet::new();
                        token_idents(&m.mac.tokens, &mut words);
                        if words.contains("break") || words.contains("continue") {
                            self.jumping_macros.insert(name_of(ident));
                        }
                        self.macro_words.insert(name_of(ident), words);
                        self.insert(module, name_of(ident), Item::Other);
                    }
                    // It may define any item, which would shadow a glob import or a crate.
                    None => self.modules[module].opaque = true,
                },
                _ => {}
            }
        }
    }

    fn add_type(&mut self, module: ModId, ident: &syn::Ident) {
        let key = self.type_key(module, &name_of(ident));
        self.insert(module, name_of(ident), Item::Type(key));
    }

    /// Adds an item; a name defined twice (once per `cfg`, say) may be either: unknown.
    fn insert(&mut self, module: ModId, name: String, item: Item) {
        match item {
            Item::Fn(id) => self
                .twin_fns
                .entry((module, name.clone()))
                .or_default()
                .push(id),
            _ => {
                self.not_fns.insert((module, name.clone()));
            }
        }
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

    fn add_fn(
        &mut self,
        module: ModId,
        sig: &'static syn::Signature,
        block: &'static syn::Block,
        attrs: &'static [syn::Attribute],
        file: FileId,
    ) -> FnId {
        let name = name_of(&sig.ident);
        let mut path: Vec<&str> = self.modules[module]
            .path
            .iter()
            .skip(1)
            .map(String::as_str)
            .collect();
        path.push(&name);
        let display = path.join("::");
        self.fns.push(FnDef {
            name,
            display,
            module,
            owner: None,
            sig,
            block,
            attrs,
            file,
            contract: contract_of(attrs),
            impl_generics: Vec::new(),
            conditional: is_conditional(attrs),
            never_compiled: never_compiled(attrs) || self.modules[module].never_compiled,
            trait_of: None,
            private_to: None,
            public: false,
        });
        self.fns.len() - 1
    }

    fn read_mod(
        &mut self,
        parent: ModId,
        m: &'static syn::ItemMod,
        file: FileId,
        dir: &Path,
        files: &mut dyn Files,
    ) {
        let name = name_of(&m.ident);
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
        // Under `cfg`, its path may name nothing, or a twin: unknown (its functions are
        // still read).
        let entry = |id| match is_conditional(&m.attrs) {
            true => Item::Other,
            false => Item::Mod(id),
        };
        // Its own `#[cfg]`, or an inner `#![cfg]` (in `m.attrs` for an inline module).
        let conditional = is_conditional(&m.attrs);
        // rustc may never read the file of a module under `cfg`, or within one.
        let maybe_compiled = conditional || self.modules[parent].conditional;
        match &m.content {
            Some((_, items)) => {
                let id = self.add_module(krate, Some(parent), path);
                self.modules[id].exported =
                    self.modules[parent].exported && matches!(m.vis, syn::Visibility::Public(_));
                self.modules[id].contract_scope =
                    !crate::contract::contract_metas(&m.attrs).is_empty();
                self.modules[id].inline = true;
                self.modules[id].conditional |= conditional;
                self.modules[id].never_compiled |= never_compiled(&m.attrs);
                self.insert(parent, name.clone(), entry(id));
                let inner = match &path_attr {
                    Some(p) => dir.join(p),
                    None => dir.join(&name),
                };
                self.read_items(id, items, file, &inner, files);
            }
            None => {
                // `#[cfg_attr(.., path = "..")]`: which file holds it is not known.
                if m.attrs.iter().any(moves_module_file) {
                    self.modules[parent].unread_children = true;
                    self.insert(parent, name, Item::Other);
                    return;
                }
                let candidates: Vec<PathBuf> = match &path_attr {
                    // Relative to the file's directory, or within inline modules to theirs.
                    Some(p) if self.modules[parent].inline => vec![dir.join(p)],
                    Some(p) => {
                        let here = files.path(file).parent().map(Path::to_path_buf);
                        vec![here.unwrap_or_default().join(p)]
                    }
                    None => vec![
                        dir.join(format!("{name}.rs")),
                        dir.join(&name).join("mod.rs"),
                    ],
                };
                let Some(found) = candidates.iter().find(|c| files.exists(c)).cloned() else {
                    // rustc refuses a missing module file, unless a `cfg` leaves the module out.
                    if !maybe_compiled {
                        files.missing_module(&name, file, &candidates);
                    }
                    self.modules[parent].unread_children = true;
                    self.insert(parent, name, Item::Other);
                    return;
                };
                // A file that is already being read above this module (a `#[path]` back to
                // an ancestor, under a `cfg` that leaves it out), or read twice in the crate
                // already: not read again.
                let canonical = found.canonicalize().unwrap_or_else(|_| found.clone());
                let loads = self.loads.entry((krate, canonical.clone())).or_insert(0);
                *loads += 1;
                if *loads > 2 || self.reading.contains(&canonical) {
                    self.modules[parent].unread_children = true;
                    self.insert(parent, name, Item::Other);
                    return;
                }
                let loaded = match maybe_compiled {
                    true => files.load_if_compiled(&found),
                    false => files.load(&found),
                };
                let Some((child_file, ast)) = loaded else {
                    self.modules[parent].unread_children = true;
                    self.insert(parent, name, Item::Other);
                    return;
                };
                self.sources.0.push(ast);
                self.sources.1.push(krate);
                self.var_backend |= mentions_backend(ast);
                self.note_hidden(krate, ast);
                let id = self.add_module(krate, Some(parent), path);
                self.modules[id].exported =
                    self.modules[parent].exported && matches!(m.vis, syn::Visibility::Public(_));
                self.modules[id].conditional |= conditional || is_conditional(&ast.attrs);
                self.modules[id].never_compiled |=
                    never_compiled(&m.attrs) || never_compiled(&ast.attrs);
                self.insert(parent, name.clone(), entry(id));
                let parent_dir = found.parent().map(Path::to_path_buf).unwrap_or_default();
                // A `mod.rs`, and a file named by `#[path]`, own their directory: their
                // `mod`s are beside them (rustc's rule), others' in a folder of their name.
                let child_dir =
                    if found.file_name().is_some_and(|f| f == "mod.rs") || path_attr.is_some() {
                        parent_dir
                    } else {
                        parent_dir.join(found.file_stem().unwrap_or_default())
                    };
                self.reading.push(canonical);
                self.read_items(id, &ast.items, child_file, &child_dir, files);
                self.reading.pop();
            }
        }
    }

    fn read_use(
        &mut self,
        module: ModId,
        tree: &syn::UseTree,
        mut prefix: Vec<String>,
        public: bool,
    ) {
        let bring = |index: &mut Index, name: String| {
            if public {
                index.modules[module].public.insert(name);
            }
        };
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(name_of(&p.ident));
                self.read_use(module, &p.tree, prefix, public);
            }
            syn::UseTree::Name(n) => {
                let name = name_of(&n.ident);
                if name == "self" {
                    if let Some(last) = prefix.last().cloned() {
                        bring(self, last.clone());
                        self.insert_use(module, last, prefix);
                    }
                } else {
                    prefix.push(name.clone());
                    bring(self, name.clone());
                    self.insert_use(module, name, prefix);
                }
            }
            syn::UseTree::Rename(r) => {
                if r.ident != "self" {
                    prefix.push(name_of(&r.ident));
                }
                if r.rename != "_" {
                    bring(self, name_of(&r.rename));
                    self.insert_use(module, name_of(&r.rename), prefix);
                } else {
                    self.modules[module].anonymous_uses.push(prefix);
                }
            }
            syn::UseTree::Glob(_) => self.modules[module].globs.push((prefix, public)),
            syn::UseTree::Group(g) => {
                for item in &g.items {
                    self.read_use(module, item, prefix.clone(), public);
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
        let (first, rest) = match (first.as_str(), rest.split_first()) {
            // `::candle_nn::..`: a crate, never an item of the module.
            ("::", Some((name, tail))) => {
                return self.resolve_rest(self.external(m.krate, name), tail, depth);
            }
            _ => (first, rest),
        };
        let start = match first.as_str() {
            "crate" if self.crates[m.krate].root_known => Resolved::Mod(self.crates[m.krate].root),
            "crate" => Resolved::Unknown,
            "self" => Resolved::Mod(module),
            "super" => match m.parent {
                Some(parent) => Resolved::Mod(parent),
                None => Resolved::Unknown,
            },
            name => match self.lookup(module, name, depth, false) {
                Resolved::Unknown if m.opaque || self.unknown_glob(module, depth) => {
                    Resolved::Unknown
                }
                Resolved::Unknown => match self.external(m.krate, name) {
                    Resolved::Unknown => self.lookup(module, name, depth, true),
                    found => found,
                },
                found => found,
            },
        };
        self.resolve_rest(start, rest, depth)
    }

    /// What the path's `rest` names from `start`.
    fn resolve_rest(&self, start: Resolved, rest: &[String], depth: usize) -> Resolved {
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
                // `Kind::Wrap` is the enum's variant, whatever else is named so.
                Resolved::Type(key)
                    if self.variants.get(&key).is_some_and(|v| v.contains(segment)) =>
                {
                    Resolved::Unknown
                }
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

    /// Whether `name` may be brought into `module` other than as std's: by a `use` of the
    /// module (`use half::bf16 as f32;`, whatever that resolves to), through a glob (of a
    /// module of the crate that may bring it, or of a crate other than std's or candle's), or
    /// by a macro out of sight. Items the module declares are found by [`Index::resolve`].
    pub fn may_import(&self, module: ModId, name: &str) -> bool {
        self.may_import_at(module, name, 0)
    }

    fn may_import_at(&self, module: ModId, name: &str, depth: usize) -> bool {
        let m = &self.modules[module];
        if depth > 16 || m.opaque || m.uses.contains_key(name) {
            return true;
        }
        m.globs.iter().enumerate().any(|(at, (glob, _))| {
            match self.glob_resolved(module, at, depth, glob) {
                Some(Resolved::Mod(inner)) => {
                    inner != module && self.may_import_at(inner, name, depth + 1)
                }
                Some(Resolved::External(path)) => path
                    .first()
                    .is_none_or(|first| !KNOWN_CRATES.contains(&first.as_str())),
                _ => true,
            }
        })
    }

    /// Whether a glob `use` of `module` names nothing the index can read (`use super::*` out
    /// of a file read alone): it may bring any name, a crate's name among them.
    fn unknown_glob(&self, module: ModId, depth: usize) -> bool {
        self.modules[module]
            .globs
            .iter()
            .enumerate()
            .any(|(at, (glob, _))| {
                // A glob whose own path is being resolved (through this glob again) is left
                // to that outer resolution.
                self.glob_resolved(module, at, depth, glob)
                    .is_some_and(|found| !matches!(found, Resolved::Mod(_) | Resolved::External(_)))
            })
    }

    /// The glob `use` number `at` of `module` (its path `glob`) resolved, `None` while that
    /// very glob is being resolved: a path's first name is looked up through the module's
    /// globs, this one among them, and each level would resolve every glob again.
    fn glob_resolved(
        &self,
        module: ModId,
        at: usize,
        depth: usize,
        glob: &[String],
    ) -> Option<Resolved> {
        if !self.resolving_globs.borrow_mut().insert((module, at)) {
            return None;
        }
        let found = self.resolve_at(module, glob, depth + 1);
        self.resolving_globs.borrow_mut().remove(&(module, at));
        Some(found)
    }

    /// A crate's name as the first segment of a path: another crate, or the package's library.
    fn external(&self, krate: usize, name: &str) -> Resolved {
        let info = &self.crates[krate];
        if info.lib_name.as_deref() == Some(name)
            && let Some(&lib) = self.libs.get(name)
        {
            return match lib {
                Some(lib) => Resolved::Mod(self.crates[lib].root),
                None => Resolved::Unknown,
            };
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
        self.lookup_in(module, name, depth, external_globs, false)
    }

    /// [`Index::lookup`]; `public_only` for what a glob import of `module` brings (its `pub`
    /// items, `pub use`s and `pub` globs).
    fn lookup_in(
        &self,
        module: ModId,
        name: &str,
        depth: usize,
        external_globs: bool,
        public_only: bool,
    ) -> Resolved {
        let m = &self.modules[module];
        if public_only && !m.public.contains(name) && !m.globs.iter().any(|(_, public)| *public) {
            return Resolved::Unknown;
        }
        if m.items.contains_key(name) && m.uses.contains_key(name) {
            return Resolved::Unknown;
        }
        let visible = !public_only || m.public.contains(name);
        if let Some(item) = m.items.get(name).filter(|_| visible) {
            return match item {
                Item::Mod(id) => Resolved::Mod(*id),
                Item::Fn(id) if self.fns[*id].conditional => Resolved::Unknown,
                Item::Fn(id) => Resolved::Fn(*id),
                Item::Type(key) => Resolved::Type(key.clone()),
                Item::Const(value) => Resolved::Const(*value),
                Item::Flag(value) => Resolved::Flag(*value),
                Item::Other => Resolved::Unknown,
            };
        }
        if let Some(path) = m.uses.get(name).filter(|_| visible) {
            return self.resolve_at(module, path, depth + 1);
        }
        if m.opaque || (public_only && m.items.contains_key(name)) {
            return Resolved::Unknown;
        }
        let mut externals = Vec::new();
        for (at, (glob, public)) in m.globs.iter().enumerate() {
            if public_only && !public {
                continue;
            }
            let Some(found) = self.glob_resolved(module, at, depth, glob) else {
                continue;
            };
            match found {
                Resolved::Mod(g) if g != module => {
                    // `use super::*` of a module around this one brings its private items and
                    // `use`s too (a `#[cfg(test)] mod tests`'s `Tensor`): they are visible here.
                    // (Not through a `pub use super::*` another module's glob reaches: that
                    // re-exports only what is `pub`.)
                    let around = self.encloses(g, module);
                    match self.lookup_in(g, name, depth + 1, true, public_only || !around) {
                        Resolved::Unknown => {}
                        found => return found,
                    }
                }
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

    /// Whether `outer` is `inner` or a module around it.
    fn encloses(&self, outer: ModId, inner: ModId) -> bool {
        let mut at = Some(inner);
        while let Some(module) = at {
            if module == outer {
                return true;
            }
            at = self.modules[module].parent;
        }
        false
    }

    /// The declared type of the named field `name` of the struct `key`, and the module
    /// the struct is written in.
    pub fn field(&self, key: &str, name: &str) -> Option<(ModId, &'static syn::Type)> {
        let (module, fields) = self.fields.get(key)?;
        Some((*module, fields.get(name)?.0))
    }

    /// How many structs with named fields the crates read define.
    pub fn struct_count(&self) -> usize {
        self.structs.len()
    }

    /// The definition of the struct `key` (one with named fields, not under `cfg`), and the
    /// module it is written in.
    pub fn struct_item(&self, key: &str) -> Option<(ModId, &'static syn::ItemStruct)> {
        let (module, item) = self.structs.get(key)?;
        Some((*module, item.0))
    }

    /// The definition of the enum `key`, where one of that key is read (none under `cfg`).
    pub fn enum_item(&self, key: &str) -> Option<&'static syn::ItemEnum> {
        Some(self.enums.get(key)?.as_ref()?.1.0)
    }

    /// [`Index::enum_item`], with the module the enum is written in.
    pub fn enum_def(&self, key: &str) -> Option<(ModId, &'static syn::ItemEnum)> {
        let (module, item) = self.enums.get(key)?.as_ref()?;
        Some((*module, item.0))
    }

    /// The one type a variant holds (`Conv2d(nn::Conv2d)`), and the module the enum is written
    /// in; none for a generic enum (its variants may hold any type) or a variant under an
    /// attribute (`#[cfg(..)]` may compile another of the name).
    pub fn variant_payload(&self, key: &str, variant: &str) -> Option<(ModId, &'static syn::Type)> {
        let (module, item) = self.enums.get(key)?.as_ref()?;
        if !item.0.generics.params.is_empty() {
            return None;
        }
        let mut found = item.0.variants.iter().filter(|v| v.ident == variant);
        let (Some(v), None) = (found.next(), found.next()) else {
            return None;
        };
        if v.attrs.iter().any(|a| !a.path().is_ident("doc")) {
            return None;
        }
        match &v.fields {
            syn::Fields::Unnamed(fields) if fields.unnamed.len() == 1 => {
                Some((*module, &fields.unnamed[0].ty))
            }
            _ => None,
        }
    }

    /// Every file read, whole (the macro's one file, or every file of the crates).
    pub fn sources(&self) -> &[&'static syn::File] {
        &self.sources.0
    }

    /// The files where code may use the items of `module`'s crate: that crate's own, where it
    /// is read whole and is no library (nothing else can name its items); every file read
    /// otherwise.
    pub fn sources_using(&self, module: ModId) -> Vec<&'static syn::File> {
        let krate = self.modules[module].krate;
        let info = &self.crates[krate];
        let own = info.root_known && !info.is_lib;
        self.sources
            .0
            .iter()
            .zip(&self.sources.1)
            .filter(|(_, k)| !own || **k == krate)
            .map(|(file, _)| *file)
            .collect()
    }

    /// Whether the name a `use` of `module` brings is an item the index holds, or one of
    /// another crate that `known` accepts (std's, candle's): a `use` under `cfg` (candle's
    /// `#[cfg(not(feature = "flash-attn"))] use candle_nn::attention::flash_attn;`) where every
    /// `use` of the name is such a one.
    pub fn use_known(&self, module: ModId, name: &str, known: &dyn Fn(&[String]) -> bool) -> bool {
        let path_known = |resolved: Resolved| match resolved {
            Resolved::External(path) => known(&path),
            Resolved::Unknown => false,
            _ => true,
        };
        // `use candle_flash_attn;` (qwen3's, under `cfg`): a crate's root by its name, a
        // module and no trait, whether or not the manifest declares the crate. (A glob of it,
        // `use ext::*`, is no `use` of a name: it brings the crate's traits.)
        // In edition 2015 `use x;` names the crate root's `x` (a `pub use ext::Trait;` there):
        // only a name the crate's root module holds nothing of is a crate.
        let mut top = module;
        while let Some(parent) = self.modules[top].parent {
            top = parent;
        }
        let crate_root = |path: &[String]| {
            path.len() == 1
                && path[0] != "self"
                && path[0] != "super"
                && !self.modules[top].items.contains_key(&path[0])
                // (At the root itself, the `use` of the name is this one.)
                && (top == module
                    || (!self.modules[top].uses.contains_key(&path[0])
                        && !self.modules[top].conditional_uses.contains_key(&path[0])))
                && self.modules[top].globs.is_empty()
                && !self.modules[top].opaque
        };
        if self.modules[module]
            .uses
            .get(name)
            .is_some_and(|path| crate_root(path))
        {
            return true;
        }
        match self.resolve(module, &[name.to_string()]) {
            Resolved::Unknown => {
                self.modules[module]
                    .conditional_uses
                    .get(name)
                    .is_some_and(|paths| {
                        !paths.is_empty()
                            && paths.iter().all(|path| {
                                crate_root(path) || path_known(self.resolve(module, path))
                            })
                    })
            }
            resolved => path_known(resolved),
        }
    }

    /// Whether no `use` anywhere in `module`'s crate (named, `as _` or a glob) brings a trait
    /// of another crate that the index does not know: such a trait may give a `usize` field a
    /// `&mut self` method of a reading name (`ext::Bump::unwrap_or`). The crate's own traits,
    /// where the whole crate is read, are the scan's to see.
    pub fn external_traits_known(&self, module: ModId) -> bool {
        let krate = self.modules[module].krate;
        self.body_uses_known(krate)
            && self
                .modules
                .iter()
                .enumerate()
                .filter(|(_, m)| m.krate == krate)
                .all(|(id, m)| {
                    m.anonymous_uses
                        .iter()
                        .all(|path| match self.resolve(id, path) {
                            Resolved::External(path) => trait_path_known(&path),
                            Resolved::Unknown => trait_path_known(path),
                            _ => true,
                        })
                        && m.uses
                            .keys()
                            .all(|name| self.use_known(id, name, &|path| trait_path_known(path)))
                        && m.globs
                            .iter()
                            .all(|(path, _)| match self.resolve(id, path) {
                                Resolved::Mod(_) => true,
                                Resolved::External(path) => trait_path_known(&path),
                                _ => false,
                            })
                })
    }

    /// Whether every `use` inside a block of `krate`'s files (`fn grow(&mut self) { use
    /// ext::Bump; .. }`) names a path of this crate (`crate::`, `self::`, `super::`) or of a
    /// crate whose traits are known: one of another crate may bring a trait whose `&mut self`
    /// method of a reading name is the one called there. Computed once per crate.
    fn body_uses_known(&self, krate: usize) -> bool {
        let key = format!("body uses known {krate}");
        if let Some(known) = self.derived.borrow().get(&key)
            && let Some(known) = known.downcast_ref::<bool>()
        {
            return *known;
        }
        struct BodyUses {
            depth: usize,
            paths: Vec<Vec<String>>,
            /// Macros called in a block, by their last name, and whether their tokens hold a
            /// `use`.
            macros: Vec<(String, bool)>,
            /// The crate's `macro_rules!`, by name, and whether their tokens hold a `use`.
            rules: BTreeMap<String, bool>,
        }
        fn holds_use(tokens: TokenStream) -> bool {
            tokens.into_iter().any(|tree| match tree {
                proc_macro2::TokenTree::Ident(ident) => ident == "use",
                proc_macro2::TokenTree::Group(group) => holds_use(group.stream()),
                _ => false,
            })
        }
        fn leaves(tree: &syn::UseTree, mut prefix: Vec<String>, into: &mut Vec<Vec<String>>) {
            match tree {
                syn::UseTree::Path(p) => {
                    prefix.push(name_of(&p.ident));
                    leaves(&p.tree, prefix, into);
                }
                syn::UseTree::Name(n) => {
                    prefix.push(name_of(&n.ident));
                    into.push(prefix);
                }
                syn::UseTree::Rename(r) => {
                    prefix.push(name_of(&r.ident));
                    into.push(prefix);
                }
                syn::UseTree::Glob(_) => {
                    prefix.push("*".to_string());
                    into.push(prefix);
                }
                syn::UseTree::Group(g) => {
                    for item in &g.items {
                        leaves(item, prefix.clone(), into);
                    }
                }
            }
        }
        impl<'ast> syn::visit::Visit<'ast> for BodyUses {
            fn visit_block(&mut self, block: &'ast syn::Block) {
                self.depth += 1;
                syn::visit::visit_block(self, block);
                self.depth -= 1;
            }
            fn visit_macro(&mut self, mac: &'ast syn::Macro) {
                let name = mac
                    .path
                    .segments
                    .last()
                    .map(|s| name_of(&s.ident))
                    .unwrap_or_default();
                let with_use = holds_use(mac.tokens.clone());
                if name == "macro_rules" {
                    return;
                }
                if self.depth > 0 {
                    self.macros.push((name, with_use));
                }
            }
            fn visit_item_macro(&mut self, item: &'ast syn::ItemMacro) {
                if item.mac.path.is_ident("macro_rules")
                    && let Some(ident) = &item.ident
                {
                    let with_use = holds_use(item.mac.tokens.clone());
                    *self.rules.entry(name_of(ident)).or_insert(false) |= with_use;
                    return;
                }
                syn::visit::visit_item_macro(self, item);
            }
            fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
                if self.depth > 0 {
                    let mut prefix = Vec::new();
                    if u.leading_colon.is_some() {
                        prefix.push("::".to_string());
                    }
                    leaves(&u.tree, prefix, &mut self.paths);
                }
            }
        }
        let mut uses = BodyUses {
            depth: 0,
            paths: Vec::new(),
            macros: Vec::new(),
            rules: BTreeMap::new(),
        };
        for (file, _) in self
            .sources
            .0
            .iter()
            .zip(&self.sources.1)
            .filter(|(_, k)| **k == krate)
        {
            syn::visit::Visit::visit_file(&mut uses, file);
        }
        // A path's first name as the crate's root resolves it (`extern crate ext as candle;`,
        // a dependency renamed `candle` in the manifest).
        let root = self
            .modules
            .iter()
            .position(|m| m.krate == krate && m.parent.is_none());
        let paths_known = uses.paths.iter().all(|path| {
            let path: Vec<String> = path.iter().filter(|s| *s != "::").cloned().collect();
            if matches!(
                path.first().map(String::as_str),
                Some("crate" | "self" | "super")
            ) {
                return true;
            }
            let Some(root) = root else { return false };
            path.len() > 1
                && match self.resolve(root, &path[..1]) {
                    Resolved::External(first) => {
                        let real: Vec<String> =
                            first.into_iter().chain(path[1..].iter().cloned()).collect();
                        trait_path_known(&real)
                    }
                    Resolved::Mod(_) => true,
                    _ => false,
                }
        });
        // A macro called in a block may expand to a `use` (`bring!()` of a `macro_rules!`
        // holding one, or another crate's): only std's, tracing's and the crate's own without
        // a `use` are known not to.
        let macros_known = uses.macros.iter().all(|(name, with_use)| {
            !with_use
                && match uses.rules.get(name) {
                    Some(rule_with_use) => !rule_with_use,
                    None => {
                        KNOWN_MACROS.contains(&name.as_str())
                            || DIVERGING_MACROS.contains(&name.as_str())
                            || TRACING_MACROS.contains(&name.as_str())
                    }
                }
        });
        let known = paths_known && macros_known;
        self.derived.borrow_mut().insert(key, Box::new(known));
        known
    }

    /// Whether every trait that may be in scope anywhere in `module`'s crate is one the index
    /// holds, or std's or candle's: no glob import, no module a macro may fill, and every
    /// `use` (`as _` too) names an item the index holds or one of those crates', in a
    /// function's body too.
    pub fn crate_traits_in_sight(&self, module: ModId) -> bool {
        let krate = self.modules[module].krate;
        self.body_uses_known(krate)
            && self
                .modules
                .iter()
                .enumerate()
                .filter(|(_, m)| m.krate == krate)
                .all(|(id, m)| {
                    m.globs.is_empty()
                        && !m.opaque
                        && m.anonymous_uses.iter().all(|path| {
                            path.first()
                                .is_some_and(|first| KNOWN_CRATES.contains(&first.as_str()))
                        })
                        && m.uses
                            .keys()
                            .all(|name| self.use_known(id, name, &|path| trait_path_known(path)))
                })
    }

    /// Whether a method call in `module` can reach no trait method the index does not hold:
    /// every trait in scope there (by its `use`s, `as _` imports and glob imports) is one the
    /// index holds, or std's or candle's, and no module of the crate may hold an `impl` the
    /// index cannot see (items a macro or `include!` makes, a `mod` file not read). What a
    /// call reaches after its first step (an inherent `&self` method on a `&mut` receiver,
    /// through an `Arc`) is certain only then: another crate's blanket `impl` of a trait in
    /// scope, or a hidden `impl` of the crate's own, would be found first.
    ///
    /// `method_module` is where the method stands: its crate's hidden `impl`s count too (a
    /// library's `macro_rules!` may implement a trait for `&mut` its type).
    pub fn later_steps_in_sight(&self, module: ModId, method_module: ModId) -> bool {
        let crates = [
            self.modules[module].krate,
            self.modules[method_module].krate,
        ];
        crates.iter().all(|&krate| !self.may_hide_impls(krate))
            && self.module_traits_known(module, 0)
    }

    /// Whether the crate `krate` may hold an `impl` the index cannot see: in items a macro
    /// not std's or candle's makes, behind an attribute macro, in a `mod` file not read.
    /// Computed once per crate (every later method step asks it).
    fn may_hide_impls(&self, krate: usize) -> bool {
        let key = format!("may hide impls {krate}");
        if let Some(known) = self.derived.borrow().get(&key)
            && let Some(hides) = known.downcast_ref::<bool>()
        {
            return *hides;
        }
        // `tracing` is the tracing crate only where the crate's manifest says so (a
        // dependency renamed `tracing` may be any crate's macros).
        let real_tracing = self.crates[krate]
            .externs
            .get("tracing")
            .is_some_and(|real| real == "tracing");
        let macro_items = self.called_macros.iter().any(|(at, name)| {
            // `tracing::span` by its last name: a `macro_rules! span` of the crate's (in a
            // module `tracing`) is no longer tracing's.
            let last = name.rsplit("::").next().unwrap_or(name);
            let tracing = real_tracing && name.strip_prefix("tracing::").is_some_and(|n| n == last);
            *at == krate
                && (self.macro_names.contains(last)
                    || !(KNOWN_MACROS.contains(&name.as_str()) || tracing))
        });
        let hides = self.hidden_items.contains(&krate)
            || macro_items
            || self
                .modules
                .iter()
                .any(|m| m.krate == krate && (m.opaque || m.unread_children));
        self.derived.borrow_mut().insert(key, Box::new(hides));
        hides
    }

    /// Whether the crate of `module` calls `include!`: the code it brings in (read by no
    /// one) may give any type, `Tensor` too, a trait method of any name.
    pub fn includes_code(&self, module: ModId) -> bool {
        self.called_macros
            .contains(&(self.modules[module].krate, "include".to_string()))
    }

    /// Whether a trait of the crates read provides a method `name` (a default body).
    pub fn is_provided_method(&self, name: &str) -> bool {
        self.provided_names.contains(name)
    }

    /// Whether the type `key` has a derive or attribute macro not std's: it may have trait
    /// `impl`s the index cannot see.
    pub fn is_derived(&self, key: &str) -> bool {
        self.derived_types.contains(key)
    }

    /// Reads what a file may hold out of the index's sight (see `hidden_items`): `impl`s
    /// nested in items (a `static`'s block, an array length, a function's body), whose methods
    /// any type may have; macros that are not std's or candle's; attribute macros; `mod`
    /// files inside functions.
    fn note_hidden(&mut self, krate: usize, file: &syn::File) {
        let mut hidden = Hidden::default();
        syn::visit::Visit::visit_file(&mut hidden, file);
        self.any_type_methods.extend(hidden.nested_methods);
        if hidden.unseen {
            self.hidden_items.insert(krate);
        }
        self.called_macros
            .extend(hidden.macros.into_iter().map(|name| (krate, name)));
    }

    /// Whether every trait in scope in `module` is the index's, std's or candle's.
    fn module_traits_known(&self, module: ModId, depth: usize) -> bool {
        let known_external = |path: &[String]| trait_path_known(path);
        let m = &self.modules[module];
        depth <= 8
            && !m.opaque
            && m.anonymous_uses
                .iter()
                .all(|path| match self.resolve(module, path) {
                    Resolved::External(path) => known_external(&path),
                    Resolved::Unknown => known_external(path),
                    _ => true,
                })
            && m.uses
                .keys()
                .all(|name| self.use_known(module, name, &|path| known_external(path)))
            && m.globs
                .iter()
                .all(|(path, _)| match self.resolve(module, path) {
                    Resolved::Mod(id) => self.module_traits_known(id, depth + 1),
                    Resolved::External(path) => known_external(&path),
                    _ => false,
                })
    }

    /// Marks the crate read last as a library no Rust crate can call (a `cdylib`, a
    /// `staticlib` or a `proc-macro` only).
    pub fn mark_closed_crate(&mut self) {
        if let Some(info) = self.crates.last_mut() {
            info.closed = true;
        }
    }

    /// Marks the crate read last as an integration test (`tests/*.rs`, a `[[test]]` entry).
    pub fn mark_test_crate(&mut self) {
        if let Some(info) = self.crates.last_mut() {
            info.is_test = true;
        }
    }

    /// The two functions of `name` in `module` under opposite `cfg`s (`#[cfg(P)]` and
    /// `#[cfg(not(P))]`, nothing else conditional on them): exactly one is compiled in, so
    /// the name is one of them (no import or glob can stand in for both), and nothing else of
    /// the name.
    pub fn twin_fns(&self, module: ModId, name: &str) -> Option<&[FnId]> {
        let key = (module, name.to_string());
        let fns = self.twin_fns.get(&key)?;
        let [a, b] = fns.as_slice() else {
            return None;
        };
        if self.not_fns.contains(&key) {
            return None;
        }
        let _file_tokens = FileTokens::enter(self);
        // The one `cfg` each stands under, and no other attribute that may compile it out.
        let condition = |id: FnId| -> Option<proc_macro2::TokenStream> {
            let mut cfgs = self.fns[id]
                .attrs
                .iter()
                .filter(|a| is_conditional(std::slice::from_ref(a)));
            let attr = cfgs.next()?;
            if cfgs.next().is_some() || !attr.path().is_ident("cfg") {
                return None;
            }
            match &attr.meta {
                syn::Meta::List(list) => Some(list.tokens.clone()),
                _ => None,
            }
        };
        let (p, q) = (condition(*a)?, condition(*b)?);
        let negates = |x: &proc_macro2::TokenStream, y: &proc_macro2::TokenStream| {
            let trees: Vec<proc_macro2::TokenTree> = y.clone().into_iter().collect();
            matches!(trees.as_slice(), [proc_macro2::TokenTree::Ident(not), proc_macro2::TokenTree::Group(inner)]
                if not == "not"
                    && inner.delimiter() == proc_macro2::Delimiter::Parenthesis
                    && inner.stream().to_string() == x.to_string())
        };
        (negates(&p, &q) || negates(&q, &p)).then_some(fns.as_slice())
    }

    /// Whether the body of `id` names a crate its package does not declare
    /// (`candle_flash_attn::flash_attn(..)` under `#[cfg(feature = "flash-attn")]` in a package
    /// without that dependency): no build compiles it, so a twin of it under the other `cfg`
    /// is the one compiled in. Only where the package's manifest gave the crate's
    /// dependencies and nothing in the crate may bring the name otherwise (a `use`, a glob
    /// out of sight, an item a macro makes, an `extern crate`, an item in the body).
    pub fn names_an_undeclared_crate(&self, id: FnId) -> bool {
        struct FirstSegments(Vec<String>, bool);
        impl<'ast> syn::visit::Visit<'ast> for FirstSegments {
            fn visit_path(&mut self, path: &'ast syn::Path) {
                if path.segments.len() > 1 {
                    self.0.push(name_of(&path.segments[0].ident));
                }
                syn::visit::visit_path(self, path);
            }
            fn visit_item(&mut self, _: &'ast syn::Item) {
                self.1 = true;
            }
            fn visit_macro(&mut self, _: &'ast syn::Macro) {
                self.1 = true;
            }
        }
        let f = &self.fns[id];
        let m = &self.modules[f.module];
        let info = &self.crates[m.krate];
        if !info.root_known
            || m.opaque
            || self.hidden_items.contains(&m.krate)
            || self.unknown_glob(f.module, 0)
        {
            return false;
        }
        let mut firsts = FirstSegments(Vec::new(), false);
        syn::visit::Visit::visit_block(&mut firsts, f.block);
        if firsts.1 {
            return false;
        }
        let extern_crates = self.crate_sources(f.module).iter().any(|file| {
            #[derive(Default)]
            struct ExternCrates(bool);
            impl<'ast> syn::visit::Visit<'ast> for ExternCrates {
                fn visit_item_extern_crate(&mut self, _: &'ast syn::ItemExternCrate) {
                    self.0 = true;
                }
            }
            let mut found = ExternCrates::default();
            syn::visit::Visit::visit_file(&mut found, file);
            found.0
        });
        // Only candle's own crates, whose library names are their packages' (another
        // package's library may have any name: `utf-8`'s is `utf8`), and which no std item
        // shares (`f32::min`, `Vec::new`).
        const CANDLE_CRATES: &[&str] = &[
            "candle_flash_attn",
            "candle_core",
            "candle_nn",
            "candle_transformers",
            "candle_kernels",
            "candle_metal_kernels",
            "candle_onnx",
            "candle_datasets",
        ];
        !extern_crates
            && firsts.0.iter().any(|name| {
                CANDLE_CRATES.contains(&name.as_str())
                    && !info.externs.contains_key(name)
                    && info.lib_name.as_deref() != Some(name.as_str())
                    && !self.may_import(f.module, name)
                    && matches!(
                        self.resolve(f.module, std::slice::from_ref(name)),
                        Resolved::Unknown
                    )
            })
    }

    /// Whether `module` is `ancestor` or lies inside it.
    pub fn within(&self, mut module: ModId, ancestor: ModId) -> bool {
        loop {
            if module == ancestor {
                return true;
            }
            match self.modules[module].parent {
                Some(parent) => module = parent,
                None => return false,
            }
        }
    }

    /// Whether `module` is in an integration test's crate (see [`Index::mark_test_crate`]).
    pub fn in_test_crate(&self, module: ModId) -> bool {
        self.crates[self.modules[module].krate].is_test
    }

    /// Whether other crates may call `module`'s `pub` items: its crate is a library, or is
    /// not read whole (the macro's file may be a library's).
    pub fn callable_from_other_crates(&self, module: ModId) -> bool {
        let info = &self.crates[self.modules[module].krate];
        !info.root_known || (info.is_lib && !info.closed)
    }

    /// The files read of `module`'s crate.
    pub fn crate_sources(&self, module: ModId) -> Vec<&'static syn::File> {
        let krate = self.modules[module].krate;
        self.sources
            .0
            .iter()
            .zip(&self.sources.1)
            .filter(|(_, k)| **k == krate)
            .map(|(file, _)| *file)
            .collect()
    }

    /// Whether `module`'s whole crate is read (the CLI), not one file of it (the macro).
    pub fn whole_crate(&self, module: ModId) -> bool {
        self.crates[self.modules[module].krate].root_known
    }

    /// Whether `name!` in `module` is std's own macro: the crates read define none of the
    /// name, the module imports none (`use other::bail as unimplemented`), its glob imports
    /// are of the crate's own modules or of known crates, and no `#[macro_use] extern crate`
    /// brings others.
    pub fn std_macro_in_scope(&self, module: ModId, name: &str) -> bool {
        let Some(m) = self.modules.get(module) else {
            return false;
        };
        let glob_known = |path: &Vec<String>| {
            path.first().is_some_and(|first| {
                matches!(first.as_str(), "crate" | "self" | "super")
                    || KNOWN_CRATES.contains(&first.as_str())
            })
        };
        !self.defines_macro(name)
            && !m.uses.contains_key(name)
            && m.globs.iter().all(|(path, _)| glob_known(path))
            && !m.opaque
            && !self.macro_use_extern
    }

    /// Whether the function `id` stands in an `impl` or inline module under an attribute
    /// macro, which may rewrite its body.
    pub fn is_wrapped(&self, id: FnId) -> bool {
        self.wrapped_bodies
            .contains(&(self.fns[id].block as *const syn::Block as usize))
    }

    /// Whether the type `key` is a type alias of the crates read (`type CfgMut<'a> = &'a mut
    /// Cfg`: it may stand for a `&mut`).
    pub fn is_alias(&self, key: &str) -> bool {
        self.aliases.contains(key)
    }

    /// Whether a `macro_rules!` of that name was read (it hides std's macro of the name).
    pub fn defines_macro(&self, name: &str) -> bool {
        self.macro_names.contains(name)
    }

    /// Whether the crate's macro `name` may expand to a `break` or `continue`: its tokens
    /// hold one, or name another of the crate's macros that may (or one out of sight).
    pub fn macro_may_jump(&self, name: &str) -> bool {
        let mut seen = BTreeSet::new();
        let mut todo = vec![name.to_string()];
        while let Some(name) = todo.pop() {
            if !seen.insert(name.clone()) {
                continue;
            }
            if self.jumping_macros.contains(&name) {
                return true;
            }
            let Some(words) = self.macro_words.get(&name) else {
                // Defined twice, or by a macro: not read.
                return true;
            };
            todo.extend(
                words
                    .iter()
                    .filter(|w| self.macro_names.contains(*w))
                    .cloned(),
            );
        }
        false
    }

    /// Whether a method `name` the crates read add to the other crate's type `path` may be
    /// called in `module`: its `impl` is in `module`'s crate or a library (another test or
    /// binary target is no dependency), and its trait may be in scope there (a private
    /// trait is only in its own module and below).
    pub fn has_external_method_in(&self, path: &str, name: &str, module: ModId) -> bool {
        let Some(scopes) = self
            .external_methods
            .get(&(path.to_string(), name.to_string()))
        else {
            return false;
        };
        let caller = self.modules[module].krate;
        scopes.iter().any(|(krate, scope)| match scope {
            _ if *krate != caller && !self.crates[*krate].is_lib => false,
            None => true,
            Some(home) => {
                let mut at = Some(module);
                while let Some(m) = at {
                    if m == *home {
                        return true;
                    }
                    at = self.modules[m].parent;
                }
                false
            }
        })
    }

    /// Whether a trait `impl` of the crate for a type not its own (a blanket one, `Arc<T>`'s)
    /// has a method `name`: on an `Arc` of the crate's type, that one may be called.
    pub fn may_be_foreign_method(&self, name: &str) -> bool {
        self.foreign_impl_names.contains(name)
    }

    /// Whether the crates read implement a `VarBuilder` backend (`SimpleBackend`, `Backend`)
    /// of their own: its `get` may give a tensor of another shape than asked.
    pub fn var_backend_in_sight(&self) -> bool {
        self.var_backend
    }

    /// Whether a trait `impl` the index cannot place on one type (a blanket one, one through
    /// an alias, one in a function's body or a `const` block) has a method `name`: it may be
    /// `Tensor`'s, found before candle's on an owned tensor.
    pub fn may_be_any_types_method(&self, name: &str) -> bool {
        self.any_type_methods.contains(name)
    }

    /// The methods named `name` of the trait `impl`s of the type `key` (which trait is each
    /// one's [`FnDef::trait_of`]), in sight also where the rest of the crate is not. One under
    /// `cfg` among them leaves none certain: the list is empty then.
    pub fn trait_impl_methods(&self, key: &str, name: &str) -> &[FnId] {
        let ids = self
            .trait_impl_methods
            .get(&(key.to_string(), name.to_string()))
            .map_or(&[][..], Vec::as_slice);
        if ids.iter().any(|&id| self.fns[id].conditional) {
            return &[];
        }
        ids
    }

    /// The methods of the type `key`'s inherent `impl` blocks whose name [`Index::methods`]
    /// is certain of.
    pub fn inherent_methods(&self, key: &str) -> Vec<FnId> {
        self.methods
            .keys()
            .filter(|(owner, _)| owner == key)
            .flat_map(|(owner, name)| self.methods(owner, name).iter().copied())
            .filter(|&id| self.fns[id].trait_of.is_none())
            .collect()
    }

    /// Whether the type `key` may have a method `name`: one of its `impl`s, its trait
    /// `impl`s' or a trait's provided one, or one an `impl` the index cannot place may give
    /// (through an alias, for some instantiations, under `cfg`, from a macro or a derive).
    pub fn may_have_method(&self, key: &str, name: &str) -> bool {
        // A type's key starts with its crate (`1:crate::model::Wrap`, see `type_key`).
        let krate = key
            .split_once(':')
            .and_then(|(krate, _)| krate.parse::<usize>().ok())
            .filter(|&krate| krate < self.crates.len());
        let opaque_crate = self
            .modules
            .iter()
            .any(|m| Some(m.krate) == krate && (m.opaque || m.unread_children));
        self.methods
            .contains_key(&(key.to_string(), name.to_string()))
            || !self.trait_impl_methods(key, name).is_empty()
            || self.uncertain_method(key, name)
            || self.provided_names.contains(name)
            || self.any_type_methods.contains(name)
            || self.foreign_impl_names.contains(name)
            || self.is_derived(key)
            || self.macro_use_extern
            || krate.is_none_or(|k| !self.crates[k].root_known)
            || opaque_crate
    }

    /// Whether an `impl` the index cannot place may give the type `key` a method `name`
    /// (one under `cfg`, through an alias, for some instantiations).
    fn uncertain_method(&self, key: &str, name: &str) -> bool {
        let type_name = key.rsplit([':']).next().unwrap_or(key);
        self.uncertain_names.contains(name)
            || self
                .uncertain_methods
                .contains(&(key.to_string(), name.to_string()))
            || self
                .uncertain_by_type_name
                .contains(&(type_name.to_string(), name.to_string()))
    }

    /// The functions named `name` in the `impl` blocks of the type `key`.
    /// One under `cfg` among them leaves none certain: the list is empty then.
    pub fn methods(&self, key: &str, name: &str) -> &[FnId] {
        if self.uncertain_method(key, name) {
            return &[];
        }
        let ids = self
            .methods
            .get(&(key.to_string(), name.to_string()))
            .map_or(&[][..], Vec::as_slice);
        match ids.iter().any(|&id| self.fns[id].conditional) {
            true => &[],
            false => ids,
        }
    }
}

impl FnDef {
    /// A method of a `#[contract] impl` takes its struct's contract (`fields`, as method
    /// clauses) where it has a contract list and a `self`, as the macro gives it. A struct
    /// contract that does not read (`None`) leaves the method's unread too: checked without
    /// the struct's clauses, it would say less than it seems to, and the macro rejects it.
    fn take_struct_contract(&mut self, fields: Option<&Contract>) {
        let has_list = crate::contract::contract_metas(self.attrs)
            .iter()
            .any(|meta| matches!(meta, syn::Meta::List(_)));
        if !has_list || self.sig.receiver().is_none() {
            return;
        }
        if let Some(ContractText { parsed, .. }) = &mut self.contract {
            match (parsed.as_mut(), fields) {
                (Some(parsed), Some(fields)) => parsed.extend(fields.clone()),
                (_, None) => *parsed = None,
                (None, Some(_)) => {}
            }
        }
    }
}

/// The contract of a function's attributes (every path ending in `contract`, and those under
/// `cfg_attr`, read with the macro's grammar), `None` when it has none.
pub fn contract_of(attrs: &[syn::Attribute]) -> Option<ContractText> {
    let mut found = false;
    let mut parsed = Some(Contract::default());
    let mut analysis_off = false;
    for meta in crate::contract::contract_metas(attrs) {
        match &meta {
            syn::Meta::List(list) => match crate::contract::read(&list.tokens) {
                Some((contract, off)) => {
                    if let Some(parsed) = &mut parsed {
                        parsed.extend(contract);
                    }
                    analysis_off |= off;
                }
                None => parsed = None,
            },
            // `#[contract]` without clauses on a function: its body is checked, with no clause.
            syn::Meta::Path(_) => {}
            syn::Meta::NameValue(_) => continue,
        }
        found = true;
    }
    found.then_some(ContractText {
        parsed,
        analysis_off,
    })
}

/// candle's crates under the names candle's own examples use (`candle` is candle-core): the
/// names a file read without its package's manifest may use for them.
pub fn usual_externs() -> BTreeMap<String, String> {
    [
        ("candle", "candle_core"),
        ("candle_core", "candle_core"),
        ("candle_nn", "candle_nn"),
        ("candle_transformers", "candle_transformers"),
        ("candle_contracts", "candle_contracts"),
    ]
    .into_iter()
    .map(|(name, real)| (name.to_string(), real.to_string()))
    .collect()
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
            syn::GenericParam::Type(t) => Some(name_of(&t.ident)),
            syn::GenericParam::Const(c) => Some(name_of(&c.ident)),
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

/// The value of a `true` or `false` literal.
fn bool_literal(expr: &syn::Expr) -> Option<bool> {
    match expr {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Bool(value),
            ..
        }) => Some(value.value),
        syn::Expr::Paren(p) => bool_literal(&p.expr),
        syn::Expr::Group(g) => bool_literal(&g.expr),
        _ => None,
    }
}

/// The names a `use` tree brings into scope, with their paths (a glob: the empty name).
pub fn use_names(
    tree: &syn::UseTree,
    mut prefix: Vec<String>,
    into: &mut BTreeMap<String, Option<Vec<String>>>,
) {
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(name_of(&p.ident));
            use_names(&p.tree, prefix, into);
        }
        syn::UseTree::Name(n) if n.ident == "self" => {
            if let Some(last) = prefix.last().cloned() {
                into.insert(last, Some(prefix));
            }
        }
        syn::UseTree::Name(n) => {
            prefix.push(name_of(&n.ident));
            into.insert(name_of(&n.ident), Some(prefix));
        }
        syn::UseTree::Rename(r) => {
            if r.ident != "self" {
                prefix.push(name_of(&r.ident));
            }
            into.insert(name_of(&r.rename), Some(prefix));
        }
        // A glob in a body may bring any name: the block's paths are unknown.
        syn::UseTree::Glob(_) => {
            into.insert(String::new(), None);
        }
        syn::UseTree::Group(g) => {
            for item in &g.items {
                use_names(item, prefix.clone(), into);
            }
        }
    }
}

/// Whether an attribute leaves the code under it as written (`#[allow(..)]`, `#[inline]`, a
/// doc comment, `cfg`, our own `#[contract]`); an attribute macro (`#[tracing::instrument]`,
/// `#[async_trait]`, one of the crate's) may replace it.
pub fn is_inert_attribute(attr: &syn::Attribute) -> bool {
    const INERT: &[&str] = &[
        "doc",
        "allow",
        "warn",
        "deny",
        "forbid",
        "expect",
        "inline",
        "cold",
        "must_use",
        "track_caller",
        "deprecated",
        "cfg",
        "path",
        "macro_use",
        "contract",
        "derive",
        "non_exhaustive",
        "repr",
    ];
    let path = attr.path();
    path.get_ident()
        .is_some_and(|ident| INERT.iter().any(|name| ident == name))
        || path
            .segments
            .first()
            .is_some_and(|root| root.ident == "rustfmt" || root.ident == "clippy")
}

/// Whether an attribute is a `#[cfg_attr(..)]` whose attributes leave the item there, as
/// written, under every `cfg`: inert ones (contracts, lints, docs, `inline`, `repr`, derives,
/// which add impls beside it), but not `cfg`, `path` (another file) or `macro_use`.
fn harmless_under_cfg(attr: &syn::Attribute) -> bool {
    let keeps = |tokens: &TokenStream| {
        let Ok(attr) =
            syn::parse::Parser::parse2(syn::Attribute::parse_outer, quote::quote!(#[#tokens]))
        else {
            return false;
        };
        let [attr] = attr.as_slice() else {
            return false;
        };
        let path = attr.path();
        (is_inert_attribute(attr) || crate::contract::is_contract(attr))
            && !["cfg", "path", "macro_use"]
                .iter()
                .any(|name| path.is_ident(name))
    };
    crate::contract::cfg_attr_parts(attr)
        .is_some_and(|(_, attributes)| !attributes.is_empty() && attributes.iter().all(keeps))
}

/// Whether an item stands under `#[cfg(..)]` or `#[cfg_attr(..)]` (one that only adds a
/// contract, a derive, a lint level or docs leaves the item as it is).
pub fn is_conditional(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| {
        attr.path().is_ident("cfg")
            || (attr.path().is_ident("cfg_attr") && !harmless_under_cfg(attr))
    })
}

/// Whether an item stands under a `#[cfg(..)]` that no build enables: `any()`, `false`,
/// `not(all())`, and `all`/`any`/`not` of such (a name or `key = "value"` may be set or not).
pub fn never_compiled(attrs: &[syn::Attribute]) -> bool {
    use syn::parse::Parser;
    attrs.iter().any(|attr| {
        attr.path().is_ident("cfg")
            && matches!(&attr.meta, syn::Meta::List(list)
                if matches!(cfg_value.parse2(list.tokens.clone()), Ok(Some(false))))
    })
}

/// The value of a `cfg` predicate where every build gives it the same one.
fn cfg_value(input: syn::parse::ParseStream<'_>) -> syn::Result<Option<bool>> {
    use syn::ext::IdentExt;
    if input.peek(syn::LitBool) {
        return Ok(Some(input.parse::<syn::LitBool>()?.value));
    }
    let ident = input.call(syn::Ident::parse_any)?;
    if input.peek(syn::Token![=]) {
        input.parse::<syn::Token![=]>()?;
        input.parse::<syn::Lit>()?;
        return Ok(None);
    }
    if !input.peek(syn::token::Paren) {
        return Ok(None);
    }
    let content;
    syn::parenthesized!(content in input);
    let values: Vec<Option<bool>> =
        syn::punctuated::Punctuated::<Option<bool>, syn::Token![,]>::parse_terminated_with(
            &content, cfg_value,
        )?
        .into_iter()
        .collect();
    Ok(match ident.to_string().as_str() {
        "all" if values.contains(&Some(false)) => Some(false),
        "all" if values.iter().all(|v| *v == Some(true)) => Some(true),
        "any" if values.contains(&Some(true)) => Some(true),
        "any" if values.iter().all(|v| *v == Some(false)) => Some(false),
        "not" if values.len() == 1 => values[0].map(|v| !v),
        _ => None,
    })
}

/// Whether an attribute may move a module's file:
/// `#[cfg_attr(feature = "cuda", path = "cuda.rs")]`.
fn moves_module_file(attr: &syn::Attribute) -> bool {
    match &attr.meta {
        syn::Meta::List(list) if attr.path().is_ident("cfg_attr") => {
            let mut names = BTreeSet::new();
            token_idents(&list.tokens, &mut names);
            names.contains("path")
        }
        _ => false,
    }
}

/// Every identifier in `tokens`, groups included, as the crate names it (`type` for
/// `r#type`): what a macro's tokens may name.
pub(crate) fn token_idents(tokens: &TokenStream, into: &mut BTreeSet<String>) {
    for tree in tokens.clone() {
        match tree {
            proc_macro2::TokenTree::Ident(ident) => {
                into.insert(name_of(&ident));
            }
            proc_macro2::TokenTree::Group(group) => token_idents(&group.stream(), into),
            _ => {}
        }
    }
}

/// Whether an item is visible outside its module (any `pub` but `pub(self)`).
/// Whether an item or `use` is visible to a glob import from anywhere in the crate: `pub` or
/// `pub(crate)` (a `pub(super)` one only to some modules: a glob elsewhere does not bring it).
fn is_public(vis: &syn::Visibility) -> bool {
    match vis {
        syn::Visibility::Public(_) => true,
        syn::Visibility::Restricted(r) => r.path.is_ident("crate"),
        syn::Visibility::Inherited => false,
    }
}

/// The attributes of an item, where it has any.
fn item_attrs(item: &syn::Item) -> Option<&[syn::Attribute]> {
    Some(match item {
        syn::Item::Const(i) => &i.attrs,
        syn::Item::Enum(i) => &i.attrs,
        syn::Item::Fn(i) => &i.attrs,
        syn::Item::Impl(i) => &i.attrs,
        syn::Item::Macro(i) => &i.attrs,
        syn::Item::Mod(i) => &i.attrs,
        syn::Item::Static(i) => &i.attrs,
        syn::Item::Struct(i) => &i.attrs,
        syn::Item::Trait(i) => &i.attrs,
        syn::Item::Type(i) => &i.attrs,
        syn::Item::Union(i) => &i.attrs,
        syn::Item::Use(i) => &i.attrs,
        _ => return None,
    })
}

/// The name an item defines (not a `use`'s, an `impl`'s or a macro call's).
fn item_name(item: &syn::Item) -> Option<String> {
    let ident = match item {
        syn::Item::Const(i) => &i.ident,
        syn::Item::Enum(i) => &i.ident,
        syn::Item::Fn(i) => &i.sig.ident,
        syn::Item::Mod(i) => &i.ident,
        syn::Item::Static(i) => &i.ident,
        syn::Item::Struct(i) => &i.ident,
        syn::Item::Trait(i) => &i.ident,
        syn::Item::Type(i) => &i.ident,
        syn::Item::Union(i) => &i.ident,
        syn::Item::Macro(i) => i.ident.as_ref()?,
        _ => return None,
    };
    Some(name_of(ident))
}

/// The name of an item that is `pub` (what a glob import of its module brings).
fn public_name(item: &syn::Item) -> Option<String> {
    let vis = match item {
        syn::Item::Const(i) => &i.vis,
        syn::Item::Enum(i) => &i.vis,
        syn::Item::Fn(i) => &i.vis,
        syn::Item::Mod(i) => &i.vis,
        syn::Item::Static(i) => &i.vis,
        syn::Item::Struct(i) => &i.vis,
        syn::Item::Trait(i) => &i.vis,
        syn::Item::Type(i) => &i.vis,
        syn::Item::Union(i) => &i.vis,
        _ => return None,
    };
    is_public(vis).then(|| item_name(item)).flatten()
}

/// Macros whose expansion defines no item: std's (by their last name), candle's `bail!` and
/// candle-contracts' `check!`.
const KNOWN_MACROS: &[&str] = &[
    "println",
    "print",
    "eprintln",
    "eprint",
    "format",
    "format_args",
    "write",
    "writeln",
    "vec",
    "panic",
    "assert",
    "assert_eq",
    "assert_ne",
    "debug_assert",
    "debug_assert_eq",
    "debug_assert_ne",
    "todo",
    "unimplemented",
    "unreachable",
    "matches",
    "dbg",
    "concat",
    "stringify",
    "line",
    "column",
    "file",
    "module_path",
    "env",
    "option_env",
    "include_str",
    "include_bytes",
    "cfg",
    "compile_error",
    "bail",
    "check",
    "macro_rules",
];

/// The `tracing` crate's macros that candle-transformers calls by their path
/// (`tracing::span!(tracing::Level::TRACE, "linear")` in `with_tracing.rs`): they build a span
/// or an event, and define no `impl` for a type of the crate.
pub(crate) const TRACING_MACROS: &[&str] = &[
    "span",
    "trace_span",
    "debug_span",
    "info_span",
    "warn_span",
    "error_span",
    "event",
    "trace",
    "debug",
    "info",
    "warn",
    "error",
];

/// std's derives: they implement std's traits, whose methods the analysis knows.
const STD_DERIVES: &[&str] = &[
    "Debug",
    "Clone",
    "Copy",
    "PartialEq",
    "Eq",
    "PartialOrd",
    "Ord",
    "Hash",
    "Default",
];

/// Whether an attribute is inert or derives only std's traits.
fn is_std_attribute(attr: &syn::Attribute) -> bool {
    if !attr.path().is_ident("derive") {
        return is_inert_attribute(attr)
            || attr.path().is_ident("test")
            || crate::contract::is_contract(attr)
            || crate::contract::only_contracts_under_cfg(attr);
    }
    let mut std_only = true;
    let parsed = attr.parse_nested_meta(|meta| {
        let last = meta.path.segments.last().map(|s| s.ident.to_string());
        std_only &= last.is_some_and(|name| STD_DERIVES.contains(&name.as_str()));
        Ok(())
    });
    std_only && parsed.is_ok()
}

/// What a file may hold out of the index's sight (see `Index::note_hidden`).
#[derive(Default)]
struct Hidden {
    /// How deep inside an item (not a module) the visit stands.
    nested: usize,
    /// The methods of `impl`s nested inside items.
    nested_methods: BTreeSet<String>,
    /// The last names of the macros called.
    macros: BTreeSet<String>,
    /// An attribute macro, or a `mod` file inside an item.
    unseen: bool,
}

impl<'ast> syn::visit::Visit<'ast> for Hidden {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        if let Some(attrs) = item_attrs(item)
            && !matches!(
                item,
                syn::Item::Struct(_) | syn::Item::Enum(_) | syn::Item::Union(_)
            )
            && attrs.iter().any(|attr| !is_std_attribute(attr))
        {
            self.unseen = true;
        }
        match item {
            // A module's items are a module's, wherever the module stands.
            syn::Item::Mod(m) => {
                if m.content.is_none() && self.nested > 0 {
                    self.unseen = true;
                }
                syn::visit::visit_item(self, item);
            }
            syn::Item::Impl(i) => {
                if self.nested > 0 {
                    for impl_item in &i.items {
                        if let syn::ImplItem::Fn(f) = impl_item {
                            self.nested_methods.insert(name_of(&f.sig.ident));
                        }
                    }
                }
                self.nested += 1;
                syn::visit::visit_item(self, item);
                self.nested -= 1;
            }
            _ => {
                self.nested += 1;
                syn::visit::visit_item(self, item);
                self.nested -= 1;
            }
        }
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        let segments: Vec<String> = mac
            .path
            .segments
            .iter()
            .map(|s| name_of(&s.ident))
            .collect();
        match segments.as_slice() {
            // `tracing::span!`: by its path (a bare `span!` may be anyone's).
            [krate, name] if krate == "tracing" && TRACING_MACROS.contains(&name.as_str()) => {
                self.macros.insert(format!("tracing::{name}"));
            }
            [.., last] => {
                self.macros.insert(last.clone());
            }
            [] => {}
        }
        syn::visit::visit_macro(self, mac);
    }
}
