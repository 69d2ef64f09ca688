//! `ContractError`: every violation of one call, structured, with its message (what was
//! expected, what was found, where, and the likely cause) as its `Display`.

use std::fmt;
use std::panic::Location;

use candle_core::DType;

use crate::spec::{ContractSpec, Subject};

/// How many distinct offending values a message lists at most.
pub(crate) const OFFENDING_SHOWN: usize = 5;

/// Which rule of the contract was broken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Rule {
    /// A `self` field was `None`.
    Missing,
    /// The dtype is not one the clause allows.
    DType,
    /// The number of dims differs.
    Rank,
    /// A dim differs from its literal, its bound name, its run or its expression.
    Shape,
    /// A sequence clause (`items: [f32[E]; N]`) has another number of elements than its count.
    Count,
    /// The tensor is not on the device of the first checked tensor.
    Device,
    /// The clause says `contiguous` and the layout is strided.
    Contiguous,
    /// A relation between dims does not hold.
    Relation,
    /// A dim expression cannot be evaluated (below zero, division by zero, overflow).
    DimArithmetic,
    /// An element is outside every `in` pattern (NaN is in none) and not ignored.
    Range,
    /// An element is NaN or ±inf under `finite`.
    Finite,
    /// A float element under `integral` is not a whole number (NaN and ±inf are not).
    Integral,
    /// No usable element: every element (under a `where` mask, every checked one) is an
    /// ignored value, or there is none to check.
    AllIgnored,
    /// The `where` mask of a clause's value rules does not broadcast to its subject's dims, is
    /// on another device, or has a packed dtype (`f4`, `f6`) whose values cannot be read.
    Mask,
    /// A bound of an `in` pattern could not be evaluated (a NaN bound, an unbound dim).
    Bound,
    /// The dtype's values cannot be read (candle's packed `f4` / `f6` formats).
    Unreadable,
}

/// The value of one tensor element, printed as the user would write it: integers exactly
/// (`-1`, never `18446744073709551615`) and floats in their own dtype's shortest form.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value {
    /// An element of an integer dtype.
    Int(i128),
    /// An element of a float dtype, widened exactly to `f64`.
    Float(f64, DType),
}

impl Value {
    /// The value as an `f64` (exact for every float dtype and for integers below 2^53).
    pub fn to_f64(self) -> f64 {
        match self {
            Value::Int(v) => v as f64,
            Value::Float(v, _) => v,
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Value::Int(v) => write!(f, "{v}"),
            Value::Float(v, DType::F64) => shortest(f, v, v),
            Value::Float(v, DType::F16) => shortest(f, half::f16::from_f64(v), v),
            Value::Float(v, DType::BF16) => shortest(f, half::bf16::from_f64(v), v),
            // f32 and the 8-bit formats: f32's shortest form is exact for them.
            Value::Float(v, _) => shortest(f, v as f32, v),
        }
    }
}

/// The shortest form that reads back as the same value of its dtype, with an exponent for very
/// small or large magnitudes (`1e-45`, not 45 zeros).
fn shortest<T: fmt::Display + fmt::LowerExp>(
    f: &mut fmt::Formatter<'_>,
    value: T,
    magnitude: f64,
) -> fmt::Result {
    let magnitude = magnitude.abs();
    if magnitude != 0.0 && magnitude.is_finite() && !(1e-5..1e16).contains(&magnitude) {
        write!(f, "{value:e}")
    } else {
        write!(f, "{value}")
    }
}

/// A named dim's value and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DimBinding {
    /// The dim's name, e.g. `C`, or the text of a value from scope, e.g. `{cfg.hidden_size}`.
    pub name: &'static str,
    /// Its size.
    pub value: usize,
    /// The clause whose tensor bound it, e.g. `logits` (empty for a value from scope).
    pub bound_by: &'static str,
    /// The axis of that tensor.
    pub axis: usize,
    /// How the value was found.
    pub source: DimSource,
}

