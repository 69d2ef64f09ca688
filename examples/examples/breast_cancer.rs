//! Binary classification of the Wisconsin diagnostic breast-cancer set with a sigmoid head and
//! a binary cross-entropy on probabilities.
//!
//! ```text
//! cargo run --release -p candle-contracts-examples --example breast_cancer
//! cargo run --release -p candle-contracts-examples --example breast_cancer -- --head logits
//! ```

use std::process::ExitCode;

fn main() -> ExitCode {
    ExitCode::from(candle_contracts_examples::breast_cancer::main(
        std::env::args_os(),
    ))
}
