#!/usr/bin/env bash
# instructions.sh KIND OP [free|held] [N]: the instructions one acquisition
# and release (OP acquire) or one probe (OP isheld, of a free lock or, with
# held, of one a helper process holds) of lock KIND costs, counted by
# valgrind's callgrind: a run with N operations (default 100) less one with
# none, divided by N. Both runs warm up with three. Repeatable however busy
# the machine is, to a few percent (when the garbage collector runs moves
# between runs: take the median of three, or set GOGC=off to leave it out).
# Asynchronous preemption is off: callgrind does not survive Go's SIGURG.
# Needs valgrind. Run from bench/.
set -euo pipefail
. "$(dirname "$0")/setup.sh"
count() {
  GODEBUG=asyncpreemptoff=1 PROCLOCK_BENCH_ROLE=once valgrind --tool=callgrind \
    --callgrind-out-file="$dir/cg.$1" "$dir/bench.test" "$kind" "$op" "$path" "$1" 2>&1 >/dev/null |
    sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
base=$(count 0)
more=$(count "$n")
echo "$kind $op $state: $(( (more - base) / n )) instructions per operation ($n operations)"
