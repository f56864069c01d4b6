fn main() -> std::process::ExitCode {
    ag::cli::unavailable("ag-prompt")
}
