//! Help lines: the common cause of a violation and its fix, chosen from the rule and the values
//! found (never from the argument's name: `position_ids` are no token ids, and `labels` may
//! hold anything). Where the data points to no likely cause, there is no help line.

use candle_core::{DType, Tensor};

use crate::error::{DimBinding, DimSource, Value};
use crate::rule::{Details, Ignore, Num, Resolved, Used};
use crate::spec::{BoundSpec, ClauseSpec, DTypeSet, DimSpec};

fn all_int(clause: &ClauseSpec) -> bool {
    DTypeSet::INT.or(clause.dtypes) == DTypeSet::INT
}

fn all_float(clause: &ClauseSpec) -> bool {
    DTypeSet::FLOAT.or(clause.dtypes) == DTypeSet::FLOAT
}

fn fixed_rank(clause: &ClauseSpec) -> Option<usize> {
    clause
        .shape
        .iter()
        .all(|d| !matches!(d, DimSpec::Rest | DimSpec::Run(_)))
        .then_some(clause.shape.len())
}

pub(crate) fn for_dtype(clause: &ClauseSpec, tensor: &Tensor) -> Option<String> {
    let found = tensor.dtype();
    if all_int(clause) && found.is_float() {
        if fixed_rank(clause).is_some_and(|rank| tensor.rank() == rank + 1) {
            return Some(
                "this takes class indices, not one-hot rows (or probabilities): turn one-hot \
                 rows into class indices with `.argmax(1)?`"
                    .to_string(),
            );
        }
        return Some(format!(
            "this takes integer indices: convert with `.to_dtype(DType::{})?` once the values \
             are whole numbers",
            clause_dtype_suggestion(clause)
        ));
    }
    if all_float(clause) && found.is_int() {
        // A 0..=1 rule is what a binary cross-entropy's targets have.
        let probabilities = clause.values.is_some_and(|values| {
            let bound = |b: Option<BoundSpec>, v: f64| match b {
                Some(BoundSpec::Int(b)) => b as f64 == v,
                Some(BoundSpec::Float(b)) => b == v,
                _ => false,
            };
            matches!(values.ranges, [r] if r.inclusive && bound(r.lo, 0.0) && bound(r.hi, 1.0))
        });
        return Some(format!(
            "this takes a float dtype: convert with `.to_dtype(DType::F32)?`{}",
            if probabilities {
                " (binary cross-entropy targets are probabilities in 0..=1, not class indices)"
            } else {
                ""
            }
        ));
    }
    // Another dtype of the same kind (f64 into f32, i32 into u32): the conversion is the fix.
    let (target, several) = preferred_dtype(clause.dtypes)?;
    Some(format!(
        "convert it with `.to_dtype(DType::{target})?`{}",
        if several {
            " (or to another dtype the clause allows)"
        } else {
            ""
        }
    ))
}

/// The dtype a conversion should target among those a clause allows (candle's usual ones
/// first), and whether the clause allows others.
fn preferred_dtype(dtypes: DTypeSet) -> Option<(&'static str, bool)> {
    const ORDER: [(DType, &str); 10] = [
        (DType::F32, "F32"),
        (DType::U32, "U32"),
        (DType::I64, "I64"),
        (DType::BF16, "BF16"),
        (DType::F16, "F16"),
        (DType::F64, "F64"),
        (DType::U8, "U8"),
        (DType::I32, "I32"),
        (DType::I16, "I16"),
        (DType::F8E4M3, "F8E4M3"),
    ];
    let allowed: Vec<&str> = ORDER
        .iter()
        .filter(|(dtype, _)| dtypes.contains(*dtype))
        .map(|(_, name)| *name)
        .collect();
    allowed.first().map(|name| (*name, allowed.len() > 1))
}

fn clause_dtype_suggestion(clause: &ClauseSpec) -> &'static str {
    for (set, name) in [
        (DTypeSet::U32, "U32"),
        (DTypeSet::I64, "I64"),
        (DTypeSet::U8, "U8"),
        (DTypeSet::I32, "I32"),
        (DTypeSet::I16, "I16"),
    ] {
        if clause.dtypes.or(set) == clause.dtypes {
            return name;
        }
    }
    "U32"
}

