//! candle-nn's layers: what `layer.forward(xs)` (or `xs.apply(&layer)`) yields, from the
//! input and, where a clause states it, the layer's weight (`self.q_proj.weight(): f32[O, I]`).
//! Each mirrors candle-nn 0.11's `forward`; a failure is claimed only where candle's own check
//! certainly fails (an input whose last dim is not the weight's).

use crate::dim::Dim;
use crate::reason::Reason;
use crate::rules::{Arg, Argument, Mismatch, Outcome, suggest};
use crate::shape::{Run, Shape, TensorType};
use crate::verdict::{Axis, Rank, Verdict};

/// A candle-nn layer type, as the analysis meets it (a field's or a parameter's type).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layer {
    /// `candle_nn::Linear`: weight `[OUT, IN]`, `[.., IN] -> [.., OUT]`.
    Linear,
    /// `candle_nn::Embedding`: table `[V, E]`, ids `[*S] -> [*S, hidden_size]`.
    Embedding,
    /// `candle_nn::LayerNorm`: weight `[D]`, `[.., D] -> [.., D]`.
    LayerNorm,
    /// `candle_nn::RmsNorm`: weight `[D]`, `[.., D] -> [.., D]`.
    RmsNorm,
    /// `candle_nn::Conv1d`: weight `[COUT, CIN / G, K]`, `[B, CIN, L] -> [B, COUT, L']`.
    Conv1d,
    /// `candle_nn::Conv2d`: weight `[COUT, CIN / G, K, K]`, `[B, CIN, H, W] -> [B, COUT, H', W']`.
    Conv2d,
    /// `candle_nn::ConvTranspose1d`: `[B, CIN, L] -> [B, COUT, L']`.
    ConvTranspose1d,
    /// `candle_nn::ConvTranspose2d`: `[B, CIN, H, W] -> [B, COUT, H', W']`.
    ConvTranspose2d,
    /// `candle_nn::GroupNorm`: weight `[C]` (its constructor's `num_channels`, which no
    /// accessor gives: known only from a constructor in sight), `[B, C, *S] -> [B, C, *S]`
    /// of rank at least 3.
    GroupNorm,
    /// `candle_nn::BatchNorm`, `candle_nn::Dropout`: the input's type.
    SameType,
    /// `candle_nn::Activation`: the input's type, but `Swiglu` halves the last dim.
    Activation,
}

impl Layer {
    /// The layer a type's path names (`candle_nn::Linear`, `candle_nn::linear::Linear`),
    /// `None` for any other type.
    pub fn from_path(path: &str) -> Option<Layer> {
        let segments: Vec<&str> = path.split("::").collect();
        let (first, last) = (segments.first()?, segments.last()?);
        if *first != "candle_nn" || segments.len() > 3 {
            return None;
        }
        // The module a type is defined in, for the two-segment re-export too.
        let module = match segments.as_slice() {
            [_, module, _] => Some(*module),
            _ => None,
        };
        let (layer, home) = match *last {
            "Linear" => (Layer::Linear, "linear"),
            "Embedding" => (Layer::Embedding, "embedding"),
            "LayerNorm" => (Layer::LayerNorm, "layer_norm"),
            "RmsNorm" => (Layer::RmsNorm, "layer_norm"),
            "Conv1d" => (Layer::Conv1d, "conv"),
            "Conv2d" => (Layer::Conv2d, "conv"),
            "ConvTranspose1d" => (Layer::ConvTranspose1d, "conv"),
            "ConvTranspose2d" => (Layer::ConvTranspose2d, "conv"),
            "BatchNorm" => (Layer::SameType, "batch_norm"),
            "GroupNorm" => (Layer::GroupNorm, "group_norm"),
            "Activation" => (Layer::Activation, "activation"),
            "Dropout" => (Layer::SameType, "ops"),
            _ => return None,
        };
        module.is_none_or(|m| m == home).then_some(layer)
    }

