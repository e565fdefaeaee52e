#!/usr/bin/env bash
# The GPU check: on a machine with an NVIDIA GPU, the driver and the CUDA toolkit, builds tessera
# (Release, benchmarks on) and runs everything that needs a real GPU, each step under a time limit
# and none stopping the others:
#   build        cmake + build of tessera, the CUDA backend's tests and benchmarks
#   nvidia-smi   the GPU as the driver describes it (skipped where nvidia-smi is absent)
#   device-facts NVML clocks, power, energy and lock permission (RealGpuNvmlGpuControl prints
#                them as JSON) and the driver's device description (RealGpuDriverLibrary)
#   realgpu-tests  ctest -R '^RealGpu' (JUnit XML beside the report)
#   determinism  tessera determinism --backend cuda --json
#   calibrate    tessera calibrate --backend cuda --json
#   demo         tessera demo --backend cuda (cogpu, tpot-first, lithos; 5 s each) --json
#   colocation   two processes under tesserad: an inference (a decode loop in CUDA graphs) and a
#                trainer (a compute loop), each alone, then together under the daemon with green
#                contexts under priority-fill (fixed and --slo-guided) and cogpu (with MPS when
#                nvidia-cuda-mps-control is there), priority-fill without MPS, MPS percentages
#                (the trainer capped at 50%, with MPS) and the gate: the inference's step P50/P99
#                against alone, the trainer's rate, what each interposer saw
#                (DEVICE_CHECK_COLOCATION_MS per run, default 5000)
#   bench:NAME   every bench/*cuda_*_bench and the interposer's (Google Benchmark, JSON)
# and writes ONE JSON report: a section per step with its exit code, seconds, whether it timed
# out, its JSON output embedded where it wrote valid JSON, and the tail of its text.
#
# Usage: scripts/device-check.sh [REPORT.json]
#   default report: $OUT/device-check.json when $OUT is set, else BUILD_DIR/device-check.json.
# Environment: DEVICE_CHECK_BUILD_DIR (default build-device), DEVICE_CHECK_SKIP_BUILD=1 (use the
# build dir as it is), DEVICE_CHECK_TARGETS (default: tessera and the cuda/interpose tests and
# benchmarks; "all" builds everything), DEVICE_CHECK_BUILD_TIMEOUT (s, default 300),
# DEVICE_CHECK_STEP_TIMEOUT (s, default 90), DEVICE_CHECK_BENCH_MIN_TIME (s, default 0.05).
#
# Only bash and coreutils are assumed (no python, no jq): the report is assembled from JSON
# documents and strings escaped here. Without a GPU every step fails or skips and the report is
# still valid JSON.

set -u
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD
BUILD=${DEVICE_CHECK_BUILD_DIR:-$ROOT/build-device}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
if [ $# -ge 1 ]; then
  REPORT=$1
elif [ -n "${OUT:-}" ]; then
  REPORT=$OUT/device-check.json
else
  REPORT=$BUILD/device-check.json
fi
REPORT_DIR=$(dirname "$REPORT")
mkdir -p "$REPORT_DIR" "$BUILD" || exit 1
BUILD_TIMEOUT=${DEVICE_CHECK_BUILD_TIMEOUT:-300}
STEP_TIMEOUT=${DEVICE_CHECK_STEP_TIMEOUT:-90}
BENCH_MIN_TIME=${DEVICE_CHECK_BENCH_MIN_TIME:-0.05}
JOBS=$(nproc 2>/dev/null || echo 4)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/device-check.XXXXXX") || exit 1
trap 'rm -rf "$WORK"' EXIT

# ---------------------------------------------------------------------------------------------
# JSON helpers

# stdin -> one JSON string: the last 80 lines (at most 8000 bytes), invalid UTF-8 and control
# characters other than tab/newline/CR dropped, the rest escaped.
json_text() {
  local text
  text=$(tail -n 80 | tail -c 8000)
  if command -v iconv >/dev/null 2>&1; then
    text=$(printf '%s' "$text" | iconv -c -f UTF-8 -t UTF-8 2>/dev/null)
  else
    text=$(printf '%s' "$text" | LC_ALL=C tr -d '\200-\377')
  fi
  printf '%s' "$text" | LC_ALL=C tr -d '\000-\010\013\014\016-\037\177' |
    LC_ALL=C awk 'BEGIN { ORS = ""; print "\"" }
      { if (NR > 1) print "\\n"
        gsub(/\\/, "\\\\"); gsub(/"/, "\\\""); gsub(/\t/, "\\t"); gsub(/\r/, "\\r"); print }
      END { print "\"" }'
}

# A string argument as a JSON string.
json_str() { printf '%s' "$1" | json_text; }

# Whether FILE holds one JSON document: checked with jq or python3 where present; otherwise a
# shape check (non-empty, starts with { or [ and ends with } or ]) on output of a step that
# exited 0 (its writer finished).
json_ok() {
  local file=$1
  [ -s "$file" ] || return 1
  if command -v jq >/dev/null 2>&1; then
    jq -e . "$file" >/dev/null 2>&1
    return
  fi
  if command -v python3 >/dev/null 2>&1; then
    python3 -m json.tool "$file" >/dev/null 2>&1
    return
  fi
  local first last
  first=$(LC_ALL=C tr -d ' \t\r\n' <"$file" | head -c 1)
  last=$(LC_ALL=C tr -d ' \t\r\n' <"$file" | tail -c 1)
  case "$first$last" in '{}' | '[]') return 0 ;; *) return 1 ;; esac
}

