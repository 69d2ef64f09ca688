/// Padding exempt under the attention mask, and rows that must be distributions.
#[contract(
    input_ids: i64[B, T] in 0..V where attention_mask,
    attention_mask: u8[B, T],
    embeddings: f32[V, D],
    {self.weights.sum(1)?}: f32[V] in 0.999..=1.001 where {self.keep.ge(1u8)?},
    labels: f32[B] in 0.0..{self.classes as f64} integral,
)]
fn embed(&self, input_ids: &Tensor, attention_mask: &Tensor, embeddings: &Tensor, labels: &Tensor) -> Result<Tensor> {
    embeddings.embedding(&input_ids.flatten_all()?)
}
