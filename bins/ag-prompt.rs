fn main() -> std::process::ExitCode {
    ag::cli::prompt::main()
}
