#!/usr/bin/env bash
# Build the release binaries, then run the benchmarks, each figure against a baseline measured
# in the same run:
#   bash benches/run.sh                  # everything; writes the figures into benches/README.md
#   bash benches/run.sh --quick          # sizes ÷10, 3 ag-prompt runs, smaller room and import
#                                        # runs: a smoke run of the whole
#   bash benches/run.sh --reps 9         # more repetitions per figure
#   bash benches/run.sh --only prompt    # some scenarios only: append, cat, rss, fold, prompt, fork,
#                                        # context, uncompacted, mcp, recall, foldrss, turnrss,
#                                        # scale
# With no arguments (or --quick alone) it also runs room.sh, size.sh and import.sh. A run with
# no arguments (or PUBLISH=1) replaces the "Latest run" section of benches/README.md with what
# it printed, so the published figures are always a run's own output.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --bins --example mcp_fixture
# The build leaves hundreds of megabytes to write back; written now, they do not land in the
# first scenario's syncs.
sync
out=$(mktemp)
trap 'rm -f "$out"' EXIT
# The scripts beside the table run with no arguments, and smaller with --quick alone.
extras=
if [ $# -eq 0 ]; then
  extras=(200 100 5)  # room.sh tells, import.sh megabytes, import.sh runs
elif [ "$*" = --quick ]; then
  extras=(50 10 1)
fi
{
  cargo bench --bench ag -- "$@"
  if [ -n "${extras[*]}" ]; then
    echo
    echo '### ag-room (benches/room.sh)'
    echo
    LAT=${extras[0]} bash benches/room.sh "${extras[0]}"
    echo
    echo '### What `cargo install` puts on disk (benches/size.sh)'
    echo
    bash benches/size.sh
    echo
    echo '### Import and export (benches/import.sh)'
    echo
    REPS=${extras[2]} bash benches/import.sh "${extras[1]}"
  fi
} | tee "$out"
if [ $# -eq 0 ] || [ "${PUBLISH:-}" = 1 ]; then
  python3 - "$out" benches/README.md <<'PY'
import sys
out, readme = sys.argv[1], sys.argv[2]
begin, end = "<!-- latest run: begin -->", "<!-- latest run: end -->"
text = open(readme).read()
if begin not in text or end not in text:
    sys.exit(f"{readme}: no '{begin}' … '{end}' section to replace")
run = open(out).read().rstrip("\n")
# Plain lines become a code block; the tables stay Markdown tables.
blocks, cur, kind = [], [], None
for line in run.split("\n"):
    if line.startswith("|"):
        k = "md"  # already a Markdown table row
    elif line.startswith(("figure ", "-")) and "|" in line or (kind == "table" and "|" in line):
        k = "table"  # benches/ag.rs's table: rows without the outer pipes
    elif line.startswith("### "):
        k = "head"
    else:
        k = "text"
    if k != kind and cur:
        blocks.append((kind, cur))
        cur = []
    kind = k
    cur.append(line)
if cur:
    blocks.append((kind, cur))
parts = []
for k, lines in blocks:
    if k == "table":
        parts.append("\n".join("| " + l + " |" for l in lines))
    elif k in ("head", "md"):
        parts.append("\n".join(lines))
    else:
        body = "\n".join(lines).strip("\n")
        if body:
            parts.append("```text\n" + body + "\n```")
head, rest = text.split(begin, 1)
_, tail = rest.split(end, 1)
open(readme, "w").write(head + begin + "\n\n" + "\n\n".join(parts) + "\n\n" + end + tail)
print(f"wrote the figures into {readme}", file=sys.stderr)
PY
fi
