# holder.sh, sourced by syscalls.sh and instructions.sh: hold_lock KIND PATH
# BIN starts a helper process of the bench binary BIN holding lock KIND at
# PATH, and returns once it holds it; its pid is in $holder, for the
# caller's trap to kill.
hold_lock() {
  local kind=$1 path=$2 bin=$3 fifo
  fifo=$(dirname "$path")
  mkfifo "$fifo/in" "$fifo/out"
  PROCLOCK_BENCH_ROLE=hold "$bin" "$kind" "$path" <"$fifo/in" >"$fifo/out" &
  holder=$!
  exec 3>"$fifo/in"
  echo take >&3
  local said
  read -r said <"$fifo/out"
  [ "$said" = held ] || { echo "holder said: $said" >&2; exit 1; }
}
