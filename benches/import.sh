#!/usr/bin/env bash
# Import and export benchmarks, each against a baseline measured in the same run:
#   1. `ag-log import -q DIR` of the transcript fixtures repeated to MB megabytes of JSONL
#      (every copy a distinct source session) vs. `jq -c . FILE > /dev/null` over the same
#      bytes: the cost of just parsing them (target ≤ 1.2×);
#   2. `ag-log export --format html` of a 10,000-chunk session (target ≤ 1 s), with
#      `ag-log cat --json` of the same session as information.
# Usage: benches/import.sh [MB]   (default 100; REPS=3 runs each, interleaved, the median is
#   reported)
# BIN=DIR picks the binaries (default: target/release, built when missing).
set -euo pipefail
MB=${1:-${MB:-100}}
REPS=${REPS:-3}
root=$(cd "$(dirname "$0")/.." && pwd)
BIN=${BIN:-$root/target/release}
if [ ! -x "$BIN/ag-log" ]; then
  (cd "$root" && cargo build --release --quiet --bin ag-log)
fi
if ! command -v jq >/dev/null 2>&1; then
  apt-get update -qq && apt-get install -y -qq jq
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fixtures=$root/tests/fixtures/transcripts

# The fixtures, copied until MB megabytes, each copy with its own session ids.
python3 - "$fixtures" "$tmp/src" "$MB" <<'PY'
import os, re, sys
src, out, mb = sys.argv[1], sys.argv[2], int(sys.argv[3])
files = []
for sub in ("claude-code", "codex"):
    for name in sorted(os.listdir(os.path.join(src, sub))):
        if name.endswith(".jsonl"):
            files.append((sub, name, open(os.path.join(src, sub, name), "rb").read()))
ids = [b"5c0375b4-57a5-4f26-b12d-d022ee4e51b7", b"3fb74381-1bf4-475e-8c6f-442d872b1bcf",
       b"4c2ddfdc-b619-4525-8d03-1950fb1b0257", b"55604662-cf2a-4331-851a-ec234028f8ca",
       b"019e1625-789d-76c0-80ab-3724b5ddb799", b"11111111-1111-4111-8111-111111111111",
       b"spawn-test-uuid"]
total, copy = 0, 0
while total < mb * 1_000_000:
    d = os.path.join(out, f"c{copy:04d}")
    os.makedirs(d)
    for sub, name, data in files:
        for i in ids:
            data = data.replace(i, i + b"-c%04d" % copy)
        data = data.replace(b'"sessionId":"s1"', b'"sessionId":"s1-c%04d"' % copy)
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)
        total += len(data)
    copy += 1
PY
find "$tmp/src" -name '*.jsonl' -print0 | sort -z | xargs -0 cat > "$tmp/all.jsonl"
bytes=$(stat -c %s "$tmp/all.jsonl")

