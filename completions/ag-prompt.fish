# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_ag_prompt_global_optspecs
    string join \n home= json q/quiet v/verbose color= any s/session= c/continue name= new a/attach= output= schema= o/output-file= session-id= m/model= system= no-project-context tools= agent= max-cost= context-window= max-steps= thinking= title= no-queue wait compact sandbox= net approval= y/yes chat command= trust allow-protected h/help V/version
end

function __fish_ag_prompt_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_ag_prompt_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_ag_prompt_using_subcommand
    set -l cmd (__fish_ag_prompt_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c ag-prompt -n "__fish_ag_prompt_needs_command" -l home -d 'The store directory [default: $AG_HOME, else $XDG_DATA_HOME/ag, else ~/.local/share/ag]' -r -F
complete -c ag-prompt -n "__fish_ag_prompt_needs_command" -l color -d 'When to colour output (NO_COLOR is honoured by `auto`)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c ag-prompt -n "__fish_ag_prompt_needs_command" -s s -l session -d 'Continue this session: a handle, an id or unique prefix, a title or title fragment, `last` or `last~N`' -r
complete -c ag-prompt -n "__fish_ag_prompt_needs_command" -l name -d 'Continue the session named NAME in this directory, starting it on the first run: one command for a cron job or a CI step that keeps one session' -r
complete -c ag-prompt -n "__fish_ag_prompt_needs_command" -s a -l attach -d 'Attach a file (repeatable): a text file goes before the prompt, marked with its path; a PNG, JPEG, GIF or WebP image (told by its content, at most 3.75 MiB) goes as an image to models that take them' -r -F
complete -c ag-prompt -n "__fish_ag_prompt_needs_command" -l output -d 'What stdout carries: the streamed answer (text), or only the result object (json: {session, handle, turn, answer, stop_reason, usage}) for scripts' -r -f -a "text\t'The answer as it streams (the default)'
json\t'Only the result object: {session, handle, turn, answer, stop_reason, usage}'"
complete -c ag-prompt -n "__fish_ag_prompt_needs_command" -l schema -d 'The answer must be JSON valid against this JSON Schema (the text, or @FILE): asked of the provider natively where it can (OpenAI), through a forced `final_answer` tool call otherwise; checked before it is printed, and sent back to the model with the errors up to agent.schema_retries times (default 2); still invalid, exit 1' -r
complete -c ag-prompt -n "__fish_ag_prompt_needs_command" -s o -l output-file -d 'Also write the turn\'s final answer to FILE' -r -F
complete -c ag-prompt -n "__fish_ag_prompt_needs_command" -l session-id -d 'The new session\'s id, chosen up front (a UUID), so a script knows it before it runs' -r
complete -c ag-prompt -n "__fish_ag_prompt_needs_command" -s m -l model -d 'PROVIDER/MODEL, an alias (sonnet, opus, haiku, gpt, …; `ag-prompt models` lists them), `echo` or `script:FILE` [env: AG_MODEL]' -r
complete -c ag-prompt -n "__fish_ag_prompt_needs_command" -l system -d 'A new session\'s system prompt, the text or @FILE, in place of the default one (which says where it runs, the date, the platform, its tools and sandbox). The project\'s instructions are still added' -r
complete -c ag-prompt -n "__fish_ag_prompt_needs_command" -l tools -d 'Tools the session may use: names and sets (read-only, all, none), comma-separated; MCP tools as mcp__SERVER__TOOL or mcp__SERVER__*. `+edit` adds to the defaults (or to the session\'s tools) and `-bash` takes away, so `--tools +edit` keeps the room tools. A new session defaults to read-only; an existing session\'s tools can only narrow' -r
complete -c ag-prompt -n "__fish_ag_prompt_needs_command" -l agent -d 'Start the new session from an agent definition (`ag-summon agents` lists them): its system prompt, tools (narrowed by --tools), models and step limit' -r
complete -c ag-prompt -n "__fish_ag_prompt_needs_command" -l max-cost -d 'Stop the turn before a step that would take its cost past USD dollars (the next step is estimated at what the last one cost); the turn ends cleanly, exit 5' -r
complete -c ag-prompt -n "__fish_ag_prompt_needs_command" -l context-window -d 'Plan this run against a context window of N tokens (at least 256), whatever the model\'s: exercise compaction on an offline model, or use less of a large window' -r
complete -c ag-prompt -n "__fish_ag_prompt_needs_command" -l max-steps -d 'Stop after N model round trips in this turn (at least 1)' -r
complete -c ag-prompt -n "__fish_ag_prompt_needs_command" -l thinking -d 'Ask for extended thinking with this many budget tokens (Anthropic models; signed thinking is kept and replayed) [config: agent.thinking_budget]' -r
complete -c ag-prompt -n "__fish_ag_prompt_needs_command" -l title -d 'Title of a new session [default: the start of the prompt]' -r
complete -c ag-prompt -n "__fish_ag_prompt_needs_command" -l sandbox -d 'The sandbox the bash tool runs in: workspace-write (the default: writes only in the session\'s directory and a private TMPDIR, no network), read-only, or off. A session keeps its mode; a follow-up can only tighten it [config: sandbox.mode]' -r
complete -c ag-prompt -n "__fish_ag_prompt_needs_command" -l approval -d 'How calls to tools that change something (write, edit, bash, MCP tools) are decided: auto (the tool policy alone) or ask (a person allows each on the terminal: once, for the session, or denies with a reason the model reads; without a terminal such a call is denied). The session keeps the mode [config: agent.approval]' -r
complete -c ag-prompt -n "__fish_ag_prompt_needs_command" -l command -d 'Run the custom command NAME (.ag/commands/NAME.md, ~/.config/ag/commands/NAME.md, a trusted folder\'s .claude/commands/NAME.md): its prompt, with PROMPT as $ARGUMENTS' -r
complete -c ag-prompt -n "__fish_ag_prompt_needs_command" -l json -d 'Print machine-readable JSON (NDJSON for streams)'
complete -c ag-prompt -n "__fish_ag_prompt_needs_command" -s q -l quiet -d 'Print nothing on stdout but data that was asked for; no notices on stderr'
complete -c ag-prompt -n "__fish_ag_prompt_needs_command" -s v -l verbose -d 'Say more on stderr'
complete -c ag-prompt -n "__fish_ag_prompt_needs_command" -l any -d '`last` (and `-c`) mean the latest chat session of any directory, not only this one'
complete -c ag-prompt -n "__fish_ag_prompt_needs_command" -s c -l continue -d 'Continue this directory\'s latest chat session (`--any`: of any directory)'
complete -c ag-prompt -n "__fish_ag_prompt_needs_command" -l new -d 'Start a new session (the default without -s or -c)'
complete -c ag-prompt -n "__fish_ag_prompt_needs_command" -l no-project-context -d 'Leave out the project\'s instructions (AGENTS.md, else CLAUDE.md, in each directory from the repository\'s top down to here), which a new session otherwise gets after its system prompt; on a follow-up, drops them from the session'
complete -c ag-prompt -n "__fish_ag_prompt_needs_command" -l no-queue -d 'When the session is busy, fail with status 3 instead of queueing the prompt'
complete -c ag-prompt -n "__fish_ag_prompt_needs_command" -l wait -d 'When the session is busy and the prompt is queued, wait until the turn that takes it ends and print that turn\'s answer (as --output, -o and --json ask)'
complete -c ag-prompt -n "__fish_ag_prompt_needs_command" -l compact -d 'Compact the session now: the model summarizes what came before the last few thousand tokens, and the session goes on from that summary (the log keeps everything). Then runs PROMPT, when one is given. Needs -s or -c'
complete -c ag-prompt -n "__fish_ag_prompt_needs_command" -l net -d 'Let sandboxed bash commands use the network [config: sandbox.network]'
complete -c ag-prompt -n "__fish_ag_prompt_needs_command" -s y -l yes -d 'Allow, in this run, every call the tool policy allows, asking nobody'
complete -c ag-prompt -n "__fish_ag_prompt_needs_command" -l chat -d 'Open the chat (what `ag chat` runs; also what ag-prompt does on a terminal without a prompt). Reads plain lines when stdin is not a terminal'
complete -c ag-prompt -n "__fish_ag_prompt_needs_command" -l trust -d 'Trust this folder (the one holding the nearest .ag/, else the current one), so its project config may choose the model, providers and MCP servers, and approve the servers its .mcp.json names now (one added or changed later asks again). Recorded in trusted-folders in the user config directory; without a prompt, only records'
complete -c ag-prompt -n "__fish_ag_prompt_needs_command" -l allow-protected -d 'Let this turn\'s write and edit tools change .git/, .ag/ and .claude/ (refused otherwise: files there run code or change what ag trusts) [config: permissions.protected_writes = "allow"]'
complete -c ag-prompt -n "__fish_ag_prompt_needs_command" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c ag-prompt -n "__fish_ag_prompt_needs_command" -s V -l version -d 'Print version'
complete -c ag-prompt -n "__fish_ag_prompt_needs_command" -a "models" -d 'List the models and providers this machine can use'
complete -c ag-prompt -n "__fish_ag_prompt_needs_command" -a "mcp" -d 'MCP servers from the user config ([mcp.NAME]) and a trusted folder\'s .mcp.json'
complete -c ag-prompt -n "__fish_ag_prompt_needs_command" -a "acp" -d 'Serve the Agent Client Protocol on stdin/stdout, so an editor (Zed, Neovim) runs ag sessions: ordinary sessions in the store, which every ag command reads meanwhile'
complete -c ag-prompt -n "__fish_ag_prompt_using_subcommand models" -l forget -d 'Forget what providers taught about MODEL on every endpoint: the windows learned from "too long" errors and how they count tokens; its configured or built-in window applies again' -r
complete -c ag-prompt -n "__fish_ag_prompt_using_subcommand models" -l home -d 'The store directory [default: $AG_HOME, else $XDG_DATA_HOME/ag, else ~/.local/share/ag]' -r -F
complete -c ag-prompt -n "__fish_ag_prompt_using_subcommand models" -l color -d 'When to colour output (NO_COLOR is honoured by `auto`)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c ag-prompt -n "__fish_ag_prompt_using_subcommand models" -l json -d 'Print machine-readable JSON (NDJSON for streams)'
complete -c ag-prompt -n "__fish_ag_prompt_using_subcommand models" -s q -l quiet -d 'Print nothing on stdout but data that was asked for; no notices on stderr'
complete -c ag-prompt -n "__fish_ag_prompt_using_subcommand models" -s v -l verbose -d 'Say more on stderr'
complete -c ag-prompt -n "__fish_ag_prompt_using_subcommand models" -l any -d '`last` (and `-c`) mean the latest chat session of any directory, not only this one'
complete -c ag-prompt -n "__fish_ag_prompt_using_subcommand models" -s h -l help -d 'Print help'
complete -c ag-prompt -n "__fish_ag_prompt_using_subcommand mcp; and not __fish_seen_subcommand_from list" -l home -d 'The store directory [default: $AG_HOME, else $XDG_DATA_HOME/ag, else ~/.local/share/ag]' -r -F
complete -c ag-prompt -n "__fish_ag_prompt_using_subcommand mcp; and not __fish_seen_subcommand_from list" -l color -d 'When to colour output (NO_COLOR is honoured by `auto`)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c ag-prompt -n "__fish_ag_prompt_using_subcommand mcp; and not __fish_seen_subcommand_from list" -l json -d 'Print machine-readable JSON (NDJSON for streams)'
complete -c ag-prompt -n "__fish_ag_prompt_using_subcommand mcp; and not __fish_seen_subcommand_from list" -s q -l quiet -d 'Print nothing on stdout but data that was asked for; no notices on stderr'
complete -c ag-prompt -n "__fish_ag_prompt_using_subcommand mcp; and not __fish_seen_subcommand_from list" -s v -l verbose -d 'Say more on stderr'
complete -c ag-prompt -n "__fish_ag_prompt_using_subcommand mcp; and not __fish_seen_subcommand_from list" -l any -d '`last` (and `-c`) mean the latest chat session of any directory, not only this one'
complete -c ag-prompt -n "__fish_ag_prompt_using_subcommand mcp; and not __fish_seen_subcommand_from list" -s h -l help -d 'Print help'
complete -c ag-prompt -n "__fish_ag_prompt_using_subcommand mcp; and not __fish_seen_subcommand_from list" -f -a "list" -d 'Each configured server (user config, or a trusted folder\'s .mcp.json), whether it starts, where it comes from, and its tools (as mcp__SERVER__TOOL)'
complete -c ag-prompt -n "__fish_ag_prompt_using_subcommand mcp; and __fish_seen_subcommand_from list" -l home -d 'The store directory [default: $AG_HOME, else $XDG_DATA_HOME/ag, else ~/.local/share/ag]' -r -F
complete -c ag-prompt -n "__fish_ag_prompt_using_subcommand mcp; and __fish_seen_subcommand_from list" -l color -d 'When to colour output (NO_COLOR is honoured by `auto`)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c ag-prompt -n "__fish_ag_prompt_using_subcommand mcp; and __fish_seen_subcommand_from list" -l json -d 'Print machine-readable JSON (NDJSON for streams)'
complete -c ag-prompt -n "__fish_ag_prompt_using_subcommand mcp; and __fish_seen_subcommand_from list" -s q -l quiet -d 'Print nothing on stdout but data that was asked for; no notices on stderr'
complete -c ag-prompt -n "__fish_ag_prompt_using_subcommand mcp; and __fish_seen_subcommand_from list" -s v -l verbose -d 'Say more on stderr'
complete -c ag-prompt -n "__fish_ag_prompt_using_subcommand mcp; and __fish_seen_subcommand_from list" -l any -d '`last` (and `-c`) mean the latest chat session of any directory, not only this one'
complete -c ag-prompt -n "__fish_ag_prompt_using_subcommand mcp; and __fish_seen_subcommand_from list" -s h -l help -d 'Print help'
complete -c ag-prompt -n "__fish_ag_prompt_using_subcommand acp" -s m -l model -d 'The model of the sessions the editor starts: PROVIDER/MODEL, an alias, `echo` or `script:FILE` [env: AG_MODEL; config: model]' -r
complete -c ag-prompt -n "__fish_ag_prompt_using_subcommand acp" -l tools -d 'A new session\'s tools, as for ag-prompt --tools; the tools of the MCP servers the editor passes are added [default: +write,+edit,+bash in ask mode, the read-only defaults in auto mode]' -r
complete -c ag-prompt -n "__fish_ag_prompt_using_subcommand acp" -l approval -d 'How a new session\'s calls that change something (write, edit, bash, MCP tools) are decided: ask (the editor asks you: allow once, allow for the session, or reject) or auto (the tool policy alone); a loaded session keeps its own unless this is given [default: ask]' -r
complete -c ag-prompt -n "__fish_ag_prompt_using_subcommand acp" -l sandbox -d 'The sandbox bash runs in: workspace-write (default), read-only, or off [config: sandbox.mode]' -r
complete -c ag-prompt -n "__fish_ag_prompt_using_subcommand acp" -l max-steps -d 'Stop a turn after N model round trips (at least 1); the editor sees max_turn_requests' -r
complete -c ag-prompt -n "__fish_ag_prompt_using_subcommand acp" -l home -d 'The store directory [default: $AG_HOME, else $XDG_DATA_HOME/ag, else ~/.local/share/ag]' -r -F
complete -c ag-prompt -n "__fish_ag_prompt_using_subcommand acp" -l color -d 'When to colour output (NO_COLOR is honoured by `auto`)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c ag-prompt -n "__fish_ag_prompt_using_subcommand acp" -l net -d 'Let sandboxed bash commands use the network [config: sandbox.network]'
complete -c ag-prompt -n "__fish_ag_prompt_using_subcommand acp" -l json -d 'Print machine-readable JSON (NDJSON for streams)'
complete -c ag-prompt -n "__fish_ag_prompt_using_subcommand acp" -s q -l quiet -d 'Print nothing on stdout but data that was asked for; no notices on stderr'
complete -c ag-prompt -n "__fish_ag_prompt_using_subcommand acp" -s v -l verbose -d 'Say more on stderr'
complete -c ag-prompt -n "__fish_ag_prompt_using_subcommand acp" -l any -d '`last` (and `-c`) mean the latest chat session of any directory, not only this one'
complete -c ag-prompt -n "__fish_ag_prompt_using_subcommand acp" -s h -l help -d 'Print help'
complete -c ag-prompt -s s -l session -x -a "(ag-log __complete sessions)"
complete -c ag-prompt -s m -l model -x -a "(ag-log __complete models)"
complete -c ag-prompt -l tools -x -a "(ag-log __complete tools)"
complete -c ag-prompt -l agent -x -a "(ag-log __complete agents)"
complete -c ag-prompt -n "__fish_seen_subcommand_from models" -l forget -x -a "(ag-log __complete models)"
complete -c ag-prompt -n "__fish_seen_subcommand_from acp" -s m -l model -x -a "(ag-log __complete models)"
complete -c ag-prompt -n "__fish_seen_subcommand_from acp" -l tools -x -a "(ag-log __complete tools)"
