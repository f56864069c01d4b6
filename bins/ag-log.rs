fn main() -> std::process::ExitCode {
    ag::cli::log::main()
}
