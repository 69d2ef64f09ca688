//! Contracts for candle tensors: state next to a function what its tensors must be, and get a
//! clear error on the host before a bad class id, token id or probability reaches a kernel.
//!
//! ```
//! use candle_contracts::contract;
//! use candle_core::{Device, Result, Tensor};
//!
//! #[contract(logits: float[N, C], target: u8 | u32 | i64 [N] in 0..C)]
//! fn loss(logits: &Tensor, target: &Tensor) -> Result<Tensor> {
//!     candle_nn::loss::cross_entropy(logits, target)
//! }
//!
//! # fn main() -> Result<()> {
//! let logits = Tensor::zeros((3, 4), candle_core::DType::F32, &Device::Cpu)?;
//! let target = Tensor::new(&[0u32, 2, 4], &Device::Cpu)?; // 4 is not a class of 4
//! let error = loss(&logits, &target).unwrap_err();
//! let violation = &candle_contracts::ContractError::find_in(&error).unwrap().violations()[0];
//! assert_eq!(violation.argument(), "target");
//! assert_eq!(violation.index(), Some(&[2][..]));
//! assert!(error.to_string().contains("target[2] = 4, expected 0..C with C = 4 (bound by `logits` dim 1)"));
//! # Ok(())
//! # }
//! ```
//!
//! The contract language (the book's reference chapter) has tensor clauses with dtypes and dims (`x: f32[N, ..]`), `self.field` and
//! `return` clauses, relations (`T <= P`), value rules (`in 0..C`, `ignore -100`, `finite`,
//! `contiguous`) and options (`on_violation = panic | error`, `same_device = false`,
//! `crate = ::renamed` for a renamed dependency).
//!
//! - [`contract`]: the attribute; the guard runs before the body, and the `return` clause on the
//!   value coming out.
//! - [`check!`]: the same clauses inline, returning `Result<(), ContractError>`.
//! - [`ContractError`]: every [`Violation`] of a call, with its message as `Display`.
//! - [`Mode`], [`set_mode`] and `CANDLE_CONTRACTS=full|shapes|off`: how much is checked.
//! - [`nn`]: candle-nn's functions that index with user data, guarded, with their edge cases
//!   fixed: change one `use` line.
//! - `arbitrary!` (the `proptest` feature): a contract's valid inputs as a proptest `Strategy`;
//!   `violations!`, inputs that break one rule each; `exemptions!`, inputs whose broken value
//!   the contract exempts; `assert_contract!`, all run as a test.

// The guarded ops in `nn` use the crate's own attribute, whose expansion names
// `::candle_contracts`.
extern crate self as candle_contracts;

// Imports run one way, in this order: each module uses only those above it.
#[cfg(feature = "proptest")]
mod arbitrary;
mod dims;
mod error;
mod guard;
mod help;
mod mode;
pub mod nn;
#[cfg(feature = "proptest")]
mod probe;
mod report;
mod rule;
mod scan;
mod spec;
mod value;

#[doc(hidden)]
#[path = "private.rs"]
pub mod __private;

/// Checks a function's tensors against a contract before its body runs.
///
/// The attribute takes comma-separated clauses (see the crate docs and the book's reference):
///
/// ```text
/// #[contract(
///     logits: float[N, C],                 // dtype family and named dims
///     target: u8 | u32 | i64 [N] in 0..C,  // dtype union, dims bound across arguments, values
///     self.weight: f32[V, D],              // a field of `self`
///     return: f32[],                       // the value coming out
///     N >= 1,                              // a relation between dims
///     on_violation = panic,                // or `error`; by default `error` for `Result`
/// )]
/// ```
///
/// A function returning `Result<T, E>` returns `Err(E::from(ContractError))` on a violation
/// (`E` is `candle_core::Error`, `anyhow::Error` or any type with `From<ContractError>`);
/// other functions panic with the same message. The contract is checked at compile time:
/// unknown names, dtypes and impossible ranges are spanned compile errors. The function's
/// rustdoc gains a `# Contract` section.
pub use candle_contracts_macros::contract;

/// Checks tensors in scope against contract clauses, returning `Result<(), ContractError>`.
///
/// ```
/// use candle_contracts::check;
/// use candle_core::{Device, Tensor};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let x = Tensor::zeros((2, 784), candle_core::DType::F32, &Device::Cpu)?;
/// let y = Tensor::new(&[3u8, 10], &Device::Cpu)?;
/// let error = check!(x: f32[N, 784], y: u8[N] in 0..10).unwrap_err();
/// assert_eq!(error.violations()[0].argument(), "y");
/// # Ok(())
/// # }
/// ```
pub use candle_contracts_macros::check;

