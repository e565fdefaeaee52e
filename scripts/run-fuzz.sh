#!/usr/bin/env bash
# Builds every libFuzzer target in tests/fuzz with Debian's clang 19 and runs each for a while
# from its seeds, stopping at the first input that crashes, hangs or breaks an invariant.
#   scripts/run-fuzz.sh [SECONDS_PER_TARGET]     (default 20: the smoke run CI does)
# Seeds: the committed ones (tests/fuzz/corpus/<target>/, examples/, tests/k8s/golden) and, where
# ../shared/data is present, inputs made from its topology files and traces. What a run learns is
# kept in $BUILD_DIR/corpus/<target>/, so a later, longer run starts from it. A failing input is
# left as $BUILD_DIR/artifacts/<target>-crash-<hash> (or -leak-, -timeout-, -oom-); rerun it with
# `$BUILD_DIR/tests/fuzz/<target> FILE`. Exit status 1 when any target failed.
set -euo pipefail
cd "$(dirname "$0")/.."

SECONDS_PER_TARGET=${1:-20}
BUILD_DIR=${FUZZ_BUILD_DIR:-build-fuzz}
JOBS=${JOBS:-$(nproc)}
DATA=../shared/data

./scripts/install-deps.sh clang
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_COMPILER=clang++-19 -DTESSERA_BUILD_FUZZ=ON >/dev/null
cmake --build "$BUILD_DIR" -j "$JOBS" --target tessera_fuzzers

# Inputs made from the public data: the topology fuzzer's first byte picks the reader (0 NCCL
# XML, 1 tessera JSON, 2 hwloc XML); the trace fuzzers get the heads of real traces.
generated="$BUILD_DIR/seeds"
rm -rf "$generated"
mkdir -p "$generated/topology" "$generated/trace_csv" "$generated/trace_jsonl"
for f in "$DATA"/topology/nccl_azure/*.xml; do
  [ -f "$f" ] && { printf '\0'; cat "$f"; } > "$generated/topology/nccl-$(basename "$f")"
done
for f in "$DATA"/topology/hwloc/*.xml; do
  [ -f "$f" ] && { printf '\2'; cat "$f"; } > "$generated/topology/hwloc-$(basename "$f")"
done
for f in "$DATA"/llm_traces/azure_llm_2023/*.csv; do
  [ -f "$f" ] && head -n 20 "$f" > "$generated/trace_csv/$(basename "$f")"
done
for f in "$DATA"/llm_traces/mooncake_fast25/*.jsonl; do
  [ -f "$f" ] && head -n 20 "$f" > "$generated/trace_jsonl/$(basename "$f")"
done

# target, the longest input it is given, and its seed folders.
targets=(
  "config 4096 examples"
  "scenario 4096 examples"
  "jobs_file 4096 examples/mig"
  "trace_csv 4096 tests/fuzz/corpus/trace_csv $generated/trace_csv"
  "trace_jsonl 4096 tests/fuzz/corpus/trace_jsonl $generated/trace_jsonl"
  "topology 65536 tests/fuzz/corpus/topology $generated/topology"
  "extender 8192 tests/k8s/golden $DATA/k8s/extender/wire_examples"
  "agent_allocations 4096 tests/fuzz/corpus/agent_allocations"
  "control_protocol 4096 tests/fuzz/corpus/control_protocol"
  "dra_claim 8192 tests/fuzz/corpus/dra_claim"
  "measurement_csv 4096 tests/fuzz/corpus/measurement_csv tests/cli/validate"
)

mkdir -p "$BUILD_DIR/artifacts"
failed=()
for entry in "${targets[@]}"; do
  read -r name max_len seeds <<<"$entry"
  binary="$BUILD_DIR/tests/fuzz/tessera_${name}_fuzz"
  corpus="$BUILD_DIR/corpus/$name"
  mkdir -p "$corpus"
  existing=()
  for d in $seeds; do [ -d "$d" ] && existing+=("$d"); done
  log="$BUILD_DIR/artifacts/$name.log"
  echo "== $name: ${SECONDS_PER_TARGET} s from ${existing[*]:-no seeds}"
  if "$binary" -max_total_time="$SECONDS_PER_TARGET" -max_len="$max_len" -timeout=10 \
      -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$BUILD_DIR/artifacts/$name-" \
      "$corpus" "${existing[@]}" >"$log" 2>&1; then
    # libFuzzer's last line: "#3719<TAB>DONE   cov: 710 ft: 3819 corp: 150/147Kb ... rss: 340Mb".
    coverage=$(grep -aE '^#[0-9]+[[:space:]]+DONE' "$log" | tail -n 1 |
      sed -E 's/.*(cov: [0-9]+ ft: [0-9]+ corp: [^ ]+).*(rss: [^ ]+).*/\1, \2/' || true)
    execs=$(grep -aE '^stat::number_of_executed_units:' "$log" | awk '{print $2}' || true)
    echo "   ok: ${execs:-?} executions; ${coverage:-no final statistics}"
  else
    failed+=("$name")
    echo "   FAILED; the input and the report:"
    ls "$BUILD_DIR/artifacts/$name-"* 2>/dev/null | sed 's/^/     /' || true
    grep -E 'ERROR|SUMMARY|fuzz_check|Test unit written' "$log" | head -n 20 | sed 's/^/     /' || true
  fi
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: ${#failed[@]} target(s) failed: ${failed[*]} (logs in $BUILD_DIR/artifacts/)" >&2
  exit 1
fi
echo "fuzz: all ${#targets[@]} targets ran ${SECONDS_PER_TARGET} s each without a failure"
