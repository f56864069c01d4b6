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
        "append", "cat", "tail", "ls", "show", "fold", "ingest", "search", "title", "rm",
    ] {
        assert!(
            page.contains(&format!(".SS \"ag\\-log {sub}\"\n")),
            "man/ag-log.1 has no subsection for `ag-log {sub}`"
        );
    }
}
