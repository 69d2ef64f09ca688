//! `self.multi_query = true` (in a struct contract, `multi_query = true`): a `bool` field's
//! value, checked before the body runs; the compile-time check then skips the branch it rules
//! out (BigCode's multi-query and multi-head layouts in one body).

use candle_contracts::contract;
use candle_core::{DType, Device, Result, Tensor};

fn zeros(shape: &[usize]) -> Tensor {
    Tensor::zeros(shape, DType::F32, &Device::Cpu).unwrap()
}

struct Attention {
    multi_query: bool,
    num_heads: usize,
}

#[contract]
impl Attention {
    /// The multi-head branch would be `[B, H, T, D]`: a rank-4 return where the contract says
    /// rank 3; it never runs for this contract, so the check does not report it.
    #[contract(query: f32[B, T, E], self.multi_query = true, return: f32[B, T, E])]
    fn split(&self, query: &Tensor) -> Result<Tensor> {
        let (b, t, e) = query.dims3()?;
        let query = if self.multi_query {
            query.reshape((b, t * self.num_heads, e / self.num_heads))?
        } else {
            query.reshape((b, t, self.num_heads, e / self.num_heads))?
        };
        query.reshape((b, t, e))
    }

    #[contract(query: f32[B, T, E], self.multi_query = false)]
    fn heads(&self, query: &Tensor) -> Result<usize> {
        Ok(query.dim(2)? / self.num_heads)
    }
}

#[contract(multi_query = true, num_heads = H)]
struct Mqa {
    multi_query: bool,
    num_heads: usize,
}

#[contract]
impl Mqa {
    #[contract(x: f32[B, H])]
    fn heads(&self, x: &Tensor) -> Result<usize> {
        x.dim(1)
    }
}

#[test]
fn a_field_with_the_stated_value_runs() {
    let attn = Attention {
        multi_query: true,
        num_heads: 2,
    };
    assert_eq!(attn.split(&zeros(&[1, 3, 8])).unwrap().dims(), &[1, 3, 8]);
    let attn = Attention {
        multi_query: false,
        num_heads: 2,
    };
    assert_eq!(attn.heads(&zeros(&[1, 3, 8])).unwrap(), 4);
    let mqa = Mqa {
        multi_query: true,
        num_heads: 4,
    };
    assert_eq!(mqa.heads(&zeros(&[2, 4])).unwrap(), 4);
}

#[test]
fn a_field_with_the_other_value_is_named_before_the_body_runs() {
    let attn = Attention {
        multi_query: false,
        num_heads: 2,
    };
    let error = attn.split(&zeros(&[1, 3, 8])).unwrap_err().to_string();
    assert!(error.contains("self.multi_query = true"), "{error}");
    assert!(error.contains("`self.multi_query` is false"), "{error}");
    let attn = Attention {
        multi_query: true,
        num_heads: 2,
    };
    let error = attn.heads(&zeros(&[1, 3, 8])).unwrap_err().to_string();
    assert!(error.contains("self.multi_query = false"), "{error}");
    assert!(error.contains("`self.multi_query` is true"), "{error}");
}

#[test]
fn a_struct_contract_states_a_flag_for_every_method() {
    let mqa = Mqa {
        multi_query: false,
        num_heads: 4,
    };
    let error = mqa.heads(&zeros(&[2, 4])).unwrap_err().to_string();
    assert!(error.contains("self.multi_query = true"), "{error}");
    assert!(error.contains("`self.multi_query` is false"), "{error}");
}

#[contract(multi_query = true)]
struct Flagged {
    multi_query: bool,
}

#[contract]
impl Flagged {
    /// An empty contract list takes the struct's clauses, as the compile-time check takes
    /// them: the `narrow` past `3` below never runs with the flag checked.
    #[contract()]
    fn split(&self) -> Result<Tensor> {
        let q = Tensor::zeros((2, 3, 8), DType::F32, &Device::Cpu)?;
        let q = if self.multi_query {
            q.reshape((2, 6, 4))?
        } else {
            q.clone()
        };
        q.narrow(1, 0, 5)
    }

    /// No `self`: no struct clause, nothing checked.
    #[contract()]
    fn new(multi_query: bool) -> Self {
        Flagged { multi_query }
    }
}

#[test]
fn an_empty_contract_list_in_the_impl_takes_the_structs_clauses() {
    assert_eq!(Flagged::new(true).split().unwrap().dims(), &[2, 5, 4]);
    let error = Flagged::new(false).split().unwrap_err().to_string();
    assert!(error.contains("self.multi_query = true"), "{error}");
}
