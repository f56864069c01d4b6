//! `ag-room mcp`: the room tools as an MCP server, so a session of another tool (Claude Code,
//! Codex, Cursor) talks to the `ag` agents and people working in the same worktree, with the
//! same caps, receipts and claims as the `ag-room` command.
//!
//! The speaker is a named participant (`--name`, else the client's name from the MCP
//! `initialize` request). Each call opens the store, does one room operation, and answers
//! with text; a failure is an error result, never a dropped connection.

use std::path::PathBuf;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Map, Value};

use crate::fold::peer::peer_line;
use crate::paths::Home;
use crate::room::claims;
use crate::room::inbox;
use crate::room::post::{Post, Posted};
use crate::room::presence::{self, Me};
use crate::room::roster;
use crate::room::target::{self, Resolved};
use crate::store::{Session, Store};

/// The room server of one worktree.
#[derive(Clone)]
pub(crate) struct RoomServer {
    home: Home,
    /// Its participant in rooms, for the whole session with the client.
    rooms: crate::room::Rooms,
    /// Where it was started: its worktree room is this directory's.
    cwd: PathBuf,
    /// `--name`; without it, the client's name.
    name: Option<String>,
}

impl RoomServer {
    pub(crate) fn new(
        home: Home,
        rooms: crate::room::Rooms,
        cwd: PathBuf,
        name: Option<String>,
    ) -> RoomServer {
        RoomServer {
            rooms,
            home,
            cwd,
            name,
        }
    }

    /// Serve on stdin/stdout until the client goes away. A line that is not JSON gets
    /// JSON-RPC's parse error (-32700) rather than silence.
    pub(crate) fn serve_stdio(self) -> Result<(), String> {
        crate::net::block_on(async move {
            let (to_server, server_in) = tokio::io::duplex(1 << 16);
            let (server_out, from_server) = tokio::io::duplex(1 << 16);
            let (errors_tx, errors_rx) = tokio::sync::mpsc::unbounded_channel();
            tokio::spawn(read_stdin(to_server, errors_tx));
            let writer = tokio::spawn(write_stdout(from_server, errors_rx));
            let ended = match self.serve((server_in, server_out)).await {
                Ok(service) => service
                    .waiting()
                    .await
                    .map(|_| ())
                    .map_err(|e| format!("the MCP session ended badly: {e}")),
                Err(e) => Err(format!("the MCP handshake failed: {e}")),
            };
            // What the server wrote reaches stdout, however it ended.
            let _ = writer.await;
            ended
        })
    }

    fn me(&self, ctx: &RequestContext<RoleServer>) -> Me {
        let client = ctx.peer.peer_info().map(|i| i.client_info.name.clone());
        let name = self
            .name
            .clone()
            .or(client)
            .filter(|n| !n.trim().is_empty())
            .unwrap_or_else(|| "mcp".into());
        Me::named(&name, "agent")
    }

    fn run(&self, tool: &str, args: &Value, me: &Me) -> Result<String, String> {
        let mut store = Store::open(&self.home).map_err(|e| e.to_string())?;
        let rooms = self.rooms.clone();
        store.on_ended(std::sync::Arc::new(move |s| {
            crate::room::claims::release_ended(&rooms, s)
        }));
        match tool {
            "peer_message" => self.message(&store, args, me),
            "peer_inbox" => self.inbox(&store, me),
            "peer_peek" => {
                let s = resolve(&self.rooms, &store, str_arg(args, "session")?)?;
                let room = self.rooms.worktree(&self.cwd);
                presence::peek_text(&store, &room, &s, 3).map_err(|e| e.to_string())
            }
            "peer_who" => self.who(&store),
            "peer_claim" => self.claim(&store, args, me),
            "peer_release" => self.release(&store, args, me),
            other => Err(format!("no tool {other:?} here")),
        }
    }

    fn message(&self, store: &Store, args: &Value, me: &Me) -> Result<String, String> {
        let to = match args["session"].as_str().filter(|s| !s.trim().is_empty()) {
            Some(t) => Some(resolve(&self.rooms, store, t)?),
            None => None,
        };
        let post = Post {
            text: str_arg(args, "text")?,
            to: to.as_ref(),
            reply_to: args["in_reply_to"].as_str(),
            ..Default::default()
        };
        let Posted { line, room, .. } = self
            .rooms
            .post(Some(store), me, &self.cwd, post)
            .map_err(|e| e.to_string())?;
        Ok(match to {
            None => format!("posted {} to the room {}", line.id, room.label()),
            Some(s) => format!(
                "posted {} as a direct message to {} ({}); its receipt follows when their next \
                 step takes it in",
                line.id,
                presence::display_name(&s),
                s.id
            ),
        })
    }

    /// Unread lines since this participant's cursor: consumed, with receipts written.
    fn inbox(&self, store: &Store, me: &Me) -> Result<String, String> {
        let rooms = self.rooms.heard_in(&self.cwd);
        let take = inbox::Take {
            new: true,
            receipts: true,
            peek: false,
        };
        let heard = inbox::take(store, me, &rooms, take)
            .map_err(|e| e.to_string())?
            .heard;
        if heard.is_empty() {
            return Ok("no new messages".into());
        }
        Ok(heard
            .iter()
            .map(|h| peer_line(&h.message(store, 4000)))
            .collect::<Vec<_>>()
            .join("\n"))
    }

    /// The live sessions of this worktree: name, handle, goal, last tool, age, where.
    fn who(&self, store: &Store) -> Result<String, String> {
        let room = self.rooms.worktree(&self.cwd);
        roster::who_text(store, &room, None).map_err(|e| e.to_string())
    }

