//! Help lines: the common cause of a violation and its fix, guessed from the rule, the values
//! found and the argument's name.

use candle_core::{DType, Tensor};

use crate::error::{DimBinding, Value};
use crate::spec::{ClauseSpec, DTypeSet, DimSpec};
use crate::value::{Details, Ignore, Num, Resolved, Used};

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

/// Names that suggest class indices.
fn looks_like_classes(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    name == "y"
        || ["target", "label", "class", "gold", "truth"]
            .iter()
            .any(|part| name.contains(part))
}

/// Names that suggest token ids rather than class indices.
fn looks_like_ids(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    ["id", "token", "input", "vocab", "word", "position"]
        .iter()
        .any(|part| name.contains(part))
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
        return Some(
            "this takes a float dtype: convert with `.to_dtype(DType::F32)?` (binary \
             cross-entropy targets are probabilities in 0..=1, not class indices)"
                .to_string(),
        );
    }
    None
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

pub(crate) fn for_rank(clause: &ClauseSpec, dims: &[usize]) -> Option<String> {
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
    if dims.len() == rank + 1 && all_int(clause) {
        return Some(
            "one dim too many: cross-entropy takes class indices of shape [N], not one-hot \
             rows of shape [N, C] (use `.argmax(1)?`)"
                .to_string(),
        );
    }
    if dims.len() + 1 == rank {
        return Some("one dim missing: add a batch dim with `.unsqueeze(0)?`".to_string());
    }
    None
}

pub(crate) fn for_shape(
    clause: &ClauseSpec,
    dims: &[usize],
    expected: Option<&[usize]>,
    bound_dims: &[DimBinding],
) -> Option<String> {
    if let Some(expected) = expected {
        let count: usize = dims.iter().product();
        let expected_count: usize = expected.iter().product();
        if count == expected_count && dims != expected {
            return Some(format!(
                "the element counts match ({count}): a reshape, flatten or transpose went the \
                 wrong way"
            ));
        }
    }
    // Only between two arguments whose dim 0 is the batch: not for weights or the return value.
    let name = clause.subject.name();
    let is_argument = |name: &str| !name.starts_with("self.") && name != "return";
    if is_argument(name)
        && bound_dims
            .iter()
            .any(|b| b.axis == 0 && b.bound_by != name && is_argument(b.bound_by))
    {
        return Some(
            "the batch sizes differ between arguments: a last batch smaller than the batch \
             size, or a size taken from the config instead of the data, causes this"
                .to_string(),
        );
    }
    None
}

/// The exclusive integer upper bound of the rule (`0..C`) and the name it was written as.
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
                })
                .unwrap_or_else(|| hi.to_string());
            Some((hi, name))
        }
        _ => None,
    })
}

/// A float bound of the rule that `value` prints as (an f32 0.1 against the bound 0.1), when
/// the value is not that bound exactly: the printed value alone would not explain the verdict.
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
                Some(Num::Int(b)) if b as f64 == shown && b as f64 != v => Some(b as f64),
                _ => None,
            })
    })
}

/// Whether every range of the rule starts at 0, as ranges of indices do.
fn starts_at_zero(rule: &Resolved) -> bool {
    rule.ranges.as_ref().is_some_and(|ranges| {
        !ranges.is_empty() && ranges.iter().all(|r| matches!(r.lo, Some(Num::Int(0))))
    })
}

fn is_unit_interval(rule: &Resolved) -> bool {
    let Some(ranges) = &rule.ranges else {
        return false;
    };
    let as_f64 = |n: Option<Num>| match n {
        Some(Num::Int(v)) => Some(v as f64),
        Some(Num::Float(v)) => Some(v),
        None => None,
    };
    ranges.len() == 1
        && ranges[0].inclusive
        && as_f64(ranges[0].lo) == Some(0.0)
        && as_f64(ranges[0].hi) == Some(1.0)
}

