//! MCP, on the official SDK (`rmcp`): the servers `ag-prompt` uses as tool sources (this
//! file and `client`), and the room as a server for other agents ([`RoomServer`]).
//!
//! A server's tools appear as `mcp__SERVER__TOOL` with the server's own descriptions and
//! schemas. Servers start when a turn first needs them — when the session's policy may allow
//! one of their tools — and stop when the command ends. A server that fails to start, breaks
//! or times out becomes a tool error for the model and one line for the person (through the
//! `notify` callback the caller gives); it never ends the turn. Whether a call may run at all
//! is decided before it, by `policy::guard`.

mod client;
mod room_server;
mod room_tools;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

pub(crate) use client::{Progress, ServerTool};
pub(crate) use room_server::RoomServer;

use crate::config::{McpServerConfig, Network};
use crate::fold::ToolSpec;
use crate::policy::{Policy, MCP_PREFIX};
use crate::tools::ToolOutput;

const STARTUP_TIMEOUT: Duration = Duration::from_secs(10);
const CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// Where a person hears about a server (started, failed, broke): one line each.
pub(crate) type Notify = Arc<dyn Fn(&str) + Send + Sync>;

enum State {
    Up {
        peer: rmcp::service::Peer<rmcp::service::RoleClient>,
        tools: Vec<ServerTool>,
    },
    Failed(String),
}

/// The configured servers of one command, started on demand.
pub(crate) struct McpServers {
    configs: BTreeMap<String, McpServerConfig>,
    net: Network,
    /// Server stderr goes to `LOG_DIR/NAME.log` (0600).
    log_dir: PathBuf,
    notify: Notify,
    state: Mutex<BTreeMap<String, State>>,
    sessions: Mutex<Vec<client::Session>>,
    /// Tools (`mcp__SERVER__TOOL`) withdrawn for the rest of the run: their server refused
    /// a call for a client capability `ag` does not have.
    withdrawn: Mutex<std::collections::BTreeSet<String>>,
    /// What the server of the call in progress last reported of it.
    progress: client::ProgressSlot,
}

