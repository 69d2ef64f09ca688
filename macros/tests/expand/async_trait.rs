// A method as `#[async_trait]` leaves it: the `async fn` returns a boxed future, and a
// violation is returned as a ready one.
impl Scorer for Softmax {
    /// Scores the logits.
    #[contract(logits: f32[N, C] finite)]
    fn score<'life0, 'life1, 'async_trait>(
        &'life0 self,
        logits: &'life1 Tensor,
    ) -> ::core::pin::Pin<
        Box<dyn ::core::future::Future<Output = Result<Tensor>> + ::core::marker::Send + 'async_trait>,
    >
    where
        'life0: 'async_trait,
        'life1: 'async_trait,
        Self: 'async_trait,
    {
        Box::pin(async move { candle_nn::ops::softmax_last_dim(logits) })
    }
}
