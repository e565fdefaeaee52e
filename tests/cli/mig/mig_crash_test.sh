#!/usr/bin/env bash
# `tessera mig run --backend nvml` against the fake libnvidia-ml with its GPU state kept in a
# file (FAKE_NVML_STATE), as a driver keeps it across processes:
#   1. SIGTERM while jobs run: the jobs' processes are stopped, every instance the run created is
#      destroyed, the exit status is 143 and the journal keeps the unfinished jobs;
#   2. the same command then runs only those, and SIGKILL takes the manager down mid-run: its
#      jobs live on as orphans and its instances stay;
#   3. the same command again stops the orphans, destroys the instances, runs the jobs that had
#      not finished, and removes the journal. Each job ran to its end exactly once.
# Usage: mig_crash_test.sh TESSERA FAKE_NVML_LIBRARY JOBS_FILE WORK_DIR
set -euo pipefail
tessera=$1 fake=$2 jobs=$3 work=$4
rm -rf "$work" && mkdir -p "$work"
export TESSERA_NVML_LIBRARY=$fake FAKE_NVML_STATE=$work/gpu.json
export TESSERA_TEST_LOG=$work/ran.log TESSERA_TEST_GATE=$work/gate
journal=$work/journal
: >"$TESSERA_TEST_LOG"

fail() { echo "FAIL: $*"; echo "--- journal"; cat "$journal" 2>/dev/null || true; echo "--- gpu"; cat "$FAKE_NVML_STATE" 2>/dev/null || true; exit 1; }
# The process groups of the held jobs' starts the journal has recorded, oldest first.
held_groups() {
  grep '"job_started"' "$journal" 2>/dev/null | grep '"held-' | grep -o '"process_group":[0-9]*' |
    cut -d: -f2 || true
}
# Waits (at most 10 s) until the journal has recorded $1 starts of held jobs.
wait_for_held_starts() {
  for _ in $(seq 100); do
    [ "$(held_groups | wc -l)" -ge "$1" ] && return 0
    sleep 0.1
  done
  fail "the journal did not record $1 starts of held jobs within 10 s"
}
instances() { grep -o '"id":[0-9]*' "$FAKE_NVML_STATE" 2>/dev/null | wc -l; }
# Running: it exists and is not a zombie (an orphan's zombie stays where init does not reap).
alive() {
  local state
  state=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1) || return 1
  [ -n "$state" ] && [ "$state" != Z ]
}

# 1. SIGTERM.
"$tessera" mig run "$jobs" --backend nvml -q --journal "$journal" >"$work/run1.out" 2>&1 & pid=$!
wait_for_held_starts 2
for _ in $(seq 100); do grep '"job_resolved"' "$journal" | grep -q '"quick"' && break; sleep 0.1; done
grep '"job_resolved"' "$journal" | grep -q '"quick"' || fail "quick did not finish within 10 s"
groups=$(held_groups)
kill -TERM "$pid"
status=0; wait "$pid" || status=$?
[ "$status" -eq 143 ] || fail "SIGTERM: exit status $status, not 143: $(cat "$work/run1.out")"
grep -q "stopped by SIGTERM: 2 jobs did not finish; the same command runs them" "$work/run1.out" ||
  fail "SIGTERM: no stop message: $(cat "$work/run1.out")"
grep -q "held-a .*stopped" "$work/run1.out" || fail "SIGTERM: no report: $(cat "$work/run1.out")"
for g in $groups; do alive "$g" && fail "SIGTERM: job process $g still runs"; done
[ "$(instances)" -eq 0 ] || fail "SIGTERM: $(instances) instances left"
[ -f "$journal" ] || fail "SIGTERM: the journal was removed"
echo "1. SIGTERM: exit 143, jobs stopped, no instance left, journal kept"

# 2. Resumed, then SIGKILL.
"$tessera" mig run "$jobs" --backend nvml -q --journal "$journal" >"$work/run2.out" 2>&1 & pid=$!
wait_for_held_starts 4
orphans=$(held_groups | tail -n 2)
kill -KILL "$pid"
wait "$pid" 2>/dev/null || true
grep -q "finished before: quick (completed); running the other 2" "$work/run2.out" ||
  fail "resume: $(cat "$work/run2.out")"
for g in $orphans; do alive "$g" || fail "SIGKILL: job process $g did not outlive the manager"; done
[ "$(instances)" -eq 2 ] || fail "SIGKILL: $(instances) instances, not the 2 the jobs ran on"
echo "2. resumed with the 2 unfinished jobs; SIGKILL left their processes and instances"

# 3. Recovered and finished.
touch "$TESSERA_TEST_GATE"
"$tessera" mig run "$jobs" --backend nvml -q --journal "$journal" >"$work/run3.out" 2>&1 ||
  fail "recovery run failed: $(cat "$work/run3.out")"
grep -q "did not finish; cleaning up after it" "$work/run3.out" || fail "$(cat "$work/run3.out")"
grep -Eq "stopped held-a \(process group [0-9]+, [0-9]+ process(es)?\), held-b" "$work/run3.out" ||
  fail "recovery did not stop the orphans: $(cat "$work/run3.out")"
grep -Eq "destroyed 1g\.5gb at slice [0-9] \(GPU instance [0-9]+\), 1g\.5gb" "$work/run3.out" ||
  fail "recovery did not destroy the instances: $(cat "$work/run3.out")"
grep -q "2/2 completed" "$work/run3.out" || fail "$(cat "$work/run3.out")"
for g in $orphans; do
  for _ in $(seq 50); do alive "$g" || break; sleep 0.1; done
  alive "$g" && fail "orphan $g still runs"
done
[ "$(instances)" -eq 0 ] || fail "$(instances) instances left at the end"
[ ! -e "$journal" ] || fail "the journal is still there after every job finished"
ran=$(sort "$TESSERA_TEST_LOG" | tr '\n' ' ')
[ "$ran" = "held-a held-b quick " ] || fail "jobs that ran to their end: '$ran', not each once"
echo "3. recovered: orphans stopped, instances destroyed, the 2 jobs run; each job ran once"
