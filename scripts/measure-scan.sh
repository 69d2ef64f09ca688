#!/usr/bin/env bash
# The range scan against candle's `sum_all` (issue 11, item 13): builds the two scan benches,
# then RUNS times waits until the CPUs have been at least IDLE% idle for 2 s and runs the plain
# timing loop (benches/scan_loop.rs) and the criterion group (benches/scan.rs, range only),
# printing the load and the idle share after each, so runs a neighbour disturbed can be told
# apart. Usage: scripts/measure-scan.sh [RUNS=3] [IDLE=80]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
want=${2:-80}

idle() {
  local u n s i w x y z t1 i1 t2 i2
  read -r _ u n s i w x y z _ < /proc/stat; t1=$((u + n + s + i + w + x + y + z)); i1=$i
  sleep 2
  read -r _ u n s i w x y z _ < /proc/stat; t2=$((u + n + s + i + w + x + y + z)); i2=$i
  echo $((100 * (i2 - i1) / (t2 - t1)))
}
wait_idle() {
  until [ "$(idle)" -ge "$want" ]; do sleep 3; done
  echo "== $1 $(date +%T), load $(cut -d' ' -f1-3 /proc/loadavg)"
}

cargo bench -p candle-contracts --bench scan_loop --bench scan --no-run
for run in $(seq "$runs"); do
  wait_idle "plain loop, run $run"
  SCAN_LOOP_ROUNDS=5 cargo bench -q -p candle-contracts --bench scan_loop 2>/dev/null | grep -E 'round|scan /'
  echo "   idle after: $(idle)%"
  wait_idle "criterion, run $run"
  cargo bench -q -p candle-contracts --bench scan -- \
    'range_f32_16384x1000/(candle_sum_all|contract_in_range)' --noplot \
    --warm-up-time 1 --measurement-time 3 2>/dev/null | grep -E '^range|time: +\[[0-9.]+ ms'
  echo "   idle after: $(idle)%"
done