SECTIONS=()  # '"name": {...}'
SUMMARY=()   # 'name rc seconds'

# add_section NAME RC SECONDS TIMED_OUT SKIPPED LOG [JSON_FILE [TRUSTED]]
# JSON_FILE is embedded as the section's output when it passes json_ok, and, unless TRUSTED (made
# here from the step's text), only when the step exited 0.
add_section() {
  local name=$1 rc=$2 secs=$3 timed_out=$4 skipped=$5 log=$6 json=${7:-} trusted=${8:-}
  local output=null
  if [ -n "$json" ] && { [ "$rc" = 0 ] || [ -n "$trusted" ]; } && json_ok "$json"; then
    output=$(cat "$json")
  fi
  local text
  text=$( (cat "$log" 2>/dev/null || true) | json_text)
  SECTIONS+=("$(printf '%s: {"exit_code": %s, "seconds": %s, "timed_out": %s, "skipped": %s, "output": %s, "text": %s}' \
    "$(json_str "$name")" "$rc" "$secs" "$timed_out" "$skipped" "$output" "$text")")
  local status=ok
  [ "$skipped" = true ] && status=skipped
  [ "$skipped" = false ] && [ "$rc" != 0 ] && status=failed
  SUMMARY+=("$(printf '%-34s %-8s rc=%-4s %8ss' "$name" "$status" "$rc" "$secs")")
}

now_ms() { date +%s%3N; }
seconds_since() {
  local ms=$(($(now_ms) - $1))
  printf '%d.%03d' $((ms / 1000)) $((ms % 1000))
}

# run_step NAME LIMIT JSON_FILE POST CMD...: runs CMD under `timeout`, its output to NAME's log.
# POST ("-" for none) is a function called with the log and JSON_FILE that makes JSON_FILE from
# the log (the output is then trusted whatever the exit code).
run_step() {
  local name=$1 limit=$2 json=$3 post=$4
  shift 4
  local log
  log=$WORK/$(printf '%s' "$name" | tr -c 'A-Za-z0-9_.-' '_').log
  local start rc timed_out=false trusted=
  start=$(now_ms)
  echo "== $name (limit ${limit}s)"
  timeout --kill-after=10 "$limit" "$@" >"$log" 2>&1 </dev/null
  rc=$?
  if [ $rc = 124 ] || [ $rc = 137 ]; then timed_out=true; fi
  if [ "$post" != - ]; then
    "$post" "$log" "$json"
    trusted=1
  fi
  add_section "$name" "$rc" "$(seconds_since "$start")" "$timed_out" false "$log" "$json" "$trusted"
}

skip_step() {  # NAME REASON: nothing to do here (not a failure)
  local log=$WORK/skip.log
  printf '%s\n' "$2" >"$log"
  echo "== $1: skipped ($2)"
  add_section "$1" 0 0 false true "$log"
}

missing_step() {  # NAME REASON: what the step runs was not built (a failure, exit code 127)
  local log=$WORK/missing.log
  printf '%s\n' "$2" >"$log"
  echo "== $1: not run ($2)"
  add_section "$1" 127 0 false false "$log"
}

# ---------------------------------------------------------------------------------------------
# Steps