/// A proptest `Strategy` of the inputs a contracted function accepts (the `proptest` feature).
///
/// `arbitrary!(f)` takes the path of a function with `#[contract(...)]` (`f`, `module::f`,
/// `Type::assoc`, `f::<f32>`) and yields tuples of its tensor parameters, in order, owned: a
/// `Tensor` for a `&Tensor`, `Tensor` or `&mut Tensor`, an `Option<Tensor>` for an
/// `Option<&Tensor>`, a `Vec<Tensor>` for a sequence (`&[Tensor]`, `Vec<Tensor>`); a one-tensor
/// function yields `(Tensor,)`. Every value passed the contract's own guard (the function is
/// called with it in a probe mode that stops before the body), in `full` mode whatever
/// `CANDLE_CONTRACTS` says.
///
/// ```
/// use candle_contracts::{arbitrary, contract};
/// use candle_core::{Result, Tensor};
/// use proptest::test_runner::{Config, TestRunner};
///
/// #[contract(logits: f32[N, C], target: u32 | i64 [N] in 0..C ignore -100, C >= 2)]
/// fn loss(logits: &Tensor, target: &Tensor) -> Result<()> {
///     Ok(())
/// }
///
/// let strategy = arbitrary!(loss, dims = [N in 1..=16, C = 10]);
/// TestRunner::new(Config { failure_persistence: None, ..Config::default() })
///     .run(&strategy, |(logits, target)| {
///         assert_eq!(logits.dims()[1], 10);
///         assert!(loss(&logits, &target).is_ok());
///         Ok(())
///     })
///     .unwrap();
/// ```
///
/// - Each named dim is drawn once from `1..=8` (a literal stays itself, a constant in scope is
///   its value); `dims = [N in 1..=64, C = 10]` narrows or fixes them (`N in 1..64` too). A run
///   `*B` is drawn once (0 to 2 dims of 1 to 4); `_` and each dim of `..` are drawn from `1..=4`;
///   dim expressions are computed. A layout that breaks a relation is drawn again.
/// - A dtype is drawn from the clause's set, `f32` first (a failing case shrinks towards it),
///   among those candle creates on the CPU: the f8, f6 and f4 families are never drawn.
/// - Values are drawn uniformly from the clause's `in` ranges, with each bound's edge value
///   (`0` and `C - 1` for `0..C`) and the `ignore` values drawn often; a tensor keeps one
///   usable value unless the clause says `allow_all`, where an all-ignored tensor is drawn now
///   and then. An open end is drawn up to 64 past its bound; a clause without `in` draws from
///   `-10..=10` (`0..=10` unsigned). NaN and infinities are never drawn, even where allowed.
///   `integral` draws whole numbers.
/// - An `Option` tensor is `None` one time in five. A tensor without a clause of its own that
///   masks a clause (`where mask`) is a 0/1 `u8` of that clause's shape; any other is a small
///   `f32` of rank 0 to 2.
/// - A derived subject `{x.sum(axis)?}` in a range rescales `x`'s rows to the range's middle
///   (where `x` is a float clause without `integral`; only its float dtypes are drawn then);
///   other derived subjects, integer or `integral` sums, and masks are met by drawing again
///   until the guard accepts. A sum that few draws meet (rows of an integer one-hot) leaves
///   only small dims drawn, or none: give such a contract's dims (`dims = [C in 2..=3]`) or
///   draw its tensor yourself.
/// - A parameter that is not a tensor (a number or `bool`) is given: `arbitrary!(f, k = 3)`.
/// - A method of `&self` takes its receiver: `arbitrary!(Net::forward, &net)`; the dims its
///   `self.` clauses bind are read from it.
///
/// A mistake in what `arbitrary!` is given (an unknown parameter or dim, a missing value, a
/// receiver that breaks the contract, a function without a contract) is the strategy's error:
/// the test runner reports it.
///
/// # Panics
///
/// When the contract cannot be met: a relation or dim expression that none of 1000 layouts
/// meets (`no draw meets the contract's \`N > 8\``, with the dims' ranges), 256 draws in a
/// row that its guard rejects (with its last violation), or a clause whose dtypes candle cannot
/// draw on the CPU.
#[cfg(feature = "proptest")]
pub use candle_contracts_macros::arbitrary;

