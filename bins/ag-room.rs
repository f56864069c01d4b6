//! The installed `ag-room`: the room verbs on rooms in files, whole in this binary (hooks and
//! agents start it for every line); for rooms on a server and `ag-room mcp` it runs `ag`.
fn main() -> std::process::ExitCode {
    ag::cli::room::main_on_files()
}