ns() { date +%s%N; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# One import and one jq per repetition, in turn (jq first on odd ones), so a slow stretch of
# the machine lands on both sides alike.
: > "$tmp/imp.ns"
: > "$tmp/jq.ns"
import_once() {
  rm -rf "$tmp/home"
  local t0 t1
  t0=$(ns); AG_HOME=$tmp/home "$BIN/ag-log" import -q "$tmp/src"; t1=$(ns)
  echo $((t1 - t0)) >> "$tmp/imp.ns"
}
jq_once() {
  local t0 t1
  t0=$(ns); jq -c . "$tmp/all.jsonl" > /dev/null; t1=$(ns)
  echo $((t1 - t0)) >> "$tmp/jq.ns"
}
for ((r = 0; r < REPS; r++)); do
  if ((r % 2 == 0)); then import_once; jq_once; else jq_once; import_once; fi
done
imp=$(median < "$tmp/imp.ns")
jqt=$(median < "$tmp/jq.ns")
sessions=$(AG_HOME=$tmp/home "$BIN/ag-log" ls --json | wc -l)
chunks=$(python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('select count(*) from chunks').fetchone()[0])" "$tmp/home/ag.db")

# A 10,000-chunk session: 1,000 turns of a question, an answer with code, an edit and its result.
python3 - > "$tmp/session.ndjson" <<'PY'
import json
for t in range(1000):
    turn = f"turn-{t}"
    def c(role, ty, data, step):
        print(json.dumps({"turn": turn, "step": step, "role": role, "type": ty, "data": data}))
    c("user", "text", {"text": f"Question {t}: why does the parser <fail> on line {t}?"}, 0)
    c("assistant", "thinking", {"text": "Let me look at the parser. " * 10, "signature": "sig"}, 1)
    c("assistant", "text", {"text": f"Looking.\n```rust\nfn parse(line: &str) -> Result<u32, Error> {{\n    // line {t}\n    line.trim().parse().map_err(Error::from)\n}}\n```"}, 1)
    c("assistant", "tool_call", {"call_id": f"c{t}a", "name": "read", "arguments": {"path": "src/parse.rs"}}, 1)
    c("tool", "tool_result", {"call_id": f"c{t}a", "name": "read", "result": "fn parse() {}\n" * 40, "is_error": False}, 1)
    c("assistant", "tool_call", {"call_id": f"c{t}b", "name": "edit", "arguments": {"path": "src/parse.rs", "old_string": "a\nb\nc\n" * 5, "new_string": "a\nB\nc\n" * 5}}, 2)
    c("tool", "tool_result", {"call_id": f"c{t}b", "name": "edit", "result": "edited", "is_error": False}, 2)
    c("assistant", "text", {"text": f"Fixed line {t}."}, 3)
    c("assistant", "text", {"text": "Anything else?"}, 3)
    c("system", "system", {"kind": "turn_end", "stop_reason": "end_turn", "usage": {"input": 100, "output": 50, "cache_read": 0, "cache_write": 0}, "model": "echo", "duration_ms": 1200}, 3)
PY
export AG_HOME=$tmp/export-home
sid=$("$BIN/ag-log" append --new --title bench < "$tmp/session.ndjson" 2>/dev/null | head -1 | python3 -c "import json,sys; print(json.loads(sys.stdin.readline())['session'])")
html=$(for ((r = 0; r < REPS; r++)); do
  t0=$(ns); "$BIN/ag-log" export "$sid" --format html -o "$tmp/page.html"; t1=$(ns)
  echo $((t1 - t0))
done | median)
cat_t=$(for ((r = 0; r < REPS; r++)); do
  t0=$(ns); "$BIN/ag-log" cat "$sid" --json > /dev/null; t1=$(ns)
  echo $((t1 - t0))
done | median)
page=$(stat -c %s "$tmp/page.html")

awk -v b="$bytes" -v imp="$imp" -v jq="$jqt" -v s="$sessions" -v c="$chunks" \
    -v html="$html" -v cat="$cat_t" -v page="$page" -v nproc="$(nproc)" 'BEGIN {
  printf "machine: %d cores\n", nproc
  printf "| figure | measured | baseline | ratio | target | verdict |\n| --- | --- | --- | --- | --- | --- |\n"
  printf "| import %.0f MB of JSONL (%d sessions, %d chunks) (baseline: jq -c . over the same bytes) | %.2f s (%.0f MB/s) | %.2f s (%.0f MB/s) | %.2f | ≤ 1.2× | %s |\n",
    b / 1e6, s, c, imp / 1e9, b / imp * 1e3, jq / 1e9, b / jq * 1e3, imp / jq, (imp / jq <= 1.2 ? "ok" : "MISS")
  printf "| export --format html, 10,000-chunk session (%.1f MB page) (baseline: cat --json of it) | %.0f ms | %.0f ms | %.2f | ≤ 1 s | %s |\n",
    page / 1e6, html / 1e6, cat / 1e6, html / cat, (html <= 1e9 ? "ok" : "MISS")
}'