/// Runs a contracted function on `arbitrary!`'s inputs and on inputs that break its contract
/// (the `proptest` feature): a property test written by the contract.
///
/// `assert_contract!(f)` takes what `arbitrary!` takes, and `cases = N` (256 by default):
///
/// - `f` is called on `N` valid draws (a proptest `TestRunner`), and must succeed: return `Ok`
///   (the guard checks the `return` clause on what the body returns, so a body whose output
///   breaks it fails) and not panic. A failing draw is shrunk, then reported with its dims
///   (`N = 2, D = 1`), each tensor's dtype, shape and, for 16 elements or fewer, values, and
///   the function's error or panic. `f`'s guard checks these calls in `full` mode whatever
///   `CANDLE_CONTRACTS` or a `set_mode` says (what `f` calls runs in the process's mode).
/// - Then every case of `violations!(f)` is given to `f`'s guard, which must report the
///   case's rule on its subject. The guard is asked in a probe mode that stops before the
///   body, in `full` mode whatever `CANDLE_CONTRACTS` says: the body never runs on an invalid
///   input.
/// - Last, `f` is called on every case of `exemptions!(f)` (valid inputs whose changed value
///   the contract exempts), in `full` mode, and must succeed as on a valid draw.
///
/// ```
/// use candle_contracts::{assert_contract, contract};
/// use candle_core::{Result, Tensor};
///
/// #[contract(x: f32[N, D], return: f32[N])]
/// fn row_sums(x: &Tensor) -> Result<Tensor> {
///     x.sum(1)
/// }
///
/// assert_contract!(row_sums, cases = 64);
/// ```
///
/// A function returning a `Result` fails with its error (shown with `{:#}`, so anyhow's
/// contexts too); one returning a `Tensor`, `Vec<Tensor>`, `Option<Tensor>`, a pair or triple
/// of tensors, `()`, a number or `bool` fails only by panicking (its guard panics on a
/// violation).
///
/// # Panics
///
/// That is how it fails: on the first failing valid draw (shrunk), listing every violation
/// case its guard did not report as expected, or every exemption it did not accept; and as `arbitrary!` (a contract it cannot meet,
/// a mistake in what it was given). A parameter named `cases` cannot be given through it.
#[cfg(feature = "proptest")]
pub use candle_contracts_macros::assert_contract;

/// The inputs of a contracted function that each break one rule of one clause (the `proptest`
/// feature): a `Vec` of [`ViolationCase`]s, each with the clause, the rule its guard reports,
/// and the arguments.
///
/// `violations!(f)` takes what `arbitrary!` takes. It draws one valid input (deterministic,
/// shrunk) and, for each tensor clause on an argument, changes one thing:
///
/// - its dtype, to one the clause does not allow (`DType`);
/// - its rank, with a trailing dim of 1, where the shape has no `..` or run (`Rank`);
/// - one dim, one larger: a literal, an expression, or a named dim at each use after its first
///   (`Shape`);
/// - element 0, one past each bound of each `in` pattern, in the tensor's dtype, where that
///   value is no other pattern's and not ignored (`Range`); NaN, +inf and -inf under `finite`
///   (`Finite`, or `Range` where the clause has `in` patterns: NaN is in none, and the guard
///   blames the range); a value that is not whole under `integral` (`Integral`);
/// - every element, to the ignored value, under `ignore` without `allow_all` (`AllIgnored`).
///
/// Under a `where` mask that is an argument, each value change also sets the mask's element 0
/// to 1 (or, where the mask's own clause does not allow 1, to a non-zero value it allows), so
/// the changed element is checked (the mask is broadcast to the subject: its element 0 covers
/// the subject's element 0). Under a mask that is the subject itself, only non-zero values
/// are violations. A mask whose clause allows no non-zero value exempts every element: its
/// subject has no value cases.
///
/// ```
/// use candle_contracts::{arbitrary, contract, violations, Rule};
/// use candle_core::{Result, Tensor};
///
/// #[contract(logits: f32[N, C], target: u32[N] in 0..C)]
/// fn loss(logits: &Tensor, target: &Tensor) -> Result<()> {
///     Ok(())
/// }
///
/// let cases = violations!(loss);
/// let range = cases.iter().find(|c| c.rule() == Rule::Range).unwrap();
/// assert_eq!(range.clause(), "target: u32[N] in 0..C");
/// let (logits, target) = range.args();
/// let error = loss(&logits, &target).unwrap_err();
/// let error = candle_contracts::ContractError::find_in(&error).unwrap();
/// assert!(range.is_reported_by(error));
/// ```
///
/// Not changed: clauses on fields (`self.weight`), derived subjects and sequences; the values
/// of a clause whose mask is a braced expression (`where {ids.ge(0)?}`) or an absent `Option`;
/// relations; devices and `contiguous`. Every `Option` tensor is present in the draw the cases
/// start from. The inputs whose broken value is exempt are `exemptions!`'s.
///
/// # Panics
///
/// As `arbitrary!`, and where `arbitrary!`'s strategy would report a mistake in what it was
/// given.
#[cfg(feature = "proptest")]
pub use candle_contracts_macros::violations;

