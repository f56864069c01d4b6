//! A fake model provider for end-to-end tests: real HTTP/1.1 on loopback, answering each
//! request with the next scripted [`Reply`] and recording what it was sent.

#![allow(dead_code)]

use std::collections::{BTreeMap, VecDeque};
use std::io::{BufRead, BufReader, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::Value;

/// How the fake answers one request.
#[derive(Debug, Clone)]
pub enum Reply {
    /// 200 `text/event-stream` with this exact body, then close.
    Sse(String),
    /// The body written event by event, with a pause between events.
    SseSlow { body: String, piece_delay: Duration },
    /// `before`, then nothing more until the file `gate` exists, then `after`.
    SseGated {
        before: String,
        gate: std::path::PathBuf,
        after: String,
    },
    /// An error status with a JSON body, and `retry-after` when set.
    Status {
        code: u16,
        retry_after: Option<u64>,
        body: String,
    },
    /// Read the request, then close without answering.
    Drop,
    /// 200 and this (partial) SSE body, then close.
    Truncate(String),
    /// 200 and `prefix`, then silence for `for_`, then close.
    Stall { prefix: String, for_: Duration },
}

/// One request as the fake received it.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    /// Names lowercased; repeated headers joined with ", ".
    pub headers: BTreeMap<String, String>,
    /// The body as JSON, or `Null` when it is not JSON.
    pub body: Value,
    pub raw_body: String,
}

#[derive(Default)]
struct State {
    replies: Mutex<VecDeque<Reply>>,
    requests: Mutex<Vec<Recorded>>,
    stop: AtomicBool,
}

pub struct FakeProvider {
    addr: SocketAddr,
    state: Arc<State>,
    listener: Option<JoinHandle<()>>,
}

impl FakeProvider {
    pub fn start() -> FakeProvider {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the fake provider");
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(State::default());
        let st = state.clone();
        let handle = std::thread::spawn(move || {
            for conn in listener.incoming() {
                if st.stop.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let st = st.clone();
                std::thread::spawn(move || serve(conn, &st));
            }
        });
        FakeProvider {
            addr,
            state,
            listener: Some(handle),
        }
    }

    /// `http://127.0.0.1:PORT`: the Anthropic base URL; OpenAI's is this plus `/v1`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Queues a reply; replies are served in push order, one per request.
    pub fn push(&self, reply: Reply) {
        self.state.replies.lock().unwrap().push_back(reply);
    }

    /// The requests received so far, in arrival order.
    pub fn requests(&self) -> Vec<Recorded> {
        self.state.requests.lock().unwrap().clone()
    }
}

impl Drop for FakeProvider {
    fn drop(&mut self) {
        self.state.stop.store(true, Ordering::SeqCst);
        // Wake the blocking accept so the thread sees the flag.
        let _ = TcpStream::connect(self.addr);
        if let Some(h) = self.listener.take() {
            let _ = h.join();
        }
    }
}

fn serve(conn: TcpStream, state: &State) {
    // A stuck client must not keep a test thread forever.
    let _ = conn.set_read_timeout(Some(Duration::from_secs(30)));
    let Ok(write_half) = conn.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(conn);
    let Some(req) = read_request(&mut reader) else {
        return;
    };
    state.requests.lock().unwrap().push(req);
    let reply = state
        .replies
        .lock()
        .unwrap()
        .pop_front()
        .unwrap_or_else(|| Reply::Status {
            code: 500,
            retry_after: None,
            body: r#"{"error":{"message":"fake provider: no scripted reply"}}"#.into(),
        });
    let mut out = write_half;
    // Write errors mean the client gave up, which some tests make it do on purpose.
    let _ = answer(&mut out, reply);
    let _ = out.flush();
    let _ = out.shutdown(Shutdown::Both);
}

const SSE_HEAD: &str = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
cache-control: no-cache\r\nconnection: close\r\n\r\n";

