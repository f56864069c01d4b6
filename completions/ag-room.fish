# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_ag_room_global_optspecs
    string join \n home= json q/quiet v/verbose color= any from= h/help V/version
end

function __fish_ag_room_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_ag_room_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_ag_room_using_subcommand
    set -l cmd (__fish_ag_room_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c ag-room -n "__fish_ag_room_needs_command" -l home -d 'The store directory [default: $AG_HOME, else $XDG_DATA_HOME/ag, else ~/.local/share/ag]' -r -F
complete -c ag-room -n "__fish_ag_room_needs_command" -l color -d 'When to colour output (NO_COLOR is honoured by `auto`)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c ag-room -n "__fish_ag_room_needs_command" -l from -d 'Speak as NAME (a person or script) [default: the session in AG_SESSION, else AG_NAME, else the user name]' -r
complete -c ag-room -n "__fish_ag_room_needs_command" -l json -d 'Print machine-readable JSON (NDJSON for streams)'
complete -c ag-room -n "__fish_ag_room_needs_command" -s q -l quiet -d 'Print nothing on stdout but data that was asked for; no notices on stderr'
complete -c ag-room -n "__fish_ag_room_needs_command" -s v -l verbose -d 'Say more on stderr'
complete -c ag-room -n "__fish_ag_room_needs_command" -l any -d '`last` (and `-c`) mean the latest chat session of any directory, not only this one'
complete -c ag-room -n "__fish_ag_room_needs_command" -s h -l help -d 'Print help'
complete -c ag-room -n "__fish_ag_room_needs_command" -s V -l version -d 'Print version'
complete -c ag-room -n "__fish_ag_room_needs_command" -f -a "tell" -d 'Post a line to this worktree\'s room, or a direct message; prints the message id'
complete -c ag-room -n "__fish_ag_room_needs_command" -f -a "who" -d 'The live sessions in this worktree: handle, title, goal, status, directory, last tool, last words, age'
complete -c ag-room -n "__fish_ag_room_needs_command" -f -a "peek" -d 'What a session is doing: goal, last prompt, last tool calls, last words, and the peer lines it heard and said; consumes nothing. Of a session of another machine (shared rooms): what its presence says and the lines it said in the room; what it heard is kept on its own machine'
complete -c ag-room -n "__fish_ag_room_needs_command" -f -a "tail" -d 'The room\'s lines; -f follows'
complete -c ag-room -n "__fish_ag_room_needs_command" -f -a "inbox" -d 'Unread lines since your cursor; consuming unless --peek'
complete -c ag-room -n "__fish_ag_room_needs_command" -f -a "status" -d 'What happened to a message: posted, delivered (to whom, when), acked'
complete -c ag-room -n "__fish_ag_room_needs_command" -f -a "ack" -d 'Acknowledge a message'
complete -c ag-room -n "__fish_ag_room_needs_command" -f -a "claim" -d 'Claim paths (globs) before changing them; exit 3 when someone else holds them'
complete -c ag-room -n "__fish_ag_room_needs_command" -f -a "release" -d 'End your own claims'
complete -c ag-room -n "__fish_ag_room_needs_command" -f -a "claims" -d 'The active claims in this worktree; a holder between turns shows as (idle)'
complete -c ag-room -n "__fish_ag_room_needs_command" -f -a "guard" -d 'For a git pre-commit hook: files under someone else\'s claim'
complete -c ag-room -n "__fish_ag_room_needs_command" -f -a "mcp" -d 'Serve this worktree\'s room over MCP on stdio, for Claude Code, Codex, Cursor…: peer_message, peer_inbox, peer_who, peer_peek, peer_claim, peer_release'
complete -c ag-room -n "__fish_ag_room_needs_command" -f -a "doctor" -d 'Check where rooms live: the configuration, the connection, the stream and the buckets, one line each; exit 75 when the room server cannot be reached, 1 when something else is wrong'
complete -c ag-room -n "__fish_ag_room_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c ag-room -n "__fish_ag_room_using_subcommand tell" -l to -d 'A direct message to this session: handle, id, unique id prefix, pid, or a unique fragment of its title or goal (never `all`: without --to the line reaches everyone here)' -r
complete -c ag-room -n "__fish_ag_room_using_subcommand tell" -l reply-to -d 'The message this answers' -r
complete -c ag-room -n "__fish_ag_room_using_subcommand tell" -l wait -d 'Wait until the line is delivered (exit 0) or DUR passes (exit 75): seconds, or 90s, 5m… [default: 60]' -r
complete -c ag-room -n "__fish_ag_room_using_subcommand tell" -l home -d 'The store directory [default: $AG_HOME, else $XDG_DATA_HOME/ag, else ~/.local/share/ag]' -r -F
complete -c ag-room -n "__fish_ag_room_using_subcommand tell" -l color -d 'When to colour output (NO_COLOR is honoured by `auto`)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c ag-room -n "__fish_ag_room_using_subcommand tell" -l from -d 'Speak as NAME (a person or script) [default: the session in AG_SESSION, else AG_NAME, else the user name]' -r
complete -c ag-room -n "__fish_ag_room_using_subcommand tell" -l device -d 'Send through the device room (direct messages across folders; needs --to)'
complete -c ag-room -n "__fish_ag_room_using_subcommand tell" -l json -d 'Print machine-readable JSON (NDJSON for streams)'
complete -c ag-room -n "__fish_ag_room_using_subcommand tell" -s q -l quiet -d 'Print nothing on stdout but data that was asked for; no notices on stderr'
complete -c ag-room -n "__fish_ag_room_using_subcommand tell" -s v -l verbose -d 'Say more on stderr'
complete -c ag-room -n "__fish_ag_room_using_subcommand tell" -l any -d '`last` (and `-c`) mean the latest chat session of any directory, not only this one'
complete -c ag-room -n "__fish_ag_room_using_subcommand tell" -s h -l help -d 'Print help'
complete -c ag-room -n "__fish_ag_room_using_subcommand who" -l home -d 'The store directory [default: $AG_HOME, else $XDG_DATA_HOME/ag, else ~/.local/share/ag]' -r -F
complete -c ag-room -n "__fish_ag_room_using_subcommand who" -l color -d 'When to colour output (NO_COLOR is honoured by `auto`)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c ag-room -n "__fish_ag_room_using_subcommand who" -l from -d 'Speak as NAME (a person or script) [default: the session in AG_SESSION, else AG_NAME, else the user name]' -r
complete -c ag-room -n "__fish_ag_room_using_subcommand who" -l json -d 'Print machine-readable JSON (NDJSON for streams)'
complete -c ag-room -n "__fish_ag_room_using_subcommand who" -s q -l quiet -d 'Print nothing on stdout but data that was asked for; no notices on stderr'
complete -c ag-room -n "__fish_ag_room_using_subcommand who" -s v -l verbose -d 'Say more on stderr'
complete -c ag-room -n "__fish_ag_room_using_subcommand who" -l any -d '`last` (and `-c`) mean the latest chat session of any directory, not only this one'
complete -c ag-room -n "__fish_ag_room_using_subcommand who" -s h -l help -d 'Print help'
complete -c ag-room -n "__fish_ag_room_using_subcommand peek" -s n -l n -d 'How many tool calls and texts to show' -r
complete -c ag-room -n "__fish_ag_room_using_subcommand peek" -l home -d 'The store directory [default: $AG_HOME, else $XDG_DATA_HOME/ag, else ~/.local/share/ag]' -r -F
complete -c ag-room -n "__fish_ag_room_using_subcommand peek" -l color -d 'When to colour output (NO_COLOR is honoured by `auto`)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c ag-room -n "__fish_ag_room_using_subcommand peek" -l from -d 'Speak as NAME (a person or script) [default: the session in AG_SESSION, else AG_NAME, else the user name]' -r
complete -c ag-room -n "__fish_ag_room_using_subcommand peek" -l json -d 'Print machine-readable JSON (NDJSON for streams)'
complete -c ag-room -n "__fish_ag_room_using_subcommand peek" -s q -l quiet -d 'Print nothing on stdout but data that was asked for; no notices on stderr'
complete -c ag-room -n "__fish_ag_room_using_subcommand peek" -s v -l verbose -d 'Say more on stderr'
complete -c ag-room -n "__fish_ag_room_using_subcommand peek" -l any -d '`last` (and `-c`) mean the latest chat session of any directory, not only this one'
complete -c ag-room -n "__fish_ag_room_using_subcommand peek" -s h -l help -d 'Print help'
complete -c ag-room -n "__fish_ag_room_using_subcommand tail" -s n -l lines -d 'Start with the last N lines [default: all; with -f: 10]' -r
complete -c ag-room -n "__fish_ag_room_using_subcommand tail" -l home -d 'The store directory [default: $AG_HOME, else $XDG_DATA_HOME/ag, else ~/.local/share/ag]' -r -F
complete -c ag-room -n "__fish_ag_room_using_subcommand tail" -l color -d 'When to colour output (NO_COLOR is honoured by `auto`)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c ag-room -n "__fish_ag_room_using_subcommand tail" -l from -d 'Speak as NAME (a person or script) [default: the session in AG_SESSION, else AG_NAME, else the user name]' -r
complete -c ag-room -n "__fish_ag_room_using_subcommand tail" -s f -l follow -d 'Keep following the room'
complete -c ag-room -n "__fish_ag_room_using_subcommand tail" -l all -d 'Show every line: direct messages between others and receipts too'
complete -c ag-room -n "__fish_ag_room_using_subcommand tail" -l json -d 'Print machine-readable JSON (NDJSON for streams)'
complete -c ag-room -n "__fish_ag_room_using_subcommand tail" -s q -l quiet -d 'Print nothing on stdout but data that was asked for; no notices on stderr'
complete -c ag-room -n "__fish_ag_room_using_subcommand tail" -s v -l verbose -d 'Say more on stderr'
complete -c ag-room -n "__fish_ag_room_using_subcommand tail" -l any -d '`last` (and `-c`) mean the latest chat session of any directory, not only this one'
complete -c ag-room -n "__fish_ag_room_using_subcommand tail" -s h -l help -d 'Print help'
complete -c ag-room -n "__fish_ag_room_using_subcommand inbox" -l as -d 'Read as this session (target) or person (name)' -r
complete -c ag-room -n "__fish_ag_room_using_subcommand inbox" -l home -d 'The store directory [default: $AG_HOME, else $XDG_DATA_HOME/ag, else ~/.local/share/ag]' -r -F
complete -c ag-room -n "__fish_ag_room_using_subcommand inbox" -l color -d 'When to colour output (NO_COLOR is honoured by `auto`)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c ag-room -n "__fish_ag_room_using_subcommand inbox" -l from -d 'Speak as NAME (a person or script) [default: the session in AG_SESSION, else AG_NAME, else the user name]' -r
complete -c ag-room -n "__fish_ag_room_using_subcommand inbox" -l peek -d 'Show without moving the cursor or writing receipts'
complete -c ag-room -n "__fish_ag_room_using_subcommand inbox" -l json -d 'Print machine-readable JSON (NDJSON for streams)'
complete -c ag-room -n "__fish_ag_room_using_subcommand inbox" -s q -l quiet -d 'Print nothing on stdout but data that was asked for; no notices on stderr'
complete -c ag-room -n "__fish_ag_room_using_subcommand inbox" -s v -l verbose -d 'Say more on stderr'
complete -c ag-room -n "__fish_ag_room_using_subcommand inbox" -l any -d '`last` (and `-c`) mean the latest chat session of any directory, not only this one'
complete -c ag-room -n "__fish_ag_room_using_subcommand inbox" -s h -l help -d 'Print help'
complete -c ag-room -n "__fish_ag_room_using_subcommand status" -l home -d 'The store directory [default: $AG_HOME, else $XDG_DATA_HOME/ag, else ~/.local/share/ag]' -r -F
complete -c ag-room -n "__fish_ag_room_using_subcommand status" -l color -d 'When to colour output (NO_COLOR is honoured by `auto`)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c ag-room -n "__fish_ag_room_using_subcommand status" -l from -d 'Speak as NAME (a person or script) [default: the session in AG_SESSION, else AG_NAME, else the user name]' -r
complete -c ag-room -n "__fish_ag_room_using_subcommand status" -l json -d 'Print machine-readable JSON (NDJSON for streams)'
complete -c ag-room -n "__fish_ag_room_using_subcommand status" -s q -l quiet -d 'Print nothing on stdout but data that was asked for; no notices on stderr'
complete -c ag-room -n "__fish_ag_room_using_subcommand status" -s v -l verbose -d 'Say more on stderr'
complete -c ag-room -n "__fish_ag_room_using_subcommand status" -l any -d '`last` (and `-c`) mean the latest chat session of any directory, not only this one'
complete -c ag-room -n "__fish_ag_room_using_subcommand status" -s h -l help -d 'Print help'
complete -c ag-room -n "__fish_ag_room_using_subcommand ack" -l home -d 'The store directory [default: $AG_HOME, else $XDG_DATA_HOME/ag, else ~/.local/share/ag]' -r -F
complete -c ag-room -n "__fish_ag_room_using_subcommand ack" -l color -d 'When to colour output (NO_COLOR is honoured by `auto`)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c ag-room -n "__fish_ag_room_using_subcommand ack" -l from -d 'Speak as NAME (a person or script) [default: the session in AG_SESSION, else AG_NAME, else the user name]' -r
complete -c ag-room -n "__fish_ag_room_using_subcommand ack" -l json -d 'Print machine-readable JSON (NDJSON for streams)'
complete -c ag-room -n "__fish_ag_room_using_subcommand ack" -s q -l quiet -d 'Print nothing on stdout but data that was asked for; no notices on stderr'
complete -c ag-room -n "__fish_ag_room_using_subcommand ack" -s v -l verbose -d 'Say more on stderr'
complete -c ag-room -n "__fish_ag_room_using_subcommand ack" -l any -d '`last` (and `-c`) mean the latest chat session of any directory, not only this one'
complete -c ag-room -n "__fish_ag_room_using_subcommand ack" -s h -l help -d 'Print help'
complete -c ag-room -n "__fish_ag_room_using_subcommand claim" -l intent -d 'What you are about to do' -r
complete -c ag-room -n "__fish_ag_room_using_subcommand claim" -l ttl -d 'How long the claim lasts: 90s, 30m, 2h, 1d, 1h30m or seconds [default: 30m]' -r
complete -c ag-room -n "__fish_ag_room_using_subcommand claim" -l home -d 'The store directory [default: $AG_HOME, else $XDG_DATA_HOME/ag, else ~/.local/share/ag]' -r -F
complete -c ag-room -n "__fish_ag_room_using_subcommand claim" -l color -d 'When to colour output (NO_COLOR is honoured by `auto`)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c ag-room -n "__fish_ag_room_using_subcommand claim" -l from -d 'Speak as NAME (a person or script) [default: the session in AG_SESSION, else AG_NAME, else the user name]' -r
complete -c ag-room -n "__fish_ag_room_using_subcommand claim" -l shared -d 'Others may hold shared claims on the same paths'
complete -c ag-room -n "__fish_ag_room_using_subcommand claim" -l json -d 'Print machine-readable JSON (NDJSON for streams)'
complete -c ag-room -n "__fish_ag_room_using_subcommand claim" -s q -l quiet -d 'Print nothing on stdout but data that was asked for; no notices on stderr'
complete -c ag-room -n "__fish_ag_room_using_subcommand claim" -s v -l verbose -d 'Say more on stderr'
complete -c ag-room -n "__fish_ag_room_using_subcommand claim" -l any -d '`last` (and `-c`) mean the latest chat session of any directory, not only this one'
complete -c ag-room -n "__fish_ag_room_using_subcommand claim" -s h -l help -d 'Print help'
complete -c ag-room -n "__fish_ag_room_using_subcommand release" -l home -d 'The store directory [default: $AG_HOME, else $XDG_DATA_HOME/ag, else ~/.local/share/ag]' -r -F
complete -c ag-room -n "__fish_ag_room_using_subcommand release" -l color -d 'When to colour output (NO_COLOR is honoured by `auto`)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c ag-room -n "__fish_ag_room_using_subcommand release" -l from -d 'Speak as NAME (a person or script) [default: the session in AG_SESSION, else AG_NAME, else the user name]' -r
complete -c ag-room -n "__fish_ag_room_using_subcommand release" -l all -d 'Release all your claims here'
complete -c ag-room -n "__fish_ag_room_using_subcommand release" -l json -d 'Print machine-readable JSON (NDJSON for streams)'
complete -c ag-room -n "__fish_ag_room_using_subcommand release" -s q -l quiet -d 'Print nothing on stdout but data that was asked for; no notices on stderr'
complete -c ag-room -n "__fish_ag_room_using_subcommand release" -s v -l verbose -d 'Say more on stderr'
complete -c ag-room -n "__fish_ag_room_using_subcommand release" -l any -d '`last` (and `-c`) mean the latest chat session of any directory, not only this one'
complete -c ag-room -n "__fish_ag_room_using_subcommand release" -s h -l help -d 'Print help'
complete -c ag-room -n "__fish_ag_room_using_subcommand claims" -l home -d 'The store directory [default: $AG_HOME, else $XDG_DATA_HOME/ag, else ~/.local/share/ag]' -r -F
complete -c ag-room -n "__fish_ag_room_using_subcommand claims" -l color -d 'When to colour output (NO_COLOR is honoured by `auto`)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c ag-room -n "__fish_ag_room_using_subcommand claims" -l from -d 'Speak as NAME (a person or script) [default: the session in AG_SESSION, else AG_NAME, else the user name]' -r
complete -c ag-room -n "__fish_ag_room_using_subcommand claims" -l json -d 'Print machine-readable JSON (NDJSON for streams)'
complete -c ag-room -n "__fish_ag_room_using_subcommand claims" -s q -l quiet -d 'Print nothing on stdout but data that was asked for; no notices on stderr'
complete -c ag-room -n "__fish_ag_room_using_subcommand claims" -s v -l verbose -d 'Say more on stderr'
complete -c ag-room -n "__fish_ag_room_using_subcommand claims" -l any -d '`last` (and `-c`) mean the latest chat session of any directory, not only this one'
complete -c ag-room -n "__fish_ag_room_using_subcommand claims" -s h -l help -d 'Print help'
complete -c ag-room -n "__fish_ag_room_using_subcommand guard" -l mode -d '`block` exits 1 when a file is under someone else\'s claim; `warn` only says so' -r -f -a "warn\t''
block\t''"
complete -c ag-room -n "__fish_ag_room_using_subcommand guard" -l home -d 'The store directory [default: $AG_HOME, else $XDG_DATA_HOME/ag, else ~/.local/share/ag]' -r -F
complete -c ag-room -n "__fish_ag_room_using_subcommand guard" -l color -d 'When to colour output (NO_COLOR is honoured by `auto`)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c ag-room -n "__fish_ag_room_using_subcommand guard" -l from -d 'Speak as NAME (a person or script) [default: the session in AG_SESSION, else AG_NAME, else the user name]' -r
complete -c ag-room -n "__fish_ag_room_using_subcommand guard" -l staged -d 'Check the files staged for commit (`git diff --cached`)'
complete -c ag-room -n "__fish_ag_room_using_subcommand guard" -l json -d 'Print machine-readable JSON (NDJSON for streams)'
complete -c ag-room -n "__fish_ag_room_using_subcommand guard" -s q -l quiet -d 'Print nothing on stdout but data that was asked for; no notices on stderr'
complete -c ag-room -n "__fish_ag_room_using_subcommand guard" -s v -l verbose -d 'Say more on stderr'
complete -c ag-room -n "__fish_ag_room_using_subcommand guard" -l any -d '`last` (and `-c`) mean the latest chat session of any directory, not only this one'
complete -c ag-room -n "__fish_ag_room_using_subcommand guard" -s h -l help -d 'Print help'
complete -c ag-room -n "__fish_ag_room_using_subcommand mcp" -l name -d 'Speak as NAME [default: the client\'s name from the MCP handshake, e.g. claude-code]' -r
complete -c ag-room -n "__fish_ag_room_using_subcommand mcp" -l home -d 'The store directory [default: $AG_HOME, else $XDG_DATA_HOME/ag, else ~/.local/share/ag]' -r -F
complete -c ag-room -n "__fish_ag_room_using_subcommand mcp" -l color -d 'When to colour output (NO_COLOR is honoured by `auto`)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c ag-room -n "__fish_ag_room_using_subcommand mcp" -l from -d 'Speak as NAME (a person or script) [default: the session in AG_SESSION, else AG_NAME, else the user name]' -r
complete -c ag-room -n "__fish_ag_room_using_subcommand mcp" -l json -d 'Print machine-readable JSON (NDJSON for streams)'
complete -c ag-room -n "__fish_ag_room_using_subcommand mcp" -s q -l quiet -d 'Print nothing on stdout but data that was asked for; no notices on stderr'
complete -c ag-room -n "__fish_ag_room_using_subcommand mcp" -s v -l verbose -d 'Say more on stderr'
complete -c ag-room -n "__fish_ag_room_using_subcommand mcp" -l any -d '`last` (and `-c`) mean the latest chat session of any directory, not only this one'
complete -c ag-room -n "__fish_ag_room_using_subcommand mcp" -s h -l help -d 'Print help'
complete -c ag-room -n "__fish_ag_room_using_subcommand doctor" -l home -d 'The store directory [default: $AG_HOME, else $XDG_DATA_HOME/ag, else ~/.local/share/ag]' -r -F
complete -c ag-room -n "__fish_ag_room_using_subcommand doctor" -l color -d 'When to colour output (NO_COLOR is honoured by `auto`)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c ag-room -n "__fish_ag_room_using_subcommand doctor" -l from -d 'Speak as NAME (a person or script) [default: the session in AG_SESSION, else AG_NAME, else the user name]' -r
complete -c ag-room -n "__fish_ag_room_using_subcommand doctor" -l json -d 'Print machine-readable JSON (NDJSON for streams)'
complete -c ag-room -n "__fish_ag_room_using_subcommand doctor" -s q -l quiet -d 'Print nothing on stdout but data that was asked for; no notices on stderr'
complete -c ag-room -n "__fish_ag_room_using_subcommand doctor" -s v -l verbose -d 'Say more on stderr'
complete -c ag-room -n "__fish_ag_room_using_subcommand doctor" -l any -d '`last` (and `-c`) mean the latest chat session of any directory, not only this one'
complete -c ag-room -n "__fish_ag_room_using_subcommand doctor" -s h -l help -d 'Print help'
complete -c ag-room -n "__fish_ag_room_using_subcommand help; and not __fish_seen_subcommand_from tell who peek tail inbox status ack claim release claims guard mcp doctor help" -f -a "tell" -d 'Post a line to this worktree\'s room, or a direct message; prints the message id'
complete -c ag-room -n "__fish_ag_room_using_subcommand help; and not __fish_seen_subcommand_from tell who peek tail inbox status ack claim release claims guard mcp doctor help" -f -a "who" -d 'The live sessions in this worktree: handle, title, goal, status, directory, last tool, last words, age'
complete -c ag-room -n "__fish_ag_room_using_subcommand help; and not __fish_seen_subcommand_from tell who peek tail inbox status ack claim release claims guard mcp doctor help" -f -a "peek" -d 'What a session is doing: goal, last prompt, last tool calls, last words, and the peer lines it heard and said; consumes nothing. Of a session of another machine (shared rooms): what its presence says and the lines it said in the room; what it heard is kept on its own machine'
complete -c ag-room -n "__fish_ag_room_using_subcommand help; and not __fish_seen_subcommand_from tell who peek tail inbox status ack claim release claims guard mcp doctor help" -f -a "tail" -d 'The room\'s lines; -f follows'
complete -c ag-room -n "__fish_ag_room_using_subcommand help; and not __fish_seen_subcommand_from tell who peek tail inbox status ack claim release claims guard mcp doctor help" -f -a "inbox" -d 'Unread lines since your cursor; consuming unless --peek'
complete -c ag-room -n "__fish_ag_room_using_subcommand help; and not __fish_seen_subcommand_from tell who peek tail inbox status ack claim release claims guard mcp doctor help" -f -a "status" -d 'What happened to a message: posted, delivered (to whom, when), acked'
complete -c ag-room -n "__fish_ag_room_using_subcommand help; and not __fish_seen_subcommand_from tell who peek tail inbox status ack claim release claims guard mcp doctor help" -f -a "ack" -d 'Acknowledge a message'
complete -c ag-room -n "__fish_ag_room_using_subcommand help; and not __fish_seen_subcommand_from tell who peek tail inbox status ack claim release claims guard mcp doctor help" -f -a "claim" -d 'Claim paths (globs) before changing them; exit 3 when someone else holds them'
complete -c ag-room -n "__fish_ag_room_using_subcommand help; and not __fish_seen_subcommand_from tell who peek tail inbox status ack claim release claims guard mcp doctor help" -f -a "release" -d 'End your own claims'
complete -c ag-room -n "__fish_ag_room_using_subcommand help; and not __fish_seen_subcommand_from tell who peek tail inbox status ack claim release claims guard mcp doctor help" -f -a "claims" -d 'The active claims in this worktree; a holder between turns shows as (idle)'
complete -c ag-room -n "__fish_ag_room_using_subcommand help; and not __fish_seen_subcommand_from tell who peek tail inbox status ack claim release claims guard mcp doctor help" -f -a "guard" -d 'For a git pre-commit hook: files under someone else\'s claim'
complete -c ag-room -n "__fish_ag_room_using_subcommand help; and not __fish_seen_subcommand_from tell who peek tail inbox status ack claim release claims guard mcp doctor help" -f -a "mcp" -d 'Serve this worktree\'s room over MCP on stdio, for Claude Code, Codex, Cursor…: peer_message, peer_inbox, peer_who, peer_peek, peer_claim, peer_release'
complete -c ag-room -n "__fish_ag_room_using_subcommand help; and not __fish_seen_subcommand_from tell who peek tail inbox status ack claim release claims guard mcp doctor help" -f -a "doctor" -d 'Check where rooms live: the configuration, the connection, the stream and the buckets, one line each; exit 75 when the room server cannot be reached, 1 when something else is wrong'
complete -c ag-room -n "__fish_ag_room_using_subcommand help; and not __fish_seen_subcommand_from tell who peek tail inbox status ack claim release claims guard mcp doctor help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