pub(crate) fn for_values(
    clause: &ClauseSpec,
    rule: &Resolved,
    dtype: DType,
    details: &Details,
    used: &Used,
) -> Option<String> {
    let name = clause.subject.name();
    let first = details.first_value?;
    if details.counts.nan > 0 {
        return Some(
            "NaN is in no range: it came from an earlier op (a log of 0, 0/0, a diverging \
             loss or a too-high learning rate); find where it first appears"
                .to_string(),
        );
    }
    match first {
        Value::Int(v) => {
            let index_like = starts_at_zero(rule);
            if v < 0 && index_like {
                let declared = rule
                    .ignore
                    .iter()
                    .any(|i| matches!(i, Ignore::Value(Num::Int(x)) if *x == v));
                if !declared {
                    return Some(format!(
                        "negative values such as {v} usually mark padding or positions without \
                         a label: drop or mask them first, or declare `ignore {v}` where the \
                         function skips them (`candle_contracts::nn::cross_entropy_with` takes \
                         an ignore index); candle would read {v} as a huge unsigned index"
                    ));
                }
            }
            let max = match dtype {
                DType::U8 => u8::MAX as i128,
                DType::U32 => u32::MAX as i128,
                DType::I16 => i16::MAX as i128,
                DType::I32 => i32::MAX as i128,
                _ => i64::MAX as i128,
            };
            if v == max {
                return Some(format!(
                    "{v} is {}::MAX, candle's \"skip this index\" sentinel: write `ignore MAX` \
                     to skip these positions on purpose, or fix the code that produced it",
                    dtype.as_str()
                ));
            }
            let shows_255 = details
                .offending
                .iter()
                .any(|o| matches!(o, Value::Int(255)));
            if shows_255 && upper_bound(rule, used).is_some_and(|(c, _)| c < 255) {
                return Some(
                    "255 is the usual \"void\" or mask value: map mask values to class indices \
                     (e.g. 255 -> 1 for a binary mask) or declare `ignore 255`"
                        .to_string(),
                );
            }
            if let Some((bound, dim)) = upper_bound(rule, used)
                && v >= bound
                && index_like
            {
                let limit = if dim == bound.to_string() {
                    dim.clone()
                } else {
                    format!("{dim} = {bound}")
                };
                let named_dim = used.dims.iter().any(|b| b.name == dim);
                if looks_like_ids(name) && named_dim {
                    return Some(format!(
                        "ids must be < the vocab size {limit}: tokens added to a tokenizer \
                         without resizing the embedding table cause this"
                    ));
                }
                if looks_like_classes(name) {
                    let min = details.observed.map(|(lo, _)| lo);
                    let one_based = matches!(min, Some(Value::Int(1))) && v == bound;
                    return Some(if one_based {
                        format!(
                            "class indices are 0-based and must be < {limit}; these look \
                             numbered from 1: subtract 1 from the labels"
                        )
                    } else {
                        format!(
                            "class indices are 0-based and must be < {limit}; labels numbered \
                             from 1, or a class the model head does not have, cause this"
                        )
                    });
                }
                return Some(format!(
                    "indices are 0-based and must be < {limit}, the size of the dim they index"
                ));
            }
            None
        }
        Value::Float(v, _) => {
            if let Some(bound) = bound_the_value_rounds_to(rule, first) {
                return Some(format!(
                    "{first} is the {} nearest to {bound}, but exactly it is {v:.17}, on the \
                     wrong side of {bound}: bounds are exact real numbers; widen the bound a \
                     little or round the data",
                    dtype.as_str()
                ));
            }
            if v.is_infinite() {
                return Some(
                    "an overflow gave an infinity (an exp of a large logit, a division by a \
                     tiny number, weights that blew up); clamp or normalise before this call"
                        .to_string(),
                );
            }
            if is_unit_interval(rule) {
                let max = details.observed.map(|(_, hi)| hi.to_f64());
                if max == Some(255.0) {
                    return Some(
                        "masks stored as 0/255 must be scaled to 0..1 (divide by 255) before a \
                         binary cross-entropy"
                            .to_string(),
                    );
                }
                return Some(
                    "probabilities must lie in 0..=1: a model head without a sigmoid gives \
                     logits; apply `candle_nn::ops::sigmoid`, or give the logits to \
                     `binary_cross_entropy_with_logit`"
                        .to_string(),
                );
            }
            None
        }
    }
}
