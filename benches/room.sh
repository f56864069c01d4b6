#!/usr/bin/env bash
# ag-room benchmarks, in one run:
#   1. `ag-room tell` whole-process time vs. the floor `sh -c 'printf … >> FILE'` (target ≤ 2×);
#   2. `ag-room tail -n 5` on a room of 100k lines vs. one of 100 lines (target ≤ 1.5×);
#   3. `ag-room tail -f` delivery latency from write to print, median and p99 (target p99 ≤ 50 ms).
# Usage: benches/room.sh [N]   (N tells and N floor writes, default 200; LAT=200 latency samples)
# BIN=DIR picks the binaries (default: target/release, built when missing).
set -euo pipefail
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

t0=$(ns)
for ((i = 0; i < N; i++)); do
  "$BIN/ag-room" tell --from bench "line $i" >/dev/null
done
t1=$(ns)
floor_file=$tmp/floor.jsonl
for ((i = 0; i < N; i++)); do
  sh -c 'printf "%s\n" "$1" >> "$2"' sh \
    "{\"v\":1,\"id\":\"$i\",\"ts\":\"2026-01-01T00:00:00.000Z\",\"type\":\"say\",\"from\":{\"name\":\"bench\",\"kind\":\"tool\"},\"text\":\"line $i\"}" \
    "$floor_file"
done
t2=$(ns)
awk -v n="$N" -v a="$((t1 - t0))" -v b="$((t2 - t1))" 'BEGIN {
  printf "tell:   %d runs, %.2f ms each (ag-room tell, whole process)\n", n, a / n / 1e6
  printf "floor:  %d runs, %.2f ms each (sh -c printf >> FILE)\n", n, b / n / 1e6
  printf "ratio:  %.2fx (target <= 2x)\n", a / b
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
