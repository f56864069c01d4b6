#!/usr/bin/env bash
# The main job, offline: build ag, then log a session, run a multi-step agent turn with
# tools on the scripted model, let an agent summon a subagent, let two agents talk and claim
# a file, ask a read-only side question, fork a session, and read everything back.
# Uses a temporary store, removed at the end, unless AG_HOME names one.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "${AG_HOME:-}" ]; then
  store=$(mktemp -d)
  export AG_HOME="$store"
fi

if [ -n "${AG_BIN_DIR:-}" ]; then
  export PATH="$AG_BIN_DIR:$PATH"          # already built (the test suite runs it this way)
else
  echo "== building ag (release)"
  cargo build --release --quiet --manifest-path "$root/Cargo.toml" --bins
  export PATH="$root/target/release:$PATH"
fi

work=$(mktemp -d)
trap 'rm -rf "$work" ${store:+"$store"}' EXIT
cd "$work"
printf '# Notes\n\n- [ ] parser: handle empty input\n- [ ] docs: write the README\n' > notes.md

echo
echo "== ag-log: a session by hand"
ag-log append --new --title "hand-made" "What is a chunk?" -q
printf '%s\n' \
  '{"role":"assistant","type":"text","data":{"text":"One sealed block of a conversation."}}' \
  '{"role":"system","type":"system","data":{"kind":"turn_end","stop_reason":"end_turn","usage":{"input":12,"output":8,"cache_read":0,"cache_write":0}}}' \
  | ag-log append -s last -q
ag-log cat last

echo
echo "== ag-prompt: a multi-step agent turn with tools, on the offline script: model"
ag-prompt -m "script:$root/examples/scripts/walkthrough.toml" --tools read,glob,grep,write \
  --title walkthrough "Summarize the notes in this folder into SUMMARY.md"

walk=$(ag-log ls --json | grep '"title":"walkthrough"' | sed -n 's/.*"id":"\([^"]*\)".*/\1/p')

echo
echo "== the file the agent wrote"
cat SUMMARY.md

echo
echo "== ag-summon: a parent agent summons a subagent and retrieves its answer"
mkdir -p .ag && cp -r "$root/examples/agents" .ag/agents
ag-summon agents
ag-prompt -m "script:$root/examples/agents/scripts/summon-parent.toml" \
  --tools read,glob,summon,retrieve --title "summon demo" "What is still open in my notes?"
ag-summon ps --all

echo
echo "== ag-room: two agents in one folder talk, and a claim keeps them off each other's file"
ag-prompt -m "script:$root/examples/scripts/alice.toml" --tools all 'alice: write the release notes' &
alice=$!
sleep 0.3
ag-prompt -m "script:$root/examples/scripts/bob.toml" --tools all 'bob: review the notes'
wait "$alice"
ag-room tail --all
echo "-- NOTES.md:"
cat NOTES.md

echo
echo "== ag-log: the turn as it was logged"
ag-log cat "$walk"
ag-log show "$walk"
echo
echo "== ag-fork: a side question about the session, answered read-only from its history"
ag-fork "$walk" --btw "Which tasks are still open?"
side=$(ag-log ls --json | grep '"kind":"side"' | sed -n 's/.*"id":"\([^"]*\)".*/\1/p' | head -n 1)
ag-log show "$side"

echo
echo "== ag-fork: an O(1) fork of the agent's session, to try something else from there"
fork=$(ag-fork "$walk" --title "another summary")
ag-log show "$fork" | sed -n '1,2p;/lineage/,/this session/p'

echo
echo "== ag-log: the request it folds into (OpenAI dialect, first 300 bytes)"
ag-log fold "$fork" --dialect openai | head -c 300; echo
echo
ag-log ls --limit 5
