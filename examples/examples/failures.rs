//! Every failure scenario run twice, without and with a contract, as a table.
//!
//! ```text
//! cargo run --release -p candle-contracts-examples --example failures
//! cargo run --release -p candle-contracts-examples --example failures -- --full
//! ```

use std::process::ExitCode;

fn main() -> ExitCode {
    ExitCode::from(candle_contracts_examples::failures::main(
        std::env::args_os(),
    ))
}
