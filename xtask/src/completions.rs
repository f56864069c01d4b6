//! Shell completions for one command: bash, zsh and fish, named the way each shell's
//! completion directory expects.

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
        (file_name, buf)
    })
    .collect()
}
