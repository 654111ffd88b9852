#!/bin/sh
# lua_api_fuzz.sh: runs fuzz/lua_api_fuzz.lua against the sanitized build
# (build/asan/phaseprobe.so, pp.cuda on build/asan/libfakecuda.so, CUPTI on
# build/asan/libfakecupti.so when the headers were there) for a time budget: one process per seed, SEED, SEED+1, ..., each making up to
# CALLS calls, until SECONDS have passed. Called by `make fuzz`.
#
#   fuzz/lua_api_fuzz.sh SECONDS SEED CALLS
#
# The first run prints every entry point with its call counts; each run
# prints one line. A sanitizer report (or any other failure: an entry point
# never reached, one that must raise returning) stops the loop: its output
# is shown with the seed that reproduces it
# (lua5.4 fuzz/lua_api_fuzz.lua --seed N --calls K [--trace-from K-50]
# under the same environment). The closing note gives the runs, the calls,
# the entry points every run reached, and those that never returned
# normally in any run (besides the ones that raise by design). Exit status:
# 0 clean, 1 a finding.
set -u
seconds=${1:-60}
seed=${2:-1}
calls=${3:-100000}
root=$(pwd)
out=$root/fuzz-out/lua_api
# the calls run in a scratch directory: whatever file a hostile argument
# names lands there
mkdir -p "$out/scratch/cwd"
cc=${CC:-cc}
asan=$($cc -print-file-name=libasan.so)
ubsan=$($cc -print-file-name=libubsan.so)
fakecupti=
[ -f build/asan/libfakecupti.so ] && fakecupti="$root/build/asan/libfakecupti.so"
# The fuzzer under the sanitizers, in the scratch directory: fuzz LIMIT_S
# ARGS... runs lua_api_fuzz.lua --root ... ARGS for at most LIMIT_S seconds.
fuzz() {
  limit=$1
  shift
  env LD_PRELOAD="$asan $ubsan" \
    ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1:exitcode=86 \
    LSAN_OPTIONS=suppressions="$root/fuzz/lua_api_fuzz.lsan" \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    PHASEPROBE_LIBCUDA="$root/build/asan/libfakecuda.so" PHASEPROBE_LIBCUPTI="$fakecupti" \
    LUA_CPATH="$root/build/asan/?.so;;" LUA_PATH="$root/lua/?.lua;$root/lua/?/init.lua;;" \
    sh -c "cd '$out/scratch/cwd' && exec timeout $limit lua5.4 '$root/fuzz/lua_api_fuzz.lua' \
      --root '$root' --scratch '$out/scratch' $*" < /dev/null
}
# One run of the seed in $seed, output in $log.
run_seed() {
  fuzz $((left + 120)) --seed $seed --calls $calls --seconds $left $quiet > "$log" 2>&1
}
start=$(date +%s)
end=$((start + seconds))
total=0
runs=0
first=1
# entry points that no run so far saw return normally, one a line, sorted
never="$out/never_returned"
reached=

while :; do
  now=$(date +%s)
  [ "$now" -lt "$end" ] || break
  left=$((end - now))
  log="$out/seed-$seed.log"
  quiet=--quiet
  [ $first = 1 ] && quiet=
  run_seed
  rc=$?
  # LeakSanitizer's own tracer can fail to stop the threads at exit ("has
  # encountered a fatal error", no report): that is no finding; run the
  # seed once more.
  if [ $rc != 0 ] && grep -q "LeakSanitizer has encountered a fatal error" "$log" &&
     ! grep -q -e "ERROR: AddressSanitizer" -e "runtime error" -e "detected memory leaks" "$log"; then
    echo "== lua_api_fuzz: seed $seed: LeakSanitizer's tracer failed at exit (no report); running it again"
    run_seed
    rc=$?
  fi
  if [ $rc != 0 ]; then
    echo "== lua_api_fuzz: seed $seed FAILED (exit $rc); the end of $log:"
    tail -n 60 "$log"
    # The same seed makes the same calls: run it again, tracing, to name
    # the last calls before the failure.
    trace="$out/seed-$seed.trace"
    fuzz 600 --seed $seed --calls $calls --trace-from 1 --quiet > "$trace" 2>&1
    echo "== the last calls before it (from a second run of seed $seed, in $trace):"
    grep -a '^\[[0-9]*\] ' "$trace" | tail -n 8
    echo "== reproduce: $0 with seed $seed, or lua5.4 fuzz/lua_api_fuzz.lua --seed $seed --calls K [--trace-from K-8] under the environment above"
    exit 1
  fi
  if [ $first = 1 ]; then
    sed -n '/^lua_api_fuzz: seed/,$p' "$log" | grep -v '^lua_api_fuzz: seed [0-9]*: [0-9]* calls, '
  else
    grep '^lua_api_fuzz: seed .* no sanitizer report' "$log"
  fi
  n=$(sed -n 's/^lua_api_fuzz: seed [0-9]*: \([0-9]*\) calls over.*/\1/p' "$log")
  total=$((total + ${n:-0}))
  # reached A of B: the fewest any run reached
  r=$(sed -n 's/^reached \([0-9]* of [0-9]*\) entry points.*/\1/p' "$log")
  if [ -z "$reached" ] || [ "${r%% *}" -lt "${reached%% *}" ]; then reached=$r; fi
  by_design=$(sed -n 's/.* raise by design: \(.*\)$/\1/p' "$log")
  sed -n 's/^never_returned: //p' "$log" | tr ' ' '\n' | grep -v '^-*$' | sort > "$never.run"
  if [ $first = 1 ]; then mv "$never.run" "$never"; else
    comm -12 "$never" "$never.run" > "$never.both"; mv "$never.both" "$never"; rm -f "$never.run"; fi
  runs=$((runs + 1))
  first=0
  seed=$((seed + 1))
done
echo "== lua_api_fuzz: $runs runs (seeds $2..$((seed - 1))), $total API calls in $(( $(date +%s) - start )) s, no sanitizer report"
if [ $runs -gt 0 ]; then
  nv=$(tr '\n' ' ' < "$never" | sed 's/ $//')
  echo "== every run reached at least $reached entry points; never returned normally in any run: ${nv:-none}; raise by design: ${by_design:-none}"
fi