/// The inputs of a contracted function whose broken value its contract exempts, which its
/// guard must accept (the `proptest` feature): a `Vec` of [`ViolationCase`]s, each with
/// [`is_exempt`](ViolationCase::is_exempt) true and, as its [`rule`](ViolationCase::rule), the
/// rule the value would break without the exemption.
///
/// `exemptions!(f)` takes what `arbitrary!` takes, starts from the draw `violations!` starts
/// from, and makes:
///
/// - under a `where` mask that is an argument, each value change of `violations!` (a bound, NaN
///   and ±inf, a value that is not whole) with the mask's element 0 set to 0 instead of
///   non-zero; under a mask that is the subject itself, a 0 past a bound;
/// - element 0 set to each ignored value that lies outside the `in` patterns (`-100` for
///   `in 0..C ignore -100`).
///
/// None is made where it would break another rule: where the guard would then find no checked
/// element that is not ignored in any clause (under `ignore` without `allow_all` it reports
/// `AllIgnored` there), where a derived subject or a braced mask reads what was changed, or
/// where the mask's own clause does not allow 0. The draw it starts from is shrunk to small
/// dims: an ignored value alone in a batch of one is all ignored, so that exemption needs
/// `dims = [N = 2]` or more.
///
/// ```
/// use candle_contracts::{contract, exemptions, violations, Rule};
/// use candle_core::{Result, Tensor};
///
/// #[contract(ids: u32[B, T] in 0..V where mask, table: f32[V, E])]
/// fn embed(ids: &Tensor, mask: &Tensor, table: &Tensor) -> Result<()> {
///     Ok(())
/// }
///
/// // `ids[0, 0] = V, one above `0..V`, where `mask[0, 0]` = 1`: reported.
/// let masked = violations!(embed);
/// let range = masked.iter().find(|c| c.rule() == Rule::Range).unwrap();
/// let (ids, mask, table) = range.args();
/// assert!(embed(&ids, &mask, &table).is_err());
/// // The same value with `mask[0, 0] = 0`: accepted.
/// for case in exemptions!(embed) {
///     let (ids, mask, table) = case.args();
///     embed(&ids, &mask, &table).unwrap();
/// }
/// ```
///
/// # Panics
///
/// As `violations!`.
#[cfg(feature = "proptest")]
pub use candle_contracts_macros::exemptions;

#[cfg(feature = "proptest")]
pub use arbitrary::ViolationCase;

pub use error::{ContractError, Counts, DimBinding, DimSource, Rule, Value, Violation};
pub use mode::{MODE_ENV_VAR, Mode, ParseModeError, mode, set_mode};
pub use spec::Subject;

/// The crate's README, its page on crates.io: its Rust samples run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

#[cfg(test)]
mod tests {
    /// The modules in layer order: each may use only those before it (`use crate::…` at the top
    /// of the file), so imports run one way.
    const LAYERS: &[(&str, &str)] = &[
        ("mode", include_str!("mode.rs")),
        ("spec", include_str!("spec.rs")),
        ("error", include_str!("error.rs")),
        ("rule", include_str!("rule.rs")),
        ("dims", include_str!("dims.rs")),
        ("scan", include_str!("scan/mod.rs")),
        ("scan::cpu", include_str!("scan/cpu.rs")),
        ("scan::cpu::walk", include_str!("scan/cpu/walk.rs")),
        ("scan::cpu::portable", include_str!("scan/cpu/portable.rs")),
        ("scan::cpu::avx512", include_str!("scan/cpu/avx512.rs")),
        ("scan::cpu::tally", include_str!("scan/cpu/tally.rs")),
        ("scan::cpu::locate", include_str!("scan/cpu/locate.rs")),
        ("scan::cpu::masked", include_str!("scan/cpu/masked.rs")),
        ("scan::device", include_str!("scan/device.rs")),
        ("scan::parity", include_str!("scan/parity.rs")),
        ("help", include_str!("help.rs")),
        ("report", include_str!("report.rs")),
        ("value", include_str!("value.rs")),
        ("probe", include_str!("probe.rs")),
        ("guard::bind", include_str!("guard/bind.rs")),
        ("guard::structure", include_str!("guard/structure.rs")),
        ("guard", include_str!("guard/mod.rs")),
        ("arbitrary::params", include_str!("arbitrary/params.rs")),
        ("arbitrary::values", include_str!("arbitrary/values.rs")),
        ("arbitrary::layout", include_str!("arbitrary/layout.rs")),
        ("arbitrary::cases", include_str!("arbitrary/cases.rs")),
        ("arbitrary::render", include_str!("arbitrary/render.rs")),
        ("arbitrary", include_str!("arbitrary/mod.rs")),
        ("__private", include_str!("private.rs")),
        // The guarded ops state their contracts with `check!`, whose expansion names
        // `__private`: they stand above it.
        ("nn", include_str!("nn/mod.rs")),
        ("nn::loss", include_str!("nn/loss.rs")),
        ("nn::embedding", include_str!("nn/embedding.rs")),
        ("nn::index", include_str!("nn/index.rs")),
        ("nn::encoding", include_str!("nn/encoding.rs")),
    ];

