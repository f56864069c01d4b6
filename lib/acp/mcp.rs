//! The MCP servers of a session an editor runs: the editor's own (passed with `session/new`
//! or `session/load`, stdio or HTTP) beside the ones the user configured, under the same
//! rules as `ag-prompt`. The editor's servers are the user's choice, made in the editor, so
//! they count as user configuration; a project's `.mcp.json` counts only in a trusted folder,
//! and a project server that is new or changed since the user approved the folder's servers
//! stays out (nobody is at a terminal to ask), with a note saying how to approve it.

use std::collections::BTreeMap;
use std::sync::Arc;

use agent_client_protocol_schema::v1::McpServer;

use crate::config::{Config, McpServerConfig};
use crate::mcp::{McpServers, Notify};
use crate::policy::Policy;

/// The editor's servers as configurations, by name; or what is wrong with one.
pub(crate) fn from_client(
    servers: &[McpServer],
) -> Result<BTreeMap<String, McpServerConfig>, String> {
    let mut out = BTreeMap::new();
    for s in servers {
        let (name, config) = match s {
            McpServer::Stdio(s) => (
                s.name.clone(),
                McpServerConfig {
                    command: Some(s.command.to_string_lossy().into_owned()),
                    args: s.args.clone(),
                    env: s.env.iter().map(|e| (e.name.clone(), e.value.clone())).collect(),
                    ..Default::default()
                },
            ),
            McpServer::Http(h) => (
                h.name.clone(),
                McpServerConfig {
                    url: Some(h.url.clone()),
                    headers: h
                        .headers
                        .iter()
                        .map(|h| (h.name.clone(), h.value.clone()))
                        .collect(),
                    ..Default::default()
                },
            ),
            McpServer::Sse(s) => {
                return Err(format!(
                    "MCP server {:?}: the SSE transport is not supported (mcpCapabilities.sse is false); use HTTP",
                    s.name
                ))
            }
            _ => return Err("an MCP server of a transport ag does not know".into()),
        };
        if name.is_empty() || name.contains("__") || name.chars().any(char::is_control) {
            return Err(format!(
                "MCP server {name:?}: a name must be non-empty, printable and without \"__\" (tools are named mcp__SERVER__TOOL)"
            ));
        }
        if out.insert(name.clone(), config).is_some() {
            return Err(format!("MCP server {name:?} is given twice"));
        }
    }
    Ok(out)
}

/// The servers a turn may use under `policy`: the configured ones (a configured name wins
/// over the editor's server of the same name), then the editor's. `None` when the policy names
/// no tool of any of them.
pub(crate) fn servers(
    config: &Config,
    client: &BTreeMap<String, McpServerConfig>,
    policy: &Policy,
    home: &crate::paths::Home,
    notify: Notify,
) -> Option<Arc<McpServers>> {
    if let Some(w) = &config.mcp_json_ignored {
        notify(w);
    }
    for u in &config.mcp_unapproved {
        notify(&format!(
            "{}: the MCP server {:?} is not started: it is new or changed since you approved \
             the servers of {}; `ag-prompt --trust` there approves it",
            u.file.display(),
            u.name,
            u.folder.display()
        ));
    }
    let mut mcp = config.mcp.clone();
    for (name, server) in client {
        if mcp.contains_key(name) {
            notify(&format!(
                "the editor's MCP server {name:?} is not used: your configuration has a server of that name"
            ));
            continue;
        }
        mcp.insert(name.clone(), server.clone());
    }
    if !mcp.keys().any(|s| policy.may_use_server(s)) {
        return None;
    }
    Some(Arc::new(McpServers::new(
        mcp,
        config.network.clone(),
        home.dir.join("mcp"),
        notify,
    )))
}

/// The `--tools` words that give a new session the tools of the editor's servers.
pub(crate) fn grants(client: &BTreeMap<String, McpServerConfig>) -> Vec<String> {
    client.keys().map(|n| format!("+mcp__{n}__*")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_editors_servers_become_configurations() {
        let servers: Vec<McpServer> = serde_json::from_value(json!([
            {"name": "fs", "command": "/usr/bin/srv", "args": ["-v"], "env": [{"name": "A", "value": "1"}]},
            {"type": "http", "name": "web", "url": "http://127.0.0.1:9/mcp", "headers": [{"name": "X", "value": "y"}]}
        ]))
        .unwrap();
        let c = from_client(&servers).unwrap();
        assert_eq!(c["fs"].command.as_deref(), Some("/usr/bin/srv"));
        assert_eq!(c["fs"].args, vec!["-v"]);
        assert_eq!(c["fs"].env["A"], "1");
        assert_eq!(c["web"].url.as_deref(), Some("http://127.0.0.1:9/mcp"));
        assert_eq!(c["web"].headers["X"], "y");
        assert_eq!(grants(&c), vec!["+mcp__fs__*", "+mcp__web__*"]);
        let bad: Vec<McpServer> = serde_json::from_value(
            json!([{"name": "a__b", "command": "x", "args": [], "env": []}]),
        )
        .unwrap();
        assert!(from_client(&bad).unwrap_err().contains("a__b"));
    }
}
