#!/usr/bin/env bash
# Rooms on NATS JetStream against file rooms, in one run (needs `nats-server`):
#   1. `ag-room tell` whole-process time, NATS vs. files (target ≤ 2×);
#   2. `ag-room tail -f` delivery latency across two homes: a line published to the room's
#      subject from a plain NATS connection until the other home's `tail -f` prints it, median
#      and p99 (target p99 ≤ 50 ms on loopback); the same for a file room (a line appended to
#      the file until `tail -f` prints it) as the baseline;
#   3. W writers × L lines (default 16 × 2000; half in each home) with `ag-room tell`, then
#      every line counted once in the room (nothing lost, nothing twice); the same writers on
#      a file room in one home as the baseline.
# Usage: benches/room_nats.sh [N]   (N tells each way, default 200; LAT=200 latency samples,
#        W=16 writers, L=2000 lines each)
# BIN=DIR picks the binaries (default: target/release, built when missing; a debug build,
# BIN=target/debug, is slower in every figure alike).
set -euo pipefail
N=${1:-${N:-200}}
LAT=${LAT:-200}
W=${W:-16}
L=${L:-2000}
root=$(cd "$(dirname "$0")/.." && pwd)
BIN=${BIN:-$root/target/release}
if [ ! -x "$BIN/ag-room" ]; then
  (cd "$root" && cargo build --release --quiet --bin ag-room)
