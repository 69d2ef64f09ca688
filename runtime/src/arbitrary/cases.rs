//! `violations!(f)`: from one valid draw, inputs that break exactly one rule of one clause, and
//! the rule the guard must report for each.
//!
//! Each case changes one tensor of the draw: its dtype (one the clause does not allow), its rank
//! (a trailing dim of 1), one dim (one more than its literal, its expression or its first use),
//! or its values (element 0 one past a bound of an `in` pattern; NaN and ±inf under `finite`,
//! a `Range` violation where the clause has `in` patterns and a `Finite` one otherwise;
//! a value that is not whole under `integral`; every element ignored under `ignore` without
//! `allow_all`). Under a `where` mask that is an argument, each value change comes with the
//! mask's element 0 set non-zero (the guard checks it); under a mask that is the subject
//! itself, a changed value of 0 is exempt.
//!
//! The exemptions (`exemptions!(f)`) are the inputs the guard must accept although a value
//! breaks a rule: that value change with the mask's element 0 set to 0, and element 0 an ignored
//! value outside the `in` patterns. None is made where it would break another rule: leave a
//! clause no checked element that is not ignored (the guard would then report `AllIgnored`),
//! or change what a derived subject reads (derived subjects are never masked).
//!
//! Clauses on fields, derived subjects, sequences and absent `Option`s (the base draw has them
//! all present where it can) are not changed, nor the values of a clause whose mask is a braced
//! expression (`where {x.ge(0)?}`: what it exempts is not drawn).

use candle_core::{DType, Tensor};

use super::layout::{Draw, Plan, clause_text};
use super::params::Drawn;
use super::values::{
    DRAWN_DTYPES, at_or_above, at_or_below, float_tensor, int_tensor, intervals, next_down,
    next_up, round_to,
};
use crate::error::Rule;
use crate::rule::{Compare, Ignore, Resolved};
use crate::spec::{ClauseSpec, ContractSpec, DTypeSet, DimSpec, ExprOp, Subject};

/// One input that breaks one rule: the clause as written, the subject the guard blames, the
/// rule it reports, what was changed, and the parameters' values. An exemption breaks the rule
/// only where the contract exempts the value (a mask's 0, an ignored value): the guard must
/// accept it.
#[derive(Debug, Clone)]
pub(crate) struct Case {
    /// The guarded function's name, as its errors give it.
    pub function: &'static str,
    pub clause: String,
    pub subject: &'static str,
    pub rule: Rule,
    pub change: String,
    pub values: Vec<Option<Drawn>>,
    pub exempt: bool,
}

/// A change of a clause's values: the rule it breaks, in words, the changed tensor, and
/// whether the contract exempts the changed element (an ignored value).
struct ValueCase {
    rule: Rule,
    change: String,
    tensor: Tensor,
    exempt: bool,
}

/// A dtype of each kind that a clause may not allow, tried in order.
const WRONG_DTYPES: [DType; 9] = [
    DType::F32,
    DType::I64,
    DType::U32,
    DType::F64,
    DType::U8,
    DType::F16,
    DType::BF16,
    DType::I32,
    DType::I16,
];

/// The integer dtypes, with their ranges.
fn int_range(dtype: DType) -> Option<(i128, i128)> {
    match dtype {
        DType::U8 => Some((0, u8::MAX.into())),
        DType::U32 => Some((0, u32::MAX.into())),
        DType::I16 => Some((i16::MIN.into(), i16::MAX.into())),
        DType::I32 => Some((i32::MIN.into(), i32::MAX.into())),
        DType::I64 => Some((i64::MIN.into(), i64::MAX.into())),
        _ => None,
    }
}

/// A tensor's elements, row-major: exactly, as `i64` for an integer dtype and `f64` for a float
/// one.
enum Elements {
    Int(Vec<i64>),
    Float(Vec<f64>),
}

