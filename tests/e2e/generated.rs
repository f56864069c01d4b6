//! The man pages carry the hand-written sections clap cannot produce. That the committed
//! pages and completions match the clap definitions is checked by xtask's own test
//! (`cargo test --workspace`).

use std::path::Path;

#[test]
fn ag_log_man_page_documents_every_subcommand_and_the_hand_written_sections() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("man/ag-log.1");
    let page = std::fs::read_to_string(&path).expect("read man/ag-log.1");
    for heading in [
        "EXIT STATUS",
        "ENVIRONMENT",
        "FILES",
        "EXAMPLES",
        "NDJSON CHUNKS",
    ] {
        let quoted = format!(".SH \"{heading}\"\n");
        let bare = format!(".SH {heading}\n");
        assert!(
            page.contains(&quoted) || page.contains(&bare),
            "man/ag-log.1 has no {heading} section"
        );
    }
    for sub in [
        "append", "cat", "tail", "ls", "show", "fold", "ingest", "search", "usage", "title", "rm",
    ] {
        assert!(
            page.contains(&format!(".SS \"ag\\-log {sub}\"\n")),
            "man/ag-log.1 has no subsection for `ag-log {sub}`"
        );
    }
}

/// What a real bash offers for `WORDS…<TAB>` with a command's generated completion loaded.
fn complete(command: &str, words: &[&str]) -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let file = root.join(format!("completions/{command}.bash"));
    let func = format!("_{}", command.replace('-', "__"));
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let script = format!(
        "source '{}'\nCOMP_WORDS=({})\nCOMP_CWORD={}\nCOMP_LINE='{}'\nCOMP_POINT=${{#COMP_LINE}}\n\
         {func} {command} '{}' '{}'\nprintf '%s\\n' \"${{COMPREPLY[@]}}\"\n",
        file.display(),
        quoted.join(" "),
        words.len() - 1,
        words.join(" "),
        words[words.len() - 1],
        words[words.len() - 2],
    );
    let out = std::process::Command::new("bash")
        .args(["--norc", "--noprofile", "-c", &script])
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .output()
        .expect("run bash");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn bash_completes_flags_after_a_subcommand() {
    let got = complete("ag-log", &["ag-log", "cat", "--"]);
    assert!(got.iter().any(|w| w == "--turn"), "{got:?}");
    assert!(!got.iter().any(|w| w == "append"), "{got:?}");
    let got = complete("ag-room", &["ag-room", "tell", "--"]);
    assert!(got.iter().any(|w| w == "--from"), "{got:?}");
    let got = complete("ag-log", &["ag-log", "ls", "--k"]);
    assert_eq!(got, ["--kind"]);
}