/// Where a named dim's value comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DimSource {
    /// The first tensor that has it, at [`DimBinding::axis`].
    Axis,
    /// The number of elements of a sequence clause (`items: [f32[E]; N]`).
    Count,
    /// A constant in the function's scope (`const IMAGE_DIM: usize = 784`).
    Constant,
    /// A constant in scope whose value the message cannot show (negative, or above 2^24).
    UnknownConstant,
    /// A parameter or braced expression evaluated before the body.
    Scope,
    /// An integer field that a struct contract names (`n_head = H`); [`DimBinding::bound_by`]
    /// is the field's path, `self.n_head`.
    Field,
}

impl fmt::Display for DimBinding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.source {
            DimSource::Axis => write!(
                f,
                "{} = {} (bound by `{}` dim {})",
                self.name, self.value, self.bound_by, self.axis
            ),
            DimSource::Count => write!(
                f,
                "{} = {} (the number of `{}`)",
                self.name, self.value, self.bound_by
            ),
            DimSource::Constant => write!(f, "{} = {} (a constant)", self.name, self.value),
            DimSource::UnknownConstant => write!(f, "{} (a constant)", self.name),
            DimSource::Scope => write!(f, "{} = {}", self.name, self.value),
            DimSource::Field => write!(
                f,
                "{} = {} (bound by `{}`)",
                self.name, self.value, self.bound_by
            ),
        }
    }
}

/// How many elements a value rule looked at and how many broke it. Built by the guard only
/// (`#[non_exhaustive]`: fields may be added); read its fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Counts {
    /// Elements that break the rule; for [`Rule::AllIgnored`], the checked elements (all of them
    /// unusable).
    pub violating: u64,
    /// Elements in the tensor.
    pub total: u64,
    /// NaN elements (they break every range, `finite` and `integral`).
    pub nan: u64,
    /// Elements equal to an ignored value (among the checked ones).
    pub ignored: u64,
    /// Positions a `where` mask exempts (the mask is zero there): neither checked, ignored nor
    /// violating. The checked positions are `total - exempt`.
    pub exempt: u64,
}

/// One broken rule: which argument, which rule, what was expected and what was found.
#[derive(Debug, Clone, PartialEq)]
pub struct Violation {
    pub(crate) subject: Subject,
    pub(crate) element: Option<usize>,
    pub(crate) rule: Rule,
    pub(crate) expected: String,
    pub(crate) found: String,
    pub(crate) index: Option<Vec<usize>>,
    pub(crate) value: Option<Value>,
    pub(crate) counts: Option<Counts>,
    pub(crate) observed: Option<(Value, Value)>,
    pub(crate) offending: Vec<Value>,
    /// Whether `offending` is every distinct offending value (else it only feeds the help).
    pub(crate) offending_complete: bool,
    pub(crate) bound_dims: Vec<DimBinding>,
    pub(crate) bound_values: Vec<(&'static str, String)>,
    pub(crate) details: Vec<String>,
    pub(crate) help: Option<String>,
    pub(crate) note: Option<&'static str>,
    /// The `where` mask of a value rule, as written.
    pub(crate) mask: Option<&'static str>,
}

impl Violation {
    pub(crate) fn new(subject: Subject, rule: Rule, expected: String, found: String) -> Self {
        Self {
            subject,
            element: None,
            rule,
            expected,
            found,
            index: None,
            value: None,
            counts: None,
            observed: None,
            offending: Vec::new(),
            offending_complete: false,
            bound_dims: Vec::new(),
            bound_values: Vec::new(),
            details: Vec::new(),
            help: None,
            note: None,
            mask: None,
        }
    }

    /// What the violation is about.
    pub fn subject(&self) -> Subject {
        self.subject
    }

    /// The argument, field, `return` or relation as written in the contract.
    pub fn argument(&self) -> &'static str {
        self.subject.name()
    }

    /// For a sequence clause (`items: [f32[E]; N]`, `self.layers[..].weight()`), which element
    /// broke the rule.
    pub fn element(&self) -> Option<usize> {
        self.element
    }

    /// The subject as the message names it: `items[2]` and `self.layers[2].weight()` for an
    /// element of a sequence, the contract's text otherwise.
    pub fn subject_text(&self) -> String {
        let name = self.subject.name();
        match self.element {
            Some(i) if name.contains("[..]") => name.replacen("[..]", &format!("[{i}]"), 1),
            Some(i) => format!("{name}[{i}]"),
            None => name.to_string(),
        }
    }

