_ag__prompt() {
    local i cur prev opts cmd
    COMPREPLY=()
    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
        cur="$2"
    else
        cur="${COMP_WORDS[COMP_CWORD]}"
    fi
    prev="$3"
    cmd=""
    opts=""

    for i in "${COMP_WORDS[@]:0:COMP_CWORD}"
    do
        case "${cmd},${i}" in
            ",$1")
                cmd="ag__prompt"
                ;;
            ag__prompt,acp)
                cmd="ag__prompt__subcmd__acp"
                ;;
            ag__prompt,mcp)
                cmd="ag__prompt__subcmd__mcp"
                ;;
            ag__prompt,models)
                cmd="ag__prompt__subcmd__models"
                ;;
            ag__prompt__subcmd__mcp,list)
                cmd="ag__prompt__subcmd__mcp__subcmd__list"
                ;;
            *)
                ;;
        esac
    done

    case "${cmd}" in
        ag__prompt)
            opts="-q -v -s -c -a -o -m -y -h -V --home --json --quiet --verbose --color --any --session --continue --name --new --attach --output --schema --output-file --session-id --model --system --no-project-context --tools --agent --max-cost --context-window --max-steps --thinking --title --no-queue --wait --compact --sandbox --net --approval --yes --chat --command --trust --allow-protected --help --version models mcp acp"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 1 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --home)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --color)
                    COMPREPLY=($(compgen -W "auto always never" -- "${cur}"))
                    return 0
                    ;;
                --session)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -s)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --name)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --attach)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -a)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                --schema)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --session-id)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --model)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -m)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --system)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --tools)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --agent)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-cost)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --context-window)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-steps)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --thinking)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --title)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --sandbox)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --approval)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --command)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        ag__prompt__subcmd__acp)
            opts="-m -q -v -h --model --tools --approval --sandbox --net --max-steps --home --json --quiet --verbose --color --any --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --model)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -m)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --tools)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --approval)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --sandbox)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-steps)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --home)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --color)
                    COMPREPLY=($(compgen -W "auto always never" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        ag__prompt__subcmd__mcp)
            opts="-q -v -h --home --json --quiet --verbose --color --any --help list"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --home)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --color)
                    COMPREPLY=($(compgen -W "auto always never" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        ag__prompt__subcmd__mcp__subcmd__list)
            opts="-q -v -h --home --json --quiet --verbose --color --any --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --home)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --color)
                    COMPREPLY=($(compgen -W "auto always never" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        ag__prompt__subcmd__models)
            opts="-q -v -h --forget --home --json --quiet --verbose --color --any --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --forget)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --home)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --color)
                    COMPREPLY=($(compgen -W "auto always never" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
    esac
}

if [[ "${BASH_VERSINFO[0]}" -eq 4 && "${BASH_VERSINFO[1]}" -ge 4 || "${BASH_VERSINFO[0]}" -gt 4 ]]; then
    complete -F _ag__prompt -o nosort -o bashdefault -o default ag-prompt
else
    complete -F _ag__prompt -o bashdefault -o default ag-prompt
fi

# Session handles, agent names and model names come from `ag-log __complete KIND`.
_ag__prompt__dynamic() {
    local cur="$2" prev="$3" sub="" kind="" word i
    for ((i = 1; i < COMP_CWORD; i++)); do
        case "${COMP_WORDS[i]}" in
            models|mcp|acp) sub="${COMP_WORDS[i]}"; break ;;
        esac
    done
    case "$sub|$prev" in
        "|-s"|"|--session") kind=sessions ;;
        "|-m"|"|--model") kind=models ;;
        "|--tools") kind=tools ;;
        "|--agent") kind=agents ;;
        "models|--forget") kind=models ;;
        "acp|-m"|"acp|--model") kind=models ;;
        "acp|--tools") kind=tools ;;
    esac
    local first=""
    if [[ -z "$kind" && "$cur" != -* ]]; then
        if [[ -z "$sub" && COMP_CWORD -eq 1 ]] || [[ -n "$sub" && "$prev" == "$sub" ]]; then
            first=1
            case "$sub" in
            esac
        fi
    fi
    if [[ -z "$kind" ]]; then
        _ag__prompt "$@"
        return
    fi
    COMPREPLY=()
    # At the top of a command with subcommands, both the subcommands and the values fit.
    if [[ -n "$first" && -z "$sub" ]]; then
        _ag__prompt "$@"
    fi
    while IFS=$'\t' read -r word _; do
        [[ "$word" == "$cur"* ]] && COMPREPLY+=("$word")
    done < <(ag-log __complete "$kind" 2>/dev/null)
    return 0
}
complete -F _ag__prompt__dynamic -o nosort -o bashdefault -o default ag-prompt
