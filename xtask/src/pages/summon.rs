//! The hand-written parts of ag-summon(1).

use super::Block::{Example, Item, Para};
use super::{Page, Section};

pub const PAGE: Page = Page {
    name: "ag-summon",
    command: ag::cli::summon::command,
    sections: &[
        Section {
            title: "AGENT DEFINITIONS",
            blocks: &[
                Para("An agent definition is a file `SLUG.toml` with `name`, `description`, `is_subagent`, `tools`, `models` (the first that resolves is used; a `script:` path is relative to the file), `cwd`, `system_prompt`, `max_steps` and `sandbox` (a mode for `bash`, which can only tighten the user's or the spawner's; a child never loosens its parent's sandbox). Definitions come from `.ag/agents/` (the project's, found upward from the current directory) over `$XDG_CONFIG_HOME/ag/agents/` (the user's) over the built-ins `explorer`, `reviewer`, `worker` (subagents) and `default` (a user agent). A definition without `tools` gets `read`, `glob` and `grep`; one without `models` runs on the spawner's model, else `AG_MODEL`, else the configured one."),
                Para("Claude Code agents, `.claude/agents/*.md` with `name`, `description`, `tools`, `model` and (ours) `sandbox` in their front matter and the system prompt as the body, are read as subagent definitions. Their tools map to ours (Read, Glob, Grep, Write, Edit, Bash); others are dropped with a warning. A Claude model alias such as `sonnet` names no provider here, so the spawner's model is used."),
                Para("A malformed definition is reported on stderr as `FILE:LINE: message; skipped`, and the rest load. In a Claude agent's front matter that is a line that is not `key: value`, an unclosed quote or `[` list, a multi-line or map value, or a missing closing `---`; a `[a, b]` list is read like `a, b`. `ag-summon agents` lists the subagents, and the user agents only when they are permitted."),
            ],
        },
        Section {
            title: "TOOLS AND THE SPAWNER",
            blocks: &[
                Para("The spawning session is `--parent`, else `AG_SESSION` (so `ag-summon` run from an agent's `bash` tool acts as that agent), else a person at a shell. A child's tools are the requested ones (`--tools`), else the definition's, intersected with the spawning session's effective tools: a child never gains a tool. The tools dropped are printed on stderr (and, for the `summon` tool, in its result); never silently. From a plain shell the tools are the definition's, narrowed by `--tools`."),
                Para("A spawning session must itself have the `summon` tool: `ag-summon` with `--parent` or `AG_SESSION` naming a session whose stored tools lack `summon` (a session with no stored tools runs read-only, which lacks it) is refused with status 1 and nothing is created. A person at a shell is not restricted."),
                Para("Provider keys: a child started by `ag-summon` run from an agent's `bash` tool inherits that tool's environment, from which provider keys and other secrets (`ANTHROPIC_API_KEY`, `OPENAI_API_KEY`, any `*_KEY`, `*_TOKEN`, `*_SECRET`, …) are removed. Such a child cannot use a keyed provider; it needs a model that wants no key (`echo`, a `script:`, a configured provider without `api_key_env`), else it fails with a missing-key error in its log. The `summon` tool has no such limit: the agent loop starts the child from the `ag-prompt` process itself, whose environment still holds the keys."),
                Para("A subagent cannot summon: nesting is off, and `summon` and `retrieve` are taken from a subagent's tools. `[agent] max_summon_depth = N` in the configuration allows N levels of nesting."),
            ],
        },
        Section {
            title: "SUBAGENTS AND USER AGENTS",
            blocks: &[
                Para("A subagent is a child session (kind `subagent`, `parent_id` set) from a definition with `is_subagent = true`. Its directory (`--cwd`, else the definition's `cwd`, relative to the parent's) must resolve, symlinks included, inside the parent's directory; otherwise the summon is refused and nothing is created. In the foreground `ag-summon` waits and prints the answer; with `--background` it prints the child's id at once."),
                Para("A user agent (`--top-level`) is an independent session (kind `user_agent`, no parent) from a definition with `is_subagent = false`, in the definition's `cwd` or the current directory. It is fire-and-forget: `retrieve` refuses it. It needs `[permissions] user_agents = \"allow\"`; without it the flag is refused, and the `summon` tool offered to a model has no `top_level` parameter and lists only subagents."),
                Para("Every child runs as a detached `ag-prompt -s CHILD TASK` process in its own process group, with its output in `$AG_HOME/agents/CHILD.log`; its pid and start time are recorded in the store, so `retrieve`, `ps` and `cancel` work from any shell and after the parent exited. A child whose process died without finishing is reported `failed`. A finished child is `done`."),
                Para("Inside `ag-prompt`, a session whose tools include `summon` and `retrieve` gets the tools `summon {agent, task, tools?, background?, working_directory?, top_level?}` and `retrieve {id, timeout_s?}` (`id` may be `last`, the session's most recent subagent)."),
            ],
        },
        Section {
            title: "EXIT STATUS",
            blocks: &[
                Item("0", "Done: the child finished (`done`), was started in the background, or was cancelled."),
                Item("1", "An error: the child failed or was cancelled (`retrieve`, foreground), a refused summon (permission, nesting, a spawning session without `summon`, a directory outside the parent's), `retrieve` on a user agent."),
                Item("2", "A usage error: no `--agent`, no task, an unknown tool, a definition of the wrong kind."),
                Item("4", "The agent definition or the session was not found."),
                Item("74", "The agent was started, but printing its id or answer failed (stdout full or closed); do not start it again."),
                Item("75", "`retrieve --timeout`: the child is still running."),
                Item("130", "Interrupted while waiting; the child keeps running."),
            ],
        },
        Section {
            title: "ENVIRONMENT",
            blocks: &[
                Item("AG_SESSION", "The spawning session when `--parent` is not given (`ag-prompt` sets it for its tools); also the default parent of `ps`."),
                Item("AG_MODEL", "The model of a child whose definition names none, when the spawner has none."),
                Item("AG_HOME", "The store directory, unless `--home` is given."),
                Item("XDG_CONFIG_HOME", "User definitions are in `$XDG_CONFIG_HOME/ag/agents/`, the configuration in `$XDG_CONFIG_HOME/ag/config.toml`."),
                Item("NO_COLOR", "When set and not empty, `--color auto` prints no colour."),
            ],
        },
        Section {
            title: "FILES",
            blocks: &[
                Item(".ag/agents/SLUG.toml", "Project agent definitions, found upward from the current directory."),
                Item(".claude/agents/NAME.md", "Claude Code agents, read as subagent definitions."),
                Item("$XDG_CONFIG_HOME/ag/agents/SLUG.toml", "User agent definitions."),
                Item(".ag/config.toml", "`[permissions] user_agents = \"allow\"` permits user agents; `[agent] max_summon_depth` allows nesting."),
                Item("$AG_HOME/agents/ID.log", "A child's stdout and stderr."),
            ],
        },
        Section {
            title: "EXAMPLES",
            blocks: &[
                Example("List the definitions:", "ag-summon agents"),
                Example("Ask the read-only explorer and wait for its answer:", "ag-summon --agent explorer 'where is the retry logic?'"),
                Example("Start a worker in the background with fewer tools, then wait for it:", "id=$(ag-summon --agent worker --background --tools read,edit 'fix the typo in README.md')\nag-summon retrieve \"$id\" --timeout 10m"),
                Example("What the current agent started, from its bash tool or another shell:", "ag-summon ps --parent 0192f3a1"),
                Example("Stop a child:", "ag-summon cancel 0192f3a1"),
                Example("Start an independent user agent (needs the permission):", "ag-summon --agent default --top-level 'tidy the changelog'"),
                Example("Run a session from a definition with ag-prompt:", "ag-prompt --agent explorer 'how are sessions stored?'"),
            ],
        },
    ],
};
