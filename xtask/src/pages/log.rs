//! The hand-written parts of ag-log(1).

use super::Block::{Example, Item, Para};
use super::{Page, Section};

pub const PAGE: Page = Page {
    name: "ag-log",
    command: ag::cli::log::command,
    sections: &[
        Section {
            title: "NDJSON CHUNKS",
            blocks: &[
                Para(
                    "`append` reads chunks from stdin, and `cat` and `tail` print them with \
                     `--json` (`search` adds a `snippet`), as NDJSON: one JSON object per line:",
                ),
                Example(
                    "",
                    r#"{"id","session","seq","turn","step","role","type","data","ts"}"#,
                ),
                Item("id", "The chunk's id (a UUID v7)."),
                Item("session", "The id of the session the chunk belongs to."),
                Item("seq", "Its place in the session: gapless, from 1."),
                Item(
                    "turn",
                    "The turn's id: one user input and the whole response to it.",
                ),
                Item(
                    "step",
                    "The model round trip within the turn; user input is step 0.",
                ),
                Item("role", "`user`, `assistant`, `tool`, `system` or `peer`."),
                Item("type", "What `data` holds; one of the types below."),
                Item("ts", "When the chunk was written, ISO-8601 UTC."),
                Para(
                    "On input, `id`, `session`, `seq` and `ts` may be left out and are assigned. \
                     Chunks without `turn` go into one new turn per invocation; a missing `step` \
                     means 0. A field marked ? below may be left out.",
                ),
                Item("text", "{text}"),
                Item("thinking", "{text, signature?, redacted?}"),
                Item(
                    "tool_call",
                    "{call_id, name, arguments}, where arguments is any JSON value.",
                ),
                Item(
                    "tool_result",
                    "{call_id, name, result, is_error, synthetic?}",
                ),
                Item("error", "{message, status?}"),
                Item(
                    "system",
                    "{kind, ...}; every completed turn ends with a `system` chunk of kind \
                     `turn_end`.",
                ),
                Item(
                    "peer",
                    "{messages, omitted, room}: messages from a room, never a user message.",
                ),
            ],
        },
        Section {
            title: "EXIT STATUS",
            blocks: &[
                Item("0", "Success."),
                Item(
                    "1",
                    "An error: bad input (the file and line are named), an I/O failure, or a \
                     truncated stream for `ingest`.",
                ),
                Item(
                    "2",
                    "A usage error, or an ambiguous session reference (the candidates are \
                     listed).",
                ),
                Item(
                    "3",
                    "A conflict: removing a session that others fork from without `--cascade`, \
                     or the store is busy.",
                ),
                Item("4", "The session was not found."),
                Item(
                    "74",
                    "`append`: the chunks were stored, but printing them failed (stdout full or \
                     closed). Do not run the command again: that would store them twice.",
                ),
                Item("75", "A temporary failure; trying again later may succeed."),
                Item("130", "Interrupted."),
                Para(
                    "A closed pipe, as in `ag-log cat last | head`, ends the command quietly \
                     with status 0; `tail -f` ends as soon as its reader goes away. A stdout \
                     closed from the start (`>&-`) is an error; redirect it to /dev/null to \
                     discard the output. A failure to write stderr never changes the status.",
                ),
            ],
        },
        Section {
            title: "ENVIRONMENT",
            blocks: &[
                Item("AG_HOME", "The store directory, unless `--home` is given."),
                Item(
                    "XDG_DATA_HOME",
                    "Without `AG_HOME`, the store is `$XDG_DATA_HOME/ag`.",
                ),
                Item(
                    "HOME",
                    "Without either, the store is `$HOME/.local/share/ag`.",
                ),
                Item(
                    "NO_COLOR",
                    "When set and not empty, `--color auto` prints no colour.",
                ),
                Item(
                    "AG_FAKE_NOW_MS",
                    "Pins the clock to this many milliseconds since the Unix epoch, for tests \
                     and demos.",
                ),
            ],
        },
        Section {
            title: "FILES",
            blocks: &[
                Item(
                    "$AG_HOME/ag.db",
                    "The store: an SQLite database in WAL mode, created with mode 0600 in a \
                     directory with mode 0700.",
                ),
                Item("$AG_HOME/rooms/", "Room logs, one JSONL file per room."),
            ],
        },
        Section {
            title: "EXAMPLES",
            blocks: &[
                Example(
                    "Start a session titled demo with a first user message:",
                    "ag-log append --new --title demo 'What is in this repo?'",
                ),
                Example(
                    "Append NDJSON chunks to the most recently updated session:",
                    r#"printf '%s\n' \
  '{"role":"assistant","type":"text","data":{"text":"Hi"}}' |
  ag-log append -s last"#,
                ),
                Example(
                    "Print the newest 50 chunks as NDJSON:",
                    "ag-log cat last --limit 50 --json",
                ),
                Example(
                    "Follow a session as chunks are written:",
                    "ag-log tail -f last",
                ),
                Example(
                    "Print the OpenAI request body the session folds into, with a system prompt \
                     from a file:",
                    "ag-log fold last --dialect openai --system @prompt.md",
                ),
                Example(
                    "Append a streamed Anthropic response (the request elided) as one assistant \
                     step, and end the turn:",
                    "curl -N ... | ag-log ingest -s last --dialect anthropic --end-turn",
                ),
                Example(
                    "Search one session's text:",
                    "ag-log search 'cache breakpoint' -s last",
                ),
                Example(
                    "Remove a session and every session forked from it:",
                    "ag-log rm OLD --cascade",
                ),
            ],
        },
    ],
};
