//! Correct programs the compile-time check once refused once tensor parameters without a clause
//! started as tensors of unknown shape (a breaker's finds): a `matmul` whose left side may be
//! of rank 2, an `impl`'s own `Tensor` parameter, a body's `use` read for the signature, and a
//! by-value receiver whose trait method wins over candle's. Each compiles and runs.
#![allow(clippy::all)]

mod fp_body_use {
    #![allow(dead_code)]
    mod wrap {
        use candle_contracts::contract;
        use candle_core::{Device, Result};

        /// The module's own `Tensor`: a wrapper of candle's.
        pub struct Tensor(pub Vec<f32>);

        impl Tensor {
            pub fn sum_all(&self) -> Result<candle_core::Tensor> {
                candle_core::Tensor::new(&[[self.0.iter().sum::<f32>()]], &Device::Cpu)
            }
        }

        // `x` is the wrapper; the body's `use` brings candle's `Tensor` into the body only.
        #[contract]
        pub fn total(x: &Tensor) -> Result<candle_core::Tensor> {
            use candle_core::Tensor;
            let s = x.sum_all()?;
            Tensor::cat(&[&s.t()?, &s], 1)
        }
    }

    pub fn run() -> candle_core::Result<()> {
        println!(
            "{:?}",
            wrap::total(&wrap::Tensor(vec![1.0, 2.0]))?.to_vec2::<f32>()?
        );
        Ok(())
    }
}

mod fp_broadcast_left {
    #![allow(dead_code)]
    use candle_contracts::contract;
    use candle_core::{DType, Device, Result, Tensor};

    // x is a scalar at run time: broadcast_left((2, 3)) is [2, 3]; times [3, 4] is [2, 4].
    #[contract(w: f32[3, 4], return: f32[2, 4])]
    fn spread(x: &Tensor, w: &Tensor) -> Result<Tensor> {
        x.broadcast_left((2, 3))?.matmul(w)
    }

    pub fn run() -> Result<()> {
        let x = Tensor::new(2f32, &Device::Cpu)?;
        let w = Tensor::ones((3, 4), DType::F32, &Device::Cpu)?;
        println!("{:?}", spread(&x, &w)?.to_vec2::<f32>()?);
        Ok(())
    }
}

mod fp_clause_run_matmul {
    #![allow(dead_code)]
    use candle_contracts::contract;
    use candle_core::{DType, Device, Result, Tensor};

    // `x: f32[M, K, ..]` is rank 2 or more; with rank 2 the product is [M, N].
    #[contract(x: f32[M, K, ..], w: f32[K, N], return: f32[M, N])]
    fn project(x: &Tensor, w: &Tensor) -> Result<Tensor> {
        x.matmul(w)
    }

    pub fn run() -> Result<()> {
        let x = Tensor::ones((2, 3), DType::F32, &Device::Cpu)?;
        let w = Tensor::ones((3, 4), DType::F32, &Device::Cpu)?;
        println!("{:?}", project(&x, &w)?.dims());
        Ok(())
    }
}

mod fp_impl_generic {
    #![allow(dead_code)]
    use candle_contracts::contract;
    use candle_core::{DType, Device, Result, Tensor};

    trait Summable {
        fn sum_all(&self) -> Result<candle_core::Tensor>;
    }

    impl Summable for Vec<f32> {
        fn sum_all(&self) -> Result<candle_core::Tensor> {
            Tensor::new(&[[self.iter().sum::<f32>(), 0.0]], &Device::Cpu)
        }
    }

    struct Holder<Tensor>(std::marker::PhantomData<Tensor>);

    impl<Tensor: Summable> Holder<Tensor> {
        // `Tensor` here is the impl's type parameter, not candle's.
        #[contract]
        fn total(&self, x: &Tensor) -> Result<candle_core::Tensor> {
            x.sum_all()?.t()
        }
    }

    pub fn run() -> Result<()> {
        let h: Holder<Vec<f32>> = Holder(std::marker::PhantomData);
        let _ = DType::F32;
        println!("{:?}", h.total(&vec![1.0, 2.0])?.dims());
        Ok(())
    }
}

mod fp_matmul_front {
    #![allow(dead_code)]
    use candle_contracts::contract;
    use candle_core::{DType, Device, Result, Tensor};

    // x is a scalar at run time: [1, 1] after two unsqueezes; [1, 1] x [1, 3] = [1, 3].
    #[contract(w: f32[1, 3], bias: f32[1, 3])]
    fn lift(x: &Tensor, w: &Tensor, bias: &Tensor) -> Result<Tensor> {
        let y = x.unsqueeze(0)?.unsqueeze(0)?.matmul(w)?;
        y.add(bias)
    }

    pub fn run() -> Result<()> {
        let x = Tensor::new(2f32, &Device::Cpu)?;
        let w = Tensor::ones((1, 3), DType::F32, &Device::Cpu)?;
        let b = Tensor::ones((1, 3), DType::F32, &Device::Cpu)?;
        println!("{:?}", lift(&x, &w, &b)?.to_vec2::<f32>()?);
        Ok(())
    }
}

mod fp_trait_byvalue {
    #![allow(dead_code)]
    use candle_contracts::contract;
    use candle_core::{DType, Device, Result, Tensor};

    /// An extension trait whose by-value method is found before candle's `&self` `argmax`.
    trait Pick {
        fn argmax(self, dim: usize) -> Result<Tensor>;
    }

    impl Pick for Tensor {
        fn argmax(self, _dim: usize) -> Result<Tensor> {
            self.exp() // keeps f32
        }
    }

    #[contract(w: f32[3, 3])]
    fn pick(x: Tensor, w: &Tensor) -> Result<Tensor> {
        x.argmax(1)?.matmul(w)
    }

    pub fn run() -> Result<()> {
        let x = Tensor::zeros((2, 3), DType::F32, &Device::Cpu)?;
        let w = Tensor::ones((3, 3), DType::F32, &Device::Cpu)?;
        println!("{:?}", pick(x, &w)?.to_vec2::<f32>()?);
        Ok(())
    }
}

#[test]
fn tensor_parameters_without_a_clause_refuse_nothing_correct() {
    fp_body_use::run().unwrap();
    fp_broadcast_left::run().unwrap();
    fp_clause_run_matmul::run().unwrap();
    fp_impl_generic::run().unwrap();
    fp_matmul_front::run().unwrap();
    fp_trait_byvalue::run().unwrap();
}