    #[test]
    fn imports_run_one_way() {
        let rank = |module: &str| {
            LAYERS
                .iter()
                .position(|(name, _)| *name == module || module.starts_with(&format!("{name}::")))
        };
        let mut siblings = 0;
        for (position, (module, source)) in LAYERS.iter().enumerate() {
            let imports = source.lines().filter_map(|l| {
                l.strip_prefix("use crate::")
                    .or_else(|| l.strip_prefix("pub(crate) use crate::"))
            });
            for path in imports {
                let used = path
                    .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .next()
                    .unwrap_or_default();
                // The scans use their parent's request and outcome types.
                if used == "scan" && module.starts_with("scan::") {
                    continue;
                }
                let Some(used_rank) = rank(used) else {
                    continue; // the crate root's re-exports (`crate::check`)
                };
                assert!(
                    used_rank < position,
                    "`{module}` uses `crate::{path}`, which is not below it"
                );
            }
            // Siblings, through `use super::` (`scan::cpu::tally` uses `super::portable`).
            let Some((parent, _)) = module.rsplit_once("::") else {
                continue;
            };
            for path in source.lines().filter_map(|l| l.strip_prefix("use super::")) {
                let first = path
                    .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .next()
                    .unwrap_or_default();
                let used = match first {
                    "" => parent.to_string(),
                    sibling => format!("{parent}::{sibling}"),
                };
                let Some(used_rank) = LAYERS.iter().position(|(name, _)| *name == used) else {
                    continue;
                };
                assert!(
                    used_rank < position,
                    "`{module}` uses `super::{path}`, which is not below it"
                );
                siblings += 1;
            }
        }
        assert!(siblings >= 10, "{siblings} sibling imports read");
    }

    /// The guarded ops amend a `Violation` (ignored rows, a transposed dim) through its
    /// methods, never by writing or reading its fields.
    #[test]
    fn guarded_ops_use_violation_methods_only() {
        let error = LAYERS
            .iter()
            .find(|(name, _)| *name == "error")
            .map(|(_, s)| *s);
        let declaration = error
            .and_then(|source| source.split("pub struct Violation {").nth(1))
            .and_then(|rest| rest.split("\n}").next())
            .unwrap_or_default();
        let fields: Vec<&str> = declaration
            .lines()
            .filter_map(|line| line.trim().strip_prefix("pub(crate) "))
            .filter_map(|line| line.split(':').next())
            .collect();
        assert!(fields.len() >= 15, "Violation's fields read: {fields:?}");
        let field_uses = |source: &str| {
            let mut uses = Vec::new();
            for field in &fields {
                let access = format!(".{field}");
                for (at, _) in source.match_indices(&access) {
                    let next = source[at + access.len()..].chars().next().unwrap_or(' ');
                    if !(next == '(' || next == '_' || next.is_alphanumeric()) {
                        uses.push(access.clone());
                    }
                }
            }
            uses
        };
        assert_eq!(
            field_uses("violation.counts = None; found.index.take(); v.counts()"),
            [".index", ".counts"],
            "the check finds field accesses and passes method calls"
        );
        for (module, source) in LAYERS.iter().filter(|(name, _)| name.starts_with("nn")) {
            let uses = field_uses(source);
            assert!(
                uses.is_empty(),
                "`{module}` reaches into Violation: {uses:?}"
            );
        }
    }
}
