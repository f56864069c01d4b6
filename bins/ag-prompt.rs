//! `ag-prompt` starts `ag` as `ag-prompt` (one binary holds every command; see `ag::cli::launch`).
fn main() -> std::process::ExitCode {
    ag::cli::launch::exec("ag-prompt")
}
