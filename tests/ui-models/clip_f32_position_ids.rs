use candle_contracts::contract;
use candle_core::{Module, Result, Tensor, D};
use candle_nn::Embedding;

// CLIP's text embeddings (candle-transformers clip/text_model.rs) with the position ids made
// in `forward`, as BERT-style code does, but from `arange(0f32, ..)`: f32 ids into the
// position table's `Embedding::forward`, which takes u8, u32 or i64 ids.
#[contract(token_embedding: Embedding[V, E], position_embedding: Embedding[P, E])]
struct ClipTextEmbeddings {
    token_embedding: Embedding,
    position_embedding: Embedding,
}

#[contract]
impl Module for ClipTextEmbeddings {
    #[contract(input_ids: u32[B, T] in 0..V, T <= P)]
    fn forward(&self, input_ids: &Tensor) -> Result<Tensor> {
        let seq_length = input_ids.dim(D::Minus1)?;
        let inputs_embeds = self.token_embedding.forward(input_ids)?;
        let position_ids =
            Tensor::arange(0f32, seq_length as f32, input_ids.device())?.unsqueeze(0)?;
        let position_embedding = self.position_embedding.forward(&position_ids)?;
        inputs_embeds.broadcast_add(&position_embedding)
    }
}

fn main() {}
