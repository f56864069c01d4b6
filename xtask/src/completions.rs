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
            }
            Shell::Fish => buf.extend(crate::dynamic::fish(name, &command).into_bytes()),
            Shell::Zsh => buf = crate::dynamic::zsh(name, &command, &buf),
            _ => {}
        }
        (file_name, buf)
    })
    .collect()
}

/// clap_complete names a hyphenated command's subcommand cases after `ag__subcmd__log__…`
/// while the state it sets is `ag__log__…`, so after any subcommand nothing completed. The
/// cases are renamed to match.
fn fix_bash(name: &str, script: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(script);
    let wrong = format!("{}__", name.replace('-', "__subcmd__"));
    let right = format!("{}__", name.replace('-', "__"));
    text.replace(&wrong, &right).into_bytes()
}
