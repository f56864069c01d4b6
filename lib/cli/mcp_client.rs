//! `ag-prompt`'s side of MCP: the servers of a run (with their one-line notices on stderr),
//! the warning for a project's `.mcp.json`, and `ag-prompt mcp list`.

use std::sync::Arc;

use serde_json::json;

use super::{escape_controls, CliResult, Ctx};
use std::io::IsTerminal;

use crate::config::mcp_approval::Unapproved;
use crate::config::Config;
use crate::mcp::{McpServers, Notify};
use crate::policy::Policy;

/// The servers a run may use under `policy`, or none when the policy names no MCP tool of
/// a configured server. Nothing starts here: a server starts when a turn first needs it.
pub(super) fn servers(ctx: &Ctx, config: &Config, policy: &Policy) -> Option<Arc<McpServers>> {
    project_file_warning(ctx, config);
    let mut mcp = config.mcp.clone();
    for u in &config.mcp_unapproved {
        if policy.may_use_server(&u.name) && approved_now(ctx, u) {
            mcp.insert(u.name.clone(), u.server.clone());
        }
    }
    if !mcp.keys().any(|s| policy.may_use_server(s)) {
        return None;
    }
    Some(Arc::new(all(ctx, mcp, config, true)))
}

/// A project server that is new or changed since the user approved the folder's servers: on
/// a terminal, ask (a yes is remembered); in a pipe, leave it out and say how to approve it.
fn approved_now(ctx: &Ctx, u: &Unapproved) -> bool {
    let what = escape_controls(&u.what(), false);
    let file = u.file.display();
    let interactive = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    if interactive {
        let question = format!(
            "{}: the MCP server {:?} of {file} is new or changed since you approved this \
             folder's servers; it runs: {what}\nstart it and remember that? [y/N] ",
            super::output::program(),
            u.name
        );
        if ask(&question) {
            if let Err(e) =
                crate::config::mcp_approval::approve(&u.folder, &[(&u.name, &u.fingerprint)])
            {
                ctx.out.warn(&e.to_string());
            }
            return true;
        }
    }
    ctx.out.warn(&format!(
        "{file}: the MCP server {:?} is not started: it is new or changed since you approved \
         the servers of {} (it runs: {what}); `ag-prompt --trust` there approves it",
        u.name,
        u.folder.display()
    ));
    false
}

/// Ask a yes-or-no question on the terminal.
fn ask(question: &str) -> bool {
    use std::io::{BufRead, Write};
    let mut err = std::io::stderr();
    let _ = err.write_all(question.as_bytes());
    let _ = err.flush();
    let mut line = String::new();
    if std::io::stdin().lock().read_line(&mut line).is_err() {
        return false;
    }
    matches!(line.trim(), "y" | "Y" | "yes")
}

/// Every server in `mcp`; `notices` says whether their troubles go to stderr as they
/// happen (a listing reports them itself).
fn all(
    ctx: &Ctx,
    mcp: std::collections::BTreeMap<String, crate::config::McpServerConfig>,
    config: &Config,
    notices: bool,
) -> McpServers {
    let quiet = ctx.global.quiet || !notices;
    let notify: Notify = Arc::new(move |line: &str| {
        if !quiet {
            let line = escape_controls(line, true);
            super::output::eprint_quiet(&format!("{}: {line}\n", super::output::program()));
        }
    });
    McpServers::new(
        mcp,
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
    let config = ctx.config()?.clone();
    project_file_warning(ctx, &config);
    for u in &config.mcp_unapproved {
        ctx.out.warn(&format!(
            "{}: the MCP server {:?} is not approved: it is new or changed since you approved \
             the servers of {} (it runs: {}); `ag-prompt --trust` there approves it",
            u.file.display(),
            u.name,
            u.folder.display(),
            escape_controls(&u.what(), false)
        ));
    }
    if config.mcp.is_empty() {
        ctx.out
            .note("no MCP servers configured; add [mcp.NAME] to the user config");
        return Ok(());
    }
    let reports = all(ctx, config.mcp.clone(), &config, false).report();
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
