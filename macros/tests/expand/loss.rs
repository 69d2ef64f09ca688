/// The cross-entropy loss.
#[contract(logits: float[N, C], target: u8 | u32 | i64 [N] in 0..C ignore -100)]
fn loss(logits: &Tensor, target: &Tensor) -> Result<Tensor> {
    candle_nn::loss::cross_entropy(logits, target)
}
