//! Blocks of real candle-transformers models, ported as candle writes them, under the
//! compile-time analysis: each file must compile with the analysis on, and runs one forward
//! pass on small random weights with its output dims asserted.

// candle writes `VarBuilder` without its lifetime.
#![allow(elided_lifetimes_in_paths)]

mod bert;
mod bigcode;
mod clip;
mod convnext;
mod gemma;
mod llama;
mod mamba;
mod mistral;
mod phi;
mod qwen2;
mod qwen3;
mod resnet;
mod stable_diffusion;
mod t5;
mod vit;
mod whisper;
