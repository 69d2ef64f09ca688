#!/usr/bin/env bash
# Measures what 100 contracted functions add to a debug build of a crate: builds a crate of 100
# functions with contracts and the same crate without them (dependencies built first, so only
# the crate itself is timed), three times each, and prints the median of each and the
# difference. Usage: scripts/measure-compile-time.sh [work dir]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-$(mktemp -d)}
mkdir -p "$work"

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

[workspace]
TOML
  cp "$root/Cargo.lock" "$dir/Cargo.lock"
  {
    echo "use candle_core::{Result, Tensor};"
    for i in $(seq 1 100); do
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
printf 'debug build of 100 functions: with contracts %.2f s, without %.2f s, added %.2f s\n' \
  "$with" "$without" "$(echo "$with - $without" | bc)"
