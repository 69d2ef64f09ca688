/// One training step: the batch is checked where it is read, with `check!`.
fn step(images: &Tensor, labels: &Tensor) -> Result<()> {
    let checked = check!(images: f32[B, 784] finite, labels: u32[B] in 0..10);
    checked?;
    Ok(())
}
