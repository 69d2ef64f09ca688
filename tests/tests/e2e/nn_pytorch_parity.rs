//! Guarded ops on inputs where candle and PyTorch part ways, pinned to PyTorch's result (the
//! values in the comments were computed with torch 2.15 on the CPU).

use candle_contracts::nn;
use candle_core::{DType, Device, Tensor};

fn cpu() -> Device {
    Device::Cpu
}

#[test]
fn gather_with_ids_smaller_than_source_on_another_dim_reads_the_right_rows() {
    // torch.gather(tensor([[[0., 1.], [2., 3.]]]), 0, tensor([[[0], [0]]])) == [[[0.], [2.]]]
    let source = Tensor::new(&[[[0f32, 1.], [2., 3.]]], &cpu()).unwrap();
    let ids = Tensor::new(&[[[0u32], [0]]], &cpu()).unwrap();
    let out = nn::gather(&source, &ids, 0).unwrap();
    assert_eq!(out.to_vec3::<f32>().unwrap(), [[[0.], [2.]]]);
    // torch.gather(arange(12.).reshape(3, 4), 1, tensor([[1], [0]])) == [[1.], [4.]]
    let source = Tensor::arange(0f32, 12., &cpu())
        .unwrap()
        .reshape((3, 4))
        .unwrap();
    let ids = Tensor::new(&[[1i64], [0]], &cpu()).unwrap();
    let out = nn::gather(&source, &ids, 1).unwrap();
    assert_eq!(out.to_vec2::<f32>().unwrap(), [[1.], [4.]]);
}

#[test]
fn gather_refuses_ids_larger_than_source_on_another_dim() {
    // PyTorch: "Size does not match at dimension 1 expected index [1, 3] to be no larger
    // than self [3, 2] apart from dimension 0".
    let source = Tensor::zeros((3, 2), DType::F32, &cpu()).unwrap();
    let ids = Tensor::zeros((1, 3), DType::U32, &cpu()).unwrap();
    let error = nn::gather(&source, &ids, 0).unwrap_err().to_string();
    assert!(
        error.contains("`ids` dim 1 is 3 and `source` dim 1 is 2"),
        "{error}"
    );
}

#[test]
fn scatter_add_accepts_ids_and_source_smaller_than_base() {
    // b = arange(12.).reshape(3, 4); b.scatter_add(1, tensor([[0], [1]]), ones(2, 1))
    //   == [[1., 1., 2., 3.], [4., 6., 6., 7.], [8., 9., 10., 11.]]
    let base = Tensor::arange(0f32, 12., &cpu())
        .unwrap()
        .reshape((3, 4))
        .unwrap();
    let ids = Tensor::new(&[[0u32], [1]], &cpu()).unwrap();
    let source = Tensor::ones((2, 1), DType::F32, &cpu()).unwrap();
    let out = nn::scatter_add(&base, &ids, &source, 1).unwrap();
    assert_eq!(
        out.to_vec2::<f32>().unwrap(),
        [[1., 1., 2., 3.], [4., 6., 6., 7.], [8., 9., 10., 11.]]
    );
    // A source larger than the ids: only its first ids-shaped corner is added.
    // zeros(2, 3).scatter_add(0, tensor([[1, 0]]), arange(1., 7.).reshape(2, 3))
    //   == [[0., 2., 0.], [1., 0., 0.]]
    let base = Tensor::zeros((2, 3), DType::F32, &cpu()).unwrap();
    let ids = Tensor::new(&[[1u32, 0]], &cpu()).unwrap();
    let source = Tensor::arange(1f32, 7., &cpu())
        .unwrap()
        .reshape((2, 3))
        .unwrap();
    let out = nn::scatter_add(&base, &ids, &source, 0).unwrap();
    assert_eq!(out.to_vec2::<f32>().unwrap(), [[0., 2., 0.], [1., 0., 0.]]);
}

#[test]
fn scatter_add_refuses_ids_larger_than_source() {
    // PyTorch: "Expected index [2, 2] to be no larger than self [2, 3] apart from dimension 1
    // and to be no larger size than src [2, 1]".
    let base = Tensor::zeros((2, 3), DType::F32, &cpu()).unwrap();
    let ids = Tensor::zeros((2, 2), DType::U32, &cpu()).unwrap();
    let source = Tensor::ones((2, 1), DType::F32, &cpu()).unwrap();
    let error = nn::scatter_add(&base, &ids, &source, 1)
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("`ids` dim 1 is 2 and `source` dim 1 is 1"),
        "{error}"
    );
}

#[test]
fn binary_cross_entropy_with_logit_returns_the_targets_dtype_as_pytorch() {
    // F.binary_cross_entropy_with_logits(tensor([0.3, -1.2], dtype=float32),
    //     tensor([1., 0.25], dtype=float64)) is a float64 0.5588...
    let logits = Tensor::new(&[0.3f32, -1.2], &cpu()).unwrap();
    let target = Tensor::new(&[1f64, 0.25], &cpu()).unwrap();
    let loss = nn::binary_cross_entropy_with_logit(&logits, &target).unwrap();
    assert_eq!(loss.dtype(), DType::F64);
    let reference = {
        let x = [f64::from(0.3f32), f64::from(-1.2f32)];
        let t = [1.0, 0.25];
        let losses = x
            .iter()
            .zip(t)
            .map(|(&x, t)| x.max(0.0) - x * t + (-x.abs()).exp().ln_1p());
        losses.sum::<f64>() / 2.0
    };
    let value = loss.to_scalar::<f64>().unwrap();
    assert!((value - reference).abs() < 1e-12, "{value} vs {reference}");
    // PyTorch's loss has the target's dtype whatever the logits' (it computes in the target's).
    for (logits_dtype, target_dtype) in [
        (DType::F64, DType::F32),
        (DType::F16, DType::F32),
        (DType::F16, DType::BF16),
        (DType::F32, DType::F16),
    ] {
        let loss = nn::binary_cross_entropy_with_logit(
            &logits.to_dtype(logits_dtype).unwrap(),
            &target.to_dtype(target_dtype).unwrap(),
        )
        .unwrap();
        assert_eq!(loss.dtype(), target_dtype, "{logits_dtype:?} logits");
    }
}

