//! The walk of one body: each expression's value as far as it is certain (a candle tensor of a
//! known type, an integer, a dim index), and a compile error for each call that certainly fails.
//!
//! Soundness rests on three rules: only values known to be candle `Tensor`s get candle's rules
//! (a method of another type with the same name is not candle's); a name is known only while
//! nothing the walk cannot follow may have changed it; and every construct the walk does not
//! model yields [`Val::Unknown`], which no rule reports.
//!
//! Names live in frames, one a block, the parameters in the first, so that an assignment
//! reaches the binding it names and a shadow ends with its block. A `mut` binding is followed
//! in the order of the body: an assignment gives it the assigned value; `&mut` of it, a method
//! of it that may take `&mut self`, or a macro that names it forgets it from there on; a loop
//! or a closure forgets, from where it stands, every name its body may change (found by a walk
//! of that body whose findings are dropped); branches join what each knows at its end.

use std::collections::{BTreeMap, BTreeSet};

use candle_contracts_shapes::{
    Arg, Argument, Bindings, DTypeSet, Dim, DimIndex, Env, Mismatch, TensorType, function,
    has_method_rule, method,
};
use proc_macro2::{Punct, Spacing, Span, TokenStream, TokenTree};
use quote::ToTokens;
use syn::{Block, Expr, Pat, Stmt};

use super::scope::{Body, Scope, Sibling};
use super::text;

/// What the walk knows of a value.
#[derive(Clone, Debug)]
pub enum Val {
    /// Nothing: silence.
    Unknown,
    /// Control never gets here (`return`, `break`, `continue`): a branch that adds nothing.
    Never,
    /// A candle `Tensor`, or a `Result` of one (the `?` is read as the identity).
    Tensor(TensorType),
    /// An integer: a literal or a size read from a known tensor (`x.dim(0)?`).
    Int(Dim),
    /// `D::Minus1`, `D::Minus2`.
    Index(DimIndex),
    /// A tuple (`()` is reshape's hole).
    Tuple(Vec<Val>),
    /// An array of values, for `Tensor::cat` and `Tensor::stack`.
    Array(Vec<Val>),
    /// `DType::F32`.
    DType(candle_contracts_shapes::DType),
    /// A float literal.
    Float,
}

impl Val {
    fn arg(&self) -> Arg {
        match self {
            Val::Tensor(t) => Arg::Tensor(t.clone()),
            Val::Int(dim) => Arg::Int(dim.clone()),
            Val::Index(index) => Arg::Dim(*index),
            Val::Tuple(items) => Arg::Tuple(items.iter().map(Val::arg).collect()),
            // `[2, 3]` is a shape (or dims) as a tuple is.
            Val::Array(items)
                if !items.is_empty() && items.iter().all(|i| matches!(i, Val::Int(_))) =>
            {
                Arg::Tuple(items.iter().map(Val::arg).collect())
            }
            Val::Array(items) => Arg::Tensors(
                items
                    .iter()
                    .map(|item| match item {
                        Val::Tensor(t) => t.clone(),
                        _ => TensorType::unknown(),
                    })
                    .collect(),
            ),
            Val::DType(dtype) => Arg::DType(*dtype),
            Val::Float => Arg::Float,
            Val::Unknown | Val::Never => Arg::Unknown,
        }
    }

    /// The value of two branches: what both certainly are.
    fn join(self, other: Val) -> Val {
        match (self, other) {
            (Val::Never, v) | (v, Val::Never) => v,
            (Val::Tensor(a), Val::Tensor(b)) => Val::Tensor(a.join(&b)),
            (Val::Int(a), Val::Int(b)) if a == b => Val::Int(a),
            _ => Val::Unknown,
        }
    }

    /// What a binding keeps of a value: a tensor or an integer, nothing else.
    fn kept(self) -> Val {
        match self {
            Val::Tensor(_) | Val::Int(_) => self,
            _ => Val::Unknown,
        }
    }
}

/// A name in scope.
#[derive(Clone, Debug)]
pub struct Local {
    /// What it holds: a tensor, an integer, or unknown.
    val: Val,
    /// Declared `mut` (or bound where a macro may have): an assignment changes it.
    mutable: bool,
}

impl Local {
    /// A binding of `val` (kept as [`Val::kept`]).
    pub fn new(val: Val, mutable: bool) -> Local {
        Local {
            val: val.kept(),
            mutable,
        }
    }
}

/// The names in scope, innermost frame last.
type Frames = Vec<BTreeMap<String, Local>>;

/// What two paths through the body know where they meet: each name's two values joined.
fn join_frames(a: &Frames, b: &Frames) -> Frames {
    a.iter()
        .zip(b)
        .map(|(fa, fb)| {
            fa.iter()
                .map(|(name, x)| {
                    let val = match fb.get(name) {
                        Some(y) => x.val.clone().join(y.val.clone()),
                        None => Val::Unknown,
                    };
                    (
                        name.clone(),
                        Local {
                            val,
                            mutable: x.mutable,
                        },
                    )
                })
                .collect()
        })
        .collect()
}