/// `fixed(id, size)`: whether a named dim of `size` agrees with what fixes it (its binding by
/// the other arguments, or the constant it names); `None` when nothing does.
pub(crate) fn for_rank(
    clause: &ClauseSpec,
    dims: &[usize],
    fixed: impl Fn(u16, usize) -> Option<bool>,
) -> Option<String> {
    let rank = fixed_rank(clause)?;
    if dims.len() == rank + 1 && dims.last() == Some(&1) {
        return Some(format!(
            "a trailing dim of size 1: drop it with `.squeeze({})?`{}",
            rank,
            if all_int(clause) && rank == 1 {
                " (cross-entropy takes class indices of shape [N], not a column vector)"
            } else {
                ""
            }
        ));
    }
    if dims.len() == rank + 1 {
        // A dim of size 1 elsewhere whose removal makes the shape fit (`[1, 1, 3]` against
        // `[B, T]`).
        let at = (0..dims.len()).find(|&at| {
            let mut sizes = dims.to_vec();
            dims[at] == 1 && {
                sizes.remove(at);
                fits(clause, &sizes, &fixed)
            }
        });
        if let Some(at) = at {
            let which = if at == 0 { "a leading dim" } else { "a dim" };
            return Some(format!("{which} of size 1: drop it with `.squeeze({at})?`"));
        }
    }
    if dims.len() == rank + 1 && rank == 1 && all_int(clause) {
        return Some(
            "one dim too many: class indices have shape [N]. A [B, T] target of a sequence \
             model: flatten it to [B * T] and the logits to [B * T, C]; one-hot rows of shape \
             [N, C]: take `.argmax(1)?`"
                .to_string(),
        );
    }
    if dims.len() + 1 == rank {
        // Only an insertion after which the shape fits: `[T]` against `[T, T]` has none, and
        // `[2, 1, 5]` against `[B, 1, 1, T]` needs it at 1.
        let at = (0..=dims.len()).find(|&at| {
            let mut sizes = dims.to_vec();
            sizes.insert(at, 1);
            fits(clause, &sizes, &fixed)
        })?;
        return Some(
            if at == 0 && matches!(clause.shape.first(), Some(DimSpec::Named(_))) {
                "one dim missing: add a batch dim with `.unsqueeze(0)?`".to_string()
            } else {
                format!("one dim missing: insert a dim of size 1 with `.unsqueeze({at})?`")
            },
        );
    }
    None
}

/// Whether `sizes` certainly fits a shape of fixed rank: literals equal, a named dim the same
/// at each occurrence and agreeing with what fixes it. An expression (`2 * N`, a braced dim) is
/// not evaluated here, so a shape with one never fits: no help rather than a wrong one.
fn fits(clause: &ClauseSpec, sizes: &[usize], fixed: &impl Fn(u16, usize) -> Option<bool>) -> bool {
    let mut seen: Vec<(u16, usize)> = Vec::new();
    clause.shape.len() == sizes.len()
        && clause
            .shape
            .iter()
            .zip(sizes)
            .all(|(dim, &size)| match *dim {
                DimSpec::Fixed(n) => n == size,
                DimSpec::Named(id) => {
                    let earlier = seen.iter().find(|(seen_id, _)| *seen_id == id).map(|s| s.1);
                    seen.push((id, size));
                    match earlier {
                        Some(value) => value == size,
                        None => fixed(id, size).unwrap_or(true),
                    }
                }
                DimSpec::Any => true,
                DimSpec::Expr(_) | DimSpec::Rest | DimSpec::Run(_) => false,
            })
}

/// The number of elements of `dims`: zero when any dim is zero, `None` when it exceeds `usize`.
fn element_count(dims: &[usize]) -> Option<usize> {
    if dims.contains(&0) {
        return Some(0);
    }
    dims.iter()
        .try_fold(1usize, |count, &dim| count.checked_mul(dim))
}

