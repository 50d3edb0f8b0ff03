#!/usr/bin/env bash
# instructions.sh KIND OP [N]: the instructions one acquisition and release
# (OP acquire) or one probe (OP isheld) of lock KIND costs, counted by
# valgrind's callgrind: a run with N operations (default 100) less one with
# none, divided by N. Both runs warm up with three. Repeatable however busy
# the machine is, to a few percent (when the garbage collector runs moves
# between runs: take the median of three, or set GOGC=off to leave it out). Asynchronous preemption is off: callgrind does not
# survive Go's SIGURG. Needs valgrind. Run from bench/.
set -euo pipefail
kind=$1 op=$2 n=${3:-100}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
go test -c -o "$dir/bench.test" .
count() {
  local path=$dir/app-$1.lock
  if [ "$op" = isheld ] && [ "$kind" = proclock-sqlite ]; then
    PROCLOCK_BENCH_ROLE=once "$dir/bench.test" "$kind" acquire "$path" 0 >/dev/null
  fi
  GODEBUG=asyncpreemptoff=1 PROCLOCK_BENCH_ROLE=once valgrind --tool=callgrind \
    --callgrind-out-file="$dir/cg.$1" "$dir/bench.test" "$kind" "$op" "$path" "$1" 2>&1 >/dev/null |
    sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
base=$(count 0)
more=$(count "$n")
echo "$kind $op: $(( (more - base) / n )) instructions per operation ($n operations)"
