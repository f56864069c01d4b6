#!/usr/bin/env bash
# The start-up cost of a sandboxed `bash` tool call, against an unsandboxed one, in one run.
# Each run is `ag-prompt` playing a script of N `bash` calls of `true` (then a final answer);
# the same script runs with `--sandbox off` (the baseline), `workspace-write`, `read-only`
# and `workspace-write --net`. Per call = (median whole run - median floor run) / N, where the
# floor run is the same script with one call, so process start-up and the store cancel out.
# Usage: benches/sandbox.sh [N]   (N calls per run, default 50; REPS=7 runs per mode)
# BIN=DIR picks the binaries (default: target/release, built when missing).
set -euo pipefail
N=${1:-${N:-50}}
REPS=${REPS:-7}
root=$(cd "$(dirname "$0")/.." && pwd)
BIN=${BIN:-$root/target/release}
if [ ! -x "$BIN/ag-prompt" ]; then
  (cd "$root" && cargo build --release --quiet --bin ag-prompt)
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export AG_HOME=$tmp/home XDG_CONFIG_HOME=$tmp/config
mkdir -p "$tmp/work" && cd "$tmp/work"
# The workspace is a git repository with a few hundred folders, as a project is: the sandbox
# protects every git directory in it, and looks for nested ones, before and after each call.
git init -q . && mkdir -p src/{a..z}/{0..9} && touch src/a/0/main.rs
folders=$(find . -path ./.git -prune -o -type d -print | wc -l)
unset AG_SESSION AG_MODEL

script() { # script FILE CALLS
  : >"$1"
  for ((i = 0; i < $2; i++)); do
    printf '[[step]]\ntool_calls = [{ name = "bash", arguments = { command = "true" } }]\n' >>"$1"
  done
  printf '[[step]]\ntext = "done"\n' >>"$1"
}
script "$tmp/many.toml" "$N"
script "$tmp/one.toml" 1

ns() { date +%s%N; }

# One whole-process run, in µs.
run_us() {
  local s=$1
  shift
  local t0 t1
  t0=$(ns)
  "$BIN/ag-prompt" -q -m "script:$s" --tools bash "$@" go >/dev/null 2>&1
  t1=$(ns)
  echo $(((t1 - t0) / 1000))
}

median() { sort -n | awk '{a[NR] = $1} END {printf "%.3f", a[int((NR + 1) / 2)] / 1000}'; }

# Warm the page cache and the store.
"$BIN/ag-prompt" -q -m "script:$tmp/one.toml" --tools bash --sandbox off go >/dev/null 2>&1

# The modes take turns within each repetition, so a busy moment of the machine hits them alike.
modes=(off workspace-write read-only "workspace-write --net")
declare -A many one per_call
for ((r = 0; r < REPS; r++)); do
  for mode in "${modes[@]}"; do
    # shellcheck disable=SC2086
    many[$mode]+="$(run_us "$tmp/many.toml" --sandbox $mode) "
    # shellcheck disable=SC2086
    one[$mode]+="$(run_us "$tmp/one.toml" --sandbox $mode) "
  done
done
for mode in "${modes[@]}"; do
  m=$(printf '%s\n' ${many[$mode]} | median)
  o=$(printf '%s\n' ${one[$mode]} | median)
  per_call[$mode]=$(awk -v m="$m" -v o="$o" -v n="$N" 'BEGIN {printf "%.3f", (m - o) / (n - 1)}')
done

base=${per_call[off]}
echo "machine: $(nproc) cores, $(uname -r); $N calls of \`true\` per run, median of $REPS runs;"
echo "workspace: a git repository with $folders folders"
echo
echo "| bash call (\`true\`) | per call | baseline (--sandbox off) | ratio | extra per call |"
echo "| --- | --- | --- | --- | --- |"
for mode in workspace-write read-only "workspace-write --net"; do
  awk -v name="$mode" -v v="${per_call[$mode]}" -v b="$base" 'BEGIN {
    printf "| %s | %.2f ms | %.2f ms | %.2f | %+.2f ms |\n", name, v, b, v / b, v - b
  }'
done
