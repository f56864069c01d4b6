#!/usr/bin/env bash
# ag-room benchmarks, in one run:
#   1. `ag-room tell` whole-process time vs. the floor `sh -c 'printf … >> FILE'` (target ≤ 2×);
#   2. `ag-room tail -n 5` on a room of 100k lines vs. one of 100 lines (target ≤ 1.5×);
#   3. `ag-room tail -f` delivery latency from write to print, median and p99 (target p99 ≤ 50 ms).
# Usage: benches/room.sh [N]   (N tells and N floor writes, interleaved, medians compared;
#   default 200; LAT=200 latency samples)
# BIN=DIR picks the binaries (default: target/release, built when missing).
set -euo pipefail
if [ -z "${EPOCHREALTIME:-}" ]; then
  echo "room.sh: needs bash 5 or later (EPOCHREALTIME times each run)" >&2
  exit 1
fi
N=${1:-${N:-200}}
LAT=${LAT:-200}
root=$(cd "$(dirname "$0")/.." && pwd)
BIN=${BIN:-$root/target/release}
if [ ! -x "$BIN/ag-room" ]; then
  (cd "$root" && cargo build --release --quiet --bin ag-room)
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export AG_HOME=$tmp/home
mkdir -p "$tmp/work" && cd "$tmp/work"
unset AG_SESSION
"$BIN/ag-room" tell --from bench warmup >/dev/null
room=$(ls "$AG_HOME"/rooms/*.jsonl | grep -v device.jsonl)

ns() { date +%s%N; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# One tell and one floor write per repetition, in turn (the floor first on every other one),
# each timed alone with bash's own clock (no fork): a slow stretch of the machine lands on both
# sides alike, and the median leaves out the odd run that waited for a core (the means are
# printed too).
floor_file=$tmp/floor.jsonl
: > "$tmp/tell.us"
: > "$tmp/floor.us"
tell_once() {
  local t0=$EPOCHREALTIME
  "$BIN/ag-room" tell --from bench "line $1" >/dev/null
  local t1=$EPOCHREALTIME
  echo $((${t1/[.,]/} - ${t0/[.,]/})) >> "$tmp/tell.us"
}
floor_once() {
  local t0=$EPOCHREALTIME
  sh -c 'printf "%s\n" "$1" >> "$2"' sh \
    "{\"v\":1,\"id\":\"$1\",\"ts\":\"2026-01-01T00:00:00.000Z\",\"type\":\"say\",\"from\":{\"name\":\"bench\",\"kind\":\"tool\"},\"text\":\"line $1\"}" \
    "$floor_file"
  local t1=$EPOCHREALTIME
  echo $((${t1/[.,]/} - ${t0/[.,]/})) >> "$tmp/floor.us"
}
for ((i = 0; i < N; i++)); do
  if ((i % 2 == 0)); then tell_once "$i"; floor_once "$i"; else floor_once "$i"; tell_once "$i"; fi
done
mean() { awk '{s += $1} END {print s / NR}'; }
awk -v n="$N" -v a="$(median < "$tmp/tell.us")" -v b="$(median < "$tmp/floor.us")" \
    -v am="$(mean < "$tmp/tell.us")" -v bm="$(mean < "$tmp/floor.us")" 'BEGIN {
  printf "tell:   %d runs, median %.2f ms, mean %.2f ms (ag-room tell, whole process)\n", n, a / 1e3, am / 1e3
  printf "floor:  %d runs, median %.2f ms, mean %.2f ms (sh -c printf >> FILE)\n", n, b / 1e3, bm / 1e3
  printf "ratio:  %.2fx of the medians (target <= 2x); of the means %.2fx\n", a / b, am / bm
}'

# tail -n 5: the room cut to 100 lines, then grown to 100,000 (written directly, one pass).
tail_ms() {
  local t0 t1
  "$BIN/ag-room" tail -n 5 >/dev/null
  t0=$(ns)
  for ((i = 0; i < 50; i++)); do "$BIN/ag-room" tail -n 5 >/dev/null; done
  t1=$(ns)
  echo $(((t1 - t0) / 50))
}
# A room of N say lines, written in one pass.
fill_room() {
  python3 - "$room" "$1" <<'PY'
import json, sys
room, n = sys.argv[1], int(sys.argv[2])
with open(room, "w") as f:
    for i in range(n):
        f.write(json.dumps({"v": 1, "id": f"line-{i}", "ts": "2026-01-01T00:00:00.000Z", "type": "say",
                            "from": {"name": "bench", "kind": "tool"}, "text": f"line {i}"}) + "\n")
PY
}
fill_room 100
small=$(tail_ms)
fill_room 100000
big=$(tail_ms)
awk -v a="$big" -v b="$small" 'BEGIN {
  printf "tail -n 5: %.2f ms on 100,000 lines, %.2f ms on 100 lines, ratio %.2fx (target <= 1.5x)\n", a / 1e6, b / 1e6, a / b
}'

python3 - "$BIN/ag-room" "$room" "$LAT" <<'PY'
import fcntl, json, os, subprocess, sys, time, select
binary, room, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
p = subprocess.Popen([binary, "tail", "-f", "-n", "0", "--json"], stdout=subprocess.PIPE, bufsize=0)
time.sleep(0.3)
buf = b""
def read_line(deadline):
    global buf
    while b"\n" not in buf:
        r, _, _ = select.select([p.stdout], [], [], max(0, deadline - time.monotonic()))
        if not r:
            return None
        buf += os.read(p.stdout.fileno(), 65536)
    line, buf = buf.split(b"\n", 1)
    return line
lat = []
for i in range(n):
    line = json.dumps({"v": 1, "id": f"lat-{i}", "ts": "2026-01-01T00:00:00.000Z", "type": "say",
                       "from": {"name": "bench", "kind": "tool"}, "text": f"latency {i}"}) + "\n"
    fd = os.open(room, os.O_WRONLY | os.O_APPEND)
    fcntl.flock(fd, fcntl.LOCK_EX)
    t = time.monotonic()
    os.write(fd, line.encode())
    fcntl.flock(fd, fcntl.LOCK_UN)
    os.close(fd)
    got = read_line(t + 2.0)
    if got is None:
        print(f"latency: line {i} not printed within 2 s"); break
    lat.append((time.monotonic() - t) * 1000)
    time.sleep(0.005)
p.kill()
lat.sort()
if lat:
    med = lat[len(lat) // 2]
    p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))]
    print(f"tail -f: {len(lat)} lines, median {med:.2f} ms, p99 {p99:.2f} ms, max {lat[-1]:.2f} ms (target p99 <= 50 ms)")
PY
