use candle_contracts::contract;
use candle_core::{Module, Result, Tensor, D};
use candle_nn::Embedding;

// CLIP's text embeddings (candle-transformers clip/text_model.rs) at vit-base-patch32's
// sizes, for the tokenizer's 77 tokens: the position ids (`[1, 77]`, `arange(..).unsqueeze(0)`)
// are cut along dim 0, their batch of one, instead of dim 1.
#[contract(
    token_embedding: Embedding[49408, 512],
    position_embedding: Embedding[77, 512],
    position_ids: u32[1, 77],
)]
struct ClipTextEmbeddings {
    token_embedding: Embedding,
    position_embedding: Embedding,
    position_ids: Tensor,
}

#[contract]
impl Module for ClipTextEmbeddings {
    #[contract(input_ids: u32[B, 77], return: f32[B, 77, 512])]
    fn forward(&self, input_ids: &Tensor) -> Result<Tensor> {
        let seq_length = input_ids.dim(D::Minus1)?;
        let inputs_embeds = self.token_embedding.forward(input_ids)?;
        let position_ids = self.position_ids.narrow(0, 0, seq_length)?;
        let position_embedding = self.position_embedding.forward(&position_ids)?;
        inputs_embeds.broadcast_add(&position_embedding)
    }
}

fn main() {}
