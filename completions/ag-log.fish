# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_ag_log_global_optspecs
    string join \n home= json q/quiet v/verbose color= any h/help V/version
end

function __fish_ag_log_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_ag_log_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_ag_log_using_subcommand
    set -l cmd (__fish_ag_log_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c ag-log -n "__fish_ag_log_needs_command" -l home -d 'The store directory [default: $AG_HOME, else $XDG_DATA_HOME/ag, else ~/.local/share/ag]' -r -F
complete -c ag-log -n "__fish_ag_log_needs_command" -l color -d 'When to colour output (NO_COLOR is honoured by `auto`)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c ag-log -n "__fish_ag_log_needs_command" -l json -d 'Print machine-readable JSON (NDJSON for streams)'
complete -c ag-log -n "__fish_ag_log_needs_command" -s q -l quiet -d 'Print nothing on stdout but data that was asked for; no notices on stderr'
complete -c ag-log -n "__fish_ag_log_needs_command" -s v -l verbose -d 'Say more on stderr'
complete -c ag-log -n "__fish_ag_log_needs_command" -l any -d '`last` (and `-c`) mean the latest chat session of any directory, not only this one'
complete -c ag-log -n "__fish_ag_log_needs_command" -s h -l help -d 'Print help'
complete -c ag-log -n "__fish_ag_log_needs_command" -s V -l version -d 'Print version'
complete -c ag-log -n "__fish_ag_log_needs_command" -f -a "append" -d 'Append chunks: one user text, or NDJSON chunks from stdin, in one transaction'
complete -c ag-log -n "__fish_ag_log_needs_command" -f -a "cat" -d 'Print a session\'s chunks (text, --json NDJSON, or --format md)'
complete -c ag-log -n "__fish_ag_log_needs_command" -f -a "tail" -d 'Print the newest chunks; -f follows new ones as they are written'
complete -c ag-log -n "__fish_ag_log_needs_command" -f -a "ls" -d 'List sessions'
complete -c ag-log -n "__fish_ag_log_needs_command" -f -a "show" -d 'Show one session: metadata, lineage, counts by type, token usage'
complete -c ag-log -n "__fish_ag_log_needs_command" -f -a "fold" -d 'Print the provider request body a session folds into'
complete -c ag-log -n "__fish_ag_log_needs_command" -f -a "ingest" -d 'Append a provider SSE stream from stdin as one assistant step'
complete -c ag-log -n "__fish_ag_log_needs_command" -f -a "import" -d 'Import Claude Code sessions, Codex rollouts and ag exports as sessions'
complete -c ag-log -n "__fish_ag_log_needs_command" -f -a "compact" -d 'Compact a session: a summary stands for its older part in later requests (the log keeps everything)'
complete -c ag-log -n "__fish_ag_log_needs_command" -f -a "prune" -d 'Prune a session: its old tool results are sent as placeholders in later requests (the log keeps them; `recall` fetches them)'
complete -c ag-log -n "__fish_ag_log_needs_command" -f -a "export" -d 'Write sessions as Markdown, a self-contained HTML page, or NDJSON to import elsewhere'
complete -c ag-log -n "__fish_ag_log_needs_command" -f -a "search" -d 'Full-text search over what was said and done (text, thinking, tool calls and results, peer speech, errors); exits 1 when nothing matched, like grep'
complete -c ag-log -n "__fish_ag_log_needs_command" -f -a "usage" -d 'Tokens and dollars by day, model, session or folder, from the turns\' records: what runs cost (list prices, or the configuration\'s)'
complete -c ag-log -n "__fish_ag_log_needs_command" -f -a "title" -d 'Set a session\'s title'
complete -c ag-log -n "__fish_ag_log_needs_command" -f -a "rm" -d 'Remove sessions and their chunks'
complete -c ag-log -n "__fish_ag_log_using_subcommand append" -s s -l session -d 'The session to append to: a handle, an id or unique prefix, a title or title fragment, `last` (this directory\'s latest chat session) or `last~N`' -r
complete -c ag-log -n "__fish_ag_log_using_subcommand append" -l session-id -d 'The new session\'s id, chosen up front (a UUID), so a script knows it before it runs' -r
complete -c ag-log -n "__fish_ag_log_using_subcommand append" -l title -d 'Title of the new session' -r
complete -c ag-log -n "__fish_ag_log_using_subcommand append" -l cwd -d 'Working directory recorded for the new session [default: the current directory]' -r -F
complete -c ag-log -n "__fish_ag_log_using_subcommand append" -l home -d 'The store directory [default: $AG_HOME, else $XDG_DATA_HOME/ag, else ~/.local/share/ag]' -r -F
complete -c ag-log -n "__fish_ag_log_using_subcommand append" -l color -d 'When to colour output (NO_COLOR is honoured by `auto`)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c ag-log -n "__fish_ag_log_using_subcommand append" -l new -d 'Start a new session and append to it'
complete -c ag-log -n "__fish_ag_log_using_subcommand append" -l json -d 'Print machine-readable JSON (NDJSON for streams)'
complete -c ag-log -n "__fish_ag_log_using_subcommand append" -s q -l quiet -d 'Print nothing on stdout but data that was asked for; no notices on stderr'
complete -c ag-log -n "__fish_ag_log_using_subcommand append" -s v -l verbose -d 'Say more on stderr'
complete -c ag-log -n "__fish_ag_log_using_subcommand append" -l any -d '`last` (and `-c`) mean the latest chat session of any directory, not only this one'
complete -c ag-log -n "__fish_ag_log_using_subcommand append" -s h -l help -d 'Print help'
complete -c ag-log -n "__fish_ag_log_using_subcommand cat" -l limit -d 'Only the newest N chunks (of what the other bounds allow)' -r
complete -c ag-log -n "__fish_ag_log_using_subcommand cat" -l before -d 'Only chunks with seq below SEQ' -r
complete -c ag-log -n "__fish_ag_log_using_subcommand cat" -l after -d 'Only chunks with seq above SEQ' -r
complete -c ag-log -n "__fish_ag_log_using_subcommand cat" -l turn -d 'Only the chunks of one turn (its handle from a turn header, or its id)' -r
complete -c ag-log -n "__fish_ag_log_using_subcommand cat" -l format -d 'Output format' -r -f -a "text\t'A compact transcript for people'
json\t'One JSON chunk per line (same as --json)'
md\t'Markdown'"
complete -c ag-log -n "__fish_ag_log_using_subcommand cat" -l home -d 'The store directory [default: $AG_HOME, else $XDG_DATA_HOME/ag, else ~/.local/share/ag]' -r -F
complete -c ag-log -n "__fish_ag_log_using_subcommand cat" -l color -d 'When to colour output (NO_COLOR is honoured by `auto`)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c ag-log -n "__fish_ag_log_using_subcommand cat" -l json -d 'Print machine-readable JSON (NDJSON for streams)'
complete -c ag-log -n "__fish_ag_log_using_subcommand cat" -s q -l quiet -d 'Print nothing on stdout but data that was asked for; no notices on stderr'
complete -c ag-log -n "__fish_ag_log_using_subcommand cat" -s v -l verbose -d 'Say more on stderr'
complete -c ag-log -n "__fish_ag_log_using_subcommand cat" -l any -d '`last` (and `-c`) mean the latest chat session of any directory, not only this one'
complete -c ag-log -n "__fish_ag_log_using_subcommand cat" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c ag-log -n "__fish_ag_log_using_subcommand tail" -s n -l lines -d 'How many of the newest chunks to print first' -r
complete -c ag-log -n "__fish_ag_log_using_subcommand tail" -l home -d 'The store directory [default: $AG_HOME, else $XDG_DATA_HOME/ag, else ~/.local/share/ag]' -r -F
complete -c ag-log -n "__fish_ag_log_using_subcommand tail" -l color -d 'When to colour output (NO_COLOR is honoured by `auto`)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c ag-log -n "__fish_ag_log_using_subcommand tail" -s f -l follow -d 'Keep printing new chunks as they are written, until interrupted or the reader of stdout goes away; a running turn\'s text shows as it streams (on stderr; with --json, its chunk-open and chunk-delta events)'
complete -c ag-log -n "__fish_ag_log_using_subcommand tail" -l json -d 'Print machine-readable JSON (NDJSON for streams)'
complete -c ag-log -n "__fish_ag_log_using_subcommand tail" -s q -l quiet -d 'Print nothing on stdout but data that was asked for; no notices on stderr'
complete -c ag-log -n "__fish_ag_log_using_subcommand tail" -s v -l verbose -d 'Say more on stderr'
complete -c ag-log -n "__fish_ag_log_using_subcommand tail" -l any -d '`last` (and `-c`) mean the latest chat session of any directory, not only this one'
complete -c ag-log -n "__fish_ag_log_using_subcommand tail" -s h -l help -d 'Print help'
complete -c ag-log -n "__fish_ag_log_using_subcommand ls" -l limit -d 'At most N sessions, most recently updated first' -r
complete -c ag-log -n "__fish_ag_log_using_subcommand ls" -l kind -d 'Only sessions of this kind' -r -f -a "chat\t''
side\t''
subagent\t''
user_agent\t''"
complete -c ag-log -n "__fish_ag_log_using_subcommand ls" -l since -d 'Only sessions updated since then: a duration back from now (`2h`, `3 days`, `1w`) or a date or time (`2026-11-30`, `2026-11-30T09:00:00Z`)' -r
complete -c ag-log -n "__fish_ag_log_using_subcommand ls" -l home -d 'The store directory [default: $AG_HOME, else $XDG_DATA_HOME/ag, else ~/.local/share/ag]' -r -F
complete -c ag-log -n "__fish_ag_log_using_subcommand ls" -l color -d 'When to colour output (NO_COLOR is honoured by `auto`)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c ag-log -n "__fish_ag_log_using_subcommand ls" -l here -d 'Only this directory\'s sessions'
complete -c ag-log -n "__fish_ag_log_using_subcommand ls" -l json -d 'Print machine-readable JSON (NDJSON for streams)'
complete -c ag-log -n "__fish_ag_log_using_subcommand ls" -s q -l quiet -d 'Print nothing on stdout but data that was asked for; no notices on stderr'
complete -c ag-log -n "__fish_ag_log_using_subcommand ls" -s v -l verbose -d 'Say more on stderr'
complete -c ag-log -n "__fish_ag_log_using_subcommand ls" -l any -d '`last` (and `-c`) mean the latest chat session of any directory, not only this one'
complete -c ag-log -n "__fish_ag_log_using_subcommand ls" -s h -l help -d 'Print help'
complete -c ag-log -n "__fish_ag_log_using_subcommand show" -l home -d 'The store directory [default: $AG_HOME, else $XDG_DATA_HOME/ag, else ~/.local/share/ag]' -r -F
complete -c ag-log -n "__fish_ag_log_using_subcommand show" -l color -d 'When to colour output (NO_COLOR is honoured by `auto`)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c ag-log -n "__fish_ag_log_using_subcommand show" -l json -d 'Print machine-readable JSON (NDJSON for streams)'
complete -c ag-log -n "__fish_ag_log_using_subcommand show" -s q -l quiet -d 'Print nothing on stdout but data that was asked for; no notices on stderr'
complete -c ag-log -n "__fish_ag_log_using_subcommand show" -s v -l verbose -d 'Say more on stderr'
complete -c ag-log -n "__fish_ag_log_using_subcommand show" -l any -d '`last` (and `-c`) mean the latest chat session of any directory, not only this one'
complete -c ag-log -n "__fish_ag_log_using_subcommand show" -s h -l help -d 'Print help'
complete -c ag-log -n "__fish_ag_log_using_subcommand fold" -l dialect -d 'The request dialect' -r -f -a "anthropic\t'Anthropic Messages API'
openai\t'OpenAI Chat Completions'"
complete -c ag-log -n "__fish_ag_log_using_subcommand fold" -l system -d 'System prompt: the text itself, or @FILE to read it from a file' -r
complete -c ag-log -n "__fish_ag_log_using_subcommand fold" -l model -d 'The model name to put in the request' -r
complete -c ag-log -n "__fish_ag_log_using_subcommand fold" -l home -d 'The store directory [default: $AG_HOME, else $XDG_DATA_HOME/ag, else ~/.local/share/ag]' -r -F
complete -c ag-log -n "__fish_ag_log_using_subcommand fold" -l color -d 'When to colour output (NO_COLOR is honoured by `auto`)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c ag-log -n "__fish_ag_log_using_subcommand fold" -l stream -d 'Add `"stream": true` (and the dialect\'s usage option)'
complete -c ag-log -n "__fish_ag_log_using_subcommand fold" -l pretty -d 'Pretty-print the JSON'
complete -c ag-log -n "__fish_ag_log_using_subcommand fold" -l full -d 'Fold the whole log, ignoring compactions and prunes (by default the fold starts from the latest compaction\'s summary, and pruned tool results are placeholders)'
complete -c ag-log -n "__fish_ag_log_using_subcommand fold" -l json -d 'Print machine-readable JSON (NDJSON for streams)'
complete -c ag-log -n "__fish_ag_log_using_subcommand fold" -s q -l quiet -d 'Print nothing on stdout but data that was asked for; no notices on stderr'
complete -c ag-log -n "__fish_ag_log_using_subcommand fold" -s v -l verbose -d 'Say more on stderr'
complete -c ag-log -n "__fish_ag_log_using_subcommand fold" -l any -d '`last` (and `-c`) mean the latest chat session of any directory, not only this one'
complete -c ag-log -n "__fish_ag_log_using_subcommand fold" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c ag-log -n "__fish_ag_log_using_subcommand ingest" -s s -l session -d 'The session to append to: a handle, an id or prefix, a title, `last` or `last~N`' -r
complete -c ag-log -n "__fish_ag_log_using_subcommand ingest" -l dialect -d 'The stream\'s dialect' -r -f -a "anthropic\t'Anthropic Messages API'
openai\t'OpenAI Chat Completions'"
complete -c ag-log -n "__fish_ag_log_using_subcommand ingest" -l turn -d 'The turn the step belongs to [default: the session\'s open turn, else a new one]' -r
complete -c ag-log -n "__fish_ag_log_using_subcommand ingest" -l home -d 'The store directory [default: $AG_HOME, else $XDG_DATA_HOME/ag, else ~/.local/share/ag]' -r -F
complete -c ag-log -n "__fish_ag_log_using_subcommand ingest" -l color -d 'When to colour output (NO_COLOR is honoured by `auto`)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c ag-log -n "__fish_ag_log_using_subcommand ingest" -l end-turn -d 'Also end the turn with a `turn_end` record when the stream completes'
complete -c ag-log -n "__fish_ag_log_using_subcommand ingest" -l json -d 'Print machine-readable JSON (NDJSON for streams)'
complete -c ag-log -n "__fish_ag_log_using_subcommand ingest" -s q -l quiet -d 'Print nothing on stdout but data that was asked for; no notices on stderr'
complete -c ag-log -n "__fish_ag_log_using_subcommand ingest" -s v -l verbose -d 'Say more on stderr'
complete -c ag-log -n "__fish_ag_log_using_subcommand ingest" -l any -d '`last` (and `-c`) mean the latest chat session of any directory, not only this one'
complete -c ag-log -n "__fish_ag_log_using_subcommand ingest" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c ag-log -n "__fish_ag_log_using_subcommand import" -l from -d 'Which tool wrote the files' -r -f -a "auto\t'Tell each file\'s format from its lines'
claude\t'Claude Code session files (~/.claude/projects/*/*.jsonl)'
codex\t'Codex rollouts (~/.codex/sessions/**/rollout-*.jsonl)'
ag\t'Files written by `ag-log export --format ndjson`'"
complete -c ag-log -n "__fish_ag_log_using_subcommand import" -l home -d 'The store directory [default: $AG_HOME, else $XDG_DATA_HOME/ag, else ~/.local/share/ag]' -r -F
complete -c ag-log -n "__fish_ag_log_using_subcommand import" -l color -d 'When to colour output (NO_COLOR is honoured by `auto`)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c ag-log -n "__fish_ag_log_using_subcommand import" -s f -l follow -d 'After importing, keep watching and import new sessions and new lines as they are written, until interrupted'
complete -c ag-log -n "__fish_ag_log_using_subcommand import" -l json -d 'Print machine-readable JSON (NDJSON for streams)'
complete -c ag-log -n "__fish_ag_log_using_subcommand import" -s q -l quiet -d 'Print nothing on stdout but data that was asked for; no notices on stderr'
complete -c ag-log -n "__fish_ag_log_using_subcommand import" -s v -l verbose -d 'Say more on stderr'
complete -c ag-log -n "__fish_ag_log_using_subcommand import" -l any -d '`last` (and `-c`) mean the latest chat session of any directory, not only this one'
complete -c ag-log -n "__fish_ag_log_using_subcommand import" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c ag-log -n "__fish_ag_log_using_subcommand compact" -l summary -d 'The summary: the text, or @FILE (UTF-8). Without it, the session\'s model (or `[context] compact_model`) writes one' -r
complete -c ag-log -n "__fish_ag_log_using_subcommand compact" -l keep-turns -d 'Keep the latest N turns verbatim and summarize everything before them [default: 1]' -r
complete -c ag-log -n "__fish_ag_log_using_subcommand compact" -l instructions -d 'What the summary should keep or focus on, for the model that writes it (as Claude Code\'s `/compact focus on …`)' -r
complete -c ag-log -n "__fish_ag_log_using_subcommand compact" -l home -d 'The store directory [default: $AG_HOME, else $XDG_DATA_HOME/ag, else ~/.local/share/ag]' -r -F
complete -c ag-log -n "__fish_ag_log_using_subcommand compact" -l color -d 'When to colour output (NO_COLOR is honoured by `auto`)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c ag-log -n "__fish_ag_log_using_subcommand compact" -l no-queue -d 'When the session is running, fail with status 3 instead of queueing the compaction'
complete -c ag-log -n "__fish_ag_log_using_subcommand compact" -l json -d 'Print machine-readable JSON (NDJSON for streams)'
complete -c ag-log -n "__fish_ag_log_using_subcommand compact" -s q -l quiet -d 'Print nothing on stdout but data that was asked for; no notices on stderr'
complete -c ag-log -n "__fish_ag_log_using_subcommand compact" -s v -l verbose -d 'Say more on stderr'
complete -c ag-log -n "__fish_ag_log_using_subcommand compact" -l any -d '`last` (and `-c`) mean the latest chat session of any directory, not only this one'
complete -c ag-log -n "__fish_ag_log_using_subcommand compact" -s h -l help -d 'Print help'
complete -c ag-log -n "__fish_ag_log_using_subcommand prune" -l keep -d 'How many of the most recent tool results stay whole [default: `[context] keep_tool_results`, else 3]' -r
complete -c ag-log -n "__fish_ag_log_using_subcommand prune" -l home -d 'The store directory [default: $AG_HOME, else $XDG_DATA_HOME/ag, else ~/.local/share/ag]' -r -F
complete -c ag-log -n "__fish_ag_log_using_subcommand prune" -l color -d 'When to colour output (NO_COLOR is honoured by `auto`)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c ag-log -n "__fish_ag_log_using_subcommand prune" -l json -d 'Print machine-readable JSON (NDJSON for streams)'
complete -c ag-log -n "__fish_ag_log_using_subcommand prune" -s q -l quiet -d 'Print nothing on stdout but data that was asked for; no notices on stderr'
complete -c ag-log -n "__fish_ag_log_using_subcommand prune" -s v -l verbose -d 'Say more on stderr'
complete -c ag-log -n "__fish_ag_log_using_subcommand prune" -l any -d '`last` (and `-c`) mean the latest chat session of any directory, not only this one'
complete -c ag-log -n "__fish_ag_log_using_subcommand prune" -s h -l help -d 'Print help'
complete -c ag-log -n "__fish_ag_log_using_subcommand export" -l format -d 'What to write' -r -f -a "md\t'Markdown, for reading and pasting'
html\t'One self-contained HTML page (no network when viewed)'
ndjson\t'The session row and its chunks, for `ag-log import` on another machine'"
complete -c ag-log -n "__fish_ag_log_using_subcommand export" -s o -l output -d 'Write to FILE instead of stdout; with --all or --here, the directory to write into' -r -F
complete -c ag-log -n "__fish_ag_log_using_subcommand export" -l home -d 'The store directory [default: $AG_HOME, else $XDG_DATA_HOME/ag, else ~/.local/share/ag]' -r -F
complete -c ag-log -n "__fish_ag_log_using_subcommand export" -l color -d 'When to colour output (NO_COLOR is honoured by `auto`)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c ag-log -n "__fish_ag_log_using_subcommand export" -l all -d 'Every session in the store, one file each (needs -o DIR)'
complete -c ag-log -n "__fish_ag_log_using_subcommand export" -l here -d 'Every session of the current directory, one file each (needs -o DIR)'
complete -c ag-log -n "__fish_ag_log_using_subcommand export" -l json -d 'Print machine-readable JSON (NDJSON for streams)'
complete -c ag-log -n "__fish_ag_log_using_subcommand export" -s q -l quiet -d 'Print nothing on stdout but data that was asked for; no notices on stderr'
complete -c ag-log -n "__fish_ag_log_using_subcommand export" -s v -l verbose -d 'Say more on stderr'
complete -c ag-log -n "__fish_ag_log_using_subcommand export" -l any -d '`last` (and `-c`) mean the latest chat session of any directory, not only this one'
complete -c ag-log -n "__fish_ag_log_using_subcommand export" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c ag-log -n "__fish_ag_log_using_subcommand search" -s s -l session -d 'Only this session (and what it inherits from forks)' -r
complete -c ag-log -n "__fish_ag_log_using_subcommand search" -l sort -d 'The order of the hits: `newest` (the default) stops at the limit however many chunks match; `rank` puts the best match first and ranks every match to do it' -r -f -a "newest\t'The newest match first'
rank\t'The best match first'"
complete -c ag-log -n "__fish_ag_log_using_subcommand search" -l limit -d 'At most N hits' -r
complete -c ag-log -n "__fish_ag_log_using_subcommand search" -l home -d 'The store directory [default: $AG_HOME, else $XDG_DATA_HOME/ag, else ~/.local/share/ag]' -r -F
complete -c ag-log -n "__fish_ag_log_using_subcommand search" -l color -d 'When to colour output (NO_COLOR is honoured by `auto`)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c ag-log -n "__fish_ag_log_using_subcommand search" -l json -d 'Print machine-readable JSON (NDJSON for streams)'
complete -c ag-log -n "__fish_ag_log_using_subcommand search" -s q -l quiet -d 'Print nothing on stdout but data that was asked for; no notices on stderr'
complete -c ag-log -n "__fish_ag_log_using_subcommand search" -s v -l verbose -d 'Say more on stderr'
complete -c ag-log -n "__fish_ag_log_using_subcommand search" -l any -d '`last` (and `-c`) mean the latest chat session of any directory, not only this one'
complete -c ag-log -n "__fish_ag_log_using_subcommand search" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c ag-log -n "__fish_ag_log_using_subcommand usage" -l by -d 'What a row is' -r -f -a "day\t'The UTC day a turn ended'
model\t'The model that answered'
session\t'The session'
folder\t'The session\'s directory'"
complete -c ag-log -n "__fish_ag_log_using_subcommand usage" -l since -d 'Only turns since then: a duration back from now (`7d`, `24h`) or a date (`2026-11-01`)' -r
complete -c ag-log -n "__fish_ag_log_using_subcommand usage" -l home -d 'The store directory [default: $AG_HOME, else $XDG_DATA_HOME/ag, else ~/.local/share/ag]' -r -F
complete -c ag-log -n "__fish_ag_log_using_subcommand usage" -l color -d 'When to colour output (NO_COLOR is honoured by `auto`)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c ag-log -n "__fish_ag_log_using_subcommand usage" -l json -d 'Print machine-readable JSON (NDJSON for streams)'
complete -c ag-log -n "__fish_ag_log_using_subcommand usage" -s q -l quiet -d 'Print nothing on stdout but data that was asked for; no notices on stderr'
complete -c ag-log -n "__fish_ag_log_using_subcommand usage" -s v -l verbose -d 'Say more on stderr'
complete -c ag-log -n "__fish_ag_log_using_subcommand usage" -l any -d '`last` (and `-c`) mean the latest chat session of any directory, not only this one'
complete -c ag-log -n "__fish_ag_log_using_subcommand usage" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c ag-log -n "__fish_ag_log_using_subcommand title" -l home -d 'The store directory [default: $AG_HOME, else $XDG_DATA_HOME/ag, else ~/.local/share/ag]' -r -F
complete -c ag-log -n "__fish_ag_log_using_subcommand title" -l color -d 'When to colour output (NO_COLOR is honoured by `auto`)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c ag-log -n "__fish_ag_log_using_subcommand title" -l json -d 'Print machine-readable JSON (NDJSON for streams)'
complete -c ag-log -n "__fish_ag_log_using_subcommand title" -s q -l quiet -d 'Print nothing on stdout but data that was asked for; no notices on stderr'
complete -c ag-log -n "__fish_ag_log_using_subcommand title" -s v -l verbose -d 'Say more on stderr'
complete -c ag-log -n "__fish_ag_log_using_subcommand title" -l any -d '`last` (and `-c`) mean the latest chat session of any directory, not only this one'
complete -c ag-log -n "__fish_ag_log_using_subcommand title" -s h -l help -d 'Print help'
complete -c ag-log -n "__fish_ag_log_using_subcommand rm" -l home -d 'The store directory [default: $AG_HOME, else $XDG_DATA_HOME/ag, else ~/.local/share/ag]' -r -F
complete -c ag-log -n "__fish_ag_log_using_subcommand rm" -l color -d 'When to colour output (NO_COLOR is honoured by `auto`)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c ag-log -n "__fish_ag_log_using_subcommand rm" -l cascade -d 'Also remove the sessions forked from these (recursively), and cancel their running subagents first'
complete -c ag-log -n "__fish_ag_log_using_subcommand rm" -s f -l force -d 'Do not ask (on a terminal, rm asks before it removes anything; a script is never asked)'
complete -c ag-log -n "__fish_ag_log_using_subcommand rm" -l json -d 'Print machine-readable JSON (NDJSON for streams)'
complete -c ag-log -n "__fish_ag_log_using_subcommand rm" -s q -l quiet -d 'Print nothing on stdout but data that was asked for; no notices on stderr'
complete -c ag-log -n "__fish_ag_log_using_subcommand rm" -s v -l verbose -d 'Say more on stderr'
complete -c ag-log -n "__fish_ag_log_using_subcommand rm" -l any -d '`last` (and `-c`) mean the latest chat session of any directory, not only this one'
complete -c ag-log -n "__fish_ag_log_using_subcommand rm" -s h -l help -d 'Print help'
complete -c ag-log -n "__fish_seen_subcommand_from append" -s s -l session -x -a "(ag-log __complete sessions)"
complete -c ag-log -n "__fish_seen_subcommand_from fold" -l model -x -a "(ag-log __complete models)"
complete -c ag-log -n "__fish_seen_subcommand_from ingest" -s s -l session -x -a "(ag-log __complete sessions)"
complete -c ag-log -n "__fish_seen_subcommand_from search" -s s -l session -x -a "(ag-log __complete sessions)"
complete -c ag-log -n "__fish_seen_subcommand_from cat" -f -a "(ag-log __complete sessions)"
complete -c ag-log -n "__fish_seen_subcommand_from tail" -f -a "(ag-log __complete sessions)"
complete -c ag-log -n "__fish_seen_subcommand_from show" -f -a "(ag-log __complete sessions)"
complete -c ag-log -n "__fish_seen_subcommand_from fold" -f -a "(ag-log __complete sessions)"
complete -c ag-log -n "__fish_seen_subcommand_from compact" -f -a "(ag-log __complete sessions)"
complete -c ag-log -n "__fish_seen_subcommand_from prune" -f -a "(ag-log __complete sessions)"
complete -c ag-log -n "__fish_seen_subcommand_from export" -f -a "(ag-log __complete sessions)"
complete -c ag-log -n "__fish_seen_subcommand_from title" -f -a "(ag-log __complete sessions)"
complete -c ag-log -n "__fish_seen_subcommand_from rm" -f -a "(ag-log __complete sessions)"
