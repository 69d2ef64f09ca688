use candle_contracts::contract;
use candle_core::{DType, Device, IndexOp, Result, Tensor};

#[contract(x: f32[N, 4], w: f32[2, 5])]
pub fn incl(x: &Tensor, w: &Tensor) -> Result<Tensor> {
    x.i((.., 1..=2))?.matmul(w)
}

#[contract(x: f32[N, 4], w: f32[3, 5])]
pub fn incl_from(x: &Tensor, w: &Tensor) -> Result<Tensor> {
    x.i((.., 1..))?.matmul(w)
}

#[contract(w: f32[3, 5])]
pub fn rep_arr(w: &Tensor) -> Result<Tensor> {
    let a = Tensor::new(&[[0f32; 3]; 2], &Device::Cpu)?;
    a.matmul(w)
}

#[contract(w: f32[3, 5])]
pub fn vec_rows(w: &Tensor) -> Result<Tensor> {
    let a = Tensor::new(vec![vec![0f32, 1., 2.], vec![3., 4., 5.]], &Device::Cpu)?;
    a.matmul(w)
}

#[contract(w: f32[3, 5])]
pub fn slices(w: &Tensor) -> Result<Tensor> {
    let a = Tensor::new(&[[0f32, 1., 2.], [3., 4., 5.]], &Device::Cpu)?;
    a.matmul(w)
}

#[contract(w: u32[4, 5])]
pub fn arange_neg(w: &Tensor) -> Result<Tensor> {
    let a = Tensor::arange(-2i64, 2i64, &Device::Cpu)?.to_dtype(DType::U32)?;
    a.unsqueeze(0)?.matmul(w)
}

#[contract(w: f32[2, 5])]
pub fn pad(w: &Tensor) -> Result<Tensor> {
    let x = Tensor::zeros((3, 1), DType::F32, &Device::Cpu)?;
    let x = x.broadcast_as((3, 1))?.pad_with_zeros(1, 0, 1)?;
    x.matmul(w)
}

#[contract(w: f32[6, 5])]
pub fn repeat_fewer(w: &Tensor) -> Result<Tensor> {
    let x = Tensor::zeros((3, 2), DType::F32, &Device::Cpu)?;
    let x = x.repeat(1)?; // [3, 2]
    let x = x.repeat((1, 3))?; // [3, 6]
    x.matmul(w)
}

#[contract(w: f32[1, 5])]
pub fn pool_big(w: &Tensor) -> Result<Tensor> {
    let x = Tensor::zeros((1, 1, 3, 3), DType::F32, &Device::Cpu)?;
    let y = x.avg_pool2d(3)?; // [1, 1, 1, 1]
    y.squeeze(0)?.squeeze(0)?.matmul(w)
}

#[contract(w: f32[4, 5])]
pub fn conv_groups(w: &Tensor) -> Result<Tensor> {
    let x = Tensor::zeros((1, 2, 8), DType::F32, &Device::Cpu)?;
    let k = Tensor::zeros((5, 1, 3), DType::F32, &Device::Cpu)?;
    let y = x.conv1d(&k, 0, 1, 1, 2)?; // 4 channels, not 5
    y.squeeze(0)?.t()?.matmul(w)
}

#[contract(w: f32[3, 5])]
pub fn gather_rank(w: &Tensor) -> Result<Tensor> {
    let x = Tensor::zeros((2, 3), DType::F32, &Device::Cpu)?;
    let ids = Tensor::zeros((2, 3), DType::U32, &Device::Cpu)?;
    x.gather(&ids, 1)?.matmul(w)
}

#[contract(x: f32[2, 3])]
pub fn to_vec_after_i(x: &Tensor) -> Result<Vec<f32>> {
    x.i((0, ..))?.to_vec1::<f32>()
}

#[contract(x: f32[2, 3])]
pub fn scalar_after_sum(x: &Tensor) -> Result<f32> {
    x.sum_all()?.to_scalar::<f32>()
}

#[contract(x: f32[2, 3])]
pub fn dims_after_new(x: &Tensor) -> Result<usize> {
    let s = Tensor::new(3f32, &Device::Cpu)?;
    let v = s.to_scalar::<f32>()?;
    let t = Tensor::new(&[1u32, 2, 3], &Device::Cpu)?;
    let (n,) = t.dims1().map(|n| (n,))?;
    let e = Tensor::eye(3, DType::F32, &Device::Cpu)?;
    let (a, b) = e.dims2()?;
    Ok(a + b + n)
}