pub(crate) fn for_shape(
    clause: &ClauseSpec,
    dims: &[usize],
    expected: Option<&[usize]>,
    bound_dims: &[DimBinding],
) -> Option<String> {
    if let Some(expected) = expected
        && let Some(count) = element_count(dims)
        && element_count(expected) == Some(count)
        && dims != expected
    {
        return Some(format!(
            "the element counts match ({count}): a reshape, flatten or transpose went the wrong \
             way"
        ));
    }
    // Only between two arguments whose dim 0 is the batch: not for weights or the return value.
    let name = clause.subject.name();
    let is_argument = |name: &str| !name.starts_with("self.") && name != "return";
    if is_argument(name)
        && bound_dims.iter().any(|b| {
            b.source == DimSource::Axis
                && b.axis == 0
                && b.bound_by != name
                && is_argument(b.bound_by)
        })
    {
        return Some(
            "the batch sizes differ between arguments: a last batch smaller than the batch \
             size, or a size taken from the config instead of the data, causes this"
                .to_string(),
        );
    }
    None
}

/// The exclusive integer upper bound of the rule (`0..C`), and how to show it: `C = 4`,
/// `{classes} = 10`, or `10` for a literal.
fn upper_bound(rule: &Resolved, used: &Used) -> Option<(i128, String)> {
    let ranges = rule.ranges.as_ref()?;
    ranges.iter().find_map(|range| match range.hi {
        Some(Num::Int(hi)) if !range.inclusive => {
            let name = used
                .dims
                .iter()
                .find(|b| b.value as i128 == hi)
                .map(|b| b.name.to_string())
                .or_else(|| {
                    let shown = hi.to_string();
                    used.values
                        .iter()
                        .find(|(_, value)| *value == shown)
                        .map(|(text, _)| text.to_string())
                });
            let limit = match name {
                Some(name) => format!("{name} = {hi}"),
                None => hi.to_string(),
            };
            Some((hi, limit))
        }
        _ => None,
    })
}

/// The largest value of a single integer range from 0 (`0..C` allows `C - 1`, `0..=1` allows 1).
fn largest_allowed(rule: &Resolved) -> Option<i128> {
    match rule.ranges.as_deref()? {
        [range] if matches!(range.lo, Some(Num::Int(0))) => match range.hi? {
            Num::Int(hi) if range.inclusive => Some(hi),
            Num::Int(hi) => hi.checked_sub(1),
            Num::Float(_) | Num::Inexact(..) => None,
        },
        _ => None,
    }
}

/// A float bound of the rule that `value` prints as (an f32 0.1 against the bound 0.1), when
/// the value is not that bound exactly (an f64 0.1 is not the real 0.1 either, though it is
/// the f64 the bound's literal rounds to): the printed value alone would not explain the
/// verdict.
fn bound_the_value_rounds_to(rule: &Resolved, value: Value) -> Option<f64> {
    let Value::Float(v, _) = value else {
        return None;
    };
    let shown = value.to_string().parse::<f64>().ok()?;
    rule.ranges.as_ref()?.iter().find_map(|range| {
        [range.lo, range.hi]
            .into_iter()
            .find_map(|bound| match bound {
                Some(Num::Float(b)) if b == shown && b != v => Some(b),
                Some(Num::Inexact(b, _)) if b == shown => Some(b),
                Some(Num::Int(b)) if b as f64 == shown && b as f64 != v => Some(b as f64),
                _ => None,
            })
    })
}

/// Enough of a float's exact decimal expansion to see where it differs from a short literal
/// (0.1000000000000000055511151... for the f64 0.1), `...` where it is cut.
fn exact_digits(v: f64) -> String {
    let full = format!("{v:.1100}");
    let full = full.trim_end_matches('0').trim_end_matches('.');
    let significant_start = full
        .find(|c: char| c.is_ascii_digit() && c != '0')
        .unwrap_or(0);
    let point = full.find('.').unwrap_or(full.len());
    // All of it up to 30 significant digits (an f32 has at most about 27 in [0.1, 1]), else 25,
    // but never fewer than the integer part.
    let significant = full.len() - significant_start - usize::from(point > significant_start);
    let cut = (significant_start + 25).max(point);
    if significant > 30 && full.len() > cut {
        format!("{}...", &full[..cut])
    } else {
        full.to_string()
    }
}