/// candle's inherent `Tensor` methods without a rule that only read the tensor (`&self`), and
/// `Result`'s that consume it; with the methods that have a rule (`&self` too), they cannot
/// change a `mut` tensor they are called on, since an inherent method is found before a
/// trait's `&mut self` one. Any other method may take `&mut self` (`clone_from`, an
/// extension trait's, `IndexOp::i` where another trait's `i` is in scope instead).
const READS_ONLY: &[&str] = &[
    "dims",
    "dim",
    "dims1",
    "dims2",
    "dims3",
    "dims4",
    "dims5",
    "shape",
    "rank",
    "dtype",
    "device",
    "layout",
    "stride",
    "is_contiguous",
    "elem_count",
    "to_scalar",
    "to_vec0",
    "to_vec1",
    "to_vec2",
    "to_vec3",
    "chunk",
    "index_select",
    "gather",
    "unwrap",
    "expect",
];

/// The walk of one contracted function's body.
pub struct Walker<'a> {
    env: Env,
    /// The names in scope; the first frame holds the parameters.
    frames: Frames,
    /// Clauses on paths from a parameter that cannot change (`self.weight` of a `&self`,
    /// `cache.cos` of a `cache: &Cache`), by their text without spaces: known while the
    /// parameter is not shadowed.
    subjects: BTreeMap<String, TensorType>,
    body: &'a Body,
    scope: &'a Scope,
    /// Inside a closure or an `async` block, where `return` is not the function's.
    nested: usize,
    /// Inside a trial walk of a loop's body: its findings are dropped.
    trial: usize,
    /// The names changed in each loop, closure or labelled block being walked, innermost last.
    changed: Vec<BTreeSet<String>>,
    /// The function returns a `Result`: a returned value other than `Ok(..)` is one.
    pub returns_result: bool,
    /// The certain mismatches found, in the order of the body.
    pub errors: Vec<syn::Error>,
}

impl<'a> Walker<'a> {
    /// A walk with the function's `env` (its `return` clause), its parameters (each a name
    /// and its binding) and the clauses on paths from them (`subjects`).
    pub fn new(
        env: Env,
        params: BTreeMap<String, Local>,
        subjects: BTreeMap<String, TensorType>,
        body: &'a Body,
        scope: &'a Scope,
    ) -> Self {
        Walker {
            env,
            frames: vec![params],
            subjects,
            body,
            scope,
            nested: 0,
            trial: 0,
            changed: Vec::new(),
            returns_result: false,
            errors: Vec::new(),
        }
    }

    /// The function's body: its value is checked against the `return` clause.
    pub fn function_body(&mut self, block: &Block) {
        let value = self.block(block);
        if let (Val::Tensor(tail), Some(Stmt::Expr(expr, None))) = (&value, block.stmts.last()) {
            self.check_return(tail, expr);
        }
    }

    fn check_return(&mut self, value: &TensorType, expr: &Expr) {
        if self.trial > 0 {
            return;
        }
        // `Ok(sums)` is named, and its fix written, on `sums`; any other value of a function
        // that returns a `Result` is one, so its fix starts with `?`.
        let (expr, wrapped) = match expr {
            Expr::Call(call)
                if call.args.len() == 1
                    && matches!(&*call.func, Expr::Path(p) if p.path.is_ident("Ok")) =>
            {
                (&call.args[0], true)
            }
            other => (other, false),
        };
        if let Err(mismatch) = self.env.check_return(value) {
            let given = text::compact(expr);
            let mut message = mismatch.message(&given);
            message.push_str(&format!("\n= note: {}", mismatch.note()));
            let help = match self.returns_result && !wrapped {
                true => mismatch.help_for_result(&given),
                false => mismatch.help(&given),
            };
            if let Some(help) = help {
                message.push_str(&format!("\n= help: {help}"));
            }
            self.errors
                .push(syn::Error::new_spanned(expr.to_token_stream(), message));
        }
    }

    /// Reports `mismatch` on `given`, a tensor.
    fn report(&mut self, mismatch: &Mismatch, at: TokenStream, given: &str) {
        if self.trial > 0 {
            return;
        }
        let mut message = mismatch.message(given);
        message.push_str(&format!("\n= note: {}", mismatch.note()));
        if let Some(help) = mismatch.help(given) {
            message.push_str(&format!("\n= help: {help}"));
        }
        self.errors.push(syn::Error::new_spanned(at, message));
    }

    // ----- names -----

    /// The innermost binding of `name`, with the index of its frame.
    fn lookup(&self, name: &str) -> Option<(usize, &Local)> {
        self.frames
            .iter()
            .enumerate()
            .rev()
            .find_map(|(i, frame)| frame.get(name).map(|local| (i, local)))
    }

    fn lookup_mut(&mut self, name: &str) -> Option<&mut Local> {
        self.frames
            .iter_mut()
            .rev()
            .find_map(|frame| frame.get_mut(name))
    }

    /// Binds `name` in the innermost frame.
    fn declare(&mut self, name: String, val: Val, mutable: bool) {
        if let Some(frame) = self.frames.last_mut() {
            frame.insert(name, Local::new(val, mutable));
        }
    }

