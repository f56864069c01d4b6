_ag__fork() {
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
                cmd="ag__fork"
                ;;
            *)
                ;;
        esac
    done

    case "${cmd}" in
        ag__fork)
            opts="-q -v -m -h -V --home --json --quiet --verbose --color --any --at --title --tools --read-only --btw --model --keep-cache --help --version"
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
                --at)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --title)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --tools)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --btw)
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
    complete -F _ag__fork -o nosort -o bashdefault -o default ag-fork
else
    complete -F _ag__fork -o bashdefault -o default ag-fork
fi

# Session handles, agent names and model names come from `ag-log __complete KIND`.
_ag__fork__dynamic() {
    local cur="$2" prev="$3" sub="" kind="" word i
    for ((i = 1; i < COMP_CWORD; i++)); do
        case "${COMP_WORDS[i]}" in
            "") sub="${COMP_WORDS[i]}"; break ;;
        esac
    done
    case "$sub|$prev" in
        "|--tools") kind=tools ;;
        "|-m"|"|--model") kind=models ;;
    esac
    local first=""
    if [[ -z "$kind" && "$cur" != -* ]]; then
        if [[ -z "$sub" && COMP_CWORD -eq 1 ]] || [[ -n "$sub" && "$prev" == "$sub" ]]; then
            first=1
            case "$sub" in
            "") kind=sessions ;;
            esac
        fi
    fi
    if [[ -z "$kind" ]]; then
        _ag__fork "$@"
        return
    fi
    COMPREPLY=()
    # At the top of a command with subcommands, both the subcommands and the values fit.
    if [[ -n "$first" && -z "$sub" ]]; then
        _ag__fork "$@"
    fi
    while IFS=$'\t' read -r word _; do
        [[ "$word" == "$cur"* ]] && COMPREPLY+=("$word")
    done < <(ag-log __complete "$kind" 2>/dev/null)
    return 0
}
complete -F _ag__fork__dynamic -o nosort -o bashdefault -o default ag-fork