/// Whether every range of the rule starts at 0, as ranges of indices do.
fn starts_at_zero(rule: &Resolved) -> bool {
    rule.ranges.as_ref().is_some_and(|ranges| {
        !ranges.is_empty() && ranges.iter().all(|r| matches!(r.lo, Some(Num::Int(0))))
    })
}

fn as_f64(n: Option<Num>) -> Option<f64> {
    n.map(Num::approx)
}

/// `0..=1` (or `0.0..=1.0`): probabilities, masks scaled to 0..1.
fn is_unit_interval(rule: &Resolved) -> bool {
    matches!(rule.ranges.as_deref(), Some([range])
        if range.inclusive && as_f64(range.lo) == Some(0.0) && as_f64(range.hi) == Some(1.0))
}

/// `..=0` (or `..=0.0`): log-probabilities.
fn is_at_most_zero(rule: &Resolved) -> bool {
    matches!(rule.ranges.as_deref(), Some([range])
        if range.inclusive && range.lo.is_none() && as_f64(range.hi) == Some(0.0))
}

/// What the scan saw, in the terms the help lines are chosen by. `offending` lists up to five
/// distinct offending values, or a start of them (`complete` false: a device reads back the
/// first only); a claim about every offending value needs the complete list.
struct Seen<'a> {
    offending: &'a [Value],
    complete: bool,
    /// The smallest and largest value neither NaN nor ignored.
    observed: Option<(Value, Value)>,
    /// Checked elements that are not ignored.
    usable: u64,
}

impl<'a> Seen<'a> {
    fn of(details: &'a Details) -> Self {
        Self {
            offending: &details.offending,
            complete: details.offending_complete,
            observed: details.observed,
            usable: details
                .counts
                .total
                .saturating_sub(details.counts.ignored)
                .saturating_sub(details.counts.exempt),
        }
    }

    /// The observed range as numbers.
    fn range(&self) -> Option<(f64, f64)> {
        self.observed.map(|(lo, hi)| (lo.to_f64(), hi.to_f64()))
    }

    fn shows(&self, value: f64) -> bool {
        self.offending.iter().any(|o| o.to_f64() == value)
    }

    /// Every offending value is `value`: the one listed, and nothing beyond it either side.
    fn only(&self, value: f64) -> bool {
        self.complete
            && !self.offending.is_empty()
            && self.offending.iter().all(|o| o.to_f64() == value)
            && self.range().is_some_and(|(lo, hi)| {
                if value < 0.0 {
                    lo == value
                } else {
                    hi == value && lo >= 0.0
                }
            })
    }

    /// Every offending value is a whole number.
    fn whole(&self) -> bool {
        self.complete
            && !self.offending.is_empty()
            && self
                .offending
                .iter()
                .all(|o| o.to_f64().is_finite() && o.to_f64().fract() == 0.0)
    }
}

/// Why a float tensor that must hold whole numbers (class ids in a label map, counts) holds
/// fractions.
pub(crate) fn for_fractions(clause: &ClauseSpec) -> String {
    format!(
        "`{}` holds fractions where whole numbers belong: a label map divided by 255 or \
         normalised like an image, or resized with bilinear interpolation, is no longer class \
         ids; load it as integers and resize it with nearest-neighbour",
        clause.subject.name()
    )
}