    fn note_change(&mut self, name: &str) {
        for changed in &mut self.changed {
            changed.insert(name.to_string());
        }
    }

    /// `name = val`: the binding it names takes the value (an immutable one, assigned once
    /// after a `let` without a value, is left unknown).
    fn assign(&mut self, name: &str, val: Val) {
        self.note_change(name);
        if let Some(local) = self.lookup_mut(name) {
            local.val = if local.mutable {
                val.kept()
            } else {
                Val::Unknown
            };
        }
    }

    /// Forgets what the binding `name` names holds: it may have changed.
    fn forget(&mut self, name: &str) {
        self.note_change(name);
        if let Some(local) = self.lookup_mut(name) {
            local.val = Val::Unknown;
        }
    }

    /// Forgets every binding of `name`, and shadows them all from here to the end of the
    /// block: a macro may assign `name` or bind it anew.
    fn forget_all(&mut self, name: &str) {
        self.note_change(name);
        for frame in &mut self.frames {
            if let Some(local) = frame.get_mut(name) {
                local.val = Val::Unknown;
            }
        }
        self.declare(name.to_string(), Val::Unknown, true);
    }

    /// Forgets the `mut` bindings `tokens` name: code the walk does not follow may change them.
    fn forget_mentioned(&mut self, tokens: TokenStream) {
        let mut names = BTreeSet::new();
        idents(tokens, &mut names);
        self.forget_mutable(&names);
    }

    /// Forgets the `mut` bindings among `names`.
    fn forget_mutable(&mut self, names: &BTreeSet<String>) {
        for name in names {
            if self.lookup(name).is_some_and(|(_, local)| local.mutable) {
                self.forget(name);
            }
        }
    }

    /// Forgets the `mut` binding a place expression (`h`, `h.x[i]`, `*h`) belongs to (an
    /// immutable one cannot change).
    fn forget_place(&mut self, place: &Expr) {
        if let Some(root) = place_root(place)
            && self.lookup(&root).is_some_and(|(_, local)| local.mutable)
        {
            self.forget(&root);
        }
    }

    /// Binds the names `pat` binds, each unknown; a pattern macro may bind any name it holds.
    fn declare_unknown(&mut self, pat: &Pat) {
        let mut names = BTreeSet::new();
        let opaque = pattern_names(pat, &mut names);
        for name in names {
            if opaque {
                self.forget_all(&name);
            } else {
                self.declare(name, Val::Unknown, true);
            }
        }
    }

    /// A pattern's bindings: a plain name takes the value, a tuple of names takes a tuple's
    /// items (`let (b, d) = x.dims2()?`); any other name bound by the pattern is unknown.
    fn bind_pat(&mut self, pat: &Pat, value: Val) {
        match (pat, value) {
            (Pat::Ident(ident), value) if ident.subpat.is_none() => {
                let value = match (&ident.by_ref, &ident.mutability) {
                    // `ref mut h` is a `&mut` of the value's place.
                    (Some(_), Some(_)) => Val::Unknown,
                    _ => value,
                };
                let mutable = ident.by_ref.is_none() && ident.mutability.is_some();
                self.declare(ident.ident.to_string(), value, mutable);
            }
            (Pat::Type(typed), value) => self.bind_pat(&typed.pat, value),
            (Pat::Paren(paren), value) => self.bind_pat(&paren.pat, value),
            (Pat::Tuple(tuple), Val::Tuple(items))
                if tuple.elems.len() == items.len()
                    && !tuple.elems.iter().any(|p| matches!(p, Pat::Rest(_))) =>
            {
                for (pat, item) in tuple.elems.iter().zip(items) {
                    self.bind_pat(pat, item);
                }
            }
            (pat, _) => self.declare_unknown(pat),
        }
    }

    /// Walks `f` in a frame of its own where the names `pats` bind are unknown.
    fn scoped(&mut self, pats: &[&Pat], f: impl FnOnce(&mut Self) -> Val) -> Val {
        self.frames.push(BTreeMap::new());
        for pat in pats {
            self.declare_unknown(pat);
        }
        let value = f(self);
        self.frames.pop();
        value
    }

    /// Runs `f` and returns, with its value, the names it changed.
    fn recording(&mut self, f: impl FnOnce(&mut Self) -> Val) -> (Val, BTreeSet<String>) {
        self.changed.push(BTreeSet::new());
        let value = f(self);
        let changed = self.changed.pop().unwrap_or_default();
        (value, changed)
    }

    /// A loop whose every turn runs `turn`: the names a turn may change are unknown from the
    /// loop on (a first walk of the turn, its findings dropped, finds them), then the turn
    /// is walked with them unknown.
    fn repeated(&mut self, turn: impl Fn(&mut Self) -> Val) {
        let before = self.frames.clone();
        self.trial += 1;
        let (_, changed) = self.recording(&turn);
        self.trial -= 1;
        self.frames = before;
        for name in &changed {
            self.forget(name);
        }
        let (_, also) = self.recording(&turn);
        for name in changed.iter().chain(&also) {
            self.forget(name);
        }
    }

    // ----- statements and blocks -----