fn answer(out: &mut TcpStream, reply: Reply) -> std::io::Result<()> {
    match reply {
        Reply::Sse(body) | Reply::Truncate(body) => {
            out.write_all(SSE_HEAD.as_bytes())?;
            out.write_all(body.as_bytes())?;
        }
        Reply::SseSlow { body, piece_delay } => {
            out.write_all(SSE_HEAD.as_bytes())?;
            out.flush()?;
            for (i, event) in body.split_inclusive("\n\n").enumerate() {
                if i > 0 {
                    std::thread::sleep(piece_delay);
                }
                out.write_all(event.as_bytes())?;
                out.flush()?;
            }
        }
        Reply::SseGated {
            before,
            gate,
            after,
        } => {
            out.write_all(SSE_HEAD.as_bytes())?;
            out.write_all(before.as_bytes())?;
            out.flush()?;
            let until = std::time::Instant::now() + Duration::from_secs(120);
            while !gate.exists() && std::time::Instant::now() < until {
                std::thread::sleep(Duration::from_millis(10));
            }
            out.write_all(after.as_bytes())?;
        }
        Reply::Status {
            code,
            retry_after,
            body,
        } => {
            let mut head = format!(
                "HTTP/1.1 {code} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
                 connection: close\r\n",
                reason(code),
                body.len()
            );
            if let Some(s) = retry_after {
                head.push_str(&format!("retry-after: {s}\r\n"));
            }
            head.push_str("\r\n");
            out.write_all(head.as_bytes())?;
            out.write_all(body.as_bytes())?;
        }
        Reply::Drop => {}
        Reply::Stall { prefix, for_ } => {
            out.write_all(SSE_HEAD.as_bytes())?;
            out.write_all(prefix.as_bytes())?;
            out.flush()?;
            std::thread::sleep(for_);
        }
    }
    Ok(())
}

fn reason(code: u16) -> &'static str {
    match code {
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        408 => "Request Timeout",
        409 => "Conflict",
        413 => "Payload Too Large",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        529 => "Overloaded",
        _ => "Status",
    }
}

fn read_line(r: &mut impl BufRead) -> Option<String> {
    let mut line = String::new();
    match r.read_line(&mut line) {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(line.trim_end_matches(['\r', '\n']).to_owned()),
    }
}

fn read_request(r: &mut impl BufRead) -> Option<Recorded> {
    let request_line = read_line(r)?;
    let mut parts = request_line.split_whitespace();
    let method = parts.next()?.to_owned();
    let path = parts.next()?.to_owned();
    let mut headers = BTreeMap::<String, String>::new();
    loop {
        let line = read_line(r)?;
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':')?;
        let name = name.trim().to_ascii_lowercase();
        let value = value.trim().to_owned();
        headers
            .entry(name)
            .and_modify(|v| {
                v.push_str(", ");
                v.push_str(&value);
            })
            .or_insert(value);
    }
    let chunked = headers
        .get("transfer-encoding")
        .is_some_and(|v| v.to_ascii_lowercase().contains("chunked"));
    let mut body = Vec::new();
    if chunked {
        loop {
            let size_line = read_line(r)?;
            let size = usize::from_str_radix(size_line.split(';').next()?.trim(), 16).ok()?;
            if size == 0 {
                // Trailers, up to the blank line.
                while !read_line(r)?.is_empty() {}
                break;
            }
            let mut chunk = vec![0; size];
            r.read_exact(&mut chunk).ok()?;
            body.extend_from_slice(&chunk);
            read_line(r)?;
        }
    } else if let Some(len) = headers
        .get("content-length")
        .and_then(|v| v.parse::<usize>().ok())
    {
        body.resize(len, 0);
        r.read_exact(&mut body).ok()?;
    }
    let raw_body = String::from_utf8_lossy(&body).into_owned();
    let body = serde_json::from_str(&raw_body).unwrap_or(Value::Null);
    Some(Recorded {
        method,
        path,
        headers,
        body,
        raw_body,
    })
}

/// Builders of realistic provider streams.
pub mod sse {
    use serde_json::{json, Value};

    /// A content block of an Anthropic answer.
    #[derive(Debug, Clone)]
    pub enum Block {
        Text(String),
        Thinking {
            text: String,
            signature: String,
        },
        Tool {
            id: String,
            name: String,
            input: Value,
        },
    }

    fn event(name: &str, data: Value) -> String {
        format!("event: {name}\ndata: {data}\n\n")
    }

    /// `text` in `n` pieces cut at character boundaries (some may be empty for short text).
    pub fn pieces(text: &str, n: usize) -> Vec<String> {
        let chars: Vec<char> = text.chars().collect();
        let per = chars.len().div_ceil(n).max(1);
        let mut out: Vec<String> = chars.chunks(per).map(|c| c.iter().collect()).collect();
        while out.len() < n {
            out.push(String::new());
        }
        out
    }