    /// The broken rule.
    pub fn rule(&self) -> Rule {
        self.rule
    }

    /// The rule as written in the contract, e.g. `0..C`, `[N]`, `u8 | u32 | i64`.
    pub fn expected(&self) -> &str {
        &self.expected
    }

    /// What was found, e.g. `4`, `[32, 1]`, `f32`.
    pub fn found(&self) -> &str {
        &self.found
    }

    /// The multi-dimensional index of the first offending element (value rules).
    pub fn index(&self) -> Option<&[usize]> {
        self.index.as_deref()
    }

    /// The first offending element (value rules).
    pub fn value(&self) -> Option<Value> {
        self.value
    }

    /// Element counts (value rules).
    pub fn counts(&self) -> Option<Counts> {
        self.counts
    }

    /// The smallest and largest element that is neither NaN nor ignored (value rules).
    pub fn observed_range(&self) -> Option<(Value, Value)> {
        self.observed
    }

    /// A few distinct offending values, in order of first appearance (value rules): every one
    /// when fewer than five are listed. Empty where the scan could not prove a short list
    /// complete without reading the whole tensor again (on the CPU: violations spread over it,
    /// with several values on one side of the range; on a device: more than one violation, of
    /// which only the first is read back).
    pub fn offending_values(&self) -> &[Value] {
        if self.offending_complete {
            &self.offending
        } else {
            &[]
        }
    }

    /// The named dims the rule involves, with the clause that bound each.
    pub fn bound_dims(&self) -> &[DimBinding] {
        &self.bound_dims
    }

    /// The braced expressions and parameters the rule used as bounds or ignored values, as
    /// written, with their values (e.g. `("{self.vocab_size}", "4")`).
    pub fn bound_values(&self) -> &[(&'static str, String)] {
        &self.bound_values
    }

    /// Further lines, such as which dims of a shape differ.
    pub fn details(&self) -> &[String] {
        &self.details
    }

    /// The likely cause and fix, where the rule has a common one.
    pub fn help(&self) -> Option<&str> {
        self.help.as_deref()
    }

    /// The note the contract's author wrote on this clause.
    pub fn note(&self) -> Option<&'static str> {
        self.note
    }

    /// The `where` mask of the broken value rule, as written (`attention_mask`,
    /// `{input_ids.ge(OFFSET)?}`); its exempt positions are in [`counts`](Self::counts).
    pub fn mask(&self) -> Option<&'static str> {
        self.mask
    }

    /// Reports `bound_by`'s dim `from` as dim `to`: a guard that checked a transposed view
    /// names the caller's dim.
    pub(crate) fn move_bound_axis(&mut self, bound_by: &str, from: usize, to: usize) {
        for binding in &mut self.bound_dims {
            if binding.bound_by == bound_by && binding.axis == from {
                binding.axis = to;
            }
        }
    }

    /// Moves the element's first coordinate by `rows`: the rule was checked on the rows
    /// `rows..` of the tensor it names.
    pub(crate) fn offset_rows(&mut self, rows: usize) {
        if let Some(first) = self.index.as_mut().and_then(|index| index.first_mut()) {
            *first += rows;
        }
    }

    /// Adds `other`'s offending values (the same rule on other rows) to these, distinct (NaN
    /// equal to NaN) and up to [`OFFENDING_SHOWN`].
    pub(crate) fn absorb_offending(&mut self, other: Violation) {
        self.offending_complete &= other.offending_complete;
        for value in other.offending {
            let seen = self.offending.iter().any(|&o| same_value(o, value));
            if !seen && self.offending.len() < OFFENDING_SHOWN {
                self.offending.push(value);
            }
        }
    }

    /// Restates the violation for a part of its tensor: the part's `counts`, no observed
    /// range unless `keep_observed` (one range over several parts would omit the clean ones),
    /// and a `detail` line saying what was left out.
    pub(crate) fn restate_for_part(&mut self, counts: Counts, keep_observed: bool, detail: String) {
        self.counts = Some(counts);
        if !keep_observed {
            self.observed = None;
        }
        self.details.push(detail);
    }
}

