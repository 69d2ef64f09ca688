#!/usr/bin/env bash
# Measures what 100 contracted functions add to a debug build of a crate: builds a crate of 100
# functions with contracts and the same crate without them (dependencies built first, so only
# the crate itself is timed), three times each, and prints the median of each and the
# difference. With FORMS=v2 the contracts use the v2 forms (constants, braced dims, relations
# on config values, sequences, tuple returns). With FORMS=bodies both crates have contracts and
# realistic bodies (matmul chains, softmax, losses, reshape), and the second says
# `static = false` on each: the difference is what the compile-time reading of the bodies
# costs. Usage: [FORMS=v2|bodies] scripts/measure-compile-time.sh [work dir]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-$(mktemp -d)}
mkdir -p "$work"
forms=${FORMS:-v1}
# Both crates share one target dir: candle is built once, and only the crates are timed.
export CARGO_TARGET_DIR="$work/target"

make_crate() { # name, with_contracts (1/0)
  local dir="$work/$1"
  mkdir -p "$dir/src"
  cat > "$dir/Cargo.toml" <<TOML
[package]
name = "$1"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
candle-contracts = { path = "$root/runtime" }
candle-core = "0.11.1"
candle-nn = "0.11.1"

[workspace]
TOML
  cp "$root/Cargo.lock" "$dir/Cargo.lock"
  {
    echo "use candle_core::{Result, Tensor};"
    if [ "$forms" = bodies ]; then
      echo "use candle_core::D;"
      # The analysis on (1) or off on each function (0).
      off=""
      [ "$2" = 0 ] && off=", static = false"
    fi
    if [ "$forms" = v2 ]; then
      echo "pub const IMAGE_DIM: usize = 784;"
      echo "pub const LABELS: usize = 10;"
      echo "pub struct Cfg { pub hidden: usize, pub max_len: usize }"
    fi
    for i in $(seq 1 100); do
      if [ "$forms" = bodies ]; then
        case $((i % 4)) in
          0) echo "#[candle_contracts::contract(xs: f32[B, 784], w1: f32[128, 784], w2: f32[10, 128], target: u32[B] in 0..10$off)]"
             echo "pub fn f$i(xs: &Tensor, w1: &Tensor, w2: &Tensor, target: &Tensor) -> Result<Tensor> {"
             echo "    let h = xs.matmul(&w1.t()?)?.relu()?;"
             echo "    let logits = h.matmul(&w2.t()?)?;"
             echo "    let probs = candle_nn::ops::softmax(&logits, D::Minus1)?;"
             echo "    let _predicted = probs.argmax(D::Minus1)?;"
             echo "    candle_contracts::nn::cross_entropy(&logits, target)"
             echo "}" ;;
          1) echo "#[candle_contracts::contract(q: f32[B, T, E], k: f32[B, T, E], v: f32[B, T, E], return: f32[B, T, E]$off)]"
             echo "pub fn f$i(q: &Tensor, k: &Tensor, v: &Tensor) -> Result<Tensor> {"
             echo "    let scores = q.matmul(&k.transpose(1, 2)?)?.affine(0.125, 0.0)?;"
             echo "    let attention = candle_nn::ops::softmax_last_dim(&scores)?;"
             echo "    let mixed = if scores.dims().is_empty() { attention.clone() } else { attention };"
             echo "    mixed.matmul(v)"
             echo "}" ;;
          2) echo "#[candle_contracts::contract(images: f32[N, 28, 28], w: f32[10, 784], return: f32[N, 10]$off)]"
             echo "pub fn f$i(images: &Tensor, w: &Tensor) -> Result<Tensor> {"
             echo "    let (n, _, _) = images.dims3()?;"
             echo "    let flat = images.reshape((n, 784))?;"
             echo "    let logits = flat.matmul(&w.t()?)?;"
             echo "    let mean = logits.mean_keepdim(1)?;"
             echo "    logits.broadcast_sub(&mean)"
             echo "}" ;;
          3) echo "#[candle_contracts::contract(logits: f32[N, 1], target: f32[N, 1] in 0.0..=1.0, return: f32[]$off)]"
             echo "pub fn f$i(logits: &Tensor, target: &Tensor) -> Result<Tensor> {"
             echo "    let bce = candle_contracts::nn::binary_cross_entropy_with_logit(logits, target)?;"
             echo "    let mse = candle_nn::loss::mse(&logits.squeeze(1)?, &target.squeeze(1)?)?;"
             echo "    bce.add(&mse)"
             echo "}" ;;
        esac
        continue
      fi
      if [ "$forms" = v2 ]; then
        case $((i % 4)) in
          0) [ "$2" = 1 ] && echo "#[candle_contracts::contract(xs: f32[N, IMAGE_DIM], ys: u32[N] in 0..LABELS)]"
             echo "pub fn f$i(xs: &Tensor, ys: &Tensor) -> Result<Tensor> { let _ = ys; Ok(xs.clone()) }" ;;
          1) [ "$2" = 1 ] && echo "#[candle_contracts::contract(logits: f32[B, T, {cfg.hidden}], target: u32[B, T] in 0..{cfg.hidden}, T <= {cfg.max_len} - 2)]"
             echo "pub fn f$i(logits: &Tensor, target: &Tensor, cfg: &Cfg) -> Result<Tensor> { let _ = (target, cfg); Ok(logits.clone()) }" ;;
          2) [ "$2" = 1 ] && echo "#[candle_contracts::contract(items: [f32[E]; N], target: u32[N])]"
             echo "pub fn f$i(items: &[Tensor], target: &Tensor) -> Result<Tensor> { let _ = target; Tensor::stack(items, 0) }" ;;
          3) [ "$2" = 1 ] && echo "#[candle_contracts::contract(logits: f32[N, C], return.0: f32[N, C], return.1: f32[N, C])]"
             echo "pub fn f$i(logits: &Tensor) -> Result<(Tensor, Tensor)> { Ok((logits.clone(), logits.clone())) }" ;;
        esac
        continue
      fi
      if [ "$2" = 1 ]; then
        case $((i % 4)) in
          0) echo "#[candle_contracts::contract(logits: float[N, C], target: u8 | u32 | i64 [N] in 0..C)]" ;;
          1) echo "#[candle_contracts::contract(logits: f32[N, C] finite, target: i64[N] in 0..C ignore -100, N >= 1)]" ;;
          2) echo "#[candle_contracts::contract(logits: f32[B, T, C], target: u32[B, T] in 0..C, return: f32[B, T, C])]" ;;
          3) echo "#[candle_contracts::contract(logits: f32[.., C], target: f32[.., C] in 0.0..=1.0)]" ;;
        esac
      fi
      echo "pub fn f$i(logits: &Tensor, target: &Tensor) -> Result<Tensor> { let _ = target; Ok(logits.clone()) }"
    done
  } > "$dir/src/lib.rs"
}

time_build() { # name
  local dir="$work/$1"
  (cd "$dir" && cargo build -q 2>/dev/null)
  local times=()
  for _ in 1 2 3; do
    touch "$dir/src/lib.rs"
    local start end
    start=$(date +%s.%N)
    (cd "$dir" && cargo build -q)
    end=$(date +%s.%N)
    times+=("$(echo "$end - $start" | bc)")
  done
  printf '%s\n' "${times[@]}" | sort -n | sed -n 2p
}

make_crate with_contracts 1
make_crate without_contracts 0
with=$(time_build with_contracts)
without=$(time_build without_contracts)
if [ "$forms" = bodies ]; then
  printf 'bodies, debug build of 100 contracted functions: analysis on %.2f s, static = false %.2f s, added %.2f s\n' \
    "$with" "$without" "$(echo "$with - $without" | bc)"
  exit 0
fi
printf '%s forms, debug build of 100 functions: with contracts %.2f s, without %.2f s, added %.2f s\n' \
  "$forms" "$with" "$without" "$(echo "$with - $without" | bc)"