    /// The accessor of the tensor a clause states for the layer (`weight()`, `embeddings()`).
    pub fn weight_accessor(self) -> Option<&'static str> {
        match self {
            Layer::Embedding => Some("embeddings()"),
            Layer::SameType | Layer::Activation | Layer::GroupNorm => None,
            _ => Some("weight()"),
        }
    }

    /// The key the analysis keeps the layer's weight under, after the layer's path: its
    /// accessor, or for a `GroupNorm` (whose weight no accessor gives, and no clause states)
    /// a key no clause can write.
    pub fn weight_key(self) -> Option<&'static str> {
        match self {
            Layer::GroupNorm => Some("#weight"),
            layer => layer.weight_accessor(),
        }
    }

    /// The name messages give the layer's forward: `Linear::forward`.
    fn op(self) -> &'static str {
        match self {
            Layer::Linear => "Linear::forward",
            Layer::Embedding => "Embedding::forward",
            Layer::LayerNorm => "LayerNorm::forward",
            Layer::RmsNorm => "RmsNorm::forward",
            Layer::Conv1d => "Conv1d::forward",
            Layer::Conv2d => "Conv2d::forward",
            Layer::ConvTranspose1d => "ConvTranspose1d::forward",
            Layer::ConvTranspose2d => "ConvTranspose2d::forward",
            Layer::GroupNorm => "GroupNorm::forward",
            Layer::SameType | Layer::Activation => "forward",
        }
    }
}

/// The type of `layer.forward(xs)`; `weight` is the layer's weight (the table of an
/// `Embedding`) where a clause states it, unknown otherwise.
pub fn forward(layer: Layer, xs: &TensorType, weight: &TensorType) -> Outcome {
    forward_with(layer, xs, weight, &ConvGeometry::default())
}

/// A convolution's `padding`, `stride`, `dilation` and `groups`, as candle-nn's `Conv1dConfig`
/// and `Conv2dConfig` hold them (one value for every spatial dim); each unknown where it is not
/// known.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ConvGeometry {
    /// Zeros added on each side of each spatial dim.
    pub padding: Dim,
    /// The step between two windows.
    pub stride: Dim,
    /// The spacing of a window's taps.
    pub dilation: Dim,
    /// How many groups the channels are split into (the weight is `[COUT, CIN / G, ..]`).
    pub groups: Dim,
}

impl ConvGeometry {
    /// candle-nn's default config: no padding, stride 1, dilation 1.
    pub fn default_config() -> ConvGeometry {
        ConvGeometry {
            padding: Dim::lit(0),
            stride: Dim::lit(1),
            dilation: Dim::lit(1),
            groups: Dim::lit(1),
        }
    }

    /// A spatial size after a convolution of kernel size `kernel` (candle's `l_out`):
    /// `(size + 2 * padding - dilation * (kernel - 1) - 1) / stride + 1`, unknown where any
    /// part is.
    pub fn output_size(&self, size: &Dim, kernel: &Dim) -> Dim {
        let parts = [size, kernel, &self.padding, &self.stride, &self.dilation];
        if parts.iter().any(|d| d.is_unknown()) || self.stride.as_literal() == Some(0) {
            return Dim::Unknown;
        }
        let span = self.dilation.clone().mul(kernel.clone().sub(Dim::lit(1)));
        let numerator = size
            .clone()
            .add(self.padding.clone().mul(Dim::lit(2)))
            .sub(span)
            .sub(Dim::lit(1));
        numerator.div(self.stride.clone()).add(Dim::lit(1))
    }
}

