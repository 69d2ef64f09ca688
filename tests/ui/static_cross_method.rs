use candle_contracts::{contract, nn};
use candle_core::{Result, Tensor};

struct Model {
    weight: Tensor,
}

// `#[contract]` on the block makes `forward`'s contract visible to `train_step`.
#[contract]
impl Model {
    #[contract(xs: f32[N, 784], self.weight: f32[10, 784], return: f32[N, 10])]
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        xs.matmul(&self.weight.t()?)
    }

    #[contract(images: f32[N, 28, 28], labels: u32[N])]
    fn train_step(&self, images: &Tensor, labels: &Tensor) -> Result<Tensor> {
        let logits = self.forward(images)?; // not flattened to [N, 784]
        nn::cross_entropy(&logits, labels)
    }

    #[contract(images: f32[N, 784], return: f32[N])]
    fn confidence(&self, images: &Tensor) -> Result<Tensor> {
        // `forward` returns `[N, 10]`: the keepdim max is `[N, 1]`.
        self.forward(images)?.max_keepdim(1)
    }
}

fn main() {}