    fn block(&mut self, block: &Block) -> Val {
        self.frames.push(BTreeMap::new());
        let mut value = Val::Unknown;
        let mut diverges = false;
        for stmt in &block.stmts {
            value = match stmt {
                Stmt::Local(local) => {
                    let init = match &local.init {
                        Some(init) => {
                            let value = self.expr(&init.expr);
                            if let Some((_, diverge)) = &init.diverge {
                                // The `else` never falls through: what it changes is gone.
                                let before = self.frames.clone();
                                self.expr(diverge);
                                self.frames = before;
                            }
                            if has_ref_mut(&local.pat) {
                                self.forget_place(&init.expr);
                            }
                            value
                        }
                        None => Val::Unknown,
                    };
                    if matches!(init, Val::Never) {
                        diverges = true;
                    }
                    self.bind_pat(&local.pat, init);
                    Val::Unknown
                }
                Stmt::Item(_) => Val::Unknown,
                // A macro in statement position may expand to statements (`let`s).
                Stmt::Expr(Expr::Macro(mac), _) => {
                    self.macro_call(&mac.mac, true);
                    Val::Unknown
                }
                Stmt::Expr(expr, semi) => match (semi, self.expr(expr)) {
                    (_, Val::Never) => {
                        diverges = true;
                        Val::Never
                    }
                    (None, value) => value,
                    (Some(_), _) => Val::Unknown,
                },
                // A macro statement may expand to a `let` of any name it is given.
                Stmt::Macro(mac) => {
                    self.macro_call(&mac.mac, true);
                    Val::Unknown
                }
            };
        }
        self.frames.pop();
        if diverges { Val::Never } else { value }
    }

    /// A macro: in statement position (`statement`) it may bind or assign any name it is
    /// given, in an expression only assign one. The standard library's macros that print,
    /// format or assert bind nothing; their arguments may still assign (`{ h = x; 1 }`) or
    /// borrow `&mut`.
    fn macro_call(&mut self, mac: &syn::Macro, statement: bool) {
        // A `macro_rules!` of the body sees the names where it is defined.
        let body = self.body;
        if let Some(name) = mac.path.segments.last()
            && let Some(names) = body.body_macro(&name.ident.to_string())
        {
            self.forget_mutable(names);
        }
        const BIND_NOTHING: &[&str] = &[
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
            "panic",
            "todo",
            "unreachable",
            "unimplemented",
        ];
        if !statement
            || mac.path.get_ident().is_some_and(|name| {
                BIND_NOTHING.contains(&name.to_string().as_str())
                    && !self.body.defines(&name.to_string())
            })
        {
            self.forget_mentioned(mac.tokens.clone());
            return;
        }
        let mut names = BTreeSet::new();
        idents(mac.tokens.clone(), &mut names);
        for name in names {
            self.forget_all(&name);
        }
    }

    /// Walks a closure's or an `async` block's `body`, which may run later and any number of
    /// times: like a loop's turn, it starts with what it may change unknown (a first walk,
    /// its findings dropped, finds that), and what it changes is unknown from here on;
    /// nothing it learns is kept.
    fn deferred(&mut self, pats: &[&Pat], body: impl Fn(&mut Self) -> Val) {
        let before = self.frames.clone();
        self.nested += 1;
        self.trial += 1;
        let (_, changed) = self.recording(|walker| walker.scoped(pats, &body));
        self.trial -= 1;
        self.frames = before.clone();
        for name in &changed {
            self.forget(name);
        }
        let (_, also) = self.recording(|walker| walker.scoped(pats, &body));
        self.nested -= 1;
        self.frames = before;
        for name in changed.iter().chain(&also) {
            self.forget(name);
        }
    }

    /// `if`, with `let` chains in its condition: each branch from the condition's end, then
    /// what both know (a branch that never completes adds nothing).
    fn if_expr(&mut self, if_expr: &syn::ExprIf) -> Val {
        // The condition's `let`s bind in a frame the `then` branch sees, the `else` not.
        self.frames.push(BTreeMap::new());
        self.expr(&if_expr.cond);
        let mut otherwise = self.frames.clone();
        otherwise.pop();
        let then = self.block(&if_expr.then_branch);
        self.frames.pop();
        let after_then = std::mem::replace(&mut self.frames, otherwise);
        let other = match &if_expr.else_branch {
            Some((_, other)) => self.expr(other),
            None => Val::Unknown,
        };
        let after_else = std::mem::take(&mut self.frames);
        self.frames = match (&then, &other) {
            (Val::Never, _) => after_else,
            (_, Val::Never) => after_then,
            _ => join_frames(&after_then, &after_else),
        };
        match &if_expr.else_branch {
            Some(_) => then.join(other),
            None => Val::Unknown,
        }
    }

