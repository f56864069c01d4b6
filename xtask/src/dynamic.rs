//! Dynamic completion: the values clap cannot know (session handles, agent names, model
//! names) come from `ag-log __complete KIND` at the moment of completion. Which flags and
//! positional arguments take them is read from the clap definitions by their value names,
//! so a new `--session` flag is completed without touching this file.

use clap::{Arg, Command};

/// What `ag-log __complete` is asked for, by an argument's value name.
fn kind_of(arg: &Arg) -> Option<&'static str> {
    let name = arg.get_value_names()?.first()?.as_str();
    match name {
        "SESSION" | "ID" => Some("sessions"),
        "AGENT" | "SLUG" => Some("agents"),
        "MODEL" => Some("models"),
        "LIST" => Some("tools"),
        _ => None,
    }
}

/// A flag that takes a dynamic value: its subcommand ("" at the top), its spellings, and
/// the kind.
struct Flag {
    sub: String,
    spellings: Vec<String>,
    kind: &'static str,
}

/// A first positional argument that takes a dynamic value.
struct Positional {
    sub: String,
    kind: &'static str,
}

struct Dynamic {
    flags: Vec<Flag>,
    positionals: Vec<Positional>,
    subcommands: Vec<String>,
}

fn collect(command: &Command) -> Dynamic {
    let mut d = Dynamic {
        flags: Vec::new(),
        positionals: Vec::new(),
        subcommands: Vec::new(),
    };
    let mut visit = |sub: &str, c: &Command| {
        for arg in c.get_arguments() {
            let Some(kind) = kind_of(arg) else { continue };
            if arg.is_positional() {
                continue;
            }
            let mut spellings: Vec<String> = Vec::new();
            spellings.extend(arg.get_short().map(|s| format!("-{s}")));
            spellings.extend(arg.get_long().map(|l| format!("--{l}")));
            d.flags.push(Flag {
                sub: sub.to_string(),
                spellings,
                kind,
            });
        }
        if let Some(kind) = c.get_positionals().next().and_then(kind_of) {
            d.positionals.push(Positional {
                sub: sub.to_string(),
                kind,
            });
        }
    };
    visit("", command);
    for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
        d.subcommands.push(sub.get_name().to_string());
        visit(sub.get_name(), sub);
    }
    d
}

/// The bash function that wraps clap's generated one: a flag or first positional that takes
/// a session, agent or model completes from `ag-log __complete`; everything else is left to
/// the generated function. Words are matched by prefix in bash itself (not `compgen -W`,
/// which would expand `$(…)` in a word).
pub fn bash(name: &str, command: &Command) -> String {
    let d = collect(command);
    if d.flags.is_empty() && d.positionals.is_empty() {
        return String::new();
    }
    let func = format!("_{}", name.replace('-', "__"));
    let mut flag_cases = String::new();
    for f in &d.flags {
        let pats: Vec<String> = f
            .spellings
            .iter()
            .map(|s| format!("\"{}|{s}\"", f.sub))
            .collect();
        flag_cases.push_str(&format!("        {}) kind={} ;;\n", pats.join("|"), f.kind));
    }
    let mut pos_cases = String::new();
    for p in &d.positionals {
        pos_cases.push_str(&format!("            \"{}\") kind={} ;;\n", p.sub, p.kind));
    }
    let subs = if d.subcommands.is_empty() {
        "\"\"".to_string()
    } else {
        d.subcommands.join("|")
    };
    format!(
        r#"
# Session handles, agent names and model names come from `ag-log __complete KIND`.
{func}__dynamic() {{
    local cur="$2" prev="$3" sub="" kind="" word i
    for ((i = 1; i < COMP_CWORD; i++)); do
        case "${{COMP_WORDS[i]}}" in
            {subs}) sub="${{COMP_WORDS[i]}}"; break ;;
        esac
    done
    case "$sub|$prev" in
{flag_cases}    esac
    local first=""
    if [[ -z "$kind" && "$cur" != -* ]]; then
        if [[ -z "$sub" && COMP_CWORD -eq 1 ]] || [[ -n "$sub" && "$prev" == "$sub" ]]; then
            first=1
            case "$sub" in
{pos_cases}            esac
        fi
    fi
    if [[ -z "$kind" ]]; then
        {func} "$@"
        return
    fi
    COMPREPLY=()
    # At the top of a command with subcommands, both the subcommands and the values fit.
    if [[ -n "$first" && -z "$sub" ]]; then
        {func} "$@"
    fi
    while IFS=$'\t' read -r word _; do
        [[ "$word" == "$cur"* ]] && COMPREPLY+=("$word")
    done < <(ag-log __complete "$kind" 2>/dev/null)
    return 0
}}
complete -F {func}__dynamic -o nosort -o bashdefault -o default {name}
"#
    )
}

