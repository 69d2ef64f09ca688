#!/usr/bin/env bash
# The device checks, on a machine with an NVIDIA GPU: a CUDA build, the device path on real
# CUDA tensors (the verdicts of the CPU scan, one transfer per call), a bad target through a
# contracted loss followed by a good training step in the same process, and the nn benches on
# the device. Prints one summary line; exits 0 at once where there is no GPU, 1 if a check
# failed. Each check's output is also kept in target/gpu-check/<check>.log.
#
#   scripts/gpu-check.sh                       # all checks
#   GPU_CHECK_BENCH=0 scripts/gpu-check.sh     # without the benches
#   NN_BENCH_SECONDS=3 scripts/gpu-check.sh    # longer bench measurements (default 1 s each)
set -euo pipefail
cd "$(dirname "$0")/.."

device=""
if command -v nvidia-smi >/dev/null 2>&1; then
    device=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1 || true)
fi
if [[ -z "$device" ]]; then
    echo "gpu-check: no NVIDIA GPU found (nvidia-smi missing or no device): nothing to check"
    exit 0
fi

# candle's kernels are built for this compute capability ("9.0" from nvidia-smi, "90" for nvcc).
if [[ -z "${CUDA_COMPUTE_CAP:-}" ]]; then
    CUDA_COMPUTE_CAP=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -n 1 | tr -d ' .')
    export CUDA_COMPUTE_CAP
fi
echo "gpu-check: device $device, CUDA_COMPUTE_CAP=$CUDA_COMPUTE_CAP"

features=(--features candle-contracts/cuda)
logs=target/gpu-check
mkdir -p "$logs"
passed=0
failed=0
failures=()

# check NAME COMMAND...: runs the command, its output to the terminal and to NAME.log, and
# counts it; a failure is recorded, never fatal.
check() {
    local name=$1
    shift
    echo "gpu-check: == $name"
    if "$@" 2>&1 | tee "$logs/$name.log"; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        failures+=("$name")
    fi
}

# on_device TEST: one test of tests/tests/on_device.rs on the CUDA device; fails unless
# exactly that test ran and passed (a skipped or filtered-out test is a failure here).
on_device() {
    CANDLE_CONTRACTS_TEST_DEVICE=cuda cargo test --release -p candle-contracts-tests \
        "${features[@]}" --test on_device -- --exact "$1" --nocapture 2>&1 \
        | tee /dev/stderr | grep "test result: ok. 1 passed" >/dev/null
}

check build cargo build --release --workspace --all-targets "${features[@]}"
# The forced-path suite in a CUDA build (CPU tensors, the device path's code compiled for CUDA).
check forced-device-path cargo test --release -p candle-contracts-tests "${features[@]}" \
    --test e2e device_path
check device-agrees-with-cpu-scan on_device the_device_agrees_with_the_cpu_scan
check one-transfer-per-call on_device one_transfer_per_call_on_the_device
check masks-and-derived-subjects on_device masks_and_derived_subjects_on_the_device
check bad-target-then-good-step on_device a_bad_target_then_a_good_step_in_the_same_process
if [[ "${GPU_CHECK_BENCH:-1}" != 0 ]]; then
    check nn-benches env NN_BENCH_DEVICE=cuda NN_BENCH_SECONDS="${NN_BENCH_SECONDS:-1}" \
        cargo bench -p candle-contracts --features cuda --bench nn -- --warm-up-time 1
fi

echo "gpu-check: $passed checks passed, $failed failed (device: $device)"
if ((failed > 0)); then
    echo "gpu-check: failed: ${failures[*]} (logs in $logs/)"
    exit 1
fi
