use candle_contracts::contract;
use candle_nn::Linear;

// A struct contract names the struct's fields; `out_proj` is none of them.
#[contract(proj: Linear[E -> E], out_proj: Linear[E -> E], n_heads = H)]
struct Block {
    proj: Linear,
    n_head: usize,
}

fn main() {}
