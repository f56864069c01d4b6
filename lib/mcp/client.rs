//! One connection to one MCP server over rmcp: start it (a child process on stdio, or a
//! streamable HTTP session), list its tools, call one, and turn a result into tool text.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, Implementation,
};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::ServiceExt;
use serde_json::{Map, Value};

use crate::config::{McpServerConfig, Network};

pub(super) type Session = RunningService<RoleClient, Handler>;

/// What a server last said about the call in progress (`notifications/progress`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Progress {
    pub(crate) progress: f64,
    pub(crate) total: Option<f64>,
    pub(crate) message: Option<String>,
    /// Counts the notifications, so a reader sees a new one even when the figures repeat.
    pub(crate) n: u64,
}

/// Where progress notifications land: one slot for the command, as one call runs at a time.
pub(crate) type ProgressSlot = std::sync::Arc<std::sync::Mutex<Option<Progress>>>;

/// The client side of a connection: who `ag` says it is, and where a server's progress goes.
pub(super) struct Handler {
    info: ClientConfig,
    progress: ProgressSlot,
}

impl rmcp::ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        self.info.clone()
    }

    fn on_progress(
        &self,
        params: rmcp::model::ProgressNotificationParam,
        _: rmcp::service::NotificationContext<RoleClient>,
    ) -> impl std::future::Future<Output = ()> + Send + '_ {
        let mut slot = self.progress.lock().unwrap_or_else(|e| e.into_inner());
        let n = slot.as_ref().map_or(0, |p| p.n) + 1;
        *slot = Some(Progress {
            progress: params.progress,
            total: params.total,
            message: params.message,
            n,
        });
        std::future::ready(())
    }
}

/// A tool as the server describes it.
#[derive(Debug, Clone)]
pub(crate) struct ServerTool {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) input_schema: Value,
}

fn client_info() -> ClientConfig {
    ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("ag-prompt", env!("CARGO_PKG_VERSION")),
    )
}

/// Start the server and list its tools. `log` receives a stdio server's stderr; `progress`
/// what it reports of a call.
pub(super) async fn connect(
    name: &str,
    cfg: &McpServerConfig,
    net: &Network,
    log: &Path,
    progress: ProgressSlot,
) -> Result<(Session, Vec<ServerTool>), String> {
    let handler = || Handler {
        info: client_info(),
        progress: progress.clone(),
    };
    let session = match (&cfg.command, &cfg.url) {
        (Some(command), None) => {
            let stderr = crate::paths::open_private_append(log)
                .map_err(|e| format!("cannot open its log {}: {e}", log.display()))?;
            let mut cmd = tokio::process::Command::new(command);
            cmd.args(&cfg.args)
                .env_clear()
                .envs(crate::tools::scrubbed_env())
                .envs(&cfg.env)
                .kill_on_drop(true);
            let (transport, _) = TokioChildProcess::builder(cmd)
                .stderr(Stdio::from(stderr))
                .spawn()
                .map_err(|e| format!("cannot run {command:?}: {e}"))?;
            handler()
                .serve(transport)
                .await
                .map_err(|e| format!("it did not complete the MCP handshake: {e}"))?
        }
        (None, Some(url)) => {
            let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
            for (k, v) in &cfg.headers {
                let k = reqwest::header::HeaderName::from_bytes(k.as_bytes())
                    .map_err(|_| format!("header name {k:?} is not valid"))?;
                let v = reqwest::header::HeaderValue::from_str(v)
                    .map_err(|_| format!("the value of header {k} is not valid"))?;
                config.custom_headers.insert(k, v);
            }
            let http = crate::net::client(net).map_err(|e| e.to_string())?;
            let transport = StreamableHttpClientTransport::with_client(http, config);
            handler().serve(transport).await.map_err(|e| {
                format!(
                    "{url} did not complete the MCP handshake: {}",
                    root_cause(&e)
                )
            })?
        }
        _ => {
            return Err(format!(
                "[mcp.{name}] needs either `command` (stdio) or `url` (streamable HTTP)"
            ))
        }
    };
    let tools = session
        .list_all_tools()
        .await
        .map_err(|e| format!("cannot list its tools: {e}"))?;
    let tools = tools
        .into_iter()
        .map(|t| ServerTool {
            name: t.name.to_string(),
            description: t.description.map(|d| d.to_string()).unwrap_or_default(),
            input_schema: Value::Object((*t.input_schema).clone()),
        })
        .collect();
    Ok((session, tools))
}

/// Call `tool` with `args`; `Ok((text, is_error))`, or why the call failed.
pub(super) async fn call(
    session: &rmcp::service::Peer<RoleClient>,
    tool: &str,
    args: &Value,
    timeout: Duration,
) -> Result<Result<(String, bool), String>, CallFailure> {
    let arguments: Map<String, Value> = match args {
        Value::Object(m) => m.clone(),
        Value::Null => Map::new(),
        other => {
            return Ok(Err(format!(
                "arguments must be a JSON object, got {}",
                crate::log::json_kind(other)
            )))
        }
    };
    let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
    let request =
        rmcp::model::ClientRequest::CallToolRequest(rmcp::model::CallToolRequest::new(params));
    // A server that reports progress is still working: each notification starts the timeout
    // again, up to PROGRESS_CAP times the timeout in all. A timed-out call is cancelled.
    let mut options = rmcp::service::PeerRequestOptions::with_timeout(timeout);
    options.reset_timeout_on_progress = true;
    options.max_total_timeout = Some(timeout.saturating_mul(PROGRESS_CAP));
    let handle = session
        .send_request_with_option(request, options)
        .await
        .map_err(|e| CallFailure::Broken(e.to_string()))?;
    match handle.await_response().await {
        Err(rmcp::ServiceError::Timeout { .. }) => Err(CallFailure::Timeout),
        Err(rmcp::ServiceError::McpError(e)) => match required_capabilities(e.data.as_ref()) {
            Some(what) => Err(CallFailure::NeedsCapability(what)),
            None => Ok(Err(e.message.to_string())),
        },
        Err(e) => Err(CallFailure::Broken(e.to_string())),
        Ok(rmcp::model::ServerResult::CallToolResult(result)) => Ok(Ok(result_text(&result))),
        Ok(_) => Err(CallFailure::Broken(
            "it answered the call with something other than a tool result".into(),
        )),
    }
}