/// Whether two offending values are the same (NaN equals NaN here).
fn same_value(a: Value, b: Value) -> bool {
    match (a, b) {
        (Value::Float(a, _), Value::Float(b, _)) => a == b || (a.is_nan() && b.is_nan()),
        _ => a == b,
    }
}

/// Wraps `text` at about 100 columns: each line starts on a new line, the first indented by
/// `first`, the rest by `rest`.
fn wrap(text: &str, first: &str, rest: &str) -> String {
    const WIDTH: usize = 100;
    let mut out = String::new();
    let mut line = String::from(first);
    for word in text.split(' ') {
        let indent = if out.is_empty() {
            first.len()
        } else {
            rest.len()
        };
        if line.len() > indent && line.len() + 1 + word.len() > WIDTH {
            out.push('\n');
            out.push_str(&line);
            line = String::from(rest);
        } else if line.len() > indent {
            line.push(' ');
        }
        line.push_str(word);
    }
    out.push('\n');
    out.push_str(&line);
    out
}

fn format_index(index: &[usize]) -> String {
    format_dims(index)
}

/// Lists longer than this are shown by their first [`HEAD`] and last [`TAIL`] items.
const ELIDE_ABOVE: usize = 12;
const HEAD: usize = 8;
const TAIL: usize = 2;

/// `a, b, c` for a short list; `a, …, y, z` with the first 8 and last 2 items for a long one,
/// so a message stays bounded for any rank or `*B` run.
pub(crate) fn join_elided<T: fmt::Display>(items: &[T]) -> String {
    let show = |items: &[T]| -> Vec<String> { items.iter().map(ToString::to_string).collect() };
    if items.len() <= ELIDE_ABOVE {
        return show(items).join(", ");
    }
    format!(
        "{}, …, {}",
        show(&items[..HEAD]).join(", "),
        show(&items[items.len() - TAIL..]).join(", ")
    )
}

/// The sizes of a `*B` run: `[2, 3]`; for a long run `[1, 1, 1, 1, 1, 1, 1, 1, …, 1, 1] (5000
/// dims)`.
pub(crate) fn format_run(dims: &[usize]) -> String {
    if dims.len() <= ELIDE_ABOVE {
        format!("[{}]", join_elided(dims))
    } else {
        format!("[{}] ({} dims)", join_elided(dims), dims.len())
    }
}

/// `[2, 3]`; for a long list `[1, 1, 1, 1, 1, 1, 1, 1, …, 1, 1] (rank 5000)`.
pub(crate) fn format_dims(dims: &[usize]) -> String {
    if dims.len() <= ELIDE_ABOVE {
        format!("[{}]", join_elided(dims))
    } else {
        format!("[{}] (rank {})", join_elided(dims), dims.len())
    }
}

