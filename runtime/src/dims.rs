//! Dim arithmetic: the postfix programs of dim expressions (`N - 1`, `{cfg.hidden} / H`) and
//! relations (`T <= P`), evaluated on integers that never wrap.

use crate::rule::BoundValue;
use crate::spec::ExprOp;

/// Why a dim expression has no value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ArithmeticError {
    /// A size came out below zero (`N - 1` with `N = 0`).
    BelowZero,
    /// A step overflowed `i128`.
    Overflow,
    /// A division or remainder by zero.
    DivideByZero,
    /// More than the evaluator's stack holds (the macro refuses such expressions).
    TooDeep,
    /// Not a well-formed postfix program (the macro never emits one).
    Malformed,
    /// A value from scope is a float where a dim needs an integer.
    Float,
    /// A value from scope was not evaluated.
    NotEvaluated,
}

impl ArithmeticError {
    /// The problem as the end of a sentence about the expression: "`N - 1` goes below zero".
    pub(crate) fn text(self) -> &'static str {
        match self {
            ArithmeticError::BelowZero => "goes below zero",
            ArithmeticError::Overflow => "overflows",
            ArithmeticError::DivideByZero => "divides by zero",
            ArithmeticError::TooDeep => "is too deeply nested",
            ArithmeticError::Malformed => "is malformed",
            ArithmeticError::Float => "uses a float where a dim needs an integer",
            ArithmeticError::NotEvaluated => "uses a value that was not evaluated",
        }
    }
}

/// A value from scope in a dim expression: `Ok(None)` for `None` (what needs it is skipped).
pub(crate) fn scope_value(
    values: &[BoundValue],
    index: u16,
) -> Result<Option<i128>, ArithmeticError> {
    match values.get(usize::from(index)) {
        Some(BoundValue::Int(v)) => Ok(Some(*v)),
        Some(BoundValue::Float(_)) => Err(ArithmeticError::Float),
        Some(BoundValue::Absent) => Ok(None),
        Some(BoundValue::Unset) | None => Err(ArithmeticError::NotEvaluated),
    }
}

/// Evaluates a postfix dim expression on integers: `/` rounds towards zero (down, for the
/// non-negative sizes of dims), and dividing by zero or overflowing is an error, never a wrap.
/// `Ok(None)` when a dim it names is not bound. The result may be negative: a relation may
/// compare with a negative value; where a size is needed, [`as_size`] refuses it.
pub(crate) fn eval_ops(
    ops: &[ExprOp],
    dim: impl Fn(u16) -> Option<usize>,
    value: impl Fn(u16) -> Result<Option<i128>, ArithmeticError>,
) -> Result<Option<i128>, ArithmeticError> {
    let mut stack = [0i128; 16];
    let mut depth = 0usize;
    for op in ops {
        let value = match *op {
            ExprOp::Lit(value) => i128::from(value),
            ExprOp::Dim(id) => match dim(id) {
                Some(value) => value as i128,
                None => return Ok(None),
            },
            ExprOp::Value(index) => match value(index)? {
                Some(value) => value,
                None => return Ok(None),
            },
            binary => {
                if depth < 2 {
                    return Err(ArithmeticError::Malformed);
                }
                let (lhs, rhs) = (stack[depth - 2], stack[depth - 1]);
                depth -= 2;
                let result = match binary {
                    ExprOp::Add => lhs.checked_add(rhs).ok_or(ArithmeticError::Overflow),
                    ExprOp::Sub => lhs.checked_sub(rhs).ok_or(ArithmeticError::Overflow),
                    ExprOp::Mul => lhs.checked_mul(rhs).ok_or(ArithmeticError::Overflow),
                    ExprOp::Div => lhs.checked_div(rhs).ok_or(ArithmeticError::DivideByZero),
                    ExprOp::Rem => lhs.checked_rem(rhs).ok_or(ArithmeticError::DivideByZero),
                    ExprOp::Lit(_) | ExprOp::Dim(_) | ExprOp::Value(_) => {
                        Err(ArithmeticError::Malformed)
                    }
                };
                result?
            }
        };
        if depth == stack.len() {
            return Err(ArithmeticError::TooDeep);
        }
        stack[depth] = value;
        depth += 1;
    }
    if depth == 1 {
        Ok(Some(stack[0]))
    } else {
        Err(ArithmeticError::Malformed)
    }
}

/// A signed result as a size: below zero is an error.
pub(crate) fn as_size(value: Option<i128>) -> Result<Option<u64>, ArithmeticError> {
    match value {
        Some(value) => u64::try_from(value)
            .map(Some)
            .map_err(|_| ArithmeticError::BelowZero),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dim_arithmetic_is_checked() {
        let dims = [Some(5usize), Some(0), None];
        let dim = |id: u16| dims[usize::from(id)];
        let eval = |ops: &[ExprOp]| eval_ops(ops, dim, |_| Ok(None));
        use ExprOp::*;
        assert_eq!(eval(&[Dim(0), Lit(1), Add]), Ok(Some(6)));
        assert_eq!(eval(&[Dim(0), Lit(2), Div]), Ok(Some(2)));
        assert_eq!(eval(&[Dim(0), Lit(3), Rem]), Ok(Some(2)));
        assert_eq!(eval(&[Lit(2), Dim(0), Mul]), Ok(Some(10)));
        // Signed: a relation may compare with a negative value; a size refuses it.
        assert_eq!(eval(&[Dim(1), Lit(1), Sub]), Ok(Some(-1)));
        assert_eq!(as_size(Some(-1)), Err(ArithmeticError::BelowZero));
        assert_eq!(as_size(Some(7)), Ok(Some(7)));
        assert_eq!(
            eval(&[Dim(0), Dim(1), Div]),
            Err(ArithmeticError::DivideByZero)
        );
        assert_eq!(
            eval(&[Lit(u64::MAX), Lit(u64::MAX), Mul]),
            Err(ArithmeticError::Overflow)
        );
        assert_eq!(eval(&[Dim(2), Lit(1), Add]), Ok(None));
        assert_eq!(eval(&[Add]), Err(ArithmeticError::Malformed));
        let values = [
            BoundValue::Int(768),
            BoundValue::Int(-1),
            BoundValue::Absent,
        ];
        let with_values = |ops: &[ExprOp]| eval_ops(ops, dim, |i| scope_value(&values, i));
        assert_eq!(with_values(&[Value(0), Lit(2), Div]), Ok(Some(384)));
        assert_eq!(with_values(&[Value(1)]), Ok(Some(-1)));
        assert_eq!(with_values(&[Dim(0), Value(2), Add]), Ok(None));
        assert_eq!(with_values(&[Value(7)]), Err(ArithmeticError::NotEvaluated));
    }
}