/// How many times its timeout a call that keeps reporting progress may take in all.
const PROGRESS_CAP: u32 = 10;

/// How a call failed when the server did not answer it.
#[derive(Debug)]
pub(super) enum CallFailure {
    Timeout,
    Broken(String),
    /// The server refused the call for a client capability `ag` does not declare (MCP
    /// tasks, sampling, elicitation, …): what it named.
    NeedsCapability(String),
}

/// The client capabilities an error's data says the call needs (`requiredCapabilities`, the
/// "missing required client capability" error of the MCP spec and of the tasks extension),
/// named for people: `extension io.modelcontextprotocol/tasks`, `sampling`.
fn required_capabilities(data: Option<&Value>) -> Option<String> {
    let required = data?.get("requiredCapabilities")?.as_object()?;
    let mut names = Vec::new();
    for (key, value) in required {
        match (key.as_str(), value.as_object()) {
            ("extensions", Some(exts)) => {
                names.extend(exts.keys().map(|e| format!("extension {e}")));
            }
            _ => names.push(key.clone()),
        }
    }
    (!names.is_empty()).then(|| names.join(", "))
}

/// A result as tool text: text content as it is, anything else described in a line.
fn result_text(result: &CallToolResult) -> (String, bool) {
    let v = serde_json::to_value(result).unwrap_or(Value::Null);
    let is_error = v["isError"].as_bool().unwrap_or(false);
    let mut parts = Vec::new();
    for item in v["content"].as_array().into_iter().flatten() {
        parts.push(describe(item));
    }
    if parts.is_empty() {
        if let Some(s) = v.get("structuredContent").filter(|s| !s.is_null()) {
            parts.push(s.to_string());
        }
    }
    (parts.join("\n"), is_error)
}

fn describe(item: &Value) -> String {
    let mime = item["mimeType"].as_str().unwrap_or("unknown type");
    // base64: three bytes per four characters, less the padding.
    let size = |field: &str| {
        item[field].as_str().map_or(0, |d| {
            let d = d.trim();
            (d.len() / 4 * 3).saturating_sub(d.bytes().rev().take_while(|&b| b == b'=').count())
        })
    };
    match item["type"].as_str() {
        Some("text") => item["text"].as_str().unwrap_or_default().to_owned(),
        Some("image") => format!("[image: {mime}, about {} bytes]", size("data")),
        Some("audio") => format!("[audio: {mime}, about {} bytes]", size("data")),
        Some("resource") => {
            let r = &item["resource"];
            match r["text"].as_str() {
                Some(text) => format!("[resource {}]\n{text}", r["uri"].as_str().unwrap_or("")),
                None => format!(
                    "[resource {}: {}, binary]",
                    r["uri"].as_str().unwrap_or(""),
                    r["mimeType"].as_str().unwrap_or("unknown type")
                ),
            }
        }
        Some("resource_link") => format!(
            "[resource link {}{}]",
            item["uri"].as_str().unwrap_or(""),
            item["name"]
                .as_str()
                .map(|n| format!(" ({n})"))
                .unwrap_or_default()
        ),
        Some(other) => format!("[{other} content]"),
        None => "[content of no type]".to_owned(),
    }
}

/// The cause of a handshake failure in words: the transport's errors wrap the reason (a
/// refused connection, a name that does not resolve, an HTTP status) in their type names,
/// which mean nothing to a user.
fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut last = e;
    while let Some(next) = last.source() {
        last = next;
    }
    let mut text = last.to_string();
    // `Transport [rmcp::…] error: Client error: REASON, when send initialize request`
    if let Some(at) = text.rfind("Client error: ") {
        text = text[at + "Client error: ".len()..].to_string();
    }
    if let Some(at) = text.find(", when ") {
        text.truncate(at);
    }
    if text.contains("rmcp::") || text.trim().is_empty() {
        "the server could not be reached".into()
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn content_is_text_or_a_description() {
        assert_eq!(describe(&json!({"type": "text", "text": "hi"})), "hi");
        assert_eq!(
            describe(&json!({"type": "image", "data": "AAAA", "mimeType": "image/png"})),
            "[image: image/png, about 3 bytes]"
        );
        assert_eq!(
            describe(&json!({"type": "audio", "data": "AAA=", "mimeType": "audio/wav"})),
            "[audio: audio/wav, about 2 bytes]"
        );
        assert_eq!(
            describe(&json!({"type": "resource", "resource": {"uri": "file:///a", "text": "x"}})),
            "[resource file:///a]\nx"
        );
        assert_eq!(
            describe(&json!({"type": "resource_link", "uri": "file:///b", "name": "b"})),
            "[resource link file:///b (b)]"
        );
    }
}