/// The help line of a value rule's violation, from what the scan saw; `mask` is the clause's
/// `where` mask (its text and dtype) when one was given.
pub(crate) fn for_values(
    _clause: &ClauseSpec,
    rule: &Resolved,
    dtype: DType,
    details: &Details,
    used: &Used,
    mask: Option<(&str, DType)>,
) -> Option<String> {
    let first = details.first_value?;
    if details.counts.nan > 0 {
        let what = if rule.ranges.is_some() {
            "NaN is in no range"
        } else if rule.finite {
            "NaN is not finite"
        } else {
            "NaN is not a whole number"
        };
        return Some(format!(
            "{what}: it came from an earlier op (a log of 0, 0/0, a diverging loss or a \
             too-high learning rate); find where it first appears"
        ));
    }
    let seen = Seen::of(details);
    match first {
        Value::Int(_) => for_integers(rule, dtype, &seen, used, mask),
        Value::Float(v, _) => {
            if let Some(bound) = bound_the_value_rounds_to(rule, first) {
                return Some(format!(
                    "{first} is the {} nearest to {bound}, but exactly it is {}, on the \
                     wrong side of {bound}: bounds are exact real numbers; widen the bound a \
                     little or round the data",
                    dtype.as_str(),
                    exact_digits(v)
                ));
            }
            for_floats(rule, &seen)
        }
    }
}

/// Under a `where` mask, a marker (a pad id, a void label) where the mask attends: declaring it
/// ignored would hide what the mask is there to catch.
fn marker_under_mask(v: i128, mask: &str, mask_dtype: DType) -> String {
    let nan = if mask_dtype.is_float() {
        " (in a float mask, NaN counts as non-zero too)"
    } else {
        ""
    };
    format!(
        "{v} where `{mask}` is non-zero{nan}: the mask attends a position that holds a padding, \
         \"no label\" or void marker, so the data and its mask disagree; build the mask from the \
         data (`.ne({v})`), or find where the two were padded differently"
    )
}

fn for_integers(
    rule: &Resolved,
    dtype: DType,
    seen: &Seen<'_>,
    used: &Used,
    mask: Option<(&str, DType)>,
) -> Option<String> {
    let (min, max) = seen.range()?;
    let index_like = starts_at_zero(rule);
    // One negative value, and nothing below it: a "no label" or padding marker.
    let negatives: Vec<f64> = seen
        .offending
        .iter()
        .map(|o| o.to_f64())
        .filter(|&o| o < 0.0)
        .collect();
    if index_like
        && let [v] = negatives[..]
        && min == v
    {
        let v = v as i128;
        let declared = rule
            .ignore
            .iter()
            .any(|i| matches!(i, Ignore::Value(Num::Int(x)) if *x == v));
        if let Some((mask, mask_dtype)) = mask {
            return Some(marker_under_mask(v, mask, mask_dtype));
        }
        if !declared {
            return Some(format!(
                "negative values such as {v} usually mark padding or positions without a label: \
                 drop or mask them first, or declare `ignore {v}` where the function skips them \
                 (`candle_contracts::nn::cross_entropy_with` takes an ignore index); candle \
                 would read {v} as a huge unsigned index"
            ));
        }
    }
    // 255 alone out of range: a mask value.
    if largest_allowed(rule).is_some_and(|allowed| allowed < 255) && seen.only(255.0) {
        if largest_allowed(rule) == Some(1) && min == 0.0 {
            return Some(
                "the smallest value is 0 and 255 is the only one out of range: a binary mask \
                 saved as 0/255; map 255 to 1 where the masks are loaded (divide by 255)"
                    .to_string(),
            );
        }
        if let Some((mask, mask_dtype)) = mask {
            return Some(marker_under_mask(255, mask, mask_dtype));
        }
        return Some(format!(
            "255 is the only value out of range: the usual \"void\" label of segmentation \
             masks (object borders in Pascal VOC); declare `ignore 255` to skip those pixels \
             (`candle_contracts::nn::cross_entropy_with` with `ignore_index: Some(255)`), or \
             map it to a class{}",
            if dtype == DType::U8 {
                "; in u8 it is also u8::MAX, which candle's kernels silently skip"
            } else {
                ""
            }
        ));
    }
    let dtype_max = match dtype {
        DType::U8 => u8::MAX as f64,
        DType::U32 => u32::MAX as f64,
        DType::I16 => i16::MAX as f64,
        DType::I32 => i32::MAX as f64,
        _ => i64::MAX as f64,
    };
    if seen.shows(dtype_max) {
        return Some(format!(
            "{} is {}::MAX, candle's \"skip this index\" sentinel: write `ignore MAX` to skip \
             these positions on purpose, or fix the code that produced it",
            Value::Int(dtype_max as i128),
            dtype.as_str()
        ));
    }
    let (bound, limit) = upper_bound(rule, used)?;
    if !index_like || min < 0.0 {
        return None;
    }
    let b = bound as f64;
    if seen.only(b) {
        // Class 0 would show up in a batch of at least C labels numbered from 0.
        if min >= 1.0 && seen.usable >= bound as u64 {
            return Some(format!(
                "indices are 0-based and must be < {limit}; these look numbered from 1 (none \
                 is 0, and every offending value is {bound}): subtract 1 where they are loaded"
            ));
        }
        // Only a vocabulary is this large; a type or position table is not.
        let tokens = if bound >= 1000 {
            ", a token added to a tokenizer without resizing the embedding table"
        } else {
            ""
        };
        let from_one = if min >= 1.0 {
            "labels numbered from 1, "
        } else {
            ""
        };
        return Some(format!(
            "indices are 0-based and must be < {limit}, so {bound} is one past the end: \
             {from_one}an off-by-one, or one class or id more than the model has (a head with \
             too few classes{tokens}) cause this"
        ));
    }
    if seen.shows(b) && max > b {
        return Some(format!(
            "indices are 0-based and must be < {limit}, but these run from {bound} up to {}: \
             the data has more ids or positions than the dim they index (a sequence longer \
             than a position table, a vocabulary or class set larger than the table or head \
             built from a config)",
            max as i128
        ));
    }
    None
}