/// [`forward`], with a convolution's geometry: its output's spatial sizes where the input's,
/// the kernel's and the geometry are known (one group or several: candle computes them alike).
pub fn forward_with(
    layer: Layer,
    xs: &TensorType,
    weight: &TensorType,
    geometry: &ConvGeometry,
) -> Outcome {
    let weight_dims = weight.shape.dims();
    match layer {
        Layer::SameType => Ok(xs.clone()),
        // candle-nn: "input rank for GroupNorm should be at least 3", then "unexpected
        // num-channels" where dim 1 is not the layer's.
        Layer::GroupNorm => {
            if let Rank::Exactly(rank) = xs.shape.rank()
                && rank < 3
            {
                return Err(Box::new(Mismatch {
                    op: layer.op().to_string(),
                    argument: Argument::Position(0),
                    expected: "xs: a tensor of rank 3 or more, `[B, C, ..]`".to_string(),
                    found: xs.to_string(),
                    help: None,
                    reason: Reason::Rank {
                        found: Rank::Exactly(rank),
                        expected: Rank::AtLeast(3),
                    },
                }));
            }
            if let (Some([channels]), Some(dims)) = (weight_dims, Some(xs.shape.front()))
                && dims.len() >= 2
                && let Verdict::Different(_) = dims[1].compare(channels)
            {
                let mut expected = vec![Dim::Unknown, channels.clone()];
                expected.extend(dims[2..].iter().map(|_| Dim::Unknown));
                let expected = match xs.shape.run() {
                    Some(_) => Shape::with_run(expected, Run::anonymous(), Vec::new()),
                    None => Shape::new(expected),
                };
                return Err(Box::new(Mismatch {
                    op: layer.op().to_string(),
                    argument: Argument::Position(0),
                    expected: format!("xs: {}", TensorType::new(xs.dtypes, expected)),
                    found: xs.to_string(),
                    help: None,
                    reason: Reason::Dim {
                        axis: Axis::Front(1),
                        found: dims[1].clone(),
                        expected: channels.clone(),
                    },
                }));
            }
            Ok(xs.clone())
        }
        // Every variant keeps a scalar a scalar (`Swiglu` fails on one); of any other input,
        // `Swiglu` halves the last dim.
        Layer::Activation if xs.shape.dims() == Some(&[]) => Ok(xs.clone()),
        Layer::Activation if xs.shape.from_end(1).is_some() => {
            Ok(xs.with_shape(with_last(&xs.shape, Dim::Unknown)))
        }
        // `[B, *S]`, `[..]`: the last dim may be any of them, or there may be none.
        Layer::Activation => Ok(xs.with_shape(Shape::unknown())),
        Layer::Linear => {
            // A weight of unknown size may be a hand-built layer's, whose bias (of any rank)
            // broadcasts the output to any shape: nothing is followed.
            let (out, inner) = match weight_dims {
                Some([out, inner]) => (out.clone(), inner.clone()),
                _ => {
                    return Ok(TensorType::new(
                        xs.dtypes.intersection(weight.dtypes),
                        Shape::unknown(),
                    ));
                }
            };
            // candle-nn 0.11 takes `[B1, B2, M, K]`, `[B, M, K]` or a matrix: another rank
            // (a vector, rank 5) fails in its `matmul`, for every size.
            if let Rank::Exactly(rank) = xs.shape.rank()
                && !(2..=4).contains(&rank)
            {
                return Err(Box::new(Mismatch {
                    op: layer.op().to_string(),
                    argument: Argument::Position(0),
                    expected: format!("xs: a tensor of rank 2, 3 or 4, `[.., {inner}]`"),
                    found: xs.to_string(),
                    help: None,
                    reason: Reason::Other(format!(
                        "rank {rank} given: candle's `Linear` multiplies a matrix, or a batch of \
                         one or two leading dims"
                    )),
                }));
            }
            // candle-nn: `x.matmul(&w.t())` (broadcast over the leading dims), then
            // `broadcast_add(bias)`: a bias of another size widens an output of 1.
            check_last(layer, xs, weight, &inner)?;
            Ok(TensorType::new(
                xs.dtypes.intersection(weight.dtypes),
                with_last(&xs.shape, widened_by_bias(out)),
            ))
        }
        // candle-nn's fast path takes a last dim equal to the weight's; its other path (no
        // bias, a strided input) broadcasts the weight: a last dim of 1 becomes the weight's.
        Layer::LayerNorm | Layer::RmsNorm => match weight.shape.dims() {
            Some([dim]) => {
                match crate::rules::method("broadcast_mul", xs, &[Arg::Tensor(weight.clone())]) {
                    // A bias of another size widens a weight of 1.
                    Ok(_) if dim.as_literal() == Some(1) => {
                        Ok(xs.with_shape(with_last(&xs.shape, Dim::Unknown)))
                    }
                    Ok(product) => Ok(xs.with_shape(product.shape)),
                    Err(mismatch) => Err(Box::new(Mismatch {
                        op: layer.op().to_string(),
                        argument: Argument::Position(0),
                        expected: format!(
                            "xs: {}",
                            TensorType::new(
                                weight.dtypes,
                                Shape::with_run(
                                    Vec::new(),
                                    Run::anonymous(),
                                    weight.shape.front().to_vec()
                                )
                            )
                        ),
                        found: xs.to_string(),
                        help: None,
                        // Told of the input, not of the weight the product was taken with.
                        reason: match mismatch.reason {
                            Reason::Broadcast {
                                axis,
                                found,
                                expected,
                            } => Reason::Broadcast {
                                axis,
                                found: expected,
                                expected: found,
                            },
                            other => other,
                        },
                    })),
                }
            }
            // A weight of another rank (a hand-built `LayerNorm::new`): what broadcasting
            // with it gives is not followed.
            Some(_) => Ok(xs.with_shape(Shape::unknown())),
            // A weight of unknown size may be a hand-built norm's of any rank, which
            // broadcasts the output to any shape: nothing is followed.
            None => Ok(xs.with_shape(Shape::unknown())),
        },
        // The rows of the table for each id, reshaped to the layer's own `hidden_size` (a
        // field apart from the table: with no id at all, any size passes the reshape).
        // Its ids go to `index_select`: u8, u32 or i64.
        Layer::Embedding => {
            crate::rules::tensor::check_ids(layer.op(), Argument::Position(0), "xs", xs)?;
            Ok(TensorType::new(
                weight.dtypes,
                xs.shape.clone().appended(Dim::Unknown),
            ))
        }
        Layer::Conv1d | Layer::Conv2d | Layer::ConvTranspose1d | Layer::ConvTranspose2d => {
            let rank = match layer {
                Layer::Conv1d | Layer::ConvTranspose1d => 3,
                _ => 4,
            };
            // candle reads the input with `dims3` / `dims4`: another rank fails.
            let other_rank = match xs.shape.rank() {
                Rank::Exactly(r) => r != rank,
                Rank::AtLeast(r) => r > rank,
            };
            if other_rank {
                return Err(Box::new(Mismatch {
                    op: layer.op().to_string(),
                    argument: Argument::Position(0),
                    expected: format!(
                        "xs: {}",
                        TensorType::new(xs.dtypes, Shape::new(vec![Dim::Unknown; rank]))
                    ),
                    found: xs.to_string(),
                    help: None,
                    reason: Reason::Rank {
                        found: xs.shape.rank(),
                        expected: Rank::Exactly(rank),
                    },
                }));
            }
            // The input's batch dim, and the output channels of the weight (`[COUT, ..]` for
            // a convolution; a transposed one's weight is `[CIN, COUT / G, ..]`).
            let batch = match xs.shape.rank() {
                Rank::Exactly(r) if r == rank => xs.shape.front()[0].clone(),
                _ => Dim::Unknown,
            };
            // candle's `c_in == c_in_k * groups`, where the groups are known.
            if let (Layer::Conv1d | Layer::Conv2d, Some(w), Some(x)) =
                (layer, weight_dims, xs.shape.dims())
                && w.len() == rank
                && x.len() == rank
                && !geometry.groups.is_unknown()
            {
                let channels_in = w[1].clone().mul(geometry.groups.clone());
                if let Verdict::Different(_) = x[1].compare(&channels_in) {
                    let mut expected = vec![Dim::Unknown; rank];
                    expected[1] = channels_in.clone();
                    return Err(Box::new(Mismatch {
                        op: layer.op().to_string(),
                        argument: Argument::Position(0),
                        expected: format!(
                            "xs: {}",
                            TensorType::new(weight.dtypes, Shape::new(expected))
                        ),
                        found: xs.to_string(),
                        help: None,
                        reason: Reason::Dim {
                            axis: Axis::Front(1),
                            found: x[1].clone(),
                            expected: channels_in,
                        },
                    }));
                }
            }
            // `COUT` where there is one group (the input's channels are the weight's, or the
            // config says 1), or where the groups divide it (candle gives `COUT / G` per
            // group, joined).
            let one_group = |w: &[Dim], x: &[Dim]| {
                x[1].compare(&w[1]) == Verdict::Equal || geometry.groups.as_literal() == Some(1)
            };
            let divides = |w: &[Dim]| {
                !geometry.groups.is_unknown()
                    && w[0]
                        .clone()
                        .rem(geometry.groups.clone())
                        .compare(&Dim::lit(0))
                        == Verdict::Equal
            };
            // An input of unknown shape that passes has the rank read, whatever it was.
            let channels = match (layer, weight_dims, xs.shape.dims()) {
                (Layer::Conv1d | Layer::Conv2d, Some(w), Some(x))
                    if w.len() == rank && x.len() == rank && (one_group(w, x) || divides(w)) =>
                {
                    widened_by_bias(w[0].clone())
                }
                (Layer::Conv1d | Layer::Conv2d, Some(w), None)
                    if w.len() == rank
                        && (geometry.groups.as_literal() == Some(1) || divides(w)) =>
                {
                    widened_by_bias(w[0].clone())
                }
                _ => Dim::Unknown,
            };
            let mut dims = vec![batch, channels];
            // The spatial sizes, for a convolution (a transposed one's geometry has an output
            // padding the config may not show).
            for axis in 2..rank {
                let size = match (layer, weight_dims, xs.shape.dims()) {
                    (Layer::Conv1d | Layer::Conv2d, Some(w), Some(x))
                        if w.len() == rank && x.len() == rank =>
                    {
                        geometry.output_size(&x[axis], &w[axis])
                    }
                    _ => Dim::Unknown,
                };
                dims.push(size);
            }
            Ok(TensorType::new(
                xs.dtypes.intersection(weight.dtypes),
                Shape::new(dims),
            ))
        }
    }
}