fn read(tensor: &Tensor) -> candle_core::Result<Elements> {
    let flat = tensor.flatten_all()?;
    Ok(if int_range(tensor.dtype()).is_some() {
        Elements::Int(flat.to_dtype(DType::I64)?.to_vec1()?)
    } else {
        Elements::Float(flat.to_dtype(DType::F64)?.to_vec1()?)
    })
}

/// The integer bounds of `rule`'s patterns in `dtype`, as closed intervals with their open ends.
fn int_intervals(dtype: DType, rule: &Resolved) -> Vec<(i128, i128, bool, bool)> {
    fn widen<C: Compare + Into<i64>>(rule: &Resolved) -> Vec<(i128, i128, bool, bool)> {
        intervals::<C>(rule)
            .into_iter()
            .map(|(lo, hi, lo_open, hi_open)| {
                (lo.into().into(), hi.into().into(), lo_open, hi_open)
            })
            .collect()
    }
    match dtype {
        DType::U8 => widen::<u8>(rule),
        DType::U32 => widen::<u32>(rule),
        DType::I16 => widen::<i16>(rule),
        DType::I32 => widen::<i32>(rule),
        _ => widen::<i64>(rule),
    }
}

/// The float bounds of `rule`'s patterns in `dtype`: values of the dtype, with their open ends.
fn float_intervals(dtype: DType, rule: &Resolved) -> Vec<(f64, f64, bool, bool)> {
    let typed: Vec<(f64, f64, bool, bool)> = match dtype {
        DType::F64 => intervals::<f64>(rule),
        _ => intervals::<f32>(rule)
            .into_iter()
            .map(|(lo, hi, a, b)| (f64::from(lo), f64::from(hi), a, b))
            .collect(),
    };
    typed
        .into_iter()
        .map(|(lo, hi, a, b)| (at_or_above(dtype, lo), at_or_below(dtype, hi), a, b))
        .collect()
}

/// Whether `v` is one of `rule`'s ignored values in `dtype`.
fn ignored(rule: &Resolved, dtype: DType, v: f64) -> bool {
    rule.ignore.iter().any(|ignore| match ignore {
        Ignore::Value(num) => num.approx() == v,
        Ignore::Max => int_range(dtype).is_some_and(|(_, max)| max as f64 == v),
    })
}

/// A float value of `dtype` as that dtype prints it (`-1e-45`, not its `f64` digits).
fn shown(dtype: DType, v: f64) -> String {
    match dtype {
        DType::F32 => format!("{:?}", v as f32),
        DType::F16 => format!("{:?}", half::f16::from_f64(v)),
        DType::BF16 => format!("{:?}", half::bf16::from_f64(v)),
        _ => format!("{v:?}"),
    }
}

/// `x[0, 0]`: element 0 of a tensor `name` of `rank` dims (`x` itself for a scalar).
fn first_index(name: &str, rank: usize) -> String {
    if rank == 0 {
        return name.to_string();
    }
    let zeros = vec!["0"; rank].join(", ");
    format!("{name}[{zeros}]")
}

