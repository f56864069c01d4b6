# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_ag_global_optspecs
    string join \n h/help V/version
end

function __fish_ag_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_ag_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_ag_using_subcommand
    set -l cmd (__fish_ag_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c ag -n "__fish_ag_needs_command" -s h -l help -d 'Print help'
complete -c ag -n "__fish_ag_needs_command" -s V -l version -d 'Print version'
complete -c ag -n "__fish_ag_needs_command" -f -a "log" -d 'the chunk log: append, cat, tail -f, ls, show, fold, ingest, search, title, rm'
complete -c ag -n "__fish_ag_needs_command" -f -a "prompt" -d 'run a turn of an agent: streaming, tools, queued input, answers for scripts'
complete -c ag -n "__fish_ag_needs_command" -f -a "chat" -d 'talk with an agent at the terminal (ag-prompt --chat): slash commands, /btw, approvals'
complete -c ag -n "__fish_ag_needs_command" -f -a "fork" -d 'fork a session in O(1); --btw asks a read-only side question'
complete -c ag -n "__fish_ag_needs_command" -f -a "room" -d 'sessions, people and hooks talk: rooms, messages, presence, claims'
complete -c ag -n "__fish_ag_needs_command" -f -a "summon" -d 'spawn subagents and user agents; retrieve their answers'
