//! `ag-summon` starts `ag` as `ag-summon` (one binary holds every command; see `ag::cli::launch`).
fn main() -> std::process::ExitCode {
    ag::cli::launch::exec("ag-summon")
}