/// The cases of one draw of `plan`'s contract.
pub(crate) fn cases(plan: &Plan, draw: &Draw) -> Vec<Case> {
    let spec = plan.spec;
    let mut out = Vec::new();
    let uses = dim_uses(spec, draw);
    for (index, clause) in spec.inputs.iter().enumerate() {
        let Subject::Argument(name) = clause.subject else {
            continue;
        };
        if clause.sequence.is_some() {
            continue;
        }
        let Some(param) = spec.params.iter().position(|p| *p == name) else {
            continue;
        };
        let tensor = match draw.values.get(param) {
            Some(Some(Drawn::Tensor(tensor) | Drawn::Optional(Some(tensor)))) => tensor,
            _ => continue,
        };
        let text = clause_text(spec, clause);
        let mut push = |rule: Rule, change: String, changed: candle_core::Result<Tensor>| {
            // A tensor candle cannot build on the CPU is no case (never for these changes).
            let Ok(changed) = changed else {
                return;
            };
            let mut values = draw.values.clone();
            replace(&mut values, param, changed);
            out.push(Case {
                function: spec.function,
                clause: text.clone(),
                subject: name,
                rule,
                change,
                values,
                exempt: false,
            });
        };
        if let Some(wrong) = WRONG_DTYPES
            .into_iter()
            .find(|d| !clause.dtypes.contains(*d))
        {
            push(
                Rule::DType,
                format!("{name} as {}", wrong.as_str()),
                tensor.to_dtype(wrong),
            );
        }
        let fixed_rank = !clause
            .shape
            .iter()
            .any(|d| matches!(d, DimSpec::Rest | DimSpec::Run(_)));
        if fixed_rank {
            push(
                Rule::Rank,
                format!("{name} with a trailing dim of 1"),
                tensor.unsqueeze(tensor.rank()),
            );
        }
        for (at, position) in positions(clause.shape, tensor.rank()) {
            let blamed = match clause.shape[at] {
                DimSpec::Fixed(_) | DimSpec::Expr(_) => true,
                DimSpec::Named(id) => uses
                    .iter()
                    .find(|(_, dim)| *dim == id)
                    .is_some_and(|(first, _)| *first != (index, at)),
                _ => false,
            };
            if !blamed {
                continue;
            }
            let what = match clause.shape[at] {
                DimSpec::Named(id) => spec
                    .dims
                    .get(usize::from(id))
                    .copied()
                    .unwrap_or("?")
                    .to_string(),
                DimSpec::Expr(expr) => spec.text_of(expr.text).to_string(),
                DimSpec::Fixed(size) => size.to_string(),
                _ => "its size".to_string(),
            };
            let size = tensor.dims()[position];
            // One more slice: a copy of the first, whose values are valid; zeros where there
            // is none to copy and no value rule to meet.
            let slice = match (size, clause.values) {
                (0, Some(_)) => continue,
                (0, None) => {
                    let mut dims = tensor.dims().to_vec();
                    dims[position] = 1;
                    Tensor::zeros(dims, tensor.dtype(), tensor.device())
                }
                _ => tensor.narrow(position, 0, 1),
            };
            push(
                Rule::Shape,
                format!("{name} dim {position} = {}, one more than {what}", size + 1),
                slice.and_then(|slice| Tensor::cat(&[tensor, &slice], position)),
            );
        }
        // The mask, where it is an argument drawn present: its index, name and tensor.
        let mask = match clause.mask {
            None => None,
            Some(mask) => {
                let text = spec.text_of(mask.text);
                let at = spec.params.iter().position(|p| *p == text);
                match at.and_then(|at| Some((at, draw.values.get(at)?.as_ref()?))) {
                    Some((at, Drawn::Tensor(m) | Drawn::Optional(Some(m)))) => Some((at, text, m)),
                    _ => continue,
                }
            }
        };
        let Some(rule) = plan.rule(clause, &draw.layout) else {
            continue;
        };
        let patterns = clause
            .values
            .map_or("", |values| spec.text_of(values.ranges_span));
        let changes = value_cases(&rule, clause.dtypes, name, patterns, tensor);
        // A clause masked by its own subject (`ids: i64[N] in 1..V where ids`): the changed
        // value is its own mask.
        let self_masked = mask.is_some_and(|(at, _, _)| at == param);
        // Under a mask, element 0 checked (the mask non-zero there) for a violation, exempt
        // (0 there) for an exemption: element 0 of the mask is broadcast to element 0 of the
        // subject.
        let (mask_on, mask_off) = match mask {
            Some((_, mask_name, m)) if !self_masked => (
                checked_mask_value(plan, draw, mask_name, m)
                    .and_then(|v| Some((set_first(m, v)?, v))),
                allows(plan, draw, mask_name, m, 0.0)
                    .then(|| set_first(m, 0.0))
                    .flatten(),
            ),
            _ => (None, None),
        };
        for change in changes {
            let mut variants: Vec<(Option<&Tensor>, bool, String)> = Vec::new();
            match mask {
                None => variants.push((None, change.exempt, String::new())),
                Some(_) if self_masked => match first_value(&change.tensor) {
                    Some(0.0) => variants.push((None, true, ", its own mask".into())),
                    Some(v) if !v.is_nan() => variants.push((None, change.exempt, String::new())),
                    _ => {}
                },
                Some((_, mask_name, m)) => {
                    let at = first_index(mask_name, m.rank());
                    if let Some((on, v)) = &mask_on {
                        variants.push((Some(on), change.exempt, format!(", where `{at}` = {v}")));
                    }
                    if let Some(off) = mask_off.as_ref().filter(|_| !change.exempt) {
                        variants.push((Some(off), true, format!(", exempt where `{at}` = 0")));
                    }
                }
            }
            for (mask_tensor, exempt, suffix) in variants {
                let mut values = draw.values.clone();
                replace(&mut values, param, change.tensor.clone());
                if let (Some((at, _, _)), Some(m)) = (mask, mask_tensor) {
                    replace(&mut values, at, m.clone());
                }
                let changed: Vec<&str> = match mask {
                    Some((_, mask_name, _)) => vec![name, mask_name],
                    None => vec![name],
                };
                // An exemption must keep every other rule; a violation must not break another
                // clause's usable element (the guard might report that one first).
                let kept = match exempt {
                    true => {
                        change.rule != Rule::AllIgnored
                            && accepted_elsewhere(plan, draw, &values, &changed, true)
                    }
                    false => {
                        change.rule == Rule::AllIgnored
                            || accepted_elsewhere(plan, draw, &values, &changed, false)
                    }
                };
                if !kept {
                    continue;
                }
                let broken = change.rule;
                let change = format!("{}{suffix}", change.change);
                // `ignore 255 | MAX` on a `u8`: one value, one case.
                let seen = out
                    .iter()
                    .any(|c| c.subject == name && c.change == change && c.exempt == exempt);
                if seen {
                    continue;
                }
                out.push(Case {
                    function: spec.function,
                    clause: text.clone(),
                    subject: name,
                    rule: broken,
                    change,
                    values,
                    exempt,
                });
            }
        }
    }
    out
}

