# setup.sh, sourced by syscalls.sh and instructions.sh after `set -euo
# pipefail`, with the script's arguments KIND OP [free|held] [N] (or KIND
# OP N): it sets kind, op, state and n; builds the bench binary as
# $dir/bench.test in a temporary $dir, removed on exit; and prepares the
# lock at $path: for OP isheld, a free lock's file (as a release leaves
# it), and with held, a helper process holding it until the script exits.
kind=$1 op=$2 state=${3:-free} n=${4:-100}
if [[ $state =~ ^[0-9]+$ ]]; then n=$state state=free; fi # KIND OP N
dir=$(mktemp -d)
holder=
trap '[ -n "$holder" ] && kill "$holder"; rm -rf "$dir"' EXIT
go test -c -o "$dir/bench.test" .
path=$dir/app.lock
if [ "$op" = isheld ]; then
  PROCLOCK_BENCH_ROLE=once "$dir/bench.test" "$kind" acquire "$path" 0 >/dev/null
fi
if [ "$state" = held ]; then
  mkfifo "$dir/in" "$dir/out"
  PROCLOCK_BENCH_ROLE=hold "$dir/bench.test" "$kind" "$path" <"$dir/in" >"$dir/out" &
  holder=$!
  exec 3>"$dir/in"
  echo take >&3
  read -r said <"$dir/out"
  [ "$said" = held ] || { echo "holder said: $said" >&2; exit 1; }
fi
