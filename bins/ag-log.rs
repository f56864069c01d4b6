//! `ag-log` starts `ag` as `ag-log` (one binary holds every command; see `ag::cli::launch`).
fn main() -> std::process::ExitCode {
    ag::cli::launch::exec("ag-log")
}
