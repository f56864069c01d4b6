fn main() -> std::process::ExitCode {
    ag::cli::dispatch::main()
}
