_ag__summon() {
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
                cmd="ag__summon"
                ;;
            ag__summon,agents)
                cmd="ag__summon__subcmd__agents"
                ;;
            ag__summon,cancel)
                cmd="ag__summon__subcmd__cancel"
                ;;
            ag__summon,ps)
                cmd="ag__summon__subcmd__ps"
                ;;
            ag__summon,retrieve)
                cmd="ag__summon__subcmd__retrieve"
                ;;
            *)
                ;;
        esac
    done

    case "${cmd}" in
        ag__summon)
            opts="-q -v -a -h -V --home --json --quiet --verbose --color --any --agent --parent --top-level --background --tools --cwd --help --version agents retrieve ps cancel"
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
                --agent)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -a)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --parent)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --tools)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cwd)
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
        ag__summon__subcmd__agents)
            opts="-q -v -h --home --json --quiet --verbose --color --any --help"
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
        ag__summon__subcmd__cancel)
            opts="-q -v -h --grace --home --json --quiet --verbose --color --any --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --grace)
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
        ag__summon__subcmd__ps)
            opts="-q -v -h --parent --all --home --json --quiet --verbose --color --any --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --parent)
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
        ag__summon__subcmd__retrieve)
            opts="-q -v -h --timeout --home --json --quiet --verbose --color --any --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --timeout)
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
    complete -F _ag__summon -o nosort -o bashdefault -o default ag-summon
else
    complete -F _ag__summon -o bashdefault -o default ag-summon
fi

# Session handles, agent names and model names come from `ag-log __complete KIND`.
_ag__summon__dynamic() {
    local cur="$2" prev="$3" sub="" kind="" word i
    for ((i = 1; i < COMP_CWORD; i++)); do
        case "${COMP_WORDS[i]}" in
            agents|retrieve|ps|cancel) sub="${COMP_WORDS[i]}"; break ;;
        esac
    done
    case "$sub|$prev" in
        "|-a"|"|--agent") kind=agents ;;
        "|--parent") kind=sessions ;;
        "|--tools") kind=tools ;;
        "ps|--parent") kind=sessions ;;
    esac
    local first=""
    if [[ -z "$kind" && "$cur" != -* ]]; then
        if [[ -z "$sub" && COMP_CWORD -eq 1 ]] || [[ -n "$sub" && "$prev" == "$sub" ]]; then
            first=1
            case "$sub" in
            "") kind=agents ;;
            "retrieve") kind=sessions ;;
            "cancel") kind=sessions ;;
            esac
        fi
    fi
    if [[ -z "$kind" ]]; then
        _ag__summon "$@"
        return
    fi
    COMPREPLY=()
    # At the top of a command with subcommands, both the subcommands and the values fit.
    if [[ -n "$first" && -z "$sub" ]]; then
        _ag__summon "$@"
    fi
    while IFS=$'\t' read -r word _; do
        [[ "$word" == "$cur"* ]] && COMPREPLY+=("$word")
    done < <(ag-log __complete "$kind" 2>/dev/null)
    return 0
}
complete -F _ag__summon__dynamic -o nosort -o bashdefault -o default ag-summon
