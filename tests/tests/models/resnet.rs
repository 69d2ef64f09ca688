//! candle-transformers' `resnet.rs`. candle builds each block as a closure in a `Func`, which no
//! attribute can stand on: the basic block and the network are structs here, holding what the
//! closures capture, and their `forward` bodies are the closures' bodies with each captured
//! layer read as `self.layer`.
//! `downsample` and `basic_layer` are candle's, `Func`s included.

use candle_contracts::contract;
use candle_core::{DType, Device, Module, Result, Tensor, D};
use candle_nn::{batch_norm, BatchNorm, Conv2d, Func, Linear, VarBuilder};

fn conv2d(
    c_in: usize,
    c_out: usize,
    ksize: usize,
    padding: usize,
    stride: usize,
    vb: VarBuilder,
) -> Result<Conv2d> {
    let conv2d_cfg = candle_nn::Conv2dConfig {
        stride,
        padding,
        ..Default::default()
    };
    candle_nn::conv2d_no_bias(c_in, c_out, ksize, conv2d_cfg, vb)
}

fn downsample(c_in: usize, c_out: usize, stride: usize, vb: VarBuilder) -> Result<Func<'static>> {
    if stride != 1 || c_in != c_out {
        let conv = conv2d(c_in, c_out, 1, 0, stride, vb.pp(0))?;
        let bn = batch_norm(c_out, 1e-5, vb.pp(1))?;
        Ok(Func::new(move |xs| xs.apply(&conv)?.apply_t(&bn, false)))
    } else {
        Ok(Func::new(|xs| Ok(xs.clone())))
    }
}

/// What `basic_block`'s closure captures.
struct BasicBlock {
    conv1: Conv2d,
    bn1: BatchNorm,
    conv2: Conv2d,
    bn2: BatchNorm,
    downsample: Func<'static>,
}

fn basic_block(c_in: usize, c_out: usize, stride: usize, vb: VarBuilder) -> Result<BasicBlock> {
    let conv1 = conv2d(c_in, c_out, 3, 1, stride, vb.pp("conv1"))?;
    let bn1 = batch_norm(c_out, 1e-5, vb.pp("bn1"))?;
    let conv2 = conv2d(c_out, c_out, 3, 1, 1, vb.pp("conv2"))?;
    let bn2 = batch_norm(c_out, 1e-5, vb.pp("bn2"))?;
    let downsample = downsample(c_in, c_out, stride, vb.pp("downsample"))?;
    Ok(BasicBlock {
        conv1,
        bn1,
        conv2,
        bn2,
        downsample,
    })
}

impl Module for BasicBlock {
    #[contract(
        xs: f32[B, CIN, H, W],
        self.conv1: Conv2d[CIN -> COUT, 3] with stride = S, padding = 1, dilation = 1,
        self.conv2: Conv2d[COUT -> COUT, 3] with stride = 1, padding = 1, dilation = 1,
        return: f32[B, COUT, (H - 1) / S + 1, (W - 1) / S + 1],
    )]
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        let ys = xs
            .apply(&self.conv1)?
            .apply_t(&self.bn1, false)?
            .relu()?
            .apply(&self.conv2)?
            .apply_t(&self.bn2, false)?;
        (xs.apply(&self.downsample)? + ys)?.relu()
    }
}

fn basic_layer(
    c_in: usize,
    c_out: usize,
    stride: usize,
    cnt: usize,
    vb: VarBuilder,
) -> Result<Func<'static>> {
    let mut layers = Vec::with_capacity(cnt);
    for index in 0..cnt {
        let l_in = if index == 0 { c_in } else { c_out };
        let stride = if index == 0 { stride } else { 1 };
        layers.push(basic_block(l_in, c_out, stride, vb.pp(index))?)
    }
    Ok(Func::new(move |xs| {
        let mut xs = xs.clone();
        for layer in layers.iter() {
            xs = xs.apply(layer)?
        }
        Ok(xs)
    }))
}

/// What `resnet`'s closure captures.
struct ResNet {
    conv1: Conv2d,
    bn1: BatchNorm,
    layer1: Func<'static>,
    layer2: Func<'static>,
    layer3: Func<'static>,
    layer4: Func<'static>,
    fc: Option<Linear>,
}

fn resnet(
    nclasses: Option<usize>,
    c1: usize,
    c2: usize,
    c3: usize,
    c4: usize,
    vb: VarBuilder,
) -> Result<ResNet> {
    let conv1 = conv2d(3, 64, 7, 3, 2, vb.pp("conv1"))?;
    let bn1 = batch_norm(64, 1e-5, vb.pp("bn1"))?;
    let layer1 = basic_layer(64, 64, 1, c1, vb.pp("layer1"))?;
    let layer2 = basic_layer(64, 128, 2, c2, vb.pp("layer2"))?;
    let layer3 = basic_layer(128, 256, 2, c3, vb.pp("layer3"))?;
    let layer4 = basic_layer(256, 512, 2, c4, vb.pp("layer4"))?;
    let fc = match nclasses {
        None => None,
        Some(nclasses) => {
            let linear = candle_nn::linear(512, nclasses, vb.pp("fc"))?;
            Some(linear)
        }
    };
    Ok(ResNet {
        conv1,
        bn1,
        layer1,
        layer2,
        layer3,
        layer4,
        fc,
    })
}

impl Module for ResNet {
    #[contract(
        xs: f32[B, 3, H, W],
        self.conv1.weight(): f32[64, 3, 7, 7],
        self.fc?.weight(): f32[NCLASSES, 512],
        return: f32[B, ..],
    )]
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        let xs = xs
            .apply(&self.conv1)?
            .apply_t(&self.bn1, false)?
            .relu()?
            .pad_with_same(D::Minus1, 1, 1)?
            .pad_with_same(D::Minus2, 1, 1)?
            .max_pool2d_with_stride(3, 2)?
            .apply(&self.layer1)?
            .apply(&self.layer2)?
            .apply(&self.layer3)?
            .apply(&self.layer4)?
            .mean(D::Minus1)?
            .mean(D::Minus1)?;
        match &self.fc {
            None => Ok(xs),
            Some(fc) => xs.apply(fc),
        }
    }
}

#[test]
fn resnet_basic_blocks_and_the_network() {
    let varmap = candle_nn::VarMap::new();
    let vb = VarBuilder::from_varmap(&varmap, DType::F32, &Device::Cpu);
    let block = basic_block(8, 16, 2, vb.pp("block")).unwrap();
    let xs = Tensor::randn(0f32, 1., (2, 8, 10, 10), &Device::Cpu).unwrap();
    assert_eq!(block.forward(&xs).unwrap().dims(), &[2, 16, 5, 5]);
    let same = basic_block(16, 16, 1, vb.pp("same")).unwrap();
    let ys = Tensor::randn(0f32, 1., (2, 16, 5, 5), &Device::Cpu).unwrap();
    assert_eq!(same.forward(&ys).unwrap().dims(), &[2, 16, 5, 5]);
    // resnet18's layout, one block a layer, on a 32 x 32 image.
    let model = resnet(Some(10), 1, 1, 1, 1, vb.pp("resnet")).unwrap();
    let images = Tensor::randn(0f32, 1., (2, 3, 32, 32), &Device::Cpu).unwrap();
    assert_eq!(model.forward(&images).unwrap().dims(), &[2, 10]);
}
