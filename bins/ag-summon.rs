fn main() -> std::process::ExitCode {
    ag::cli::summon::main()
}
