//! `ag-prompt`'s side of MCP: the servers of a run (with their one-line notices on stderr),
//! the warning for a project's `.mcp.json`, and `ag-prompt mcp list`.

use std::sync::Arc;

use serde_json::json;

use super::{escape_controls, CliResult, Ctx};
use crate::config::Config;
use crate::mcp::{McpServers, Notify};
use crate::policy::Policy;

/// The servers a run may use under `policy`, or none when the policy names no MCP tool of
/// a configured server. Nothing starts here: a server starts when a turn first needs it.
pub(super) fn servers(ctx: &Ctx, config: &Config, policy: &Policy) -> Option<Arc<McpServers>> {
    project_file_warning(ctx, config);
    if !config.mcp.keys().any(|s| policy.may_use_server(s)) {
        return None;
    }
    Some(Arc::new(all(ctx, config, true)))
}

/// Every configured server; `notices` says whether their troubles go to stderr as they
/// happen (a listing reports them itself).
fn all(ctx: &Ctx, config: &Config, notices: bool) -> McpServers {
    let quiet = ctx.global.quiet || !notices;
    let notify: Notify = Arc::new(move |line: &str| {
        if !quiet {
            let line = escape_controls(line, true);
            super::output::eprint_quiet(&format!("{}: {line}\n", super::output::program()));
        }
    });
    McpServers::new(
        config.mcp.clone(),
        config.network.clone(),
        ctx.home.dir.join("mcp"),
        notify,
    )
}

/// A project's `.mcp.json` that the configuration left unread (its folder is not trusted).
fn project_file_warning(ctx: &Ctx, config: &Config) {
    if let Some(w) = &config.mcp_json_ignored {
        ctx.out.warn(w);
    }
}

/// `ag-prompt mcp list`: each server, whether it starts, and its tools.
pub(super) fn list(ctx: &mut Ctx) -> CliResult<()> {
    let cwd = std::env::current_dir()?;
    let config = super::load_config(&ctx.out, &cwd)?;
    project_file_warning(ctx, &config);
    if config.mcp.is_empty() {
        ctx.out
            .note("no MCP servers configured; add [mcp.NAME] to the user config");
        return Ok(());
    }
    let reports = all(ctx, &config, false).report();
    for r in reports {
        let from = match config.mcp_from.get(&r.name) {
            Some(file) => file.display().to_string(),
            None => "user config".to_string(),
        };
        if ctx.global.json {
            let tools = match &r.tools {
                Ok(tools) => json!(tools
                    .iter()
                    .map(|t| json!({
                        "name": crate::mcp::tool_name(&r.name, &t.name),
                        "description": t.description,
                        "input_schema": t.input_schema,
                    }))
                    .collect::<Vec<_>>()),
                Err(_) => json!(null),
            };
            let error = r.tools.as_ref().err();
            ctx.out.line(
                &json!({"server": r.name, "endpoint": r.endpoint, "from": from,
                        "starts": error.is_none(), "error": error, "tools": tools})
                .to_string(),
            )?;
            continue;
        }
        let status = match &r.tools {
            Ok(tools) => format!("starts, {} tools", tools.len()),
            Err(e) => format!("does not start: {e}"),
        };
        let head = format!("{}  {}  ({status}; from {from})", r.name, r.endpoint);
        ctx.out.line(&escape_controls(&head, false))?;
        for t in r.tools.iter().flatten() {
            let first = t.description.lines().next().unwrap_or_default();
            let line = format!("  {}  {first}", crate::mcp::tool_name(&r.name, &t.name));
            ctx.out.line(&escape_controls(&line, false))?;
        }
    }
    Ok(())
}
