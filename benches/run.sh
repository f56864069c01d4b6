#!/usr/bin/env bash
# Build the release binaries, then run the benchmarks (benches/ag.rs: ag-log, ag-prompt, ag-fork).
#   bash benches/run.sh                  # full sizes (about 2-3 minutes on 2 cores)
#   bash benches/run.sh --quick          # sizes ÷10 and 3 ag-prompt runs, a smoke run
#   bash benches/run.sh --reps 9         # more repetitions per figure
#   bash benches/run.sh --only prompt    # some scenarios only: append, cat, rss, fold, prompt, fork,
#                                        # context, mcp, recall
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --bins --example mcp_fixture
cargo bench --bench ag -- "$@"
