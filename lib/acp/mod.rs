//! `ag-prompt acp`: the agent side of the Agent Client Protocol over stdio, so an editor
//! (Zed, a Neovim plugin) runs `ag` sessions. The messages are the protocol's own types
//! (`agent-client-protocol-schema`); the framing and dispatch are [`rpc`]'s, synchronous like
//! the rest of the library: this thread reads, each prompt's turn runs on a thread of its own
//! through the same planning and agent loop as `ag-prompt`, so the sessions are ordinary
//! sessions in the store that every other command reads while the editor is connected.

mod commands;
mod files;
mod input;
mod mcp;
mod permission;
mod rpc;
mod session;
mod tools;
mod updates;

use std::collections::{BTreeMap, HashMap};
use std::io::BufRead;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use agent_client_protocol_schema::v1::{
    AgentCapabilities, ClientCapabilities, ClientNotification, ClientRequest, Implementation,
    InitializeRequest, InitializeResponse, McpCapabilities, PromptCapabilities,
};
use agent_client_protocol_schema::{MethodDispatchError, ProtocolVersion};
use serde_json::{json, Value};

use rpc::{Conn, Incoming, RpcError};

/// What the command line chose for the sessions this server starts.
pub(crate) struct Options {
    pub(crate) home: crate::paths::Home,
    /// `-m`: else the configuration's model, as for `ag-prompt`.
    pub(crate) model: Option<String>,
    /// `--tools`, as written: a new session's tools (the editor's MCP servers' tools are added).
    pub(crate) tools: Option<String>,
    pub(crate) sandbox: Option<crate::sandbox::Mode>,
    pub(crate) net: bool,
    pub(crate) max_steps: Option<u32>,
    /// `--approval`: a new session's mode (default `ask`); an existing one keeps its own
    /// unless this is given.
    pub(crate) approval: Option<crate::agent::ApprovalMode>,
    /// Where notes for the person go (stderr, which editors keep in their logs).
    pub(crate) notify: crate::mcp::Notify,
}

/// A session the editor has open on this connection.
#[derive(Clone)]
struct Open {
    /// The session's id in the store.
    id: String,
    cwd: PathBuf,
    /// Whether the session is in the store yet: a new one is written with its first prompt.
    made: bool,
    /// The editor's MCP servers for it.
    mcp: BTreeMap<String, crate::config::McpServerConfig>,
    /// The running turn's interrupt flag, while a prompt runs.
    running: Option<Arc<AtomicBool>>,
}

#[derive(Default)]
struct State {
    client: Option<Implementation>,
    caps: ClientCapabilities,
    /// By the session id the editor uses.
    sessions: HashMap<String, Open>,
}

pub(crate) struct Server {
    opts: Options,
    conn: Arc<Conn>,
    state: Mutex<State>,
}

/// Serve one editor on stdin and stdout until it closes stdin; running turns are then
/// interrupted and recorded as such.
pub(crate) fn serve(opts: Options) -> Result<(), String> {
    let server = Arc::new(Server {
        opts,
        conn: Arc::new(Conn::new(Box::new(std::io::stdout()))),
        state: Mutex::new(State::default()),
    });
    let mut turns = Vec::new();
    for line in std::io::stdin().lock().lines() {
        let line = line.map_err(|e| format!("reading stdin: {e}"))?;
        if line.trim().is_empty() {
            continue;
        }
        match rpc::parse(&line) {
            Err((id, e)) => server.conn.respond(id, Err(e)),
            Ok(Incoming::Response { id, result }) => server.conn.answered(&id, result),
            Ok(Incoming::Notification { method, params }) => server.notified(&method, &params),
            Ok(Incoming::Request { id, method, params }) => {
                if let Some(t) = server.requested(id, &method, &params) {
                    turns.push(t);
                }
            }
        }
        turns.retain(|t: &std::thread::JoinHandle<()>| !t.is_finished());
    }
    server.cancel_all();
    server.conn.close();
    for t in turns {
        let _ = t.join();
    }
    Ok(())
}