/// `values[at]` set to `tensor`, kept inside its `Option` where it is one.
fn replace(values: &mut [Option<Drawn>], at: usize, tensor: Tensor) {
    values[at] = Some(match &values[at] {
        Some(Drawn::Optional(_)) => Drawn::Optional(Some(tensor)),
        _ => Drawn::Tensor(tensor),
    });
}

/// A tensor's elements as `f64`, row-major.
fn as_f64(tensor: &Tensor) -> Option<Vec<f64>> {
    Some(match read(&tensor.contiguous().ok()?).ok()? {
        Elements::Int(values) => values.into_iter().map(|v| v as f64).collect(),
        Elements::Float(values) => values,
    })
}

/// ` (as i64)` where a value is written in another dtype than the tensor drawn.
fn written_as(written: DType, drawn: DType) -> String {
    match written == drawn {
        true => String::new(),
        false => format!(" (as {})", written.as_str()),
    }
}

/// Element 0 of a tensor, as an `f64`.
fn first_value(tensor: &Tensor) -> Option<f64> {
    as_f64(&tensor.flatten_all().ok()?.narrow(0, 0, 1).ok()?)?
        .first()
        .copied()
}

/// The clause whose subject is the parameter `name`, if it has one.
fn own_clause(plan: &Plan, name: &str) -> Option<&'static ClauseSpec> {
    plan.spec
        .inputs
        .iter()
        .find(|c| matches!(c.subject, Subject::Argument(n) if n == name))
}