    fn match_expr(&mut self, match_expr: &syn::ExprMatch) -> Val {
        self.expr(&match_expr.expr);
        if match_expr.arms.iter().any(|arm| has_ref_mut(&arm.pat)) {
            self.forget_place(&match_expr.expr);
        }
        // Each arm starts where the previous arms' guards may have left off.
        let mut entry = self.frames.clone();
        let mut value = Val::Never;
        let mut after: Option<Frames> = None;
        for arm in &match_expr.arms {
            self.frames = entry.clone();
            self.frames.push(BTreeMap::new());
            self.declare_unknown(&arm.pat);
            if let Some((_, guard)) = &arm.guard {
                self.expr(guard);
                let mut guarded = self.frames.clone();
                guarded.pop();
                entry = join_frames(&entry, &guarded);
            }
            let arm_value = self.expr(&arm.body);
            self.frames.pop();
            if matches!(arm_value, Val::Never) {
                continue;
            }
            after = Some(match after {
                Some(previous) => join_frames(&previous, &self.frames),
                None => self.frames.clone(),
            });
            value = value.join(arm_value);
        }
        self.frames = after.unwrap_or(entry);
        value
    }

    fn expr(&mut self, expr: &Expr) -> Val {
        match expr {
            Expr::Path(path) => self.path_value(path),
            Expr::Field(field) => {
                let text = text::compact(expr);
                let root = text.split('.').next().unwrap_or_default();
                if let Some(spec) = self.subjects.get(&text)
                    && self.lookup(root).is_some_and(|(frame, _)| frame == 0)
                {
                    return Val::Tensor(spec.clone());
                }
                self.expr(&field.base);
                Val::Unknown
            }
            Expr::Lit(lit) => match &lit.lit {
                syn::Lit::Int(int) => int
                    .base10_parse::<u64>()
                    .map_or(Val::Unknown, |n| Val::Int(Dim::lit(n))),
                syn::Lit::Float(_) => Val::Float,
                _ => Val::Unknown,
            },
            Expr::Reference(reference) => {
                let value = self.expr(&reference.expr);
                if reference.mutability.is_some() {
                    self.forget_place(&reference.expr);
                    Val::Unknown
                } else {
                    value
                }
            }
            Expr::Unary(unary) => {
                let value = self.expr(&unary.expr);
                match unary.op {
                    syn::UnOp::Deref(_) => value,
                    _ => Val::Unknown,
                }
            }
            Expr::Paren(paren) => self.expr(&paren.expr),
            Expr::Group(group) => self.expr(&group.expr),
            Expr::Try(try_expr) => self.expr(&try_expr.expr),
            Expr::Await(await_expr) => {
                self.expr(&await_expr.base);
                Val::Unknown
            }
            Expr::MethodCall(call) => self.method_call(call),
            Expr::Call(call) => self.call(call),
            Expr::Macro(mac) => {
                self.macro_call(&mac.mac, false);
                Val::Unknown
            }
            Expr::Tuple(tuple) => Val::Tuple(tuple.elems.iter().map(|e| self.expr(e)).collect()),
            Expr::Array(array) => Val::Array(array.elems.iter().map(|e| self.expr(e)).collect()),
            // A labelled block may yield a `break 'label value`, and skip what follows it.
            Expr::Block(block) if block.label.is_some() => {
                let (_, changed) = self.recording(|walker| walker.block(&block.block));
                for name in &changed {
                    self.forget(name);
                }
                Val::Unknown
            }
            Expr::Block(block) => self.block(&block.block),
            Expr::Unsafe(block) => self.block(&block.block),
            Expr::Async(block) => {
                self.deferred(&[], |walker| walker.block(&block.block));
                Val::Unknown
            }
            Expr::Closure(closure) => {
                let pats: Vec<&Pat> = closure.inputs.iter().collect();
                self.deferred(&pats, |walker| walker.expr(&closure.body));
                Val::Unknown
            }
            Expr::If(if_expr) => self.if_expr(if_expr),
            Expr::Match(match_expr) => self.match_expr(match_expr),
            Expr::Let(let_expr) => {
                self.expr(&let_expr.expr);
                if has_ref_mut(&let_expr.pat) {
                    self.forget_place(&let_expr.expr);
                }
                self.declare_unknown(&let_expr.pat);
                Val::Unknown
            }
            Expr::ForLoop(for_loop) => {
                self.expr(&for_loop.expr);
                let pat = &*for_loop.pat;
                self.repeated(|walker| walker.scoped(&[pat], |w| w.block(&for_loop.body)));
                Val::Unknown
            }
            Expr::While(while_loop) => {
                self.repeated(|walker| {
                    walker.scoped(&[], |w| {
                        w.expr(&while_loop.cond);
                        w.block(&while_loop.body)
                    })
                });
                Val::Unknown
            }
            Expr::Loop(loop_expr) => {
                self.repeated(|walker| walker.block(&loop_expr.body));
                Val::Unknown
            }
            Expr::Return(return_expr) => {
                if let Some(value_expr) = &return_expr.expr {
                    let value = self.expr(value_expr);
                    if let (0, Val::Tensor(value)) = (self.nested, &value) {
                        self.check_return(value, value_expr);
                    }
                }
                Val::Never
            }
            Expr::Break(break_expr) => {
                if let Some(value) = &break_expr.expr {
                    self.expr(value);
                }
                Val::Never
            }
            Expr::Continue(_) => Val::Never,
            Expr::Assign(assign) => {
                let value = self.expr(&assign.right);
                match plain_name(&assign.left) {
                    Some(name) => self.assign(&name, value),
                    // `h.x = ..`, `h[i] = ..`, `*r = ..`, `(a, b) = ..`.
                    None => {
                        self.expr(&assign.left);
                        self.forget_place(&assign.left);
                        self.forget_mentioned(assign.left.to_token_stream());
                    }
                }
                Val::Unknown
            }
            Expr::Binary(binary) => self.binary(binary),
            Expr::Index(index) => {
                self.expr(&index.expr);
                self.expr(&index.index);
                Val::Unknown
            }
            Expr::Cast(cast) => {
                self.expr(&cast.expr);
                Val::Unknown
            }
            Expr::Struct(structure) => {
                for field in &structure.fields {
                    self.expr(&field.expr);
                }
                if let Some(rest) = &structure.rest {
                    self.expr(rest);
                }
                Val::Unknown
            }
            // Ranges, repeats, raw borrows, ...: not followed, and what they may change is
            // unknown.
            other => {
                self.forget_mentioned(other.to_token_stream());
                Val::Unknown
            }
        }
    }

