//! A contract's tensor clauses and relations as the engine's types: what the analysis reads of
//! a parsed contract (dtypes, shapes and relations between dims; value constraints and options
//! are the guard's).

use candle_contracts_shapes::shape::Run;
use candle_contracts_shapes::{
    Clause as EngineClause, Cmp, Contract, DTypeSet, Dim, Relation, Shape, TensorType,
};

use super::syntax::{self, ArithOp, Clause, DimExpr, Subject, name_of};

/// The tensor clauses of `clauses`, subjects as written without spaces (`self.head.weight()`);
/// `None` where a dtype has no meaning (the macro reports it). A derived subject
/// (`{target.sum(1)?}`) names no variable of the body: it is left out; a sequence of tensors
/// is no tensor: its element type is one of [`Contract::sequences`].
pub fn contract(clauses: &[Clause]) -> Option<Contract> {
    let mut lowered = Vec::new();
    let mut facts = Vec::new();
    let mut fields = Vec::new();
    let mut field_values = Vec::new();
    let mut field_flags = Vec::new();
    let mut absent_zero = Vec::new();
    let mut not_swiglu = Vec::new();
    let mut relations = Vec::new();
    let mut named_elsewhere = Vec::new();
    let mut sequences = Vec::new();
    for clause in clauses {
        if let Clause::Bind(binding) = clause {
            fields.push((subject_text(&binding.subject), name_of(&binding.dim)));
            continue;
        }
        if let Clause::Flag(flag) = clause {
            field_flags.push((subject_text(&flag.subject), flag.value));
            continue;
        }
        if let Clause::NotSwiglu(activation) = clause {
            not_swiglu.push(subject_text(&activation.subject));
            continue;
        }
        if let Clause::Relation(relation) = clause {
            let op = match relation.op {
                syntax::CmpOp::Eq => Cmp::Eq,
                syntax::CmpOp::Ne => Cmp::Ne,
                syntax::CmpOp::Lt => Cmp::Lt,
                syntax::CmpOp::Le => Cmp::Le,
                syntax::CmpOp::Gt => Cmp::Gt,
                syntax::CmpOp::Ge => Cmp::Ge,
            };
            relations.push(Relation::new(
                dim_expr(&relation.lhs),
                op,
                dim_expr(&relation.rhs),
            ));
            // `{self.conv.config().padding} == 1` (a convolution's `with padding = 1`): the
            // value is that number, as a field naming a dim is that dim.
            if op == Cmp::Eq
                && let (DimExpr::Block { tokens, .. }, DimExpr::Lit(n)) =
                    (&relation.lhs, &relation.rhs)
            {
                let text: String = tokens.0.to_string().split_whitespace().collect();
                field_values.push((text, *n));
            }
            // `E == H * D` (either way round): within the body, `E` is `H * D`.
            if op == Cmp::Eq {
                match (&relation.lhs, &relation.rhs) {
                    (DimExpr::Name(name), other) | (other, DimExpr::Name(name)) => {
                        facts.push((name_of(name), dim_expr(other)));
                    }
                    _ => {}
                }
            }
            continue;
        }
        let Clause::Tensor(tensor) = clause else {
            continue;
        };
        named_elsewhere.extend(bound_names(&tensor.spec.constraints));
        if matches!(tensor.subject, Subject::Derived { .. }) || tensor.spec.sequence.is_some() {
            named_elsewhere.extend(shape_names(&tensor.spec));
            if tensor.spec.sequence.is_some() && !matches!(tensor.subject, Subject::Derived { .. })
            {
                sequences.push(EngineClause {
                    subject: subject_text(&tensor.subject),
                    spec: tensor_type(&tensor.spec)?,
                });
            }
            continue;
        }
        if let Some(dim) = &tensor.absent_zero {
            absent_zero.push((subject_text(&tensor.subject), name_of(dim)));
        }
        lowered.push(EngineClause {
            subject: subject_text(&tensor.subject),
            spec: tensor_type(&tensor.spec)?,
        });
    }
    Some(Contract {
        clauses: lowered,
        facts,
        fields,
        field_values,
        field_flags,
        absent_zero,
        not_swiglu,
        relations,
        named_elsewhere,
        sequences,
    })
}

/// The dim names a clause's value rules use (`C` of `in 0..C`).
fn bound_names(constraints: &[syntax::Constraint]) -> Vec<String> {
    let name = |bound: Option<&syntax::BoundExpr>| match bound {
        Some(syntax::BoundExpr::Name(name)) => Some(name_of(name)),
        _ => None,
    };
    let mut names = Vec::new();
    for constraint in constraints {
        if let syntax::Constraint::In { patterns, .. } = constraint {
            for pattern in patterns {
                match pattern {
                    syntax::Pattern::Range { lo, hi, .. } => {
                        names.extend(name(lo.as_ref()));
                        names.extend(name(hi.as_ref()));
                    }
                    syntax::Pattern::Single(single) => names.extend(name(Some(single))),
                }
            }
        }
    }
    names
}