/// Whether the mask parameter `name`'s own clause, if it has one, allows the value `v`.
fn allows(plan: &Plan, draw: &Draw, name: &str, mask: &Tensor, v: f64) -> bool {
    let own = own_clause(plan, name);
    // A mask masked by itself (`ids: i64[B, T] in 1..V where ids`) exempts its own 0s.
    let self_masked = own
        .and_then(|c| c.mask)
        .is_some_and(|mask| plan.spec.text_of(mask.text) == name);
    if v == 0.0 && self_masked {
        return true;
    }
    match own.and_then(|clause| plan.rule(clause, &draw.layout)) {
        Some(rule) => {
            rule.in_ranges(v) && !ignored(&rule, mask.dtype(), v) && round_to(mask.dtype(), v) == v
        }
        None => true,
    }
}

/// A non-zero value the mask may hold at element 0: 1, or else an end of one of its own
/// clause's patterns (`in 0 | 255` gives 255); `None` where it allows none.
fn checked_mask_value(plan: &Plan, draw: &Draw, name: &str, mask: &Tensor) -> Option<f64> {
    let dtype = mask.dtype();
    let own = own_clause(plan, name);
    let mut candidates = vec![1.0];
    if let Some(rule) = own.and_then(|clause| plan.rule(clause, &draw.layout)) {
        if int_range(dtype).is_some() {
            for (lo, hi, lo_open, hi_open) in int_intervals(dtype, &rule) {
                candidates.push((lo + i128::from(lo_open)) as f64);
                candidates.push((hi - i128::from(hi_open)) as f64);
            }
        } else {
            for (lo, hi, lo_open, hi_open) in float_intervals(dtype, &rule) {
                candidates.push(if lo_open { next_up(dtype, lo) } else { lo });
                candidates.push(if hi_open { next_down(dtype, hi) } else { hi });
            }
        }
    }
    candidates.into_iter().find(|&v| {
        v != 0.0
            && v.is_finite()
            && int_range(dtype).is_none_or(|(min, max)| (min as f64..=max as f64).contains(&v))
            && allows(plan, draw, name, mask, v)
    })
}

/// `mask` with element 0 set to `v` (a value of its dtype); `None` where it has no element.
fn set_first(mask: &Tensor, v: f64) -> Option<Tensor> {
    let shape = mask.dims().to_vec();
    match read(mask).ok()? {
        Elements::Int(mut values) if !values.is_empty() => {
            values[0] = v as i64;
            int_tensor(values, &shape, mask.dtype()).ok()
        }
        Elements::Float(mut values) if !values.is_empty() => {
            values[0] = v;
            float_tensor(values, &shape, mask.dtype()).ok()
        }
        _ => None,
    }
}

/// Whether a case's `values` (the parameters `changed` changed) keep the other rules: every
/// clause that needs a usable element (`ignore` without `allow_all`) still has one checked (its
/// mask non-zero) that is not ignored, and with `derived_too` (an exemption), no derived
/// subject nor braced mask reads a changed parameter (derived subjects are never masked). A
/// violation may still break a derived subject that reads what it changed: the guard reports
/// both.
fn accepted_elsewhere(
    plan: &Plan,
    draw: &Draw,
    values: &[Option<Drawn>],
    changed: &[&str],
    derived_too: bool,
) -> bool {
    let spec = plan.spec;
    let reads_changed = |text: &str| {
        text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .any(|word| changed.contains(&word))
    };
    let tensor_of = |name: &str| {
        let at = spec.params.iter().position(|p| *p == name)?;
        match values.get(at)?.as_ref()? {
            Drawn::Tensor(t) | Drawn::Optional(Some(t)) => Some(t),
            _ => None,
        }
    };
    for clause in spec.inputs {
        if let Subject::Derived(text) = clause.subject
            && derived_too
            && reads_changed(text)
        {
            return false;
        }
        let mask_text = clause.mask.map(|mask| spec.text_of(mask.text));
        if derived_too && mask_text.is_some_and(|text| text.starts_with('{') && reads_changed(text))
        {
            return false;
        }
        let Subject::Argument(name) = clause.subject else {
            continue;
        };
        let (Some(tensor), Some(rule)) = (tensor_of(name), plan.rule(clause, &draw.layout)) else {
            continue;
        };
        let mask = mask_text.and_then(tensor_of);
        if !usable_left(&rule, tensor, mask) {
            return false;
        }
    }
    true
}