/// ` with C = 4 (bound by `logits` dim 1), {self.vocab} = 9`: the values a rule used.
fn with_values(bindings: &[DimBinding], values: &[(&'static str, String)]) -> String {
    let parts: Vec<String> = bindings
        .iter()
        .map(ToString::to_string)
        .chain(
            values
                .iter()
                .map(|(text, value)| format!("{text} = {value}")),
        )
        .collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!(" with {}", parts.join(", "))
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = self.subject_text();
        write!(f, "  `{name}`: ")?;
        match self.rule {
            Rule::Missing => write!(f, "is {}, expected {}", self.found, self.expected)?,
            Rule::DType => write!(f, "dtype {}, expected {}", self.found, self.expected)?,
            Rule::Count => write!(f, "{} elements, expected {}", self.found, self.expected)?,
            Rule::Rank | Rule::Shape => {
                write!(f, "shape {} does not match {}", self.found, self.expected)?
            }
            Rule::Device => write!(f, "on {}, expected {}", self.found, self.expected)?,
            Rule::Contiguous => write!(
                f,
                "not contiguous ({}), expected {}",
                self.found, self.expected
            )?,
            Rule::Relation if self.found.is_empty() => f.write_str("does not hold")?,
            Rule::Relation => write!(f, "does not hold: {}", self.found)?,
            Rule::DimArithmetic => write!(f, "{}", self.found)?,
            Rule::Bound => write!(
                f,
                "bound {} cannot be evaluated: {}",
                self.expected, self.found
            )?,
            Rule::Unreadable => write!(f, "{}", self.found)?,
            Rule::AllIgnored | Rule::Mask => write!(f, "{}", self.found)?,
            Rule::Range | Rule::Finite | Rule::Integral => {
                let what = match self.rule {
                    Rule::Finite => "value not finite",
                    Rule::Integral => "value not a whole number",
                    _ => "value out of range",
                };
                write!(f, "{what}: ")?;
                match (&self.index, self.value) {
                    (Some(index), Some(value)) => {
                        write!(f, "{name}{} = {value}", format_index(index))?
                    }
                    _ => f.write_str(&self.found)?,
                }
                write!(f, ", expected {}", self.expected)?;
            }
        }
        if !matches!(self.rule, Rule::Relation | Rule::Shape) || self.details.is_empty() {
            f.write_str(&with_values(&self.bound_dims, &self.bound_values))?;
        }
        for detail in &self.details {
            write!(f, "\n    {detail}")?;
        }
        if let Some(counts) = self.counts
            && matches!(self.rule, Rule::Range | Rule::Finite | Rule::Integral)
        {
            let checked = counts.total.saturating_sub(counts.exempt);
            match self.mask {
                Some(_) => write!(
                    f,
                    "\n    {} of {checked} checked elements violate the rule",
                    counts.violating
                )?,
                None => write!(
                    f,
                    "\n    {} of {} elements violate the rule",
                    counts.violating, counts.total
                )?,
            }
            if counts.nan > 0 {
                write!(f, " ({} NaN)", counts.nan)?;
            }
            if counts.ignored > 0 {
                write!(f, "; {} ignored", counts.ignored)?;
            }
            if let Some(mask) = self.mask
                && counts.exempt > 0
            {
                write!(
                    f,
                    "; {} of {} exempt where `{mask}` is 0",
                    counts.exempt, counts.total
                )?;
            }
            if let Some((min, max)) = self.observed {
                write!(f, "; observed range {min}..={max}")?;
            }
            let listed = self.offending_values();
            if listed.len() > 1 || (listed.len() == 1 && counts.violating > 1) {
                let values: Vec<String> = listed.iter().map(ToString::to_string).collect();
                // A full list may not be all of them.
                if listed.len() >= OFFENDING_SHOWN {
                    write!(
                        f,
                        "; the first {} distinct offending values {}",
                        listed.len(),
                        values.join(", ")
                    )?;
                } else {
                    write!(f, "; offending values {}", values.join(", "))?;
                }
            }
        }
        if let Some(note) = self.note {
            write!(f, "\n    note: {note}")?;
        }
        if let Some(help) = &self.help {
            f.write_str(&wrap(&format!("help: {help}"), "    ", "          "))?;
        }
        Ok(())
    }
}

/// Every violation found in one guarded call (or one `check!`), with where the contract is.
///
/// Returned as `Err(E::from(error))` by a contracted function that returns `Result<T, E>`, and
/// used as the panic message otherwise. Converts into `candle_core::Error` (recover it with
/// [`ContractError::find_in`]) and, being a `std::error::Error + Send + Sync`, into `anyhow`.
///
/// A violation inside one of the guarded ops of [`nn`](crate::nn) also carries the caller's
/// file and line ([`ContractError::called_at`]): the message names the op and that line, not
/// the op's contract inside this library.
#[derive(Clone, PartialEq)]
pub struct ContractError {
    function: &'static str,
    file: &'static str,
    line: u32,
    column: u32,
    after_body: bool,
    violations: Vec<Violation>,
    called_at: Option<&'static Location<'static>>,
    /// The type of a method's receiver, as `core::any::type_name` gives it.
    receiver_type: Option<&'static str>,
}

impl ContractError {
    pub(crate) fn new(spec: &ContractSpec, after_body: bool, violations: Vec<Violation>) -> Self {
        Self {
            function: spec.function,
            file: spec.file,
            line: spec.line,
            column: spec.column,
            after_body,
            violations,
            called_at: None,
            receiver_type: None,
        }
    }

    /// The guarded function's name (`check!` for the inline form), or the op's path for the
    /// guarded ops (`nn::embedding`). For a method it is the bare name (`forward`); the message
    /// adds its type, which [`receiver_type`](Self::receiver_type) gives (`Block`).
    pub fn function(&self) -> &'static str {
        self.function
    }

    /// For a method, its type as the message shows it: a named type without module path or
    /// generics (`Block` for `Block::forward`), any other type in angle brackets without module
    /// paths (`<(A, B)>`, `<[f32]>`); `None` for a free function, an associated function
    /// without `self`, `check!` and the guarded ops.
    pub fn receiver_type(&self) -> Option<String> {
        let full = self.receiver_type?;
        let named = full.starts_with(|c: char| c.is_alphabetic() || c == '_');
        if named {
            let plain = full.split('<').next().unwrap_or(full);
            return Some(plain.rsplit("::").next().unwrap_or(plain).to_string());
        }
        Some(format!("<{}>", without_module_paths(full)))
    }

    /// This error, for a method whose `Self` has the `type_name` given.
    pub(crate) fn in_type(mut self, type_name: &'static str) -> Self {
        self.receiver_type = Some(type_name);
        self
    }

    /// The source file, line and column of the contract.
    pub fn location(&self) -> (&'static str, u32, u32) {
        (self.file, self.line, self.column)
    }

    /// Where the guarded op was called from: the caller's file, line and column, for the ops of
    /// [`nn`](crate::nn) (they are `#[track_caller]`); `None` for a `#[contract]` or `check!`
    /// of your own, whose [`location`](Self::location) is in your code already.
    ///
    /// A call through candle's `Tensor::apply` or a `Sequential` reports the line inside candle
    /// that calls `forward`: call `forward` directly for the line to be yours.
    pub fn called_at(&self) -> Option<&'static Location<'static>> {
        self.called_at
    }

    /// The error of a `check!` that stands for the contract of the op `op`, called from `at`:
    /// the message names the op and the caller's line, and the checked variables are the op's
    /// arguments, except `output` (if any), which is the value the op returns.
    pub(crate) fn called_from(
        mut self,
        op: &'static str,
        at: &'static Location<'static>,
        output: Option<&str>,
    ) -> Self {
        self.function = op;
        self.called_at = Some(at);
        for violation in &mut self.violations {
            if let Subject::Variable(name) = violation.subject {
                if Some(name) == output {
                    violation.subject = Subject::Return;
                    self.after_body = true;
                } else {
                    violation.subject = Subject::Argument(name);
                }
            }
        }
        self
    }

    /// The violations, to amend (the guarded ops leave ignored rows out of a value rule).
    pub(crate) fn violations_mut(&mut self) -> &mut Vec<Violation> {
        &mut self.violations
    }

    /// Whether the function body ran (a violation of the `return` clause) or was never entered.
    pub fn body_ran(&self) -> bool {
        self.after_body
    }

    /// Every violation, in the order of the contract's clauses.
    pub fn violations(&self) -> &[Violation] {
        &self.violations
    }

    /// The first violation concerning `argument` (a parameter, `self.field`, `return`).
    pub fn violation_of(&self, argument: &str) -> Option<&Violation> {
        self.violations.iter().find(|v| v.argument() == argument)
    }

    /// Finds a `ContractError` inside a `candle_core::Error`, through every wrapper candle adds:
    /// `.context(..)` (the method and the `candle_core::Context` trait), `.with_path(..)`, a
    /// backtrace, and a boxed error inside any of them. See [`find_in_error`](Self::find_in_error)
    /// for any other error type.
    pub fn find_in(error: &candle_core::Error) -> Option<&ContractError> {
        Self::find_in_error(error)
    }

    /// Finds a `ContractError` inside any error: the error itself, candle's wrappers (as
    /// [`find_in`](Self::find_in)), an `std::io::Error` holding it, and every error down its
    /// [`source`](std::error::Error::source) chain.
    ///
    /// This is the one way for every error type: pass `error.as_ref()` for an `anyhow::Error`
    /// (also after anyhow's own `.context(..)`), `&*error` for a `Box<dyn Error + Send + Sync>`
    /// and `&error` for a candle or user error whose `source()` leads to it.
    pub fn find_in_error<'e>(
        error: &'e (dyn std::error::Error + 'static),
    ) -> Option<&'e ContractError> {
        let mut next = Some(error);
        while let Some(error) = next {
            if let Some(found) = Self::find_here(error) {
                return Some(found);
            }
            next = error.source();
        }
        None
    }

    /// The `ContractError` that `error` is or wraps without a `source()` link: candle's
    /// variants and `std::io::Error` hold their payload without exposing it as a source.
    fn find_here<'e>(error: &'e (dyn std::error::Error + 'static)) -> Option<&'e ContractError> {
        if let Some(found) = error.downcast_ref::<ContractError>() {
            return Some(found);
        }
        if let Some(io) = error.downcast_ref::<std::io::Error>() {
            return Self::find_in_error(io.get_ref()?);
        }
        match error.downcast_ref::<candle_core::Error>()? {
            candle_core::Error::Io(io) => Self::find_in_error(io.get_ref()?),
            candle_core::Error::WrappedContext { wrapped, .. }
            | candle_core::Error::Cuda(wrapped) => Self::find_in_error(&**wrapped),
            candle_core::Error::WithBacktrace { inner, .. }
            | candle_core::Error::Context { inner, .. }
            | candle_core::Error::WithPath { inner, .. } => Self::find_in_error(&**inner),
            _ => None,
        }
    }
}