fi
command -v nats-server >/dev/null || { echo "nats-server is not installed (apt-get install nats-server)"; exit 1; }
tmp=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
nats-server -js -a 127.0.0.1 -p "$port" -sd "$tmp/nats" >/dev/null 2>&1 &
nats_pid=$!
trap 'kill $nats_pid 2>/dev/null; wait $nats_pid 2>/dev/null; rm -rf "$tmp"' EXIT
until (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do sleep 0.05; done
url="nats://127.0.0.1:$port"
unset AG_SESSION AG_ROOM_URL
echo "machine: $(nproc) cores; binaries: $BIN; nats-server $(nats-server --version | awk '{print $2}')"

# Two homes, each a checkout of the same repository; a third for file rooms.
for h in a b f; do
  mkdir -p "$tmp/$h/work"
  git -C "$tmp/$h/work" init -q
  git -C "$tmp/$h/work" remote add origin https://example.com/bench/repo.git
done
in_home() { # HOME_NAME NATS? CMD...
  local h=$1 n=$2
  shift 2
  if [ "$n" = nats ]; then
    (cd "$tmp/$h/work" && AG_HOME=$tmp/$h/home XDG_CONFIG_HOME=$tmp/$h/cfg AG_ROOM_URL=$url "$@")
  else
    (cd "$tmp/$h/work" && AG_HOME=$tmp/$h/home XDG_CONFIG_HOME=$tmp/$h/cfg "$@")
  fi
}
subject=ag.rooms.$(in_home a nats "$BIN/ag-room" --json tell --from bench warmup | python3 -c 'import json,sys; print(json.load(sys.stdin)["room"].removeprefix("nats:"))')
in_home f files "$BIN/ag-room" tell --from bench warmup >/dev/null
file_room=$(ls "$tmp/f/home"/rooms/*.jsonl | grep -v device.jsonl)

ns() { date +%s%N; }
t0=$(ns)
for ((i = 0; i < N; i++)); do in_home a nats "$BIN/ag-room" tell --from bench "line $i" >/dev/null; done
t1=$(ns)
for ((i = 0; i < N; i++)); do in_home f files "$BIN/ag-room" tell --from bench "line $i" >/dev/null; done
t2=$(ns)
awk -v n="$N" -v a="$((t1 - t0))" -v b="$((t2 - t1))" 'BEGIN {
  printf "tell, nats:  %d runs, %.2f ms each (whole process)\n", n, a / n / 1e6
  printf "tell, files: %d runs, %.2f ms each (whole process)\n", n, b / n / 1e6
  printf "tell ratio:  %.2fx (target <= 2x)\n", a / b
}'

python3 - "$BIN/ag-room" "$tmp" "$url" "$port" "$subject" "$file_room" "$LAT" <<'PY'
import json, os, select, socket, subprocess, sys, time, fcntl
binary, tmp, url, port, subject, file_room, n = sys.argv[1:8]
port, n = int(port), int(n)
def tail(home, nats):
    env = dict(os.environ, AG_HOME=f"{tmp}/{home}/home", XDG_CONFIG_HOME=f"{tmp}/{home}/cfg")
    if nats:
        env["AG_ROOM_URL"] = url
    return subprocess.Popen([binary, "tail", "-f", "-n", "0", "--json"], stdout=subprocess.PIPE,
                            cwd=f"{tmp}/{home}/work", env=env, bufsize=0)
def measure(p, write):
    time.sleep(0.5)
    buf, lat = b"", []
    for i in range(n):
        t = time.monotonic()
        write(i)
        while b"\n" not in buf:
            r, _, _ = select.select([p.stdout], [], [], max(0, t + 2.0 - time.monotonic()))
            if not r:
                print(f"  line {i} not printed within 2 s"); p.kill(); return lat
            buf += os.read(p.stdout.fileno(), 65536)
        _, buf = buf.split(b"\n", 1)
        lat.append((time.monotonic() - t) * 1000)
        time.sleep(0.005)
    p.kill()
    return lat
def line(i):
    return json.dumps({"v": 1, "id": f"lat-{i}-{time.time_ns()}", "ts": "2026-01-01T00:00:00.000Z",
                       "type": "say", "from": {"name": "bench", "kind": "tool"}, "text": f"latency {i}"})
# NATS: home b follows; the line is published on a plain connection (another machine's writer).
s = socket.create_connection(("127.0.0.1", port))
s.recv(4096)
s.sendall(b'CONNECT {"verbose":false,"pedantic":false}\r\n')
def pub(i):
    body = line(i).encode()
    s.sendall(b"PUB %s %d\r\n%s\r\n" % (subject.encode(), len(body), body))
def append(i):
    fd = os.open(file_room, os.O_WRONLY | os.O_APPEND)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.write(fd, (line(i) + "\n").encode())
    fcntl.flock(fd, fcntl.LOCK_UN)
    os.close(fd)
for name, p, write in [("nats, across homes", tail("b", True), pub), ("files, one home", tail("f", False), append)]:
    lat = sorted(measure(p, write))
    if lat:
        med, p99 = lat[len(lat) // 2], lat[min(len(lat) - 1, int(len(lat) * 0.99))]
        print(f"tail -f, {name}: {len(lat)} lines, median {med:.2f} ms, p99 {p99:.2f} ms, max {lat[-1]:.2f} ms (target p99 <= 50 ms)")
PY

writers() { # nats|files
  local kind=$1 pids=() i
  for ((i = 0; i < W; i++)); do
    local h=a
    if [ "$kind" = files ]; then h=f; elif ((i % 2)); then h=b; fi
    (for ((j = 0; j < L; j++)); do in_home "$h" "$kind" "$BIN/ag-room" tell --from "w$i" "w$i $j" >/dev/null || echo "w$i $j failed" >&2; done) &
    pids+=($!)
  done
  wait "${pids[@]}"
}
count() { # HOME nats|files: distinct and total bench lines in the room
  in_home "$1" "$2" "$BIN/ag-room" --json tail --all | python3 -c '
import json, sys
texts = [json.loads(l).get("text", "") for l in sys.stdin]
mine = [t for t in texts if t.startswith("w") and " " in t and t.split()[0][1:].isdigit()]
print(len(set(mine)), len(mine))'
}
for kind in nats files; do
  t0=$(ns)
  writers "$kind"
  t1=$(ns)
  home=b
  [ "$kind" = files ] && home=f
  read -r distinct total < <(count "$home" "$kind")
  awk -v k="$kind" -v w="$W" -v l="$L" -v d="$distinct" -v t="$total" -v ms="$(((t1 - t0) / 1000000))" 'BEGIN {
    printf "%s: %d writers x %d lines in %.1f s (%.0f lines/s); the room holds %d distinct, %d in all (want %d, %d)%s\n",
      k, w, l, ms / 1000, w * l / (ms / 1000), d, t, w * l, w * l, (d == w * l && t == w * l) ? "" : "  LOST OR REPEATED"
  }'
done