impl std::fmt::Debug for McpServers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServers")
            .field("servers", &self.configs.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// What `ag-prompt mcp list` shows of one server.
pub(crate) struct ServerReport {
    pub(crate) name: String,
    /// `stdio: COMMAND ARGS` or `http: URL`.
    pub(crate) endpoint: String,
    pub(crate) tools: Result<Vec<ServerTool>, String>,
}

impl McpServers {
    pub(crate) fn new(
        configs: BTreeMap<String, McpServerConfig>,
        net: Network,
        log_dir: PathBuf,
        notify: Notify,
    ) -> McpServers {
        McpServers {
            configs,
            net,
            log_dir,
            notify,
            state: Mutex::new(BTreeMap::new()),
            sessions: Mutex::new(Vec::new()),
            withdrawn: Mutex::new(Default::default()),
            progress: Default::default(),
        }
    }

    /// The specs of every tool `policy` allows, starting the servers it may use.
    pub(crate) fn specs(&self, policy: &Policy) -> Vec<ToolSpec> {
        let mut out = Vec::new();
        for server in self.configs.keys() {
            if !policy.may_use_server(server) {
                continue;
            }
            let Ok((_, tools)) = self.ensure(server) else {
                continue;
            };
            let withdrawn = self.withdrawn.lock().unwrap_or_else(|e| e.into_inner());
            for t in tools {
                let name = tool_name(server, &t.name);
                if policy.allows(&name) && !withdrawn.contains(&name) {
                    out.push(ToolSpec {
                        name,
                        description: t.description.clone(),
                        input_schema: t.input_schema.clone(),
                    });
                }
            }
        }
        out
    }

    /// Run `mcp__SERVER__TOOL`. Never fails the turn: every failure is an error result.
    pub(crate) fn call(&self, name: &str, args: &Value) -> ToolOutput {
        let Some((server, tool)) = self.resolve(name) else {
            return ToolOutput::error(format!(
                "unknown tool {name:?}: no configured MCP server offers it; nothing was run"
            ));
        };
        let (peer, tools) = match self.ensure(&server) {
            Ok(up) => up,
            Err(why) => return ToolOutput::error(format!("MCP server {server}: {why}")),
        };
        let Some(real) = tools.iter().find(|t| tool_name(&server, &t.name) == name) else {
            return ToolOutput::error(format!(
                "MCP server {server} has no tool {tool:?}; nothing was run"
            ));
        };
        let timeout = secs_or(self.configs[&server].call_timeout_s, CALL_TIMEOUT);
        *self.progress.lock().unwrap_or_else(|e| e.into_inner()) = None;
        match crate::net::block_on(client::call(&peer, &real.name, args, timeout)) {
            Ok(Ok((text, false))) => ToolOutput::ok(text),
            Ok(Ok((text, true))) => ToolOutput::error(text),
            Ok(Err(message)) => ToolOutput::error(format!("{name}: {message}")),
            Err(client::CallFailure::Timeout) => {
                let why = format!("did not answer {tool} within {} s", timeout.as_secs_f64());
                (self.notify)(&format!("mcp: server {server} {why}"));
                ToolOutput::error(format!("MCP server {server} {why}; the call was cancelled"))
            }
            Err(client::CallFailure::NeedsCapability(what)) => {
                let first = self
                    .withdrawn
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(name.to_owned());
                if first {
                    (self.notify)(&format!(
                        "mcp: server {server}'s tool {tool} needs the client capability {what}, \
                         which ag does not offer: it is withdrawn for this run"
                    ));
                }
                ToolOutput::error(format!(
                    "{name} needs the MCP client capability {what}, which this client does not \
                     offer; nothing was run, and the tool is withdrawn: use another way"
                ))
            }
            Err(client::CallFailure::Broken(e)) => {
                let why = format!("stopped during a call to {tool}: {e}");
                self.fail(&server, &why);
                ToolOutput::error(format!("MCP server {server} {why}"))
            }
        }
    }

    /// What the server of the running call last reported of it (`notifications/progress`),
    /// if anything since the call began.
    pub(crate) fn progress(&self) -> Option<Progress> {
        self.progress
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Every configured server: whether it starts, and its tools (`ag-prompt mcp list`).
    pub(crate) fn report(&self) -> Vec<ServerReport> {
        self.configs
            .iter()
            .map(|(name, cfg)| ServerReport {
                name: name.clone(),
                endpoint: match (&cfg.command, &cfg.url) {
                    (Some(c), _) => format!("stdio: {c} {}", cfg.args.join(" ")).trim().into(),
                    (None, Some(u)) => format!("http: {u}"),
                    (None, None) => "(neither command nor url)".into(),
                },
                tools: self.ensure(name).map(|(_, tools)| tools),
            })
            .collect()
    }

    /// `mcp__SERVER__TOOL` split at the configured server whose prefix it carries (as far as
    /// a shortened name keeps it); the tool part is for messages, the call matches the name
    /// against the server's tools.
    fn resolve(&self, name: &str) -> Option<(String, String)> {
        self.configs.keys().find_map(|server| {
            let prefix = clean_name(server, "");
            let kept = prefix.len().min(MAX_TOOL_NAME - 9);
            if !name.starts_with(&prefix[..kept]) {
                return None;
            }
            let tool = name.get(prefix.len()..).unwrap_or(name);
            Some((server.clone(), tool.to_owned()))
        })
    }

    /// The running server, started now if this is its first use.
    fn ensure(
        &self,
        server: &str,
    ) -> Result<
        (
            rmcp::service::Peer<rmcp::service::RoleClient>,
            Vec<ServerTool>,
        ),
        String,
    > {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        match state.get(server) {
            Some(State::Up { peer, tools }) => return Ok((peer.clone(), tools.clone())),
            Some(State::Failed(why)) => return Err(why.clone()),
            None => {}
        }
        let cfg = &self.configs[server];
        // The name comes from a config file: only its safe characters name the log, so
        // `../../x` cannot put it outside the log folder.
        let file: String = server
            .chars()
            .map(|c| match c {
                'a'..='z' | 'A'..='Z' | '0'..='9' | '-' | '_' => c,
                _ => '_',
            })
            .collect();
        let log = self.log_dir.join(format!("{file}.log"));
        let started = crate::paths::create_private_dir(&self.log_dir)
            .map_err(|e| format!("cannot create {}: {e}", self.log_dir.display()))
            .and_then(|()| {
                let timeout = secs_or(cfg.startup_timeout_s, STARTUP_TIMEOUT);
                let connect = client::connect(server, cfg, &self.net, &log, self.progress.clone());
                crate::net::block_on(async {
                    match tokio::time::timeout(timeout, connect).await {
                        Ok(r) => r,
                        Err(_) => Err(format!("did not start within {} s", timeout.as_secs_f64())),
                    }
                })
            });
        match started {
            Ok((session, tools)) => {
                let peer = session.peer().clone();
                self.sessions
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(session);
                state.insert(
                    server.to_owned(),
                    State::Up {
                        peer: peer.clone(),
                        tools: tools.clone(),
                    },
                );
                Ok((peer, tools))
            }
            Err(why) => {
                let why = if cfg.command.is_some() {
                    format!(
                        "failed to start: {why} (its stderr is in {})",
                        log.display()
                    )
                } else {
                    format!("failed to start: {why}")
                };
                (self.notify)(&format!("mcp: server {server} {why}"));
                state.insert(server.to_owned(), State::Failed(why.clone()));
                Err(why)
            }
        }
    }

    fn fail(&self, server: &str, why: &str) {
        (self.notify)(&format!("mcp: server {server} {why}"));
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.insert(server.to_owned(), State::Failed(why.to_owned()));
    }
}

impl Drop for McpServers {
    /// Stop every server this command started: stdio servers get their stdin closed and are
    /// killed if they linger.
    fn drop(&mut self) {
        let sessions = std::mem::take(self.sessions.get_mut().unwrap_or_else(|e| e.into_inner()));
        if sessions.is_empty() {
            return;
        }
        crate::net::block_on(async move {
            for s in sessions {
                let _ = tokio::time::timeout(Duration::from_secs(2), s.cancel()).await;
            }
        });
    }
}

/// The longest tool name both provider APIs take (OpenAI: 64 characters of
/// `[a-zA-Z0-9_-]`; Anthropic allows no more).
pub(crate) const MAX_TOOL_NAME: usize = 64;

/// The name the model sees: `mcp__SERVER__TOOL`, with characters the provider APIs refuse
/// in tool names replaced by `_`. A name longer than [`MAX_TOOL_NAME`] (MCP allows 128) keeps
/// its readable start and ends in `_` and 8 hex digits of a hash of the server and tool
/// names: stable, distinct, and mapped back by looking the name up among the server's tools.
pub(crate) fn tool_name(server: &str, tool: &str) -> String {
    let full = clean_name(server, tool);
    if full.len() <= MAX_TOOL_NAME {
        return full;
    }
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(format!("{server}\0{tool}").as_bytes());
    let hash: String = digest[..4].iter().map(|b| format!("{b:02x}")).collect();
    format!("{}_{hash}", &full[..MAX_TOOL_NAME - 9])
}

fn clean_name(server: &str, tool: &str) -> String {
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    };
    format!("{MCP_PREFIX}{}__{}", clean(server), clean(tool))
}

fn secs_or(secs: Option<f64>, default: Duration) -> Duration {
    secs.filter(|s| s.is_finite() && *s > 0.0)
        .map(|s| Duration::from_secs_f64(s.min(86_400.0)))
        .unwrap_or(default)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_prefixed_and_clean() {
        assert_eq!(tool_name("git", "log"), "mcp__git__log");
        assert_eq!(tool_name("my.srv", "do it/now"), "mcp__my_srv__do_it_now");
    }

    #[test]
    fn long_names_are_shortened_stably_and_distinctly() {
        let a = "a".repeat(100);
        let b = format!("{}b", "a".repeat(99));
        let (na, nb) = (tool_name("srv", &a), tool_name("srv", &b));
        assert_eq!(na.len(), MAX_TOOL_NAME);
        assert!(na.starts_with("mcp__srv__aaaa"), "{na}");
        assert_ne!(na, nb, "a shared start still gives distinct names");
        assert_eq!(na, tool_name("srv", &a), "stable");
        assert!(na
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-'));
        assert_eq!(
            tool_name("srv", &"x".repeat(51)).len(),
            61,
            "fits: kept whole"
        );
    }
}