#[test]
fn binary_cross_entropy_refuses_a_target_of_another_dtype() {
    // PyTorch: "Found dtype Double but expected Float".
    let probabilities = Tensor::new(&[0.3f32, 0.2], &cpu()).unwrap();
    let target = Tensor::new(&[1f64, 0.25], &cpu()).unwrap();
    let error = nn::binary_cross_entropy(&probabilities, &target)
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("`probabilities` is f32 and `target` f64"),
        "{error}"
    );
}

#[test]
fn index_add_checks_source_against_base_even_for_empty_ids() {
    // PyTorch: "Number of indices (0) should be equal to source.size(dim): (1), for dim: 0",
    // and "source tensor shape must match self tensor shape, excluding the specified
    // dimension" for a source of width 4 into a base of width 3.
    let base = Tensor::zeros((2, 3), DType::F32, &cpu()).unwrap();
    let ids = Tensor::zeros(0, DType::U32, &cpu()).unwrap();
    for source in [(1, 3), (0, 4)] {
        let source = Tensor::zeros(source, DType::F32, &cpu()).unwrap();
        let error = nn::index_add(&base, &ids, &source, 0)
            .unwrap_err()
            .to_string();
        assert!(error.contains("where [0, 3] is expected"), "{error}");
    }
    let source = Tensor::zeros((0, 3), DType::F32, &cpu()).unwrap();
    let out = nn::index_add(&base, &ids, &source, 0).unwrap();
    assert_eq!(out.to_vec2::<f32>().unwrap(), [[0.; 3]; 2]);
}

#[test]
fn scatter_and_index_add_refuse_a_source_of_another_dtype_even_for_empty_ids() {
    // PyTorch: "scatter(): Expected self.dtype to be equal to src.dtype", "index_add_():
    // self (Float) and source (Double) must have the same scalar type".
    let base = Tensor::zeros((2, 3), DType::F32, &cpu()).unwrap();
    let ids = Tensor::zeros((0, 3), DType::U32, &cpu()).unwrap();
    let source = Tensor::zeros((0, 3), DType::F64, &cpu()).unwrap();
    let error = nn::scatter_add(&base, &ids, &source, 0)
        .unwrap_err()
        .to_string();
    assert!(error.contains("`base` is f32 and `source` f64"), "{error}");
    let ids = Tensor::zeros(0, DType::U32, &cpu()).unwrap();
    let error = nn::index_add(&base, &ids, &source, 0)
        .unwrap_err()
        .to_string();
    assert!(error.contains("`base` is f32 and `source` f64"), "{error}");
}

/// f32 logits with an f64 target are computed in f64: the loss is PyTorch's with the logits
/// widened first (`F.binary_cross_entropy_with_logits(x.double(), t)` = 0.8541809343049451 for
/// `torch.manual_seed(0); x = torch.randn(7); t = torch.rand(7, dtype=torch.float64)`), never
/// an f32 computation. PyTorch's own mixed-dtype call gives 0.8541809274701061: it takes the
/// log-sigmoid in the logits' f32.
// The logits are PyTorch's f32 values as Python prints them (as doubles).
#[allow(clippy::excessive_precision)]
#[test]
fn binary_cross_entropy_with_logit_computes_a_mixed_call_in_f64() {
    let x = Tensor::new(
        &[
            1.5409960746765137f32,
            -0.293428897857666,
            -2.1787893772125244,
            0.5684312582015991,
            -1.0845223665237427,
            -1.3985954523086548,
            0.40334683656692505,
        ],
        &cpu(),
    )
    .unwrap();
    let t = Tensor::new(
        &[
            0.5813409198075745f64,
            0.2882358921361502,
            0.4528688488811142,
            0.17679952620371409,
            0.35526675833930643,
            0.6219052486795277,
            0.48184840078170854,
        ],
        &cpu(),
    )
    .unwrap();
    let loss = nn::binary_cross_entropy_with_logit(&x, &t).unwrap();
    assert_eq!(loss.dtype(), DType::F64);
    let value = loss.to_scalar::<f64>().unwrap();
    assert!((value - 0.8541809343049451).abs() < 1e-15, "{value}");
    // With an f32 target it is an f32 computation, as PyTorch's (0.8541808724403381): each is
    // within two f32 ulps (6e-8 each) of the f64 value.
    let f32_loss = nn::binary_cross_entropy_with_logit(&x, &t.to_dtype(DType::F32).unwrap())
        .unwrap()
        .to_scalar::<f32>()
        .unwrap();
    assert!(
        (f64::from(f32_loss) - 0.8541808724403381).abs() < 2.5e-7,
        "{f32_loss:.10}"
    );
    assert!(f64::from(f32_loss) != value);
}