/// The dim names of a spec's shape and sequence count (`E` and `N` of `[f32[E]; N]`).
fn shape_names(spec: &syntax::TensorSpec) -> Vec<String> {
    let dim_names = |dim: &syntax::Dim| -> Vec<String> {
        match dim {
            syntax::Dim::Named(name) | syntax::Dim::Run { name, .. } => vec![name_of(name)],
            syntax::Dim::Expr(expr) => dim_expr(expr)
                .symbols()
                .into_iter()
                .map(str::to_string)
                .collect(),
            syntax::Dim::Fixed(_) | syntax::Dim::Any | syntax::Dim::Rest(_) => Vec::new(),
        }
    };
    spec.shape
        .dims
        .iter()
        .chain(&spec.sequence)
        .flat_map(dim_names)
        .collect()
}

/// Whether the clauses say `static = false`: the body's analysis is off.
pub fn analysis_off(clauses: &[Clause]) -> bool {
    clauses.iter().any(|clause| {
        matches!(clause, Clause::Option(option)
            if option.name == syntax::kw::STATIC && option.value == "false")
    })
}

/// The subject as the analysis names it: `self.head.weight()`, `type` for `r#type` (a raw
/// identifier is the same name).
fn subject_text(subject: &Subject) -> String {
    match subject {
        Subject::Field { root, steps } => {
            let mut text = name_of(root);
            for step in steps {
                match step {
                    syntax::FieldStep::Member { member, call } => {
                        match member {
                            syn::Member::Named(ident) => {
                                text.push_str(&format!(".{}", name_of(ident)))
                            }
                            syn::Member::Unnamed(index) => {
                                text.push_str(&format!(".{}", index.index))
                            }
                        }
                        if *call {
                            text.push_str("()");
                        }
                    }
                    syntax::FieldStep::Optional(_) => text.push('?'),
                    syntax::FieldStep::Index(i, _) => text.push_str(&format!("[{i}]")),
                    syntax::FieldStep::IndexBy(ident) => {
                        text.push_str(&format!("[{}]", name_of(ident)))
                    }
                    syntax::FieldStep::All(_) => text.push_str("[..]"),
                }
            }
            text
        }
        Subject::Param(ident) => name_of(ident),
        other => other.to_string(),
    }
}

fn tensor_type(spec: &syntax::TensorSpec) -> Option<TensorType> {
    let mut dtypes = DTypeSet::EMPTY;
    for name in &spec.dtypes {
        dtypes = dtypes.union(DTypeSet::from_name(&name.name)?);
    }
    let (mut front, mut run, mut back) = (Vec::new(), None, Vec::new());
    for dim in &spec.shape.dims {
        let lowered = match dim {
            syntax::Dim::Rest(_) => {
                run = Some(Run::anonymous());
                continue;
            }
            syntax::Dim::Run { name, .. } => {
                run = Some(Run::named(name_of(name)));
                continue;
            }
            syntax::Dim::Fixed(n) => Dim::lit(*n),
            syntax::Dim::Named(name) => Dim::symbol(name_of(name)),
            syntax::Dim::Any => Dim::Unknown,
            syntax::Dim::Expr(expr) => dim_expr(expr),
        };
        match run {
            Some(_) => back.push(lowered),
            None => front.push(lowered),
        }
    }
    let shape = match run {
        Some(run) => Shape::with_run(front, run, back),
        None => Shape::new(front),
    };
    Some(TensorType::new(dtypes, shape))
}

fn dim_expr(expr: &DimExpr) -> Dim {
    match expr {
        DimExpr::Lit(n) => Dim::lit(*n),
        DimExpr::Name(name) => Dim::symbol(name_of(name)),
        DimExpr::Block { tokens, .. } => Dim::braced(&syntax::code_text(&tokens.0)),
        DimExpr::Paren(inner) => dim_expr(inner),
        DimExpr::Binary { lhs, op, rhs, .. } => {
            let (lhs, rhs) = (dim_expr(lhs), dim_expr(rhs));
            match op {
                ArithOp::Add => lhs.add(rhs),
                ArithOp::Sub => lhs.sub(rhs),
                ArithOp::Mul => lhs.mul(rhs),
                ArithOp::Div => lhs.div(rhs),
                ArithOp::Rem => lhs.rem(rhs),
            }
        }
    }
}
