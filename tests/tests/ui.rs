//! Compile-fail suite: one file per diagnostic in `tests/ui`, each with its `.stderr` snapshot.
//! Re-bless with `TRYBUILD=overwrite cargo test -p candle-contracts-tests --test ui` and read
//! the diff. The snapshots are rustc's rendering on stable 1.95; other compilers skip them.

#[rustversion::attr(not(stable(1.95)), ignore = "snapshots are blessed on stable 1.95")]
#[test]
fn compile_errors() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("ui/*.rs");
    // Bugs planted in blocks of real candle-transformers models (tests/tests/models).
    cases.compile_fail("ui-models/*.rs");
}
