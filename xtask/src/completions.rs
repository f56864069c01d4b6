//! Shell completions for one command: bash, zsh and fish, named the way each shell's
//! completion directory expects. Each also completes session handles, agent names and model
//! names at the moment of completion (see `dynamic`).

use clap_complete::Shell;

/// `(file name, contents)` for each shell, in a fixed order.
pub fn render(name: &str, mut command: clap::Command) -> Vec<(String, Vec<u8>)> {
    [
        (Shell::Bash, format!("{name}.bash")),
        (Shell::Zsh, format!("_{name}")),
        (Shell::Fish, format!("{name}.fish")),
    ]
    .into_iter()
    .map(|(shell, file_name)| {
        let mut buf = Vec::new();
        clap_complete::generate(shell, &mut command, name, &mut buf);
        match shell {
            Shell::Bash => {
                buf = fix_bash(name, &buf);
                buf.extend(crate::dynamic::bash(name, &command).into_bytes());
                if name == "ag" {
                    buf.extend(AG_DELEGATES.as_bytes());
                }
            }
            Shell::Fish => buf.extend(crate::dynamic::fish(name, &command).into_bytes()),
            Shell::Zsh => buf = crate::dynamic::zsh(name, &command, &buf),
            _ => {}
        }
        (file_name, buf)
    })
    .collect()
}

/// `ag CMD …` completes as `ag-CMD …` does (sessions after `ag log cat`, flags of the
/// command), with that command's completion loaded by bash-completion when it is not yet.
const AG_DELEGATES: &str = r#"
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
"#;

/// clap_complete names a hyphenated command's subcommand cases after `ag__subcmd__log__…`
/// while the state it sets is `ag__log__…`, so after any subcommand nothing completed. The
/// cases are renamed to match.
fn fix_bash(name: &str, script: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(script);
    let wrong = format!("{}__", name.replace('-', "__subcmd__"));
    let right = format!("{}__", name.replace('-', "__"));
    text.replace(&wrong, &right).into_bytes()
}
