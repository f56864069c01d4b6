fn main() -> std::process::ExitCode {
    ag::cli::room::main()
}
