use candle_contracts::contract;
use candle_core::{Module, Result, Tensor};

struct Block {
    w: Tensor,
}

impl Module for Block {
    #[contract(xs: f32[B, T, E], self.w: f32[E, E], return: f32[B, T, E])]
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        xs.broadcast_matmul(&self.w)
    }
}

struct Model {
    layers: Vec<Block>,
    head: Tensor,
}

impl Model {
    // Each block keeps `[B, T, E]`, so `xs` is `[B, T, E]` after the loop, however many run.
    #[contract(xs: f32[B, T, E], self.head: f32[E, V])]
    fn logits(&self, xs: &Tensor) -> Result<Tensor> {
        let mut xs = xs.clone();
        for layer in self.layers.iter() {
            xs = xs.apply(layer)?;
        }
        xs.matmul(&self.head) // 3-d into a 2-d head: `broadcast_matmul`
    }

    // The heads' view into a block that takes `[B, T, E]`.
    #[contract(q: f32[B, H, T, D])]
    fn heads_into_block(&self, q: &Tensor) -> Result<Tensor> {
        q.apply(&self.layers[0])
    }

    // `3 * E` is `E` only where `E` is 0, which the fact rules out.
    #[contract(x: f32[B, E], w3: f32[E, 3 * E], w: f32[E, E], E >= 1)]
    fn fused(&self, x: &Tensor, w3: &Tensor, w: &Tensor) -> Result<Tensor> {
        let qkv = x.matmul(w3)?;
        qkv.matmul(w) // the fused `qkv` was never split
    }
}

fn main() {}
