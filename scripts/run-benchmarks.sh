#!/usr/bin/env bash
# Runs every Google Benchmark program in the build tree and one long simulated scenario, and
# prints the figures the README and the issues quote. Usage: scripts/run-benchmarks.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${1:-build}

for b in "$BUILD_DIR"/bench/*_bench; do
  [ -x "$b" ] || continue
  echo "== $(basename "$b")"
  "$b" --benchmark_min_time=0.5
done

echo "== tessera demo (wall time)"
/usr/bin/time -f "demo: %e s wall, %M KiB max RSS" "$BUILD_DIR/bin/tessera" demo --quiet >/dev/null

trace=../shared/data/llm_traces/azure_llm_2023/AzureLLMInferenceTrace_code.csv
if [ -f "$trace" ]; then
  for mode in exclusive time-slicing mps static-partitions lithos cogpu tpot-first; do
    echo "== one simulated hour, Azure code trace + ResNet-50 training, mode $mode (wall time)"
    /usr/bin/time -f "$mode: %e s wall for 3600 s simulated, %M KiB max RSS" \
      "$BUILD_DIR/bin/tessera" simulate examples/azure-code-1h.yaml --mode "$mode" --quiet >/dev/null
  done
else
  echo "(skipping the one-hour scenario: $trace not found)"
fi
