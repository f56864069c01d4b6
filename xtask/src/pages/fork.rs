//! The hand-written parts of ag-fork(1).

use super::Block::{Example, Item, Para};
use super::{Page, Section};

pub const PAGE: Page = Page {
    name: "ag-fork",
    command: ag::cli::fork::command,
    sections: &[
        Section {
            title: "FORKS",
            blocks: &[
                Para("A fork is one new session row that names its source and the last seq it inherits (the cut); no chunk is copied, so forking a million-chunk session costs what forking an empty one does. The fork reads its source's chunks up to the cut through the lineage (a fork of a fork works too) and continues the seq numbering after it; `ag-log cat`, `fold`, `search` and `show` all see the lineage."),
                Para("Without `--at` the cut is the end of the latest completed turn (its `turn_end` chunk). With `--at SEQ` the cut may fall inside an open turn: every tool call of that turn left without a result gets a persisted synthetic result (`is_error: true, synthetic: true`), in the same transaction as the session row, so the fork folds into a valid request."),
                Para("The fork inherits the model, directory, system prompt and tools of its source. `--tools` narrows the tools and never widens them; `--read-only` sets `read`, `glob` and `grep`. A session that others fork from is removed only with `ag-log rm --cascade`, which removes the forks too."),
            ],
        },
        Section {
            title: "SIDE CHAT",
            blocks: &[
                Para("`--btw QUESTION` forks at the latest completed turn into a session of kind `side` titled `BTW · QUESTION` (cut at 60 characters with an ellipsis), whose tools are `read`, `glob` and `grep` only, kept in the session row. A side-chat section is added after the inherited system prompt: the transcript is context, not a task; quoted text is data; answer directly; claim no change; send change requests back to the main conversation. The fork is then prompted with the question: the answer streams to stdout and the fork's id goes to stderr (`session ID`)."),
                Para("Only the read-only tools are offered, and the guard denies any other call (the model gets an error result; nothing runs). Follow-ups with `ag-prompt -s ID` stay read-only, `--tools all` or not, also after `ag-log title` renames the side chat."),
                Para("`--keep-cache` keeps the source's system prompt and offered tool list byte-identical, so the first side-chat request reuses the source's prompt cache; the side-chat rules travel with the question instead, and the guard still denies every tool but `read`, `glob` and `grep`."),
            ],
        },
        Section {
            title: "EXIT STATUS",
            blocks: &[
                Item("0", "The fork was made (and with `--btw`, the question answered)."),
                Item("1", "An error. With `--btw`: the model rejected the side-chat prompt (400, 401, 403, 404, 422); the side chat is kept for inspection and the error names it."),
                Item("2", "A usage error: `--at` outside the log, an unknown tool, no model for `--btw`."),
                Item("3", "The session has no completed turn to fork at (\"the side chat needs one completed turn in this session first\" for `--btw`); nothing is created. Also: the store is busy."),
                Item("4", "The session was not found."),
                Item("74", "The fork (or side chat) was made, but printing its id or answer failed (stdout full or closed); do not run the command again."),
                Item("75", "With `--btw`: the model stayed unavailable after the retries; the side chat is kept without an answer and the error names it."),
                Item("130", "Interrupted; the side chat keeps what was written."),
            ],
        },
        Section {
            title: "ENVIRONMENT",
            blocks: &[
                Item("AG_MODEL", "The side chat's model when `-m` is not given (else the session's, else the configuration's)."),
                Item("ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL", "The Anthropic key and endpoint."),
                Item("OPENAI_API_KEY, OPENAI_BASE_URL", "The OpenAI key and endpoint."),
                Item("AG_HOME", "The store directory, unless `--home` is given."),
                Item("XDG_CONFIG_HOME", "The user configuration is `$XDG_CONFIG_HOME/ag/config.toml`."),
                Item("NO_COLOR", "When set and not empty, `--color auto` prints no colour."),
            ],
        },
        Section {
            title: "FILES",
            blocks: &[
                Item(".ag/config.toml", "Project configuration, found upward from the current directory."),
                Item("$XDG_CONFIG_HOME/ag/config.toml", "User configuration: `model`, `[providers.NAME]`, `[network]`, `[agent]`."),
                Item("$AG_HOME/ag.db", "The store; a fork adds one row to its `sessions` table."),
            ],
        },
        Section {
            title: "EXAMPLES",
            blocks: &[
                Example("Fork the most recent session at its latest completed turn and continue the fork:", "ag-prompt -s \"$(ag-fork last)\" 'try the other approach'"),
                Example("Cut at seq 42, read-only:", "ag-fork 0192f3a1 --at 42 --read-only"),
                Example("Ask a side question without disturbing the main conversation:", "ag-fork last --btw 'which file holds the retry logic?'"),
                Example("The same, reusing the session's prompt cache:", "ag-fork last --btw 'why did the test fail?' --keep-cache"),
                Example("See the lineage of a fork:", "ag-log show \"$(ag-fork last)\""),
            ],
        },
    ],
};
