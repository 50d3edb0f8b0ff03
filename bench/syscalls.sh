#!/usr/bin/env bash
# syscalls.sh KIND OP [free|held] [N]: the system calls of one acquisition
# and release (OP acquire) or one probe (OP isheld) of lock KIND
# (proclock-sqlite, proclock-file, flock, ofd, excl, gofrs, lockedfile,
# nightlyone), counted by strace -f over N operations (default 100) past
# three to warm up, and divided by N. A probe asks about a free lock (a
# SQLite lock's file exists) or, with held, one a helper process holds.
# Needs strace. Run from bench/.
set -euo pipefail
. "$(dirname "$0")/setup.sh"
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