    fn path_value(&mut self, path: &syn::ExprPath) -> Val {
        if path.qself.is_some() {
            return Val::Unknown;
        }
        let segments: Vec<String> = path
            .path
            .segments
            .iter()
            .map(|s| s.ident.to_string())
            .collect();
        match segments.as_slice() {
            [name] if path.path.leading_colon.is_none() => self
                .lookup(name)
                .map_or(Val::Unknown, |(_, local)| local.val.clone()),
            [.., d, minus] if d == "D" => match minus.as_str() {
                "Minus1" => Val::Index(DimIndex::FromEnd(1)),
                "Minus2" => Val::Index(DimIndex::FromEnd(2)),
                _ => Val::Unknown,
            },
            [.., dtype, name] if dtype == "DType" => DTypeSet::from_name(&name.to_lowercase())
                .and_then(DTypeSet::single)
                .map_or(Val::Unknown, Val::DType),
            _ => Val::Unknown,
        }
    }

    /// `&a + &b`, `x * 2.0`: candle's operators are its `add`, ... (same shape) between
    /// tensors, and `affine` with an `f64`. Any other operand is not candle's operator.
    fn binary(&mut self, binary: &syn::ExprBinary) -> Val {
        use syn::BinOp;
        let left = self.expr(&binary.left);
        if matches!(binary.op, BinOp::And(_) | BinOp::Or(_)) {
            // The right side may not run: what follows knows what both paths know.
            let skipped = self.frames.clone();
            self.expr(&binary.right);
            self.frames = join_frames(&skipped, &self.frames);
            return Val::Unknown;
        }
        let right = self.expr(&binary.right);
        let name = match binary.op {
            BinOp::Add(_) => "add",
            BinOp::Sub(_) => "sub",
            BinOp::Mul(_) => "mul",
            BinOp::Div(_) => "div",
            BinOp::AddAssign(_)
            | BinOp::SubAssign(_)
            | BinOp::MulAssign(_)
            | BinOp::DivAssign(_)
            | BinOp::RemAssign(_)
            | BinOp::BitXorAssign(_)
            | BinOp::BitAndAssign(_)
            | BinOp::BitOrAssign(_)
            | BinOp::ShlAssign(_)
            | BinOp::ShrAssign(_) => {
                self.forget_place(&binary.left);
                self.forget_mentioned(binary.left.to_token_stream());
                return Val::Unknown;
            }
            _ => return Val::Unknown,
        };
        match (left, right) {
            (Val::Tensor(left), Val::Tensor(right)) => {
                match method(name, &left, &[Arg::Tensor(right)]) {
                    Ok(result) => Val::Tensor(result),
                    Err(mismatch) => {
                        let given = text::argument(&binary.right);
                        self.report(&mismatch, binary.to_token_stream(), &given);
                        Val::Unknown
                    }
                }
            }
            (Val::Tensor(left), Val::Float) => Val::Tensor(left),
            _ => Val::Unknown,
        }
    }

