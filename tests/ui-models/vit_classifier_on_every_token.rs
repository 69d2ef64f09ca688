use candle_contracts::contract;
use candle_core::{Result, Tensor};
use candle_nn::{LayerNorm, Linear};

// ViT's head: the class token is not selected (`.i((.., 0, ..))` forgotten).
struct Model {
    layernorm: LayerNorm,
    classifier: Linear,
}

impl Model {
    #[contract(
        encoder_outputs: f32[B, T, E],
        self.layernorm.weight(): f32[E],
        self.classifier.weight(): f32[L, E],
        return: f32[B, L],
    )]
    fn head(&self, encoder_outputs: &Tensor) -> Result<Tensor> {
        encoder_outputs
            .apply(&self.layernorm)?
            .apply(&self.classifier)
    }
}

fn main() {}
