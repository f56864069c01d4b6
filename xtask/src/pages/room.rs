//! The hand-written parts of ag-room(1).

use super::Block::{Example, Item, Para};
use super::{Page, Section};

pub const PAGE: Page = Page {
    name: "ag-room",
    command: ag::cli::room::command,
    sections: &[
        Section {
            title: "ROOMS",
            blocks: &[
                Para("A room is a JSONL file under `$AG_HOME/rooms/`. The worktree room belongs to the canonical git top level above the current directory (the directory itself outside git) and is named `SLUG-HASH.jsonl` after it; every session working in that tree hears every line of it, except direct messages to others. The device room, `device.jsonl`, carries only direct messages between folders; a device-wide broadcast is refused, because it would reach every session on the machine."),
                Para("A line is one JSON object of at most 64 KiB: `{\"v\":1, \"id\", \"ts\", \"type\", \"from\": {\"session\", \"name\", \"pid\", \"kind\"}, \"to\", \"in_reply_to\", \"text\", ...}` with `type` one of `say`, `delivered`, `ack`, `claim`, `release`. Writers append the whole line in one write under an exclusive lock on a file opened with O_APPEND, so concurrent writers never interleave. Readers keep a byte offset per room in the store, never read past a torn last line (it is read once complete) and skip a corrupt line with a warning that names the file and the byte offset."),
                Para("Delivery: a line is posted when it is written; delivered when the addressee's agent loop put it into the model's context, or a person read it with `inbox` (a `delivered` line); acked by `ack` or a reply. A session hears at each step boundary: one peer record with at most the 3 newest lines — speech, and the `delivered`/`ack` receipts for its own lines — 800 bytes in all as the model sees them (wrappers included) and 200 per line of text; the rest stays unread and the model is told to call `peer_inbox`. A direct message is marked as one, with the sender's handle and how to reply; an answer shows what it answers. When the live sessions of the worktree change (and when it first meets them) the record carries a one-line roster: name, handle, goal, directory. An `ag-prompt` run without `--json` notes on stderr, in one line, what its agent heard."),
            ],
        },
        Section {
            title: "IDENTITY AND TARGETS",
            blocks: &[
                Para("Inside an `ag-prompt` run (its tools, or any process they start: `AG_SESSION` is set) the session is the speaker. Otherwise `--from NAME`, else `AG_NAME`, else `USER` or `LOGNAME`, else `user`; the kind is `human` when stdin is a terminal and `tool` otherwise (a hook, a cron job, a pipe). This holds for every verb."),
                Para("A target is, in order: an exact session id, a handle, a pid of a live session, a unique id prefix, a unique fragment of a live session's title, a unique fragment of its goal (first prompt); case-insensitive. An ambiguous target exits 2 listing the candidates with their ids; results name the resolved id. A direct message to a session in another worktree goes through the device room. `all`, `everyone` and `*` are never targets: a line without a target already reaches every session of the worktree."),
            ],
        },
        Section {
            title: "CLAIMS",
            blocks: &[
                Para("A claim is a `claim` line: paths (globs, relative to the worktree's top), an intent, a mode (`exclusive`, or `shared` with `--shared`) and a time to live (30 minutes unless `--ttl`). It is active until released, expired, or, when a session holds it, until that session is removed (`ag-log rm`), fails, is cancelled or its process dies mid-turn; it outlives the end of a turn, so a chat keeps its claim between turns, and `claims` shows such a holder as idle. Overlap is checked both ways: equal paths, a directory and what it holds, a glob and what it matches. A claim that overlaps someone else's exclusive claim (or an exclusive claim over anyone's) is refused with exit 3 naming the holder, its intent and the overlapping paths; the check and the write happen under the room's lock."),
                Para("Before `write` and `edit`, the agent loop refuses a path under someone else's exclusive claim with a tool error naming the holder, its intent and how to message it; nothing is written. The first `bash` call of a turn while others hold claims in the worktree does not run: the model is told what is claimed, by whom and how to reach them, and runs it by calling again; after a `bash` call, a claimed file the command created, changed or removed is named in the tool result and posted to the room. When other live sessions share the worktree and nobody claims anything, the first `write`, `edit` or `bash` of a turn carries a one-line note naming them. `guard` checks staged files for a git pre-commit hook."),
            ],
        },
        Section {
            title: "EXIT STATUS",
            blocks: &[
                Item("0", "Done; `tell --wait` saw the line delivered; `guard` found nothing (or `--mode warn`)."),
                Item("1", "An error; `guard --mode block` found a file under someone else's claim."),
                Item("2", "A usage error: an empty or too long text, an ambiguous target (the candidates are listed), a device-wide broadcast, a bad `--ttl`."),
                Item("3", "`claim`: someone else holds an overlapping claim. Also: the store is busy."),
                Item("4", "No session matches the target; no such message."),
                Item("74", "`tell`: the line was posted, but printing its id failed (stdout full or closed); do not post it again."),
                Item("75", "`tell --wait`: not delivered in time."),
            ],
        },
        Section {
            title: "ENVIRONMENT",
            blocks: &[
                Item("AG_SESSION", "Set by `ag-prompt` for its tools: speak as that session."),
                Item("AG_NAME", "Your name when not given with `--from`."),
                Item("AG_HOME", "The store directory, unless `--home` is given."),
                Item("NO_COLOR", "When set and not empty, `--color auto` prints no colour."),
            ],
        },
        Section {
            title: "FILES",
            blocks: &[
                Item("$AG_HOME/rooms/SLUG-HASH.jsonl", "A worktree room."),
                Item("$AG_HOME/rooms/device.jsonl", "The device room: direct messages between folders."),
                Item("$AG_HOME/ag.db", "Sessions (presence) and each reader's cursor per room."),
            ],
        },
        Section {
            title: "EXAMPLES",
            blocks: &[
                Example("Tell everyone working in this tree:", "ag-room tell 'I am moving lib/store into a crate; hold off there'"),
                Example("A direct message to the session whose goal mentions the parser; wait up to 30 s for it to be heard:", "ag-room tell --to parser --wait=30 'the grammar changed, re-run the tests'"),
                Example("Claim a directory for 45 minutes, then release it:", "ag-room claim 'lib/store/**' --intent 'schema migration' --ttl 45m\nag-room release --all"),
                Example("A git pre-commit hook (.git/hooks/pre-commit) that refuses files under someone else's claim:", "#!/bin/sh\nexec ag-room guard --staged --mode block"),
                Example("A git post-commit hook that tells the room (works with no TTY and an empty environment):", "#!/bin/sh\ngit log -1 --format='committed %h %s' | ag-room tell --from post-commit -"),
                Example("A cron job that posts the nightly build result (crontab -e):", "0 3 * * * cd $HOME/src/app && AG_NAME=nightly ag-room tell \"$(make -s check 2>&1 | tail -1)\""),
                Example("Follow the room as JSON:", "ag-room tail -f --json | jq -r '.from.name + \": \" + (.text // .type)'"),
            ],
        },
    ],
};
