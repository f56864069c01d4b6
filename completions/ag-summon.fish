# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_ag_summon_global_optspecs
    string join \n home= json q/quiet v/verbose color= any a/agent= parent= top-level background tools= cwd= h/help V/version
end

function __fish_ag_summon_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_ag_summon_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_ag_summon_using_subcommand
    set -l cmd (__fish_ag_summon_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c ag-summon -n "__fish_ag_summon_needs_command" -l home -d 'The store directory [default: $AG_HOME, else $XDG_DATA_HOME/ag, else ~/.local/share/ag]' -r -F
complete -c ag-summon -n "__fish_ag_summon_needs_command" -l color -d 'When to colour output (NO_COLOR is honoured by `auto`)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c ag-summon -n "__fish_ag_summon_needs_command" -s a -l agent -d 'The agent definition to run, when the task is the only positional argument' -r
complete -c ag-summon -n "__fish_ag_summon_needs_command" -l parent -d 'The spawning session [default: $AG_SESSION; with neither, you are the spawner]' -r
complete -c ag-summon -n "__fish_ag_summon_needs_command" -l tools -d 'Tools for the child (names and sets, comma-separated; `+edit`/`-bash` change the definition\'s); cut down to the spawner\'s' -r
complete -c ag-summon -n "__fish_ag_summon_needs_command" -l cwd -d 'The child\'s directory; a subagent\'s must lie inside the parent\'s' -r
complete -c ag-summon -n "__fish_ag_summon_needs_command" -l json -d 'Print machine-readable JSON (NDJSON for streams)'
complete -c ag-summon -n "__fish_ag_summon_needs_command" -s q -l quiet -d 'Print nothing on stdout but data that was asked for; no notices on stderr'
complete -c ag-summon -n "__fish_ag_summon_needs_command" -s v -l verbose -d 'Say more on stderr'
complete -c ag-summon -n "__fish_ag_summon_needs_command" -l any -d '`last` (and `-c`) mean the latest chat session of any directory, not only this one'
complete -c ag-summon -n "__fish_ag_summon_needs_command" -l top-level -d 'Start a user agent: an independent session (needs `[permissions] user_agents = "allow"`)'
complete -c ag-summon -n "__fish_ag_summon_needs_command" -l background -d 'Print the child\'s id at once instead of waiting for its answer'
complete -c ag-summon -n "__fish_ag_summon_needs_command" -s h -l help -d 'Print help'
complete -c ag-summon -n "__fish_ag_summon_needs_command" -s V -l version -d 'Print version'
complete -c ag-summon -n "__fish_ag_summon_needs_command" -a "agents" -d 'List the agent definitions: subagents, and user agents when permitted'
complete -c ag-summon -n "__fish_ag_summon_needs_command" -a "retrieve" -d 'Wait for a subagent to finish; print its final answer (stdout) and status (stderr)'
complete -c ag-summon -n "__fish_ag_summon_needs_command" -a "ps" -d 'List spawned agents and their status'
complete -c ag-summon -n "__fish_ag_summon_needs_command" -a "cancel" -d 'Stop a running agent: SIGTERM to its process group, SIGKILL after a grace period'
complete -c ag-summon -n "__fish_ag_summon_using_subcommand agents" -l home -d 'The store directory [default: $AG_HOME, else $XDG_DATA_HOME/ag, else ~/.local/share/ag]' -r -F
complete -c ag-summon -n "__fish_ag_summon_using_subcommand agents" -l color -d 'When to colour output (NO_COLOR is honoured by `auto`)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c ag-summon -n "__fish_ag_summon_using_subcommand agents" -l json -d 'Print machine-readable JSON (NDJSON for streams)'
complete -c ag-summon -n "__fish_ag_summon_using_subcommand agents" -s q -l quiet -d 'Print nothing on stdout but data that was asked for; no notices on stderr'
complete -c ag-summon -n "__fish_ag_summon_using_subcommand agents" -s v -l verbose -d 'Say more on stderr'
complete -c ag-summon -n "__fish_ag_summon_using_subcommand agents" -l any -d '`last` (and `-c`) mean the latest chat session of any directory, not only this one'
complete -c ag-summon -n "__fish_ag_summon_using_subcommand agents" -s h -l help -d 'Print help'
complete -c ag-summon -n "__fish_ag_summon_using_subcommand retrieve" -l timeout -d 'Give up after this long (e.g. 30s, 5m, 1h30m; a bare number is seconds); exit 75' -r
complete -c ag-summon -n "__fish_ag_summon_using_subcommand retrieve" -l home -d 'The store directory [default: $AG_HOME, else $XDG_DATA_HOME/ag, else ~/.local/share/ag]' -r -F
complete -c ag-summon -n "__fish_ag_summon_using_subcommand retrieve" -l color -d 'When to colour output (NO_COLOR is honoured by `auto`)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c ag-summon -n "__fish_ag_summon_using_subcommand retrieve" -l json -d 'Print machine-readable JSON (NDJSON for streams)'
complete -c ag-summon -n "__fish_ag_summon_using_subcommand retrieve" -s q -l quiet -d 'Print nothing on stdout but data that was asked for; no notices on stderr'
complete -c ag-summon -n "__fish_ag_summon_using_subcommand retrieve" -s v -l verbose -d 'Say more on stderr'
complete -c ag-summon -n "__fish_ag_summon_using_subcommand retrieve" -l any -d '`last` (and `-c`) mean the latest chat session of any directory, not only this one'
complete -c ag-summon -n "__fish_ag_summon_using_subcommand retrieve" -s h -l help -d 'Print help'
complete -c ag-summon -n "__fish_ag_summon_using_subcommand ps" -l parent -d 'Only the children of this session [default: $AG_SESSION, else every agent]' -r
complete -c ag-summon -n "__fish_ag_summon_using_subcommand ps" -l home -d 'The store directory [default: $AG_HOME, else $XDG_DATA_HOME/ag, else ~/.local/share/ag]' -r -F
complete -c ag-summon -n "__fish_ag_summon_using_subcommand ps" -l color -d 'When to colour output (NO_COLOR is honoured by `auto`)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c ag-summon -n "__fish_ag_summon_using_subcommand ps" -l all -d 'Every subagent and user agent, ignoring $AG_SESSION'
complete -c ag-summon -n "__fish_ag_summon_using_subcommand ps" -l json -d 'Print machine-readable JSON (NDJSON for streams)'
complete -c ag-summon -n "__fish_ag_summon_using_subcommand ps" -s q -l quiet -d 'Print nothing on stdout but data that was asked for; no notices on stderr'
complete -c ag-summon -n "__fish_ag_summon_using_subcommand ps" -s v -l verbose -d 'Say more on stderr'
complete -c ag-summon -n "__fish_ag_summon_using_subcommand ps" -l any -d '`last` (and `-c`) mean the latest chat session of any directory, not only this one'
complete -c ag-summon -n "__fish_ag_summon_using_subcommand ps" -s h -l help -d 'Print help'
complete -c ag-summon -n "__fish_ag_summon_using_subcommand cancel" -l grace -d 'How long to wait after SIGTERM before SIGKILL (seconds, or 500ms, 1m…; at most 1h)' -r
complete -c ag-summon -n "__fish_ag_summon_using_subcommand cancel" -l home -d 'The store directory [default: $AG_HOME, else $XDG_DATA_HOME/ag, else ~/.local/share/ag]' -r -F
complete -c ag-summon -n "__fish_ag_summon_using_subcommand cancel" -l color -d 'When to colour output (NO_COLOR is honoured by `auto`)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c ag-summon -n "__fish_ag_summon_using_subcommand cancel" -l json -d 'Print machine-readable JSON (NDJSON for streams)'
complete -c ag-summon -n "__fish_ag_summon_using_subcommand cancel" -s q -l quiet -d 'Print nothing on stdout but data that was asked for; no notices on stderr'
complete -c ag-summon -n "__fish_ag_summon_using_subcommand cancel" -s v -l verbose -d 'Say more on stderr'
complete -c ag-summon -n "__fish_ag_summon_using_subcommand cancel" -l any -d '`last` (and `-c`) mean the latest chat session of any directory, not only this one'
complete -c ag-summon -n "__fish_ag_summon_using_subcommand cancel" -s h -l help -d 'Print help'
complete -c ag-summon -s a -l agent -x -a "(ag-log __complete agents)"
complete -c ag-summon -l parent -x -a "(ag-log __complete sessions)"
complete -c ag-summon -l tools -x -a "(ag-log __complete tools)"
complete -c ag-summon -n "__fish_seen_subcommand_from ps" -l parent -x -a "(ag-log __complete sessions)"
complete -c ag-summon -n "__fish_use_subcommand" -f -a "(ag-log __complete agents)"
complete -c ag-summon -n "__fish_seen_subcommand_from retrieve" -f -a "(ag-log __complete sessions)"
complete -c ag-summon -n "__fish_seen_subcommand_from cancel" -f -a "(ag-log __complete sessions)"
