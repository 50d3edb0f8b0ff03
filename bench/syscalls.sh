#!/usr/bin/env bash
# syscalls.sh KIND OP [free|held] [N]: the system calls of one acquisition
# and release (OP acquire) or one probe (OP isheld) of lock KIND
# (proclock-sqlite, proclock-file, flock, ofd, excl, gofrs, lockedfile,
# nightlyone), counted by strace -f over N operations (default 100) past
# three to warm up, and divided by N. A probe asks about a free lock (a
# SQLite lock's file exists) or, with held, one a helper process holds.
# Needs strace. Run from bench/.
set -euo pipefail
. "$(dirname "$0")/holder.sh"
kind=$1 op=$2 state=${3:-free} n=${4:-100}
if [[ $state =~ ^[0-9]+$ ]]; then n=$state state=free; fi # KIND OP N
dir=$(mktemp -d)
holder=
trap '[ -n "$holder" ] && kill "$holder"; rm -rf "$dir"' EXIT
go test -c -o "$dir/bench.test" .
path=$dir/app.lock
if [ "$op" = isheld ]; then
  # A free lock's file, as it is after a release.
  PROCLOCK_BENCH_ROLE=once "$dir/bench.test" "$kind" acquire "$path" 0 >/dev/null
fi
if [ "$state" = held ]; then
  hold_lock "$kind" "$path" "$dir/bench.test"
fi
PROCLOCK_BENCH_ROLE=once strace -f -qq -o "$dir/trace" "$dir/bench.test" "$kind" "$op" "$path" "$n" >/dev/null
awk -v n="$n" '
  /proclock-bench-begin/ { on = 1; next }
  /proclock-bench-end/ { on = 0 }
  on && !/resumed>/ && !/^[0-9]+ +---/ {
    sub(/^[0-9]+ +/, "")          # the thread id strace -f adds
    name = $0; sub(/\(.*/, "", name)
    count[name]++; total++
  }
  END {
    for (s in count) printf "%8.2f  %s\n", count[s] / n, s
    printf "%8.2f  total per operation\n", total / n
  }' "$dir/trace" | sort -n
