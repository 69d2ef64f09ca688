//! The main job: an MLP on the UCI handwritten digits, with contracts on the model's forward,
//! the training step and the batch loader.
//!
//! ```text
//! cargo run --release -p candle-contracts-examples --example digits
//! cargo run --release -p candle-contracts-examples --example digits -- --labels one-based
//! ```

use std::process::ExitCode;

fn main() -> ExitCode {
    ExitCode::from(candle_contracts_examples::digits::main(std::env::args_os()))
}
