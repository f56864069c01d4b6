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