    fn method_call(&mut self, call: &syn::ExprMethodCall) -> Val {
        let receiver = self.expr(&call.receiver);
        let args: Vec<Val> = call.args.iter().map(|arg| self.expr(arg)).collect();
        let name = call.method.to_string();
        let at = call_tokens(&call.method, call.paren_token.span.close());
        // A method that may take `&mut self` may change the binding it is called on; candle's
        // own methods of a tensor only read it.
        let reads_only = matches!(receiver, Val::Tensor(_))
            && (has_method_rule(&name) || READS_ONLY.contains(&name.as_str()));
        if !reads_only {
            self.forget_place(&call.receiver);
        }
        if is_self(&call.receiver)
            && self.scope.methods_on_self
            && let Some(sibling) = self.scope.sibling(&name, true)
        {
            let texts: Vec<String> = call.args.iter().map(text::argument).collect();
            return self.sibling_call(sibling, &args, &texts, at);
        }
        let Val::Tensor(tensor) = receiver else {
            return Val::Unknown;
        };
        if call.turbofish.is_some() {
            return Val::Unknown;
        }
        match name.as_str() {
            "dim" => {
                return match args.first().map(Val::arg).and_then(|a| a.dim_index()) {
                    Some(index) => match tensor.shape.resolve(index) {
                        candle_contracts_shapes::shape::Resolved::At(axis) => {
                            Val::Int(tensor.shape.get(axis))
                        }
                        _ => Val::Unknown,
                    },
                    None => Val::Unknown,
                };
            }
            "dims1" | "dims2" | "dims3" | "dims4" | "dims5" => {
                let rank = usize::from(name.as_bytes()[4] - b'0');
                return match tensor.shape.dims() {
                    Some(dims) if dims.len() == rank => {
                        Val::Tuple(dims.iter().cloned().map(Val::Int).collect())
                    }
                    _ => Val::Unknown,
                };
            }
            // On a `Result<Tensor>` (the walk reads both as the tensor).
            "unwrap" | "expect" => return Val::Tensor(tensor),
            _ => {}
        }
        if !has_method_rule(&name) {
            return Val::Unknown;
        }
        let rule_args: Vec<Arg> = args.iter().map(Val::arg).collect();
        match method(&name, &tensor, &rule_args) {
            Ok(result) => Val::Tensor(result),
            Err(mismatch) => {
                let given = match mismatch.argument {
                    Argument::Position(i) => call.args.iter().nth(i).map(text::argument),
                    _ => None,
                }
                .unwrap_or_else(|| text::argument(&call.receiver));
                self.report(&mismatch, at, &given);
                Val::Unknown
            }
        }
    }

    fn call(&mut self, call: &syn::ExprCall) -> Val {
        let args: Vec<Val> = call.args.iter().map(|arg| self.expr(arg)).collect();
        let texts: Vec<String> = call.args.iter().map(text::argument).collect();
        let Expr::Path(path) = &*call.func else {
            self.expr(&call.func);
            return Val::Unknown;
        };
        if path.qself.is_some() {
            return Val::Unknown;
        }
        let segments: Vec<String> = path
            .path
            .segments
            .iter()
            .map(|s| s.ident.to_string())
            .collect();
        let at = call.to_token_stream();
        match segments.as_slice() {
            [ok] if ok == "Ok" && path.path.leading_colon.is_none() && args.len() == 1 => {
                return args.into_iter().next().unwrap_or(Val::Unknown);
            }
            [name] if path.path.leading_colon.is_none() && self.body.imported(name).is_none() => {
                if self.scope.free_functions
                    && !self.body.shadows(name)
                    && let Some(sibling) = self.scope.sibling(name, false)
                {
                    return self.sibling_call(sibling, &args, &texts, at);
                }
                return Val::Unknown;
            }
            [this, name] if this == "Self" && self.scope.methods_on_self => {
                // `Self::forward(self, xs)`: the receiver is the first argument.
                if let Some(sibling) = self.scope.sibling(name, true) {
                    return self.sibling_call(
                        sibling,
                        args.get(1..).unwrap_or(&[]),
                        texts.get(1..).unwrap_or(&[]),
                        at,
                    );
                }
                if let Some(sibling) = self.scope.sibling(name, false) {
                    return self.sibling_call(sibling, &args, &texts, at);
                }
                return Val::Unknown;
            }
            _ => {}
        }
        let resolved = match segments.as_slice() {
            [name] => self.body.imported(name),
            _ => self
                .body
                .resolve(&segments, path.path.leading_colon.is_some()),
        };
        let Some(resolved) = resolved else {
            return Val::Unknown;
        };
        let rule_args: Vec<Arg> = args.iter().map(Val::arg).collect();
        match function(&resolved, &rule_args) {
            // Only a path with a rule gives a tensor; `function` answers unknown otherwise.
            Ok(result) if result.is_unknown() => Val::Unknown,
            Ok(result) => Val::Tensor(result),
            Err(mismatch) => {
                let given = match mismatch.argument {
                    Argument::Position(i) => texts.get(i).cloned(),
                    _ => None,
                }
                .unwrap_or_else(|| text::compact(call));
                self.report(&mismatch, at, &given);
                Val::Unknown
            }
        }
    }

    /// A call of another contracted function of the same `impl` block or module: the
    /// arguments checked against its clauses, its `return` clause in the caller's terms.
    fn sibling_call(
        &mut self,
        sibling: &Sibling,
        args: &[Val],
        texts: &[String],
        at: TokenStream,
    ) -> Val {
        let mut positions = Vec::new();
        let mut pairs = Vec::new();
        for clause in &sibling.contract.clauses {
            let Some(position) = sibling
                .params
                .iter()
                .position(|p| p.as_deref() == Some(clause.subject.as_str()))
            else {
                continue;
            };
            if let Some(Val::Tensor(given)) = args.get(position) {
                positions.push((position, clause));
                pairs.push((&clause.spec, given));
            }
        }
        let mut bindings = Bindings::new();
        if let Err((i, reason)) = bindings.match_all(&pairs) {
            let (position, clause) = positions[i];
            let mismatch = Mismatch {
                op: sibling.display.clone(),
                argument: Argument::Position(position),
                expected: clause.signature(),
                found: pairs[i].1.to_string(),
                reason,
                help: None,
            };
            let given = texts.get(position).cloned().unwrap_or_default();
            self.report(&mismatch, at, &given);
            return Val::Unknown;
        }
        match sibling.contract.clause("return") {
            Some(clause) if sibling.returns_tensor => {
                Val::Tensor(bindings.instantiate(&clause.spec))
            }
            _ => Val::Unknown,
        }
    }
}