    fn claim(&self, store: &Store, args: &Value, me: &Me) -> Result<String, String> {
        let key = crate::room::worktree_key(&self.cwd);
        let room = self.rooms.of_key(key.clone());
        let paths = claims::paths_arg(&args["paths"], &self.cwd, &key)?;
        let ttl = claims::ttl_arg(&args["ttl_s"])?;
        let shared = args["shared"].as_bool().unwrap_or(false);
        let intent = args["intent"].as_str().unwrap_or("");
        let outcome = claims::claim(store, &room, me, paths, intent, shared, ttl, &mut |_| {})
            .map_err(|e| e.to_string())?;
        outcome.for_model()
    }

    fn release(&self, store: &Store, args: &Value, me: &Me) -> Result<String, String> {
        let key = crate::room::worktree_key(&self.cwd);
        let room = self.rooms.of_key(key.clone());
        let paths = claims::paths_arg(&args["paths"], &self.cwd, &key)?;
        let only = (!paths.is_empty()).then_some(paths.as_slice());
        let ended =
            claims::release(store, &room, me, only, &mut |_| {}).map_err(|e| e.to_string())?;
        Ok(if ended.is_empty() {
            "you hold no matching claim".into()
        } else {
            format!(
                "released {}",
                ended
                    .iter()
                    .map(|c| c.id.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
    }
}

fn str_arg<'a>(args: &'a Value, key: &str) -> Result<&'a str, String> {
    args[key]
        .as_str()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| format!("`{key}` is required"))
}

fn resolve(rooms: &crate::room::Rooms, store: &Store, t: &str) -> Result<Session, String> {
    match target::resolve(rooms, store, t).map_err(|e| e.to_string())? {
        Resolved::One(s) => Ok(*s),
        Resolved::None => Err(format!(
            "no session matches {t:?}; peer_who lists who is here"
        )),
        Resolved::Everyone => Err(target::EVERYONE.to_string()),
        Resolved::Ambiguous(c) => Err(format!(
            "{t:?} matches {} sessions; use a handle: {}",
            c.len(),
            c.iter()
                .map(|(id, _)| id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

impl ServerHandler for RoomServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("ag-room", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "The ag room of this worktree: message the agents and people working here, read \
                 what they said, see who is here, and claim files before changing them.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(super::room_tools::tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = Value::Object(request.arguments.unwrap_or_default());
        let me = self.me(&context);
        let result = match check_args(&request.name, &args)
            .and_then(|()| self.run(&request.name, &args, &me))
        {
            Ok(text) => CallToolResult::success(vec![ContentBlock::text(text)]),
            Err(e) => {
                CallToolResult::error(vec![ContentBlock::text(format!("{}: {e}", request.name))])
            }
        };
        Ok(result.into())
    }
}

/// The arguments against the tool's own input schema: a property it does not declare, a
/// wrong type or a value below its minimum is refused before anything runs.
fn check_args(tool: &str, args: &Value) -> Result<(), String> {
    let Some(t) = super::room_tools::tools()
        .into_iter()
        .find(|t| t.name == tool)
    else {
        return Ok(()); // `run` names the unknown tool
    };
    let schema = Value::Object((*t.input_schema).clone());
    let validator =
        jsonschema::validator_for(&schema).map_err(|e| format!("its schema is broken: {e}"))?;
    let errors: Vec<String> = validator
        .iter_errors(args)
        .map(|e| {
            let at = e.instance_path().to_string();
            if at.is_empty() {
                e.to_string()
            } else {
                format!("at {at}: {e}")
            }
        })
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "arguments refused, nothing was done: {}",
            errors.join("; ")
        ))
    }
}

/// A JSON schema object for [`Tool::new`].
pub(super) fn schema(v: Value) -> std::sync::Arc<Map<String, Value>> {
    match v {
        Value::Object(m) => std::sync::Arc::new(m),
        _ => std::sync::Arc::new(Map::new()),
    }
}
/// Forward stdin's JSON lines to the server; answer each other line with a parse error.
async fn read_stdin(
    mut to_server: tokio::io::DuplexStream,
    errors: tokio::sync::mpsc::UnboundedSender<String>,
) {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Value>(&line) {
            Ok(_) => {
                if to_server
                    .write_all(format!("{line}\n").as_bytes())
                    .await
                    .is_err()
                {
                    break;
                }
            }
            Err(e) => {
                let reply = serde_json::json!({"jsonrpc": "2.0", "id": null,
                    "error": {"code": -32700, "message": format!("Parse error: {e}")}});
                let _ = errors.send(reply.to_string());
            }
        }
    }
    let _ = to_server.shutdown().await;
}

/// Write the server's lines and the parse errors to stdout, one whole line at a time.
async fn write_stdout(
    from_server: tokio::io::DuplexStream,
    mut errors: tokio::sync::mpsc::UnboundedReceiver<String>,
) {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let mut out = tokio::io::stdout();
    let mut lines = tokio::io::BufReader::new(from_server).lines();
    loop {
        // Parse errors first: each answers a line read before anything the server says
        // after it.
        let line = tokio::select! {
            biased;
            Some(e) = errors.recv() => e,
            l = lines.next_line() => match l {
                Ok(Some(l)) => l,
                _ => break,
            },
        };
        if out.write_all(format!("{line}\n").as_bytes()).await.is_err() {
            return;
        }
        let _ = out.flush().await;
    }
    // The server is done; parse errors still queued are answers too.
    while let Ok(e) = errors.try_recv() {
        if out.write_all(format!("{e}\n").as_bytes()).await.is_err() {
            return;
        }
    }
    let _ = out.flush().await;
}