/// An output size after candle-nn's `broadcast_add(bias)`: a literal 1 may be widened by a
/// bias of another size (a layer built by hand); any other size is the bias's too.
fn widened_by_bias(size: Dim) -> Dim {
    match size.as_literal() {
        Some(1) => Dim::Unknown,
        _ => size,
    }
}

/// `shape` with its last dim replaced by `dim` (`[.., dim]` where the last place is unknown).
fn with_last(shape: &Shape, dim: Dim) -> Shape {
    match shape.from_end(1) {
        Some(_) => shape.clone().with_dim(Axis::Back(1), dim),
        // `[..]`, `[*S]`: the last dim is the run's.
        None if shape.front().is_empty() => {
            Shape::with_run(Vec::new(), Run::anonymous(), vec![dim])
        }
        // `[B, *S]`: the last dim is `S`'s or, where `S` is empty, `B` itself.
        None => Shape::unknown(),
    }
}

/// candle's check that the input's last dim is the weight's `inner`, and the dtypes.
fn check_last(
    layer: Layer,
    xs: &TensorType,
    weight: &TensorType,
    inner: &Dim,
) -> Result<(), Box<Mismatch>> {
    let expected = TensorType::new(
        weight.dtypes,
        Shape::with_run(Vec::new(), Run::anonymous(), vec![inner.clone()]),
    );
    match xs.compare(&expected) {
        Verdict::Different(reason) => Err(Box::new(Mismatch {
            op: layer.op().to_string(),
            argument: Argument::Position(0),
            expected: format!("xs: {expected}"),
            found: xs.to_string(),
            help: suggest(xs, &expected, &reason),
            reason,
        })),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse_tensor_type;

    fn t(text: &str) -> TensorType {
        parse_tensor_type(text).unwrap()
    }

    #[test]
    fn a_convolution_with_its_geometry_computes_the_spatial_sizes() {
        let same = ConvGeometry {
            padding: Dim::lit(1),
            stride: Dim::lit(1),
            dilation: Dim::lit(1),
            groups: Dim::lit(1),
        };
        let halving = ConvGeometry {
            stride: Dim::lit(2),
            ..same.clone()
        };
        let x = t("f32[B, MELS, L]");
        let w = t("f32[E, MELS, 3]");
        let y = forward_with(Layer::Conv1d, &x, &w, &same).unwrap();
        assert_eq!(y.to_string(), "f32[B, E, L]");
        let y = forward_with(Layer::Conv1d, &y, &t("f32[E, E, 3]"), &halving).unwrap();
        assert_eq!(y.to_string(), "f32[B, E, (L - 1) / 2 + 1]");
        // candle's own sizes: 3000 frames with stride 2 give 1500, a 224 image in 16 patches 14.
        let w80 = t("f32[E, 80, 3]");
        let y = forward_with(Layer::Conv1d, &t("f32[1, 80, 3000]"), &w80, &halving).unwrap();
        assert_eq!(y.to_string(), "f32[1, E, 1500]");
        let patches = ConvGeometry {
            padding: Dim::lit(0),
            stride: Dim::lit(16),
            dilation: Dim::lit(1),
            groups: Dim::lit(1),
        };
        let y = forward_with(
            Layer::Conv2d,
            &t("f32[B, 3, 224, 224]"),
            &t("f32[768, 3, 16, 16]"),
            &patches,
        )
        .unwrap();
        assert_eq!(y.to_string(), "f32[B, 768, 14, 14]");
        // Without a geometry, or with a part of it unknown: unknown sizes.
        let y = forward(Layer::Conv1d, &x, &w).unwrap();
        assert_eq!(y.to_string(), "f32[B, E, _]");
        let unknown_stride = ConvGeometry {
            stride: Dim::Unknown,
            ..same
        };
        let y = forward_with(Layer::Conv1d, &x, &w, &unknown_stride).unwrap();
        assert_eq!(y.to_string(), "f32[B, E, _]");
    }

    #[test]
    fn a_grouped_convolution_gives_its_output_channels_and_checks_its_input() {
        let depthwise = ConvGeometry {
            groups: Dim::symbol("C"),
            ..ConvGeometry::default_config()
        };
        // `groups = C` on a weight `[C, 1, 7, 7]` (ConvNeXt's depthwise convolution).
        let y = forward_with(
            Layer::Conv2d,
            &t("f32[B, C, H, W]"),
            &t("f32[C, 1, 7, 7]"),
            &depthwise,
        )
        .unwrap();
        assert_eq!(y.to_string(), "f32[B, C, H - 6, W - 6]");
        // Four groups of 16 -> 32: the input has 4 * 4 channels, the output 32.
        let grouped = ConvGeometry {
            groups: Dim::lit(4),
            ..ConvGeometry::default_config()
        };
        let w = t("f32[32, 4, 3, 3]");
        let y = forward_with(Layer::Conv2d, &t("f32[B, 16, H, W]"), &w, &grouped).unwrap();
        assert_eq!(y.to_string(), "f32[B, 32, H - 2, W - 2]");
        let error = forward_with(Layer::Conv2d, &t("f32[B, 8, H, W]"), &w, &grouped).unwrap_err();
        assert_eq!(error.note(), "dim 1: 8 given, 16 expected");
        // Groups unknown: channels unknown, and no claim on the input's.
        let unknown = ConvGeometry {
            groups: Dim::Unknown,
            ..ConvGeometry::default_config()
        };
        let y = forward_with(Layer::Conv2d, &t("f32[B, 8, H, W]"), &w, &unknown).unwrap();
        assert_eq!(y.to_string(), "f32[B, _, H - 2, W - 2]");
        // 5 groups do not divide 32 output channels: candle gives `32 / 5` per group.
        let five = ConvGeometry {
            groups: Dim::lit(5),
            ..ConvGeometry::default_config()
        };
        let y = forward_with(Layer::Conv2d, &t("f32[B, 20, H, W]"), &w, &five).unwrap();
        assert_eq!(y.to_string(), "f32[B, _, H - 2, W - 2]");
    }

    #[test]
    fn a_convolution_takes_an_input_of_its_rank() {
        for (layer, w, xs) in [
            (Layer::Conv2d, "f32[8, 3, 3, 3]", "f32[B, 3, H]"),
            (Layer::Conv1d, "f32[8, 3, 3]", "f32[B, 3, H, W]"),
            (Layer::ConvTranspose2d, "f32[3, 8, 3, 3]", "f32[3, H, W]"),
            (Layer::Conv2d, "f32[8, 3, 3, 3]", "f32[B, 3, H, W, D, ..]"),
        ] {
            let error = forward(layer, &t(xs), &t(w)).unwrap_err();
            assert!(error.note().starts_with("rank"), "{xs}: {}", error.note());
        }
        // A rank that may be the one taken: no claim.
        assert!(forward(Layer::Conv2d, &t("f32[B, 3, ..]"), &t("f32[8, 3, 3, 3]")).is_ok());
    }

    #[test]
    fn a_linear_maps_the_last_dim_and_checks_it_against_its_weight() {
        let w = t("f32[OUT, E]");
        let y = forward(Layer::Linear, &t("f32[B, T, E]"), &w).unwrap();
        assert_eq!(y.to_string(), "f32[B, T, OUT]");
        let error = forward(Layer::Linear, &t("f32[B, T, 64]"), &t("f32[128, 32]")).unwrap_err();
        assert_eq!(error.op, "Linear::forward");
        assert_eq!(error.note(), "dim -1: 64 given, 32 expected");
        // Unknown weight: a hand-built layer's bias may be of any rank, and broadcast the
        // output to any shape.
        let y = forward(Layer::Linear, &t("f32[B, T, E]"), &TensorType::unknown()).unwrap();
        assert_eq!(y.to_string(), "f32[..]");
        let y = forward(Layer::Linear, &TensorType::unknown(), &w).unwrap();
        assert_eq!(y.to_string(), "f32[.., OUT]");
        // Two different names may be equal: no claim.
        assert!(forward(Layer::Linear, &t("f32[B, D]"), &w).is_ok());
        // candle-nn 0.11's `matmul` takes neither a vector nor a rank 5 input.
        for input in ["f32[D]", "f32[A, B, C, T, D]"] {
            let error = forward(Layer::Linear, &t(input), &w).unwrap_err();
            assert!(
                matches!(error.reason, Reason::Other(_)),
                "{input}: {error:?}"
            );
        }
        assert!(forward(Layer::Linear, &t("f32[A, B, T, D]"), &w).is_ok());
        assert!(forward(Layer::Linear, &t("f32[*S, D]"), &w).is_ok());
        assert!(forward(Layer::Linear, &t("u32[B, E]"), &w).is_err());
    }

    #[test]
    fn norms_keep_the_shape_and_check_the_last_dim() {
        let y = forward(Layer::RmsNorm, &t("f32[B, T, 64]"), &t("f32[64]")).unwrap();
        assert_eq!(y.to_string(), "f32[B, T, 64]");
        assert!(forward(Layer::LayerNorm, &t("f32[B, T, 64]"), &t("f32[32]")).is_err());
        // A weight of unknown size may be a hand-built norm's of any rank, which candle-nn's
        // broadcasting path (no bias, or a strided input) spreads over the output.
        let unknown = TensorType::unknown();
        let y = forward(Layer::LayerNorm, &t("f32[B, T, E]"), &unknown).unwrap();
        assert_eq!(y.to_string(), "f32[..]");
        let y = forward(Layer::RmsNorm, &t("f32[B, T, 1]"), &unknown).unwrap();
        assert_eq!(y.to_string(), "f32[..]");
        // From a review: a weight of rank 2 widens any dim of 1, and may add dims.
        let y = forward(Layer::LayerNorm, &t("f32[B, 1, 8]"), &t("f32[4, 8]")).unwrap();
        assert_eq!(y.to_string(), "f32[..]");
        let y = forward(
            Layer::SameType,
            &t("bf16[B, C, H, W]"),
            &TensorType::unknown(),
        )
        .unwrap();
        assert_eq!(y.to_string(), "bf16[B, C, H, W]");
    }

    #[test]
    fn a_group_norm_checks_rank_and_channels() {
        let y = forward(Layer::GroupNorm, &t("f32[B, 64, H, W]"), &t("f32[64]")).unwrap();
        assert_eq!(y.to_string(), "f32[B, 64, H, W]");
        let error = forward(Layer::GroupNorm, &t("f32[B, 32, H, W]"), &t("f32[64]")).unwrap_err();
        assert_eq!(error.op, "GroupNorm::forward");
        assert_eq!(error.note(), "dim 1: 32 given, 64 expected");
        assert!(forward(Layer::GroupNorm, &t("f32[B, 64]"), &t("f32[64]")).is_err());
        assert!(forward(Layer::GroupNorm, &t("f32[B, 64]"), &TensorType::unknown()).is_err());
        // Channels that may be equal, or a weight out of sight: no claim.
        assert!(forward(Layer::GroupNorm, &t("f32[B, C, L]"), &t("f32[64]")).is_ok());
        assert!(
            forward(
                Layer::GroupNorm,
                &t("f32[B, 32, L]"),
                &TensorType::unknown()
            )
            .is_ok()
        );
        assert!(forward(Layer::GroupNorm, &t("f32[B, 32, ..]"), &t("f32[32]")).is_ok());
    }

    #[test]
    fn embeddings_and_convolutions_give_their_ranks() {
        let y = forward(Layer::Embedding, &t("u32[B, T]"), &t("f32[V, E]")).unwrap();
        assert_eq!(y.to_string(), "f32[B, T, _]");
        let y = forward(
            Layer::Conv2d,
            &t("f32[B, 3, 32, 32]"),
            &t("f32[16, 3, 3, 3]"),
        )
        .unwrap();
        assert_eq!(y.to_string(), "f32[B, 16, _, _]");
        let y = forward(
            Layer::Conv1d,
            &TensorType::unknown(),
            &TensorType::unknown(),
        )
        .unwrap();
        assert_eq!(y.to_string(), "_[_, _, _]");
    }

    #[test]
    fn layer_paths_are_candle_nns_only() {
        assert_eq!(Layer::from_path("candle_nn::Linear"), Some(Layer::Linear));
        assert_eq!(
            Layer::from_path("candle_nn::linear::Linear"),
            Some(Layer::Linear)
        );
        assert_eq!(Layer::from_path("candle_nn::conv::Linear"), None);
        assert_eq!(
            Layer::from_path("candle_transformers::models::with_tracing::Linear"),
            None
        );
        assert_eq!(
            Layer::from_path("candle_nn::ops::Dropout"),
            Some(Layer::SameType)
        );
        assert_eq!(Layer::from_path("my_crate::Linear"), None);
    }
}