fn for_floats(rule: &Resolved, seen: &Seen<'_>) -> Option<String> {
    let (min, max) = seen.range().unwrap_or((f64::NAN, f64::NAN));
    if seen.shows(f64::INFINITY) {
        return Some(
            "an overflow gave an infinity (an exp of a large logit, a division by a tiny \
             number, weights that blew up); clamp or normalise before this call"
                .to_string(),
        );
    }
    if seen.only(f64::NEG_INFINITY) {
        return Some(
            "-inf is what masking with -inf (`masked_fill`, `where_cond`) or a log of 0 gives: \
             mask with a large finite negative number instead (such as -1e9), or clamp the \
             log (`.maximum(-100.0)?`)"
                .to_string(),
        );
    }
    if is_at_most_zero(rule) && max > 0.0 {
        if min >= 0.0 && max <= 1.0 {
            return Some(
                "log-probabilities are <= 0, and these lie in 0..=1: probabilities given in \
                 their place; take `candle_nn::ops::log_softmax` of the logits instead, or \
                 give the logits to `candle_contracts::nn::cross_entropy`"
                    .to_string(),
            );
        }
        return Some(format!(
            "log-probabilities are <= 0, and these reach {}: raw logits given in their place; \
             apply `candle_nn::ops::log_softmax(&logits, D::Minus1)?` first, or give the \
             logits to `candle_contracts::nn::cross_entropy`",
            seen.observed
                .map_or(String::new(), |(_, hi)| hi.to_string()),
        ));
    }
    if is_unit_interval(rule) {
        if seen.whole() && min >= 0.0 {
            if seen.only(255.0) && min == 0.0 {
                return Some(
                    "the smallest value is 0 and 255 is the only one out of range: a mask \
                     stored as 0/255; divide by 255 to scale it to 0..=1"
                        .to_string(),
                );
            }
            return Some(format!(
                "whole numbers up to {max} where 0..=1 is expected: the data is not scaled \
                 (8-bit images hold 0..=255: divide by 255), or counts or class ids stand \
                 where probabilities belong"
            ));
        }
        if let Some((lo, hi)) = seen.observed
            && min >= -1e-3
            && max <= 1.0 + 1e-3
        {
            return Some(format!(
                "the values lie just outside 0..=1 (observed {lo}..={hi}): rounding in the op \
                 that made them; clamp with `.clamp(0.0, 1.0)?`"
            ));
        }
        return Some(
            "probabilities must lie in 0..=1: a model head without a sigmoid gives logits; \
             apply `candle_nn::ops::sigmoid`, or give the logits to \
             `binary_cross_entropy_with_logit`"
                .to_string(),
        );
    }
    None
}
