//! `ag-room mcp`: serve this worktree's room over MCP on stdin/stdout.

use super::cwd;
use crate::cli::{CliError, CliResult, Ctx};
use crate::mcp::RoomServer;

#[derive(Debug, clap::Args)]
pub(crate) struct McpArgs {
    /// Speak as NAME [default: the client's name from the MCP handshake, e.g. claude-code]
    #[arg(long, value_name = "NAME")]
    name: Option<String>,
}

pub(super) fn mcp(ctx: &mut Ctx, from: Option<&str>, a: McpArgs) -> CliResult<()> {
    let name = a.name.or_else(|| from.map(str::to_owned));
    // Nothing may reach stdout but the protocol.
    RoomServer::new(ctx.home.clone(), ctx.rooms(), cwd()?, name)
        .serve_stdio()
        .map_err(CliError::msg)
}