    /// A whole Anthropic Messages stream. `usage` is (input, output, cache_read, cache_write).
    pub fn anthropic(blocks: &[Block], stop_reason: &str, usage: (u64, u64, u64, u64)) -> String {
        let (input, output, cache_read, cache_write) = usage;
        let mut s = event(
            "message_start",
            json!({"type": "message_start", "message": {
                "id": "msg_fake01", "type": "message", "role": "assistant", "content": [],
                "model": "claude-fake-1", "stop_reason": null, "stop_sequence": null,
                "usage": {"input_tokens": input, "cache_creation_input_tokens": cache_write,
                          "cache_read_input_tokens": cache_read, "output_tokens": 1}}}),
        );
        s.push_str("event: ping\ndata: {\"type\": \"ping\"}\n\n");
        for (index, block) in blocks.iter().enumerate() {
            let delta = |delta: Value| {
                event(
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": index, "delta": delta}),
                )
            };
            let start = |content_block: Value| {
                event(
                    "content_block_start",
                    json!({"type": "content_block_start", "index": index, "content_block": content_block}),
                )
            };
            match block {
                Block::Text(text) => {
                    s.push_str(&start(json!({"type": "text", "text": ""})));
                    for p in pieces(text, 2) {
                        s.push_str(&delta(json!({"type": "text_delta", "text": p})));
                    }
                }
                Block::Thinking { text, signature } => {
                    s.push_str(&start(json!({"type": "thinking", "thinking": ""})));
                    for p in pieces(text, 2) {
                        s.push_str(&delta(json!({"type": "thinking_delta", "thinking": p})));
                    }
                    s.push_str(&delta(
                        json!({"type": "signature_delta", "signature": signature}),
                    ));
                }
                Block::Tool { id, name, input } => {
                    s.push_str(&start(
                        json!({"type": "tool_use", "id": id, "name": name, "input": {}}),
                    ));
                    s.push_str(&delta(
                        json!({"type": "input_json_delta", "partial_json": ""}),
                    ));
                    for p in pieces(&input.to_string(), 3) {
                        s.push_str(&delta(
                            json!({"type": "input_json_delta", "partial_json": p}),
                        ));
                    }
                }
            }
            s.push_str(&event(
                "content_block_stop",
                json!({"type": "content_block_stop", "index": index}),
            ));
        }
        s.push_str(&event(
            "message_delta",
            json!({"type": "message_delta",
                   "delta": {"stop_reason": stop_reason, "stop_sequence": null},
                   "usage": {"output_tokens": output}}),
        ));
        s.push_str(&event("message_stop", json!({"type": "message_stop"})));
        s
    }

    /// One text block ending the turn.
    pub fn anthropic_text(text: &str) -> String {
        anthropic(&[Block::Text(text.into())], "end_turn", (10, 5, 0, 0))
    }

    /// A whole Chat Completions stream. `tools` are (id, name, arguments); `usage` is
    /// (prompt, completion).
    pub fn openai(
        text: Option<&str>,
        tools: &[(String, String, Value)],
        finish: &str,
        usage: (u64, u64),
    ) -> String {
        let chunk = |choices: Value, usage: Value| {
            let v = json!({"id": "chatcmpl-fake", "object": "chat.completion.chunk",
                           "created": 1_700_000_000, "model": "gpt-fake-1",
                           "choices": choices, "usage": usage});
            format!("data: {v}\n\n")
        };
        let delta = |d: Value| {
            chunk(
                json!([{"index": 0, "delta": d, "finish_reason": null}]),
                Value::Null,
            )
        };
        let mut s = delta(json!({"role": "assistant", "content": ""}));
        if let Some(text) = text {
            for p in pieces(text, 2) {
                s.push_str(&delta(json!({"content": p})));
            }
        }
        for (index, (id, name, arguments)) in tools.iter().enumerate() {
            s.push_str(&delta(
                json!({"tool_calls": [{"index": index, "id": id, "type": "function",
                                      "function": {"name": name, "arguments": ""}}]}),
            ));
            for p in pieces(&arguments.to_string(), 3) {
                s.push_str(&delta(
                    json!({"tool_calls": [{"index": index, "function": {"arguments": p}}]}),
                ));
            }
        }
        s.push_str(&chunk(
            json!([{"index": 0, "delta": {}, "finish_reason": finish}]),
            Value::Null,
        ));
        let (prompt, completion) = usage;
        s.push_str(&chunk(
            json!([]),
            json!({"prompt_tokens": prompt, "completion_tokens": completion,
                   "total_tokens": prompt + completion}),
        ));
        s.push_str("data: [DONE]\n\n");
        s
    }
}