/// Whether a clause that needs a usable element (`ignore` without `allow_all`) still has one in
/// `subject`: an element that is checked (its `mask` is non-zero) and not an ignored value.
fn usable_left(rule: &Resolved, subject: &Tensor, mask: Option<&Tensor>) -> bool {
    if rule.ignore.is_empty() || rule.allow_all {
        return true;
    }
    let Some(values) = as_f64(subject) else {
        return false;
    };
    let checked = match mask {
        None => vec![1.0; values.len()],
        Some(mask) => match mask
            .broadcast_as(subject.dims())
            .ok()
            .and_then(|m| as_f64(&m))
        {
            Some(checked) => checked,
            None => return false,
        },
    };
    values
        .iter()
        .zip(&checked)
        .any(|(v, m)| *m != 0.0 && !ignored(rule, subject.dtype(), *v))
}

/// Each named dim's uses in the input clauses that bind it in this draw, in the guard's order
/// (derived subjects last): `((clause,
/// position in its shape), dim)`. A clause whose tensor is absent (a `None`, an empty
/// sequence, an optional path) binds nothing, but a sequence's count does. A dim that a relation binds before any tensor
/// (`self.n_head = H`) is first used there, so each of its uses in a shape is checked
/// against it.
fn dim_uses(spec: &ContractSpec, draw: &Draw) -> Vec<((usize, usize), u16)> {
    let mut uses = Vec::new();
    for relation in spec.relations.iter().filter(|r| r.binds) {
        if let [ExprOp::Dim(id)] = relation.lhs {
            uses.push(((usize::MAX, 0), *id));
        }
    }
    // The guard binds dims from every other clause first, then from the derived subjects.
    let derived = |clause: &&ClauseSpec| matches!(clause.subject, Subject::Derived(_));
    let ordered = spec
        .inputs
        .iter()
        .enumerate()
        .filter(|(_, c)| !derived(c))
        .chain(spec.inputs.iter().enumerate().filter(|(_, c)| derived(c)));
    for (index, clause) in ordered {
        let drawn = match clause.subject {
            Subject::Argument(name) => {
                let param = spec.params.iter().position(|p| *p == name);
                param
                    .and_then(|p| draw.values.get(p))
                    .and_then(Option::as_ref)
            }
            _ => None,
        };
        // A sequence's count binds its dim even where the sequence is empty.
        if let (Some(DimSpec::Named(id)), Some(Drawn::Sequence(_))) = (clause.sequence, drawn) {
            uses.push(((index, usize::MAX), id));
        }
        let present = match (clause.subject, drawn) {
            (Subject::Argument(_), Some(Drawn::Tensor(_) | Drawn::Optional(Some(_)))) => true,
            (Subject::Argument(_), Some(Drawn::Sequence(tensors))) => !tensors.is_empty(),
            (Subject::Argument(_), _) => false,
            _ => !clause.optional,
        };
        if !present {
            continue;
        }
        for (at, dim) in clause.shape.iter().enumerate() {
            if let DimSpec::Named(id) = dim {
                uses.push(((index, at), *id));
            }
        }
    }
    uses
}