impl Server {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Answer a request; a prompt runs on its own thread, which answers when the turn ends.
    fn requested(
        self: &Arc<Self>,
        id: Value,
        method: &str,
        params: &Value,
    ) -> Option<std::thread::JoinHandle<()>> {
        let req = match ClientRequest::from_method_and_params(method, params) {
            Ok(r) => r,
            Err(MethodDispatchError::InvalidPayload { source, .. }) => {
                let e = RpcError::invalid_params(format!("{method}: {source}"));
                self.conn.respond(id, Err(e));
                return None;
            }
            Err(_) => {
                let e = RpcError::new(RpcError::METHOD_NOT_FOUND, format!("no method {method:?}"));
                self.conn.respond(id, Err(e));
                return None;
            }
        };
        let result = match req {
            ClientRequest::InitializeRequest(r) => to_value(Ok(self.initialize(r))),
            ClientRequest::AuthenticateRequest(_) => Ok(json!({})),
            ClientRequest::NewSessionRequest(r) => {
                let made = self.new_session(r);
                let acp_id = made.as_ref().ok().map(|r| r.session_id.to_string());
                self.conn.respond(id, to_value(made));
                if let Some(s) = acp_id {
                    self.advertise(&s);
                }
                return None;
            }
            ClientRequest::LoadSessionRequest(r) => {
                let acp_id = r.session_id.to_string();
                let loaded = to_value(self.load_session(r));
                let ok = loaded.is_ok();
                self.conn.respond(id, loaded);
                if ok {
                    self.advertise(&acp_id);
                }
                return None;
            }
            ClientRequest::PromptRequest(r) => {
                let server = self.clone();
                return Some(std::thread::spawn(move || {
                    let result = to_value(server.prompt(r));
                    server.conn.respond(id, result);
                }));
            }
            _ => Err(RpcError::new(
                RpcError::METHOD_NOT_FOUND,
                format!("{method} is not supported by ag"),
            )),
        };
        self.conn.respond(id, result);
        None
    }

    fn notified(&self, method: &str, params: &Value) {
        // Unknown notifications are ignored, as JSON-RPC has nobody to tell.
        if let Ok(ClientNotification::CancelNotification(n)) =
            ClientNotification::from_method_and_params(method, params)
        {
            let state = self.state();
            if let Some(flag) = state
                .sessions
                .get(&n.session_id.to_string())
                .and_then(|o| o.running.as_ref())
            {
                flag.store(true, Ordering::SeqCst);
            }
        }
    }

    fn cancel_all(&self) {
        for o in self.state().sessions.values() {
            if let Some(flag) = &o.running {
                flag.store(true, Ordering::SeqCst);
            }
        }
    }

    fn initialize(&self, r: InitializeRequest) -> InitializeResponse {
        let mut state = self.state();
        state.client = r.client_info;
        state.caps = r.client_capabilities;
        let caps = AgentCapabilities::new()
            .load_session(true)
            .prompt_capabilities(PromptCapabilities::new().image(true).embedded_context(true))
            .mcp_capabilities(McpCapabilities::new().http(true));
        // This build speaks version 1; a client asking for a later one is answered with it.
        InitializeResponse::new(ProtocolVersion::V1)
            .agent_capabilities(caps)
            .agent_info(
                Implementation::new("ag", env!("CARGO_PKG_VERSION")).title("ag".to_string()),
            )
    }

    /// The client's name, for the session's record and for the permission answers.
    fn client_name(&self) -> String {
        self.state()
            .client
            .as_ref()
            .map(|c| c.title.clone().unwrap_or_else(|| c.name.clone()))
            .filter(|n| !n.trim().is_empty())
            .unwrap_or_else(|| "the editor".into())
    }
}

fn to_value<T: serde::Serialize>(r: Result<T, RpcError>) -> Result<Value, RpcError> {
    r.map(|v| serde_json::to_value(v).expect("a response serializes"))
}
