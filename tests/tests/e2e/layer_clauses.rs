//! Layer clauses: `self.proj: Linear[E -> C]` states a candle-nn layer's sizes, is checked at
//! run time on the layer's weight, and gives the compile-time check the layer's output.

use candle_contracts::contract;
use candle_core::{DType, Device, Module, Result, Tensor};
use candle_nn::{Embedding, LayerNorm, Linear};

struct Classifier {
    embed: Embedding,
    norm: LayerNorm,
    head: Linear,
}

impl Classifier {
    fn new(vocab: usize, hidden: usize, classes: usize) -> Classifier {
        let ones = |shape: &[usize]| Tensor::ones(shape, DType::F32, &Device::Cpu).unwrap();
        Classifier {
            embed: Embedding::new(ones(&[vocab, hidden]), hidden),
            norm: LayerNorm::new(ones(&[hidden]), ones(&[hidden]).zeros_like().unwrap(), 1e-5),
            head: Linear::new(ones(&[classes, hidden]), None),
        }
    }

    #[contract(
        ids: u32[B, T] in 0..V,
        self.embed: Embedding[V, E],
        self.norm: LayerNorm[E],
        self.head: Linear[E -> C],
        return: f32[B, T, C],
    )]
    fn forward(&self, ids: &Tensor) -> Result<Tensor> {
        let xs = self.embed.forward(ids)?;
        let xs = self.norm.forward(&xs)?;
        self.head.forward(&xs)
    }
}

#[test]
fn a_model_whose_layers_match_its_clauses_runs() {
    let model = Classifier::new(50, 16, 4);
    let ids = Tensor::new(&[[1u32, 2, 3], [4, 5, 49]], &Device::Cpu).unwrap();
    assert_eq!(model.forward(&ids).unwrap().dims(), &[2, 3, 4]);
}

#[test]
fn a_layer_of_other_sizes_is_named_with_its_weight() {
    let mut model = Classifier::new(50, 16, 4);
    // A head built for another width: its weight is [4, 8], not [C, E] with E = 16.
    let ones = Tensor::ones((4, 8), DType::F32, &Device::Cpu).unwrap();
    model.head = Linear::new(ones, None);
    let ids = Tensor::new(&[[1u32, 2, 3]], &Device::Cpu).unwrap();
    let error = model.forward(&ids).unwrap_err().to_string();
    assert!(error.contains("`self.head.weight()`"), "{error}");
    assert!(error.contains("E = 16"), "{error}");
    // An id past the table the clause states.
    let model = Classifier::new(50, 16, 4);
    let ids = Tensor::new(&[[50u32]], &Device::Cpu).unwrap();
    let error = model.forward(&ids).unwrap_err().to_string();
    assert!(error.contains("expected 0..V with V = 50"), "{error}");
}

#[test]
fn an_embedding_whose_hidden_size_is_not_its_tables_width_is_named() {
    // `Embedding::new(table, hidden_size)` with a `hidden_size` apart from the table's width:
    // candle's `forward` would reshape `[3, 16]` rows to `[1, 3, 12]` and fail; the clause
    // `Embedding[V, E]` states both.
    let mut model = Classifier::new(50, 16, 4);
    let table = Tensor::ones((50, 16), DType::F32, &Device::Cpu).unwrap();
    model.embed = Embedding::new(table, 12);
    let ids = Tensor::new(&[[1u32, 2, 3]], &Device::Cpu).unwrap();
    let error = model.forward(&ids).unwrap_err().to_string();
    assert!(error.contains("self.embed.hidden_size()"), "{error}");
    assert!(error.contains("E = 12"), "{error}");
}
