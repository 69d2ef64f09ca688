impl Embedding {
    /// Looks the ids up.
    #[contract(self.table: f32[V, D], ids: u32[B, T] in 0..{self.vocab_size}, return: f32[B, T, D], T <= 512)]
    fn forward(&self, ids: &Tensor) -> Result<Tensor> {
        let (b, t) = ids.dims2()?;
        self.table.index_select(&ids.flatten_all()?, 0)?.reshape((b, t, ()))
    }
}

/// Returns `x`.
#[contract(x: f32[N] finite, return: f32[N])]
async fn scale(x: &Tensor) -> Tensor {
    x.clone()
}
