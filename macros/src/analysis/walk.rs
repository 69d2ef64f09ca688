//! The walk of one body: each expression's value as far as it is certain (a candle tensor of a
//! known type, an integer, a dim index), and a compile error for each call that certainly fails.
//!
//! Soundness rests on three rules: only values known to be candle `Tensor`s get candle's rules
//! (a method of another type with the same name is not candle's); a name that may change
//! (declared `mut` anywhere, or rebound by a macro) is never known; and every construct the
//! walk does not model yields [`Val::Unknown`], which no rule reports.

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
            _ => Val::Unknown,
        }
    }
}

/// The walk of one contracted function's body.
pub struct Walker<'a> {
    env: Env,
    vars: BTreeMap<String, Val>,
    body: &'a Body,
    scope: &'a Scope,
    /// Inside a closure or an `async` block, where `return` is not the function's.
    nested: usize,
    /// The function returns a `Result`: a returned value other than `Ok(..)` is one.
    pub returns_result: bool,
    /// The certain mismatches found, in the order of the body.
    pub errors: Vec<syn::Error>,
}

impl<'a> Walker<'a> {
    /// A walk with the function's `env` (its `return` clause) and its known values `vars`.
    pub fn new(env: Env, vars: BTreeMap<String, Val>, body: &'a Body, scope: &'a Scope) -> Self {
        Walker {
            env,
            vars,
            body,
            scope,
            nested: 0,
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
        let mut message = mismatch.message(given);
        message.push_str(&format!("\n= note: {}", mismatch.note()));
        if let Some(help) = mismatch.help(given) {
            message.push_str(&format!("\n= help: {help}"));
        }
        self.errors.push(syn::Error::new_spanned(at, message));
    }

    /// Forgets `name`: a binding the walk does not follow.
    fn forget(&mut self, name: &str) {
        self.vars.remove(name);
    }

    fn bind(&mut self, name: String, value: Val) {
        if self.body.unstable.contains(&name) {
            self.forget(&name);
            return;
        }
        match value {
            Val::Tensor(_) | Val::Int(_) => {
                self.vars.insert(name, value);
            }
            _ => self.forget(&name),
        }
    }

    /// A pattern's bindings: a plain name takes the value, a tuple of names takes a tuple's
    /// items (`let (b, d) = x.dims2()?`); any other name bound by the pattern is forgotten.
    fn bind_pat(&mut self, pat: &Pat, value: Val) {
        match (pat, value) {
            (Pat::Ident(ident), value) if ident.subpat.is_none() && ident.mutability.is_none() => {
                self.bind(ident.ident.to_string(), value);
            }
            (Pat::Type(typed), value) => self.bind_pat(&typed.pat, value),
            (Pat::Paren(paren), value) => self.bind_pat(&paren.pat, value),
            (Pat::Tuple(tuple), Val::Tuple(items)) if tuple.elems.len() == items.len() => {
                for (pat, item) in tuple.elems.iter().zip(items) {
                    self.bind_pat(pat, item);
                }
            }
            (pat, _) => {
                let mut names = BTreeSet::new();
                pattern_names(pat, &mut names);
                for name in names {
                    self.forget(&name);
                }
            }
        }
    }

    fn block(&mut self, block: &Block) -> Val {
        let saved = self.vars.clone();
        let mut value = Val::Unknown;
        for stmt in &block.stmts {
            value = match stmt {
                Stmt::Local(local) => {
                    let init = match &local.init {
                        Some(init) => {
                            let value = self.expr(&init.expr);
                            if let Some((_, diverge)) = &init.diverge {
                                self.expr(diverge);
                            }
                            value
                        }
                        None => Val::Unknown,
                    };
                    self.bind_pat(&local.pat, init);
                    Val::Unknown
                }
                Stmt::Item(_) => Val::Unknown,
                Stmt::Expr(expr, semi) => {
                    let value = self.expr(expr);
                    if let Expr::Macro(mac) = expr {
                        self.forget_macro_names(&mac.mac);
                    }
                    match (semi, value) {
                        (None, value) => value,
                        (Some(_), Val::Never) => Val::Never,
                        (Some(_), _) => Val::Unknown,
                    }
                }
                // A macro statement may expand to a `let` of any name it is given.
                Stmt::Macro(mac) => {
                    self.forget_macro_names(&mac.mac);
                    Val::Unknown
                }
            };
        }
        self.vars = saved;
        value
    }

    fn forget_macro_names(&mut self, mac: &syn::Macro) {
        // The standard library's macros that print, format or assert bind nothing.
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
        if mac.path.get_ident().is_some_and(|name| {
            BIND_NOTHING.contains(&name.to_string().as_str())
                && !self.body.defines(&name.to_string())
        }) {
            return;
        }
        let tokens = &mac.tokens;
        let mut names = BTreeSet::new();
        idents(tokens.clone(), &mut names);
        for name in names {
            self.forget(&name);
        }
    }

    /// Walks `expr` in a scope of its own, where the names `pats` bind are forgotten.
    fn scoped(&mut self, pats: &[&Pat], f: impl FnOnce(&mut Self) -> Val) -> Val {
        let saved = self.vars.clone();
        for pat in pats {
            let mut names = BTreeSet::new();
            pattern_names(pat, &mut names);
            for name in names {
                self.forget(&name);
            }
        }
        let value = f(self);
        self.vars = saved;
        value
    }

    fn expr(&mut self, expr: &Expr) -> Val {
        match expr {
            Expr::Path(path) => self.path_value(path),
            Expr::Field(field) => {
                let text = text::compact(expr);
                if let Some(value) = self.vars.get(&text) {
                    return value.clone();
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
            Expr::Tuple(tuple) => Val::Tuple(tuple.elems.iter().map(|e| self.expr(e)).collect()),
            Expr::Array(array) => Val::Array(array.elems.iter().map(|e| self.expr(e)).collect()),
            // A labelled block may yield a `break 'label value`.
            Expr::Block(block) if block.label.is_some() => {
                self.block(&block.block);
                Val::Unknown
            }
            Expr::Block(block) => self.block(&block.block),
            Expr::Unsafe(block) => self.block(&block.block),
            Expr::Async(block) => {
                self.nested += 1;
                self.block(&block.block);
                self.nested -= 1;
                Val::Unknown
            }
            Expr::Closure(closure) => {
                let pats: Vec<&Pat> = closure.inputs.iter().collect();
                self.nested += 1;
                self.scoped(&pats, |walker| walker.expr(&closure.body));
                self.nested -= 1;
                Val::Unknown
            }
            Expr::If(if_expr) => {
                self.expr(&if_expr.cond);
                let pats = let_patterns(&if_expr.cond);
                let then = self.scoped(&pats, |walker| walker.block(&if_expr.then_branch));
                match &if_expr.else_branch {
                    Some((_, other)) => then.join(self.expr(other)),
                    None => Val::Unknown,
                }
            }
            Expr::Match(match_expr) => {
                self.expr(&match_expr.expr);
                let mut value = Val::Never;
                for arm in &match_expr.arms {
                    let arm_value = self.scoped(&[&arm.pat], |walker| {
                        if let Some((_, guard)) = &arm.guard {
                            walker.expr(guard);
                        }
                        walker.expr(&arm.body)
                    });
                    value = value.join(arm_value);
                }
                value
            }
            Expr::Let(let_expr) => {
                self.expr(&let_expr.expr);
                Val::Unknown
            }
            Expr::ForLoop(for_loop) => {
                self.expr(&for_loop.expr);
                let pat = &*for_loop.pat;
                self.scoped(&[pat], |walker| walker.block(&for_loop.body));
                Val::Unknown
            }
            Expr::While(while_loop) => {
                self.expr(&while_loop.cond);
                let pats = let_patterns(&while_loop.cond);
                self.scoped(&pats, |walker| walker.block(&while_loop.body));
                Val::Unknown
            }
            Expr::Loop(loop_expr) => {
                self.block(&loop_expr.body);
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
                self.expr(&assign.right);
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
                Val::Unknown
            }
            _ => Val::Unknown,
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
            [name] if path.path.leading_colon.is_none() => {
                self.vars.get(name).cloned().unwrap_or(Val::Unknown)
            }
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
        let left = self.expr(&binary.left);
        let right = self.expr(&binary.right);
        let name = match binary.op {
            syn::BinOp::Add(_) => "add",
            syn::BinOp::Sub(_) => "sub",
            syn::BinOp::Mul(_) => "mul",
            syn::BinOp::Div(_) => "div",
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

/// The patterns of the `let`s of an `if` or `while` condition (`let Some(x) = a && ...`).
fn let_patterns(cond: &Expr) -> Vec<&Pat> {
    match cond {
        Expr::Let(let_expr) => vec![&*let_expr.pat],
        Expr::Binary(binary) => {
            let mut pats = let_patterns(&binary.left);
            pats.extend(let_patterns(&binary.right));
            pats
        }
        Expr::Paren(paren) => let_patterns(&paren.expr),
        _ => Vec::new(),
    }
}

/// The names a pattern binds.
pub fn pattern_names(pat: &Pat, names: &mut BTreeSet<String>) {
    let mut all = BTreeSet::new();
    idents(pat.to_token_stream(), &mut all);
    // Every identifier of a pattern may be a binding (`Some(x)`); forgetting a path's
    // segments too (`Some`) is harmless.
    names.extend(all);
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