build() {
  local generator=()
  if command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); fi
  if [ ! -f "$BUILD/CMakeCache.txt" ]; then
    cmake -S "$ROOT" -B "$BUILD" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
      -DTESSERA_BUILD_BENCH=ON || return
  else
    cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DTESSERA_BUILD_BENCH=ON || return
  fi
  local targets=${DEVICE_CHECK_TARGETS:-}
  if [ -z "$targets" ]; then
    # tessera itself, and every target of the CUDA backend and the interposer: their tests hold
    # the RealGpu ones, their benchmarks are the cuda_* ones.
    targets="tessera $(cmake --build "$BUILD" --target help 2>/dev/null |
      grep -oE '(^|[ .:])tessera_(cuda|interpose|fake|determinism)[A-Za-z0-9_]*' | tr -d ' .:' | sort -u | tr '\n' ' ')"
  fi
  echo "targets: $targets"
  if [ "$targets" = all ]; then
    cmake --build "$BUILD" -j "$JOBS"
  else
    # shellcheck disable=SC2086
    cmake --build "$BUILD" -j "$JOBS" --target $targets
  fi
}

exe() { [ -x "$1" ] && printf '%s' "$1"; }

device_facts() {
  local cuda_tests=$BUILD/tests/backends/nvml/tessera_nvml_tests
  local driver_tests=$BUILD/tests/backends/cuda/tessera_cuda_driver_tests
  local rc=0
  if [ -x "$cuda_tests" ]; then
    "$cuda_tests" --gtest_filter='RealGpuNvml*' || rc=$?
  else
    echo "not built: $cuda_tests"
    rc=127
  fi
  if [ -x "$driver_tests" ]; then
    "$driver_tests" --gtest_filter='RealGpuDriverLibrary*' || rc=$?
  else
    echo "not built: $driver_tests"
    rc=127
  fi
  return $rc
}