/// `(alloc::vec::Vec<my::A>, my::B)` as `(Vec<A>, B)`: every `path::` prefix dropped.
fn without_module_paths(type_name: &str) -> String {
    let mut out = String::with_capacity(type_name.len());
    let mut word = String::new();
    let mut chars = type_name.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_alphanumeric() || c == '_' {
            word.push(c);
        } else if c == ':' && chars.peek() == Some(&':') {
            chars.next();
            word.clear();
        } else {
            out.push_str(&word);
            word.clear();
            out.push(c);
        }
    }
    out.push_str(&word);
    out
}

impl fmt::Display for ContractError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let place = match (self.function, self.receiver_type()) {
            ("check!", _) => "`check!`".to_string(),
            (function, Some(receiver)) => format!("`{receiver}::{function}`"),
            (function, None) => format!("`{function}`"),
        };
        match self.called_at {
            Some(at) => write!(
                f,
                "contract violated in {place} (called at {}:{}:{})",
                at.file(),
                at.line(),
                at.column()
            )?,
            None => write!(
                f,
                "contract violated in {place} ({}:{}:{})",
                self.file, self.line, self.column
            )?,
        }
        if self.after_body {
            f.write_str(", by its return value")?;
        }
        for violation in &self.violations {
            write!(f, "\n{violation}")?;
        }
        Ok(())
    }
}

/// `{:?}` prints the message (so `unwrap` reads well); `{:#?}` prints the structure.
impl fmt::Debug for ContractError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if f.alternate() {
            f.debug_struct("ContractError")
                .field("function", &self.function)
                .field("file", &self.file)
                .field("line", &self.line)
                .field("column", &self.column)
                .field("after_body", &self.after_body)
                .field("violations", &self.violations)
                .field("called_at", &self.called_at)
                .finish()
        } else {
            fmt::Display::fmt(self, f)
        }
    }
}

impl std::error::Error for ContractError {}

/// Wraps the error as `candle_core::Error::Io` holding an `std::io::Error` of kind `Other`:
/// of candle's variants, the one whose message is the wrapped error's own message, unchanged,
/// and whose payload can be downcast. [`ContractError::find_in`] gets it back.
impl From<ContractError> for candle_core::Error {
    fn from(error: ContractError) -> Self {
        candle_core::Error::Io(std::io::Error::other(error))
    }
}
