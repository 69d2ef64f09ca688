//! The third round of attacks: `&mut self` and the paths from it, `&raw mut`, statements
//! under `cfg`, code after a statement that never completes, cells shared between fields, and a
//! bias that widens a layer's output of 1 (with `tests/round3.rs`).

pub mod m1;
pub mod m2;
pub mod m3;
pub mod m4;
pub mod m5;
pub mod m6;
pub mod m7;
