use candle_contracts::contract;
use candle_core::{Result, Tensor};
use candle_nn::loss;

// CLIP's contrastive loss on `ClipModel::forward`'s `logits_per_text` (`[B, B]`, candle-
// transformers clip/mod.rs): the labels are the diagonal, `arange(0, B)`, written with f32
// bounds, so they are f32 class ids where `cross_entropy` takes u8, u32 or i64 ones.
#[contract(logits_per_text: f32[B, B], return: f32[])]
fn clip_loss(logits_per_text: &Tensor) -> Result<Tensor> {
    let batch_size = logits_per_text.dim(0)?;
    let labels = Tensor::arange(0f32, batch_size as f32, logits_per_text.device())?;
    let text_loss = loss::cross_entropy(logits_per_text, &labels)?;
    let image_loss = loss::cross_entropy(&logits_per_text.t()?, &labels)?;
    (text_loss + image_loss)? / 2.
}

fn main() {}