/// The dims of `shape` whose position in a tensor of `rank` dims is known: `(index in the
/// shape, position in the tensor)`, before a `..` or run and after the only one.
fn positions(shape: &[DimSpec], rank: usize) -> Vec<(usize, usize)> {
    let varying = |d: &DimSpec| matches!(d, DimSpec::Rest | DimSpec::Run(_));
    let first = shape.iter().position(varying);
    let count = shape.iter().filter(|d| varying(d)).count();
    match first {
        None if shape.len() == rank => (0..rank).map(|i| (i, i)).collect(),
        None => Vec::new(),
        Some(first) => {
            let mut known: Vec<(usize, usize)> = (0..first).map(|i| (i, i)).collect();
            if count == 1 {
                let after = shape.len() - first - 1;
                if rank >= first + after {
                    known.extend((first + 1..shape.len()).map(|i| (i, rank + i - shape.len())));
                }
            }
            known
        }
    }
}

/// The value cases of a clause on `tensor`: one past each bound, NaN and ±inf under `finite`,
/// a value that is not whole under `integral`, every element ignored.
fn value_cases(
    rule: &Resolved,
    allowed: DTypeSet,
    name: &str,
    patterns: &str,
    tensor: &Tensor,
) -> Vec<ValueCase> {
    let dtype = tensor.dtype();
    let shape = tensor.dims().to_vec();
    let mut out = Vec::new();
    let mut push = |rule: Rule, change: String, changed: candle_core::Result<Tensor>, exempt| {
        // A tensor candle cannot build on the CPU is no case (never for these changes).
        if let Ok(tensor) = changed {
            out.push(ValueCase {
                rule,
                change,
                tensor,
                exempt,
            });
        }
    };
    let Ok(elements) = read(tensor) else {
        return out;
    };
    let at = first_index(name, shape.len());
    match elements {
        Elements::Int(values) if !values.is_empty() => {
            // The tensor's dtype first, then the clause's other integer dtypes: a value its
            // dtype cannot hold (`-1` in a `u32`) is written in one that can (`i64`).
            let dtypes: Vec<DType> = std::iter::once(dtype)
                .chain(
                    DRAWN_DTYPES
                        .into_iter()
                        .filter(|d| *d != dtype && int_range(*d).is_some() && allowed.contains(*d)),
                )
                .collect();
            let holding = |v: i128| {
                dtypes
                    .iter()
                    .copied()
                    .find(|d| int_range(*d).is_some_and(|(min, max)| (min..=max).contains(&v)))
            };
            for (lo, hi, lo_open, hi_open) in int_intervals(DType::I64, rule) {
                for (past, open, side) in [(lo - 1, lo_open, "below"), (hi + 1, hi_open, "above")] {
                    if open || rule.in_ranges(past as f64) || ignored(rule, dtype, past as f64) {
                        continue;
                    }
                    let (Some(written), Ok(past64)) = (holding(past), i64::try_from(past)) else {
                        continue;
                    };
                    let mut changed = values.clone();
                    changed[0] = past64;
                    let change = match written == dtype {
                        true => format!("{at} = {past}, one {side} `{patterns}`"),
                        false => format!(
                            "{at} = {past}, one {side} `{patterns}` (as {})",
                            written.as_str()
                        ),
                    };
                    push(
                        Rule::Range,
                        change,
                        int_tensor(changed, &shape, written),
                        false,
                    );
                }
            }
            // An ignored value outside the patterns: exempt.
            for ignore in &rule.ignore {
                let v = match ignore {
                    Ignore::Value(num) => {
                        let v = num.approx();
                        (v.fract() == 0.0 && v.abs() < 9.0e15).then_some(v as i128)
                    }
                    Ignore::Max => int_range(dtype).map(|(_, max)| max),
                };
                let Some(v) = v.filter(|v| !rule.in_ranges(*v as f64)) else {
                    continue;
                };
                let (Some(written), Ok(v64)) = (holding(v), i64::try_from(v)) else {
                    continue;
                };
                let mut changed = values.clone();
                changed[0] = v64;
                push(
                    Rule::Range,
                    format!("{at} = {v}, ignored{}", written_as(written, dtype)),
                    int_tensor(changed, &shape, written),
                    true,
                );
            }
            if !rule.allow_all {
                let fill = rule.ignore.iter().find_map(|ignore| match ignore {
                    Ignore::Value(num) => {
                        let v = num.approx();
                        let v = (v.fract() == 0.0 && v.abs() < 9.0e15).then_some(v as i128)?;
                        Some((i64::try_from(v).ok()?, holding(v)?))
                    }
                    Ignore::Max => {
                        let (_, max) = int_range(dtype)?;
                        Some((i64::try_from(max).ok()?, dtype))
                    }
                });
                if let Some((fill, written)) = fill {
                    push(
                        Rule::AllIgnored,
                        format!(
                            "every element of {name} = {fill}, ignored{}",
                            written_as(written, dtype)
                        ),
                        int_tensor(vec![fill; values.len()], &shape, written),
                        false,
                    );
                }
            }
        }
        Elements::Float(values) if !values.is_empty() => {
            let with = |v: f64| {
                let mut changed = values.clone();
                changed[0] = v;
                float_tensor(changed, &shape, dtype)
            };
            for (lo, hi, lo_open, hi_open) in float_intervals(dtype, rule) {
                let below = next_down(dtype, lo);
                let above = next_up(dtype, hi);
                for (past, open, side) in [(below, lo_open, "below"), (above, hi_open, "above")] {
                    let usable = !open
                        && past.is_finite()
                        && !rule.in_ranges(past)
                        && !ignored(rule, dtype, past);
                    if usable {
                        push(
                            Rule::Range,
                            format!("{at} = {}, one {side} `{patterns}`", shown(dtype, past)),
                            with(past),
                            false,
                        );
                    }
                }
            }
            for ignore in &rule.ignore {
                let Ignore::Value(num) = ignore else {
                    continue;
                };
                let v = num.approx();
                if round_to(dtype, v) == v && !rule.in_ranges(v) {
                    push(
                        Rule::Range,
                        format!("{at} = {}, ignored", shown(dtype, v)),
                        with(v),
                        true,
                    );
                }
            }
            if rule.finite {
                // The guard blames the range where the clause has one (NaN is in none).
                let broken = match rule.ranges {
                    Some(_) => Rule::Range,
                    None => Rule::Finite,
                };
                for v in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
                    push(broken, format!("{at} = {v}"), with(v), false);
                }
            }
            if rule.integral {
                let fractional = [values[0] + 0.5, values[0] - 0.5, 0.5]
                    .into_iter()
                    .find(|&v| {
                        round_to(dtype, v) == v && rule.in_ranges(v) && !ignored(rule, dtype, v)
                    });
                if let Some(v) = fractional {
                    push(
                        Rule::Integral,
                        format!("{at} = {v}, not a whole number"),
                        with(v),
                        false,
                    );
                }
            }
            if !rule.allow_all {
                let fill = rule.ignore.iter().find_map(|ignore| match ignore {
                    Ignore::Value(num) => Some(num.approx()).filter(|v| round_to(dtype, *v) == *v),
                    Ignore::Max => None,
                });
                if let Some(fill) = fill {
                    push(
                        Rule::AllIgnored,
                        format!("every element of {name} = {fill}, ignored"),
                        float_tensor(vec![fill; values.len()], &shape, dtype),
                        false,
                    );
                }
            }
        }
        _ => {}
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_are_known_before_a_rest_and_after_the_only_one() {
        let n = DimSpec::Named(0);
        assert_eq!(positions(&[n, n], 2), [(0, 0), (1, 1)]);
        assert_eq!(positions(&[n, n], 3), []);
        assert_eq!(positions(&[n, DimSpec::Rest, n], 4), [(0, 0), (2, 3)]);
        assert_eq!(positions(&[DimSpec::Rest, n], 1), [(1, 0)]);
        assert_eq!(
            positions(&[n, DimSpec::Rest, DimSpec::Run(0), n], 4),
            [(0, 0)]
        );
    }
}
