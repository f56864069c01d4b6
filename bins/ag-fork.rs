fn main() -> std::process::ExitCode {
    ag::cli::fork::main()
}