/// Fish: extra `complete` lines whose candidates come from `ag-log __complete` (fish shows
/// the description after the tab).
pub fn fish(name: &str, command: &Command) -> String {
    let d = collect(command);
    let mut out = String::new();
    for f in &d.flags {
        let mut line = format!("complete -c {name}");
        if !f.sub.is_empty() {
            line.push_str(&format!(" -n \"__fish_seen_subcommand_from {}\"", f.sub));
        }
        for s in &f.spellings {
            match s.strip_prefix("--") {
                Some(l) => line.push_str(&format!(" -l {l}")),
                None => line.push_str(&format!(" -s {}", &s[1..])),
            }
        }
        line.push_str(&format!(" -x -a \"(ag-log __complete {})\"\n", f.kind));
        out.push_str(&line);
    }
    for p in &d.positionals {
        let cond = if p.sub.is_empty() {
            if d.subcommands.is_empty() {
                String::new()
            } else {
                " -n \"__fish_use_subcommand\"".to_string()
            }
        } else {
            format!(" -n \"__fish_seen_subcommand_from {}\"", p.sub)
        };
        out.push_str(&format!(
            "complete -c {name}{cond} -f -a \"(ag-log __complete {})\"\n",
            p.kind
        ));
    }
    out
}

/// Zsh: clap's script, with each argument whose value is a session, agent or model completed
/// by `_ag_complete KIND` instead of `_default`, and that function, which offers the words of
/// `ag-log __complete KIND` with their descriptions (`_describe`). A flag's spec names its
/// value (`…]:SESSION:_default'`), a positional's its id (`':session -- …:_default'`).
pub fn zsh(name: &str, command: &Command, script: &[u8]) -> Vec<u8> {
    let mut flags: Vec<(String, &'static str)> = Vec::new();
    let mut positionals: Vec<(String, &'static str)> = Vec::new();
    let mut visit = |c: &Command| {
        for arg in c.get_arguments() {
            let Some(kind) = kind_of(arg) else { continue };
            let value = arg
                .get_value_names()
                .and_then(|v| v.first())
                .map(|v| v.to_string());
            if arg.is_positional() {
                positionals.push((arg.get_id().to_string(), kind));
            } else if let Some(value) = value {
                flags.push((value, kind));
            }
        }
    };
    visit(command);
    command.get_subcommands().for_each(&mut visit);
    let text = String::from_utf8_lossy(script);
    let mut out = String::new();
    for line in text.split_inclusive('\n') {
        out.push_str(&zsh_line(line, &flags, &positionals));
    }
    // The function goes before clap's closing dispatch, when something calls it.
    let dispatch = format!("if [ \"$funcstack[1]\" = \"_{name}\" ]; then");
    match out.find(&dispatch) {
        Some(at) if out.contains(":_ag_complete ") => out.insert_str(at, ZSH_HELPER),
        _ => {}
    }
    out.into_bytes()
}

/// One line of clap's zsh script, its `_default` action replaced when the spec is one of a
/// dynamic flag's or positional's.
fn zsh_line(line: &str, flags: &[(String, &str)], positionals: &[(String, &str)]) -> String {
    let Some(head) = line.trim_end().strip_suffix(":_default' \\") else {
        return line.to_string();
    };
    let spec = head.trim_start_matches(['\'', '*', ':']);
    let kind = flags
        .iter()
        .find(|(value, _)| head.ends_with(&format!("]:{value}")))
        .or_else(|| {
            positionals
                .iter()
                .find(|(id, _)| head.starts_with('\'') && spec.starts_with(&format!("{id} -- ")))
        })
        .map(|(_, kind)| *kind);
    match kind {
        Some(kind) => format!("{head}:_ag_complete {kind}' \\\n"),
        None => line.to_string(),
    }
}

/// The words of `ag-log __complete KIND` (`WORD<TAB>ABOUT` lines) for `_describe`, whose
/// `WORD:ABOUT` form needs a colon in the word escaped. `_arguments` puts its own options
/// before the action's words, so the kind is the last argument.
const ZSH_HELPER: &str = r#"(( $+functions[_ag_complete] )) ||
_ag_complete() {
    local kind="${@[-1]}" line word
    local -a values
    for line in "${(@f)$(ag-log __complete "$kind" 2>/dev/null)}"; do
        [[ -n "$line" ]] || continue
        word="${line%%$'\t'*}"
        values+=("${word//:/\\:}:${line#*$'\t'}")
    done
    _describe -t "$kind" "$kind" values
}

"#;
