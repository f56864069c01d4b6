//! `ag-fork` starts `ag` as `ag-fork` (one binary holds every command; see `ag::cli::launch`).
fn main() -> std::process::ExitCode {
    ag::cli::launch::exec("ag-fork")
}
