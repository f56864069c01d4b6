//! The hand-written parts of ag-prompt(1).

use super::Block::{Example, Item, Para};
use super::{Page, Section};

pub const PAGE: Page = Page {
    name: "ag-prompt",
    command: ag::cli::prompt::command,
    sections: &[
        Section {
            title: "MODELS",
            blocks: &[
                Para("Models are named `PROVIDER/MODEL`. Which one runs: `-m`, else `AG_MODEL`, else the model the session ran on, else `model` in the configuration."),
                Item("anthropic/NAME", "The Anthropic Messages API: streaming, tools, extended thinking (`--thinking`) with signatures replayed, prompt-cache breakpoints; the key comes from `ANTHROPIC_API_KEY`."),
                Item("openai/NAME", "OpenAI Chat Completions: streaming, tool calls, usage; the key comes from `OPENAI_API_KEY`."),
                Item("NAMED/NAME", "A `[providers.NAMED]` entry of the configuration (`kind`, `base_url`, `api_key_env`): Ollama, llama.cpp, vLLM, LM Studio, OpenRouter."),
                Item("echo", "Offline: answers with the last user text."),
                Item("script:FILE", "Offline: plays a TOML file of `[[step]]` tables, each with optional `thinking`, `text`, `delay_ms`, `wait_for` (a file whose existence ends the step: a gate for demos and tests) and `[[step.tool_calls]]` (`name`, `arguments`, `id`); the Nth model request of a session gets the Nth step."),
            ],
        },
        Section {
            title: "TOOLS",
            blocks: &[
                Para("A session's tools are an allow-list kept with the session. A new session gets `read`, `glob`, `grep` and the `peer_*` room tools unless `--tools` says otherwise (a session started by `ag-log append` has the same set); a follow-up may narrow the list but never widen it. Only allowed tools are offered to the model, and a guard denies any other call: the model gets an error result and nothing runs."),
                Item("read", "A text file with line numbers (`offset`, `limit`)."),
                Item("glob", "Files matching a pattern, respecting .gitignore."),
                Item("grep", "A regular-expression search, respecting .gitignore."),
                Item("write", "Create or overwrite a file."),
                Item("edit", "Replace an exact, unique string, or every match with `replace_all`."),
                Item("bash", "A shell command in the session's directory, in the session's sandbox (see SANDBOX), with a timeout and an output cap; provider keys are removed from its environment, and `AG_SESSION`, `AG_HOME` and a private `TMPDIR` are set. Every process the command starts ends with it."),
                Item("peer_message, peer_inbox, peer_who, peer_peek, peer_claim, peer_release", "Talk in the worktree's room or to one session, read held-back lines, list the live sessions here, look at another session, and claim or release files; see ag-room(1). At each step boundary the model is shown, as one peer record of at most 800 bytes: a one-line roster when the live sessions here changed, the newest lines it has not heard (direct messages marked, with the sender's handle and how to reply), and the delivered receipts for its own lines. `all` is never a target: a line without `session` reaches the whole worktree."),
                Item("summon, retrieve", "Start a subagent from an agent definition and collect its answer; see ag-summon(1)."),
                Para("File tools stay inside the session's directory after resolving `..` and symbolic links."),
            ],
        },
        Section {
            title: "SANDBOX",
            blocks: &[
                Para("`bash` commands run in a sandbox. Its mode is stored with the session: follow-ups, forks, side questions and summoned agents keep it, and none of them can loosen it."),
                Item("workspace-write", "The default. A command may read any file, and write only in the session's directory, its private `TMPDIR` (removed after the call) and the directories listed in `sandbox.writable`. What a program outside the sandbox later reads and acts on stays read-only: in every git directory of the workspace, everything except `objects`, `refs`, `logs`, `index`, `HEAD`, `ORIG_HEAD`, `FETCH_HEAD`, `COMMIT_EDITMSG`, `packed-refs` and a merge's state (so `git add` and `git commit` work, while `config`, `hooks`, `commondir`, `info` and alternates cannot be changed); a `.git` file; `.ag/` and `.claude/`; and the store, the user configuration and `~/.claude` when the workspace holds them. What the command creates of that kind (a `commondir`, a `.git` file, a new repository's `config` and `hooks`) is removed when it ends. The command has no controlling terminal, and `ioctl(TIOCSTI)` fails. No network: connecting to or listening for other hosts fails, while loopback inside the command works."),
                Item("read-only", "Reads anywhere; writes only in the private `TMPDIR`; no network."),
                Item("off", "No sandbox: the command has all your rights and the network. Only by your explicit choice; each run says so on stderr."),
                Para("`--net` or `sandbox.network = true` lifts the network rule alone. `--sandbox` and the user configuration choose the mode of a new session; an agent definition's `sandbox` and a project file may only tighten it; on a follow-up `--sandbox` may tighten the stored mode, never loosen it."),
                Para("It is enforced with Landlock (file access) and new user, mount, PID, IPC and network namespaces: the protected paths are read-only bind mounts, the command sees only its own processes, and when the command ends every process it started, including ones that called `setsid`, is killed. Where the kernel cannot enforce the mode, `bash` is refused with an error naming the mode and how to turn the sandbox off; it never runs unconfined by itself. In a sandbox, `ag-*` commands that write the store (`ag-room tell`, `ag-summon`) cannot run; the `peer_*` and `summon` tools can."),
            ],
        },
        Section {
            title: "QUEUED INPUT",
            blocks: &[
                Para("A prompt for a session that another `ag-prompt` is running is queued: the command says so and exits 0, and the running turn takes the text at its next step boundary; a turn about to end takes it first. With `--no-queue` the command exits 3 instead. If the running process dies, the next run on the session takes what was queued."),
            ],
        },
        Section {
            title: "EXIT STATUS",
            blocks: &[
                Item("0", "The turn finished, or the prompt was queued for a running session."),
                Item("1", "An error, including a request the provider refused (400, 401, 403, 404, 422)."),
                Item("2", "A usage error: no prompt, no model, an unknown provider or tool."),
                Item("3", "The session is busy and `--no-queue` was given."),
                Item("4", "The session was not found, or `-c` without a terminal found no session this job made."),
                Item("5", "`--max-cost`: the turn stopped before a step that would have passed the budget; the session keeps it."),
                Item("6", "The newest message alone is more than the model's window; the error says how large, against what."),
                Item("74", "The turn ran and is recorded, but its answer could not be written to stdout (full, or closed from the start); do not run the prompt again. A reader that goes away (a closed pipe) ends quietly with 0 once the turn is recorded."),
                Item("75", "The provider stayed unavailable after the retries; the turn ends with an error chunk."),
                Item("130", "Interrupted: the chunks sealed so far stay and the turn ends as interrupted."),
            ],
        },
        Section {
            title: "ENVIRONMENT",
            blocks: &[
                Item("AG_MODEL", "The model when `-m` is not given."),
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
                Item(".ag/config.toml", "Project configuration, found upward from the current directory; it wins key by key over the user file, but cannot set `[permissions]`, `agent.max_summon_depth` or a provider's `api_key_env`, nor redefine a provider of the user file (ignored with a warning). Its `[sandbox]` can only tighten: a stricter `mode`, or `network = false`. Its `model`, `[providers.*]` and `[models.*]` apply only once the folder is trusted (`--trust`); otherwise they are ignored with a warning."),
                Item("$XDG_CONFIG_HOME/ag/trusted-folders", "The folders the user trusts, one absolute path a line; a folder trusts the folders inside it. `ag-prompt --trust` adds the current project."),
                Item("$XDG_CONFIG_HOME/ag/approved-mcp-servers", "The servers of trusted folders' `.mcp.json` files the user approved, by the SHA-256 of their entry. `ag-prompt --trust` approves a folder's servers as they read then; a server added or changed later is asked about on a terminal and left out, with a warning, in a pipe."),
                Item("$XDG_CONFIG_HOME/ag/config.toml", "User configuration: `model`, `[providers.NAME]`, `[network]` (timeouts, `max_attempts`, backoff), `[agent]` (`max_steps`, `bash_timeout_s`, `output_cap`, `max_tokens`, `thinking_budget`, `max_summon_depth`), `[permissions]` (`user_agents`, `protected_writes`), `[sandbox]` (`mode`, `network`, `writable`, a list of directories where `~` is your home)."),
                Item("$AG_HOME/ag.db", "The store."),
            ],
        },
        Section {
            title: "EXAMPLES",
            blocks: &[
                Example("Ask the offline echo model:", "ag-prompt -m echo 'hello'"),
                Example("Run a scripted multi-step turn that may read, list and write files:", "ag-prompt -m script:demo.toml --tools read,glob,write 'Summarize the notes'"),
                Example("Continue the most recent session:", "ag-prompt -c 'and the tests?'"),
                Example("Let the model run commands that may write only in this directory (the default sandbox):", "ag-prompt --tools read,edit,bash 'make the tests pass'"),
                Example("Let them read but not write, and reach the network:", "ag-prompt --tools bash --sandbox read-only --net 'check the links in README.md'"),
                Example("Review a diff read from stdin:", "git diff | ag-prompt -m anthropic/claude-sonnet-4-5 -"),
                Example("Print only the final usage of a turn:", "ag-prompt --json -m echo hi | jq -c 'select(.type == \"turn-done\")'"),
            ],
        },
    ],
};