# The two-process run; writes one JSON object to $1. The TPOT target the inference registers with
# is twice its step time alone (P50), so the policy has room to give the trainer SMs.
colocation() {
  local out=$1
  local app=$BUILD/tests/backends/interpose/colocation_app
  local lib=$BUILD/src/tessera/backends/interpose/libtessera_interpose.so
  local ms=${DEVICE_CHECK_COLOCATION_MS:-5000} sock=$WORK/tesserad.sock
  for f in "$app" "$lib" "$TESSERA"; do
    [ -e "$f" ] || { echo "not built: $f"; return 127; }
  done
  json_or_null() { if [ -s "$1" ] && json_ok "$1"; then cat "$1"; else printf null; fi; }
  "$app" decode "$ms" >"$WORK/hp-alone.json" || return 1
  "$app" gemm "$ms" >"$WORK/be-alone.json" || return 1
  local p50 tpot
  p50=$(sed -n 's/.*"p50_ms": \([0-9.]*\).*/\1/p' "$WORK/hp-alone.json")
  tpot=$(awk -v p="${p50:-1}" 'BEGIN { printf "%.3f", 2 * p }')
  local body
  body=$(printf '"hp_alone": %s, "be_alone": %s, "tpot_slo_ms": %s' \
    "$(json_or_null "$WORK/hp-alone.json")" "$(json_or_null "$WORK/be-alone.json")" "$tpot")
  local run setup policy mechanism dpid mps_args policy_args be_env
  for run in green-contexts+mps/priority-fill green-contexts+mps/priority-fill-slo \
    green-contexts+mps/cogpu green-contexts/priority-fill mps-percentage+mps/priority-fill \
    gate/priority-fill; do
    setup=${run%/*}
    policy=${run#*/}
    policy_args=(--policy "$policy")
    [ "$policy" = priority-fill-slo ] && policy_args=(--policy priority-fill --slo-guided)
    mechanism=${setup%+mps}
    mps_args=()
    if [ "$setup" != "$mechanism" ]; then
      command -v nvidia-cuda-mps-control >/dev/null 2>&1 || { echo "$run: no MPS here"; continue; }
      # The daemon runs the MPS control daemon; the tenants are its clients.
      mps_args=(--mps --mps-pipe-dir "$WORK/mps")
      export CUDA_MPS_PIPE_DIRECTORY=$WORK/mps
    fi
    # Under MPS percentages the trainer's share is its cap.
    be_env=()
    [ "$mechanism" = mps-percentage ] && be_env=(TESSERA_SM_SHARE=0.5)
    rm -f "$sock"
    run=${run//\//-}
    "$TESSERA" daemon --mechanism "$mechanism" "${policy_args[@]}" --socket "$sock" \
      "${mps_args[@]}" 2>"$WORK/daemon-$run.log" &
    dpid=$!
    for _ in $(seq 100); do "$TESSERA" ctl list --socket "$sock" >/dev/null 2>&1 && break; sleep 0.1; done
    LD_PRELOAD=$lib TESSERA_DAEMON_SOCKET=$sock TESSERA_TENANT=chat \
      TESSERA_CLASS=latency-critical TESSERA_TPOT_SLO_MS=$tpot \
      TESSERA_INTERPOSE_LOG=$WORK/hp-$run.summary.json "$app" decode "$ms" >"$WORK/hp-$run.json" &
    local hp=$!
    env "${be_env[@]}" LD_PRELOAD=$lib TESSERA_DAEMON_SOCKET=$sock TESSERA_TENANT=train \
      TESSERA_CLASS=best-effort TESSERA_INTERPOSE_LOG=$WORK/be-$run.summary.json "$app" gemm "$ms" >"$WORK/be-$run.json" &
    local be=$!
    sleep 1
    "$TESSERA" ctl list --json --socket "$sock" >"$WORK/ctl-$run.json" 2>&1
    wait $hp
    wait $be
    kill -TERM $dpid
    wait $dpid
    unset CUDA_MPS_PIPE_DIRECTORY
    body+=$(printf ', "%s": {"hp": %s, "be": %s, "hp_interposer": %s, "be_interposer": %s, "daemon_after_1s": %s}' \
      "$run" "$(json_or_null "$WORK/hp-$run.json")" "$(json_or_null "$WORK/be-$run.json")" \
      "$(json_or_null "$WORK/hp-$run.summary.json")" "$(json_or_null "$WORK/be-$run.summary.json")" \
      "$(json_or_null "$WORK/ctl-$run.json")")
  done
  printf '{%s}\n' "$body" >"$out"
}

realgpu_tests() {
  local junit_args=()
  if ctest --help 2>/dev/null | grep -q -- '--output-junit'; then
    junit_args=(--output-junit "$REPORT_DIR/realgpu-junit.xml")
  fi
  cd "$BUILD" && ctest -R '^RealGpu' --no-tests=error --timeout 120 "${junit_args[@]}"
}

# The line the RealGpu NVML test prints: "tessera-device-facts: {json}".
facts_from_log() { sed -n 's/^tessera-device-facts: //p' "$1" | head -n 1 >"$2"; }

# LOG's ctest lines "  3/12 Test  #7: RealGpuX.Y .....   Passed    0.12 sec" as a JSON array in
# JSON_FILE.
ctest_results_json() {
  LC_ALL=C awk 'BEGIN { printf "["; n = 0 }
    /Test +#[0-9]+: / {
      line = $0
      sub(/^.*Test +#[0-9]+: /, "", line)
      name = line; sub(/ .*$/, "", name)
      result = "Unknown"
      if (line ~ /Passed/) result = "Passed"
      else if (line ~ /Skipped/) result = "Skipped"
      else if (line ~ /Not Run/) result = "NotRun"
      else if (line ~ /Timeout/) result = "Timeout"
      else if (line ~ /Failed|Exception|SEGFAULT|Child aborted/) result = "Failed"
      secs = line
      if (match(secs, /[0-9.]+ sec/)) secs = substr(secs, RSTART, RLENGTH - 4); else secs = "null"
      gsub(/\\/, "\\\\", name); gsub(/"/, "\\\"", name)
      printf "%s{\"test\": \"%s\", \"result\": \"%s\", \"seconds\": %s}", (n++ ? ", " : ""), name, result, secs
    }
    END { printf "]" }' "$1" >"$2"
}

STARTED=$(date -u +%Y-%m-%dT%H:%M:%SZ)
COMMIT=$(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo unknown)
DIRTY=false
[ -n "$(git -C "$ROOT" status --porcelain 2>/dev/null | head -1)" ] && DIRTY=true

if [ "${DEVICE_CHECK_SKIP_BUILD:-0}" = 1 ]; then
  skip_step build "DEVICE_CHECK_SKIP_BUILD=1: using $BUILD as it is"
else
  run_step build "$BUILD_TIMEOUT" "" - bash -c "$(declare -f build); ROOT='$ROOT' BUILD='$BUILD' JOBS='$JOBS' DEVICE_CHECK_TARGETS='${DEVICE_CHECK_TARGETS:-}'; build"
fi

if command -v nvidia-smi >/dev/null 2>&1; then
  run_step nvidia-smi "$STEP_TIMEOUT" "" - bash -c \
    'nvidia-smi --query-gpu=index,name,uuid,driver_version,pstate,clocks.sm,clocks.max.sm,clocks.mem,power.draw,power.limit,memory.total,mig.mode.current,compute_mode --format=csv; nvidia-smi -q | head -n 120'
else
  skip_step nvidia-smi "nvidia-smi not found on PATH (no NVIDIA driver here?)"
fi

run_step device-facts "$STEP_TIMEOUT" "$WORK/device-facts.json" facts_from_log \
  bash -c "BUILD='$BUILD'; $(declare -f device_facts); device_facts"

run_step realgpu-tests "$((STEP_TIMEOUT * 3))" "$WORK/realgpu-results.json" ctest_results_json \
  bash -c "BUILD='$BUILD' REPORT_DIR='$REPORT_DIR'; $(declare -f realgpu_tests); realgpu_tests"

TESSERA=$BUILD/bin/tessera
if [ -x "$TESSERA" ]; then
  run_step determinism "$STEP_TIMEOUT" "$WORK/determinism.json" - \
    "$TESSERA" determinism --backend cuda --quiet --json "$WORK/determinism.json"
  run_step calibrate "$STEP_TIMEOUT" "$WORK/calibrate.json" - \
    "$TESSERA" calibrate --backend cuda --json "$WORK/calibrate.json"
  # The policies driving the GPU through CudaGpu: the demo's tenants, 5 s of wall time per mode.
  run_step demo "$STEP_TIMEOUT" "$WORK/demo.json" - \
    "$TESSERA" demo --backend cuda --duration 5s -q --mode cogpu --mode tpot-first \
    --mode lithos --json "$WORK/demo.json"
  run_step colocation "$((STEP_TIMEOUT * 2))" "$WORK/colocation.json" - \
    bash -c "BUILD='$BUILD' WORK='$WORK' TESSERA='$TESSERA' DEVICE_CHECK_COLOCATION_MS='${DEVICE_CHECK_COLOCATION_MS:-}'; $(declare -f json_ok colocation); colocation '$WORK/colocation.json'"
else
  missing_step determinism "not built: $TESSERA"
  missing_step calibrate "not built: $TESSERA"
  missing_step demo "not built: $TESSERA"
  missing_step colocation "not built: $TESSERA"
fi

benches=0
for b in "$BUILD"/bench/*cuda_*_bench "$BUILD"/bench/tessera_interpose_bench; do
  [ -x "$b" ] || continue
  benches=$((benches + 1))
  name=$(basename "$b")
  run_step "bench:$name" "$STEP_TIMEOUT" "$WORK/$name.json" - \
    "$b" --benchmark_out="$WORK/$name.json" --benchmark_out_format=json \
    --benchmark_min_time="$BENCH_MIN_TIME"
done
[ $benches = 0 ] && missing_step bench "no $BUILD/bench/*cuda_*_bench built"

# ---------------------------------------------------------------------------------------------
# The report

failed=()
for line in "${SUMMARY[@]}"; do
  case $line in *" failed "*) failed+=("$(json_str "${line%% *}")") ;; esac
done
{
  printf '{"tessera_device_check": 1,\n "started_utc": %s,\n "finished_utc": %s,\n' \
    "$(json_str "$STARTED")" "$(json_str "$(date -u +%Y-%m-%dT%H:%M:%SZ)")"
  printf ' "host": %s,\n "commit": %s,\n "worktree_dirty": %s,\n "build_dir": %s,\n' \
    "$(json_str "$(hostname 2>/dev/null || echo unknown)")" "$(json_str "$COMMIT")" "$DIRTY" \
    "$(json_str "$BUILD")"
  printf ' "failed_steps": [%s],\n "steps": {\n' "$(IFS=,; echo "${failed[*]:-}")"
  for i in "${!SECTIONS[@]}"; do
    [ "$i" -gt 0 ] && printf ',\n'
    printf '  %s' "${SECTIONS[$i]}"
  done
  printf '\n }\n}\n'
} >"$REPORT.tmp" && mv "$REPORT.tmp" "$REPORT"

echo
echo "device check: ${#SUMMARY[@]} steps, ${#failed[@]} failed; report: $REPORT"
printf '  %s\n' "${SUMMARY[@]}"
if json_ok "$REPORT"; then :; else echo "warning: the report did not pass the JSON check" >&2; fi
exit 0
