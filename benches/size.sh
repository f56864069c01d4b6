#!/usr/bin/env bash
# What `cargo install` puts on disk: the six release binaries (target ≤ 60 MB in all) against
# ripgrep's binary, as the system's package installs it (apt-get, when it is missing and can be
# installed). BIN=DIR picks the binaries (default: target/release, built when missing).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
BIN=${BIN:-$root/target/release}
bins=(ag ag-log ag-prompt ag-fork ag-room ag-summon)
for b in "${bins[@]}"; do
  if [ ! -x "$BIN/$b" ]; then
    (cd "$root" && cargo build --release --quiet --bins)
    break
  fi
done
if ! command -v rg >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
  (apt-get install -y -qq ripgrep >/dev/null 2>&1 || sudo -n apt-get install -y -qq ripgrep >/dev/null 2>&1) || true
fi
total=0
for b in "${bins[@]}"; do
  size=$(stat -c %s "$BIN/$b")
  total=$((total + size))
  printf '%-10s %6.1f MB\n' "$b" "$(echo "$size" | awk '{print $1 / 1e6}')"
done
rg_size=$(command -v rg >/dev/null 2>&1 && stat -c %s "$(readlink -f "$(command -v rg)")" || echo 0)
awk -v t="$total" -v r="$rg_size" 'BEGIN {
  printf "all six:   %6.1f MB (target <= 60 MB): %s\n", t / 1e6, (t <= 60e6 ? "ok" : "MISS")
  if (r > 0) printf "ripgrep:   %6.1f MB (one binary); ag per command: %.1fx ripgrep\n", r / 1e6, (t / 6) / r
  else print "ripgrep:   not installed, no comparison"
}'
