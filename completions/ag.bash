_ag() {
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
                cmd="ag"
                ;;
            ag,chat)
                cmd="ag__subcmd__chat"
                ;;
            ag,fork)
                cmd="ag__subcmd__fork"
                ;;
            ag,log)
                cmd="ag__subcmd__log"
                ;;
            ag,prompt)
                cmd="ag__subcmd__prompt"
                ;;
            ag,room)
                cmd="ag__subcmd__room"
                ;;
            ag,summon)
                cmd="ag__subcmd__summon"
                ;;
            *)
                ;;
        esac
    done

    case "${cmd}" in
        ag)
            opts="-h -V --help --version log prompt chat fork room summon"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 1 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        ag__subcmd__chat)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        ag__subcmd__fork)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        ag__subcmd__log)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        ag__subcmd__prompt)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        ag__subcmd__room)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        ag__subcmd__summon)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
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
    complete -F _ag -o nosort -o bashdefault -o default ag
else
    complete -F _ag -o bashdefault -o default ag
fi

# `ag CMD …` completes as `ag-CMD …`, with ag-CMD's completion (loaded when needed).
_ag__delegate() {
    if [[ COMP_CWORD -ge 2 ]]; then
        local sub="${COMP_WORDS[1]}"
        local target="ag-$sub" func="_ag__${sub//-/__}"
        if ! declare -F "$func" >/dev/null && declare -F _completion_loader >/dev/null; then
            _completion_loader "$target" 2>/dev/null
        fi
        declare -F "${func}__dynamic" >/dev/null && func="${func}__dynamic"
        if declare -F "$func" >/dev/null; then
            COMP_WORDS=("$target" "${COMP_WORDS[@]:2}")
            COMP_CWORD=$((COMP_CWORD - 1))
            local prev=""
            [[ COMP_CWORD -ge 1 ]] && prev="${COMP_WORDS[COMP_CWORD-1]}"
            "$func" "$target" "${COMP_WORDS[COMP_CWORD]}" "$prev"
            return
        fi
    fi
    _ag "$@"
}
complete -F _ag__delegate -o nosort -o bashdefault -o default ag
