//! An MCP server for the end-to-end tests, on rmcp's server side: `mcp_fixture stdio` serves
//! on stdin/stdout, `mcp_fixture http FILE` serves streamable HTTP on a loopback port and
//! writes its URL to FILE. Every call is appended to `$FIXTURE_LOG` (one JSON line) before
//! it runs, so a test can tell which calls reached the server.
//!
//! Tools: `echo {text}`, `add {a, b}`, `picture` (an image and a text), `fail` (an error
//! result), `env {name}` (one variable of its environment, or "unset"), `slow {seconds}`,
//! `crash` (the process exits mid-call).

use std::io::Write;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{json, Map, Value};

#[derive(Clone)]
struct Fixture;

fn schema(v: Value) -> Arc<Map<String, Value>> {
    match v {
        Value::Object(m) => Arc::new(m),
        _ => unreachable!("schemas are objects"),
    }
}

fn tools() -> Vec<Tool> {
    let text =
        json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]});
    let add = json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]});
    let none = json!({"type": "object", "properties": {}});
    let name =
        json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]});
    let secs = json!({"type": "object", "properties": {"seconds": {"type": "number"}}});
    vec![
        Tool::new(
            "echo",
            "Echo the text back, prefixed with `echo: `.",
            schema(text),
        ),
        Tool::new("add", "Add two numbers.", schema(add)),
        Tool::new(
            "picture",
            "Return a tiny picture and a caption.",
            schema(none.clone()),
        ),
        Tool::new("fail", "Always fails.", schema(none.clone())),
        Tool::new(
            "env",
            "One variable of the server's environment.",
            schema(name),
        ),
        Tool::new("slow", "Answer after some seconds.", schema(secs)),
        Tool::new(
            "crash",
            "Exit the server in the middle of the call.",
            schema(none),
        ),
    ]
}

fn log_call(name: &str, args: &Value) {
    if let Ok(path) = std::env::var("FIXTURE_LOG") {
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            let _ = writeln!(f, "{}", json!({"tool": name, "arguments": args}));
        }
    }
}

async fn run_tool(name: &str, args: &Map<String, Value>) -> CallToolResult {
    let text = |s: String| CallToolResult::success(vec![ContentBlock::text(s)]);
    match name {
        "echo" => text(format!(
            "echo: {}",
            args["text"].as_str().unwrap_or_default()
        )),
        "add" => text(format!(
            "{}",
            args["a"].as_f64().unwrap_or(0.0) + args["b"].as_f64().unwrap_or(0.0)
        )),
        "picture" => CallToolResult::success(vec![
            ContentBlock::image("iVBORw0KGgo=", "image/png"),
            ContentBlock::text("a tiny picture"),
        ]),
        "fail" => CallToolResult::error(vec![ContentBlock::text("this tool always fails")]),
        "env" => text(
            std::env::var(args["name"].as_str().unwrap_or_default())
                .unwrap_or_else(|_| "unset".into()),
        ),
        "slow" => {
            let secs = args.get("seconds").and_then(Value::as_f64).unwrap_or(5.0);
            tokio::time::sleep(std::time::Duration::from_secs_f64(secs)).await;
            text("finally".into())
        }
        "crash" => {
            eprintln!("mcp_fixture: crashing on purpose");
            std::process::exit(3)
        }
        other => CallToolResult::error(vec![ContentBlock::text(format!("no tool {other}"))]),
    }
}

impl ServerHandler for Fixture {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.unwrap_or_default();
        log_call(&request.name, &Value::Object(args.clone()));
        Ok(run_tool(&request.name, &args).await.into())
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    eprintln!("mcp_fixture: starting");
    let mode: Vec<String> = std::env::args().skip(1).collect();
    match mode.first().map(String::as_str) {
        Some("stdio") => {
            let service = Fixture
                .serve(rmcp::transport::stdio())
                .await
                .expect("serve on stdio");
            let _ = service.waiting().await;
        }
        Some("http") => http(mode.get(1).expect("http FILE")).await,
        _ => {
            eprintln!("usage: mcp_fixture stdio | http URL_FILE");
            std::process::exit(2);
        }
    }
}

async fn http(url_file: &str) {
    use rmcp::transport::streamable_http_server::{
        session::local::LocalSessionManager, StreamableHttpServerConfig, StreamableHttpService,
    };
    let service = StreamableHttpService::new(
        || Ok(Fixture),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let app = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("address");
    std::fs::write(url_file, format!("http://{addr}/mcp")).expect("write the URL file");
    axum::serve(listener, app).await.expect("serve");
}
