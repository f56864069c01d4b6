complete -c ag-fork -l home -d 'The store directory [default: $AG_HOME, else $XDG_DATA_HOME/ag, else ~/.local/share/ag]' -r -F
complete -c ag-fork -l color -d 'When to colour output (NO_COLOR is honoured by `auto`)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c ag-fork -l at -d 'Cut after this seq (1 to the log\'s length) instead of the end of the latest completed turn; tool calls the cut leaves open get synthetic results' -r
complete -c ag-fork -l title -d 'Title of the fork [default: "fork of TITLE"; with --btw: "BTW · QUESTION"]' -r
complete -c ag-fork -l tools -d 'Narrow the fork\'s tools to this list (names and sets, comma-separated; `-bash` takes one away from the source\'s); never widens' -r
complete -c ag-fork -l btw -d 'Ask a side question: a read-only fork (kind `side`) prompted with QUESTION (`-` reads it from stdin); the answer streams to stdout, the fork\'s id goes to stderr' -r
complete -c ag-fork -s m -l model -d 'The side chat\'s model [default: AG_MODEL, else the session\'s, else the configuration\'s]' -r
complete -c ag-fork -l json -d 'Print machine-readable JSON (NDJSON for streams)'
complete -c ag-fork -s q -l quiet -d 'Print nothing on stdout but data that was asked for; no notices on stderr'
complete -c ag-fork -s v -l verbose -d 'Say more on stderr'
complete -c ag-fork -l any -d '`last` (and `-c`) mean the latest chat session of any directory, not only this one'
complete -c ag-fork -l read-only -d 'Give the fork the look-only tools (read, glob, grep, recall)'
complete -c ag-fork -l keep-cache -d 'Keep the session\'s system prompt and offered tool list byte-identical, so the side chat\'s first request reuses its prompt cache; the rules travel with the question and the guard still denies every tool but read, glob, grep and recall'
complete -c ag-fork -s h -l help -d 'Print help'
complete -c ag-fork -s V -l version -d 'Print version'
complete -c ag-fork -l tools -x -a "(ag-log __complete tools)"
complete -c ag-fork -s m -l model -x -a "(ag-log __complete models)"
complete -c ag-fork -f -a "(ag-log __complete sessions)"
