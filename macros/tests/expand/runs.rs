/// A layer norm over the last dim, for any batch dims in front: a `*B` run.
#[contract(x: float[*B, D], weight: float[D], return: float[*B, D])]
fn layer_norm(x: &Tensor, weight: &Tensor) -> Result<Tensor> {
    candle_nn::ops::rms_norm(x, weight, 1e-5)
}