/// The tokens an error on a method call spans: from the method's name to its closing paren.
fn call_tokens(method: &syn::Ident, close: Span) -> TokenStream {
    // A stand-in token carrying the closing paren's span (`)` is no `Punct`).
    let mut paren = Punct::new('.', Spacing::Alone);
    paren.set_span(close);
    [TokenTree::Ident(method.clone()), TokenTree::Punct(paren)]
        .into_iter()
        .collect()
}

fn is_self(expr: &Expr) -> bool {
    match expr {
        Expr::Path(path) => path.path.is_ident("self"),
        Expr::Paren(paren) => is_self(&paren.expr),
        Expr::Reference(reference) => is_self(&reference.expr),
        _ => false,
    }
}

/// The names a pattern binds, into `names`; `true` where it holds a macro, which may bind
/// any name it is given (all of them are in `names` then). A field's name is no binding
/// (`Pair { a: first }` binds `first`): a shadow the pattern does not make would catch an
/// assignment meant for the binding it seemed to hide.
pub fn pattern_names(pat: &Pat, names: &mut BTreeSet<String>) -> bool {
    match pat {
        Pat::Ident(ident) => {
            names.insert(ident.ident.to_string());
            ident
                .subpat
                .as_ref()
                .is_some_and(|(_, sub)| pattern_names(sub, names))
        }
        Pat::Or(or) => or
            .cases
            .iter()
            .fold(false, |opaque, case| pattern_names(case, names) | opaque),
        Pat::Paren(paren) => pattern_names(&paren.pat, names),
        Pat::Reference(reference) => pattern_names(&reference.pat, names),
        Pat::Slice(slice) => slice
            .elems
            .iter()
            .fold(false, |opaque, elem| pattern_names(elem, names) | opaque),
        Pat::Struct(structure) => structure.fields.iter().fold(false, |opaque, field| {
            pattern_names(&field.pat, names) | opaque
        }),
        Pat::Tuple(tuple) => tuple
            .elems
            .iter()
            .fold(false, |opaque, elem| pattern_names(elem, names) | opaque),
        Pat::TupleStruct(tuple) => tuple
            .elems
            .iter()
            .fold(false, |opaque, elem| pattern_names(elem, names) | opaque),
        Pat::Type(typed) => pattern_names(&typed.pat, names),
        Pat::Lit(_) | Pat::Path(_) | Pat::Range(_) | Pat::Rest(_) | Pat::Wild(_) => false,
        // A macro, `box`, a `const` block: every identifier it holds.
        other => {
            idents(other.to_token_stream(), names);
            true
        }
    }
}

/// Whether a pattern binds by `ref mut` (a `&mut` of the matched place).
fn has_ref_mut(pat: &Pat) -> bool {
    fn scan(tokens: TokenStream) -> bool {
        let mut after_ref = false;
        for tree in tokens {
            match tree {
                TokenTree::Ident(ident) if after_ref && ident == "mut" => return true,
                TokenTree::Ident(ident) => after_ref = ident == "ref",
                TokenTree::Group(group) if scan(group.stream()) => return true,
                _ => after_ref = false,
            }
        }
        false
    }
    scan(pat.to_token_stream())
}

/// The local a place expression (`h`, `h.x`, `h[i]`, `*h`, `(h)`) belongs to.
fn place_root(expr: &Expr) -> Option<String> {
    match expr {
        Expr::Path(path) if path.qself.is_none() => {
            path.path.get_ident().map(|ident| ident.to_string())
        }
        Expr::Field(field) => place_root(&field.base),
        Expr::Index(index) => place_root(&index.expr),
        Expr::Paren(paren) => place_root(&paren.expr),
        Expr::Group(group) => place_root(&group.expr),
        Expr::Reference(reference) => place_root(&reference.expr),
        Expr::Unary(unary) if matches!(unary.op, syn::UnOp::Deref(_)) => place_root(&unary.expr),
        _ => None,
    }
}

/// The name an assignment replaces whole (`h = ..`, `(h) = ..`).
fn plain_name(expr: &Expr) -> Option<String> {
    match expr {
        Expr::Path(path) if path.qself.is_none() => {
            path.path.get_ident().map(|ident| ident.to_string())
        }
        Expr::Paren(paren) => plain_name(&paren.expr),
        Expr::Group(group) => plain_name(&group.expr),
        _ => None,
    }
}

/// Every identifier in `tokens`, nested groups included.
pub fn idents(tokens: TokenStream, names: &mut BTreeSet<String>) {
    for tree in tokens {
        match tree {
            TokenTree::Ident(ident) => {
                names.insert(ident.to_string());
            }
            TokenTree::Group(group) => idents(group.stream(), names),
            _ => {}
        }
    }
}
