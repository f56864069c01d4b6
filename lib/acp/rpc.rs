//! JSON-RPC 2.0 over newline-delimited JSON, as ACP's stdio transport frames it: one message
//! per line each way. Synchronous, like the rest of the library: the reader is the serving
//! thread, every turn runs on a thread of its own, and a request this side sends (a
//! permission request) blocks its thread until the reader routes the answer back.

use std::collections::HashMap;
use std::io::Write;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{mpsc, Mutex};

use serde_json::{json, Value};

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RpcError {
    pub(crate) code: i64,
    pub(crate) message: String,
}

impl RpcError {
    pub(crate) const PARSE: i64 = -32700;
    pub(crate) const INVALID_REQUEST: i64 = -32600;
    pub(crate) const METHOD_NOT_FOUND: i64 = -32601;
    pub(crate) const INVALID_PARAMS: i64 = -32602;
    pub(crate) const INTERNAL: i64 = -32603;
    /// ACP's "resource not found" (an unknown session).
    pub(crate) const NOT_FOUND: i64 = -32002;

    pub(crate) fn new(code: i64, message: impl Into<String>) -> RpcError {
        RpcError {
            code,
            message: message.into(),
        }
    }

    pub(crate) fn invalid_params(message: impl Into<String>) -> RpcError {
        RpcError::new(Self::INVALID_PARAMS, message)
    }

    pub(crate) fn internal(message: impl Into<String>) -> RpcError {
        RpcError::new(Self::INTERNAL, message)
    }
}

/// One line read from the peer.
#[derive(Debug, PartialEq)]
pub(crate) enum Incoming {
    Request {
        id: Value,
        method: String,
        params: Value,
    },
    Notification {
        method: String,
        params: Value,
    },
    Response {
        id: Value,
        result: Result<Value, RpcError>,
    },
}

/// Read one line: a request, a notification or a response, or the error to answer it with
/// (with the id, when the line had one).
pub(crate) fn parse(line: &str) -> Result<Incoming, (Value, RpcError)> {
    let v: Value = serde_json::from_str(line)
        .map_err(|e| (Value::Null, RpcError::new(RpcError::PARSE, e.to_string())))?;
    let id = v.get("id").cloned();
    let invalid = |what: &str| {
        (
            id.clone().unwrap_or(Value::Null),
            RpcError::new(RpcError::INVALID_REQUEST, what.to_string()),
        )
    };
    if v.get("jsonrpc") != Some(&json!("2.0")) {
        return Err(invalid(
            "not a JSON-RPC 2.0 message (\"jsonrpc\": \"2.0\" is missing)",
        ));
    }
    let params = v.get("params").cloned().unwrap_or(Value::Null);
    match (v.get("method").and_then(Value::as_str), id.clone()) {
        (Some(m), Some(id)) => Ok(Incoming::Request {
            id,
            method: m.to_string(),
            params,
        }),
        (Some(m), None) => Ok(Incoming::Notification {
            method: m.to_string(),
            params,
        }),
        (None, Some(id)) => {
            let result = match (v.get("result"), v.get("error")) {
                (_, Some(e)) => Err(RpcError::new(
                    e["code"].as_i64().unwrap_or(RpcError::INTERNAL),
                    e["message"].as_str().unwrap_or("(no message)"),
                )),
                (Some(r), None) => Ok(r.clone()),
                (None, None) => return Err(invalid("a response with neither result nor error")),
            };
            Ok(Incoming::Response { id, result })
        }
        (None, None) => Err(invalid("neither a request nor a response")),
    }
}

/// The connection's sending side, shared by the reader and every turn's thread: whole lines
/// under one lock, so messages never interleave, and the requests still waiting for an answer.
pub(crate) struct Conn {
    out: Mutex<Box<dyn Write + Send>>,
    next_id: AtomicI64,
    waiting: Mutex<HashMap<i64, mpsc::Sender<Result<Value, RpcError>>>>,
}

impl Conn {
    pub(crate) fn new(out: Box<dyn Write + Send>) -> Conn {
        Conn {
            out: Mutex::new(out),
            next_id: AtomicI64::new(0),
            waiting: Mutex::new(HashMap::new()),
        }
    }

    /// Write one message. A peer that went away is not an error here: the reader sees the
    /// end of its input and the server stops.
    fn send(&self, msg: &Value) {
        let mut out = self.out.lock().unwrap_or_else(|e| e.into_inner());
        let _ = writeln!(out, "{msg}").and_then(|()| out.flush());
    }

    pub(crate) fn notify(&self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    pub(crate) fn respond(&self, id: Value, result: Result<Value, RpcError>) {
        let msg = match result {
            Ok(r) => json!({"jsonrpc": "2.0", "id": id, "result": r}),
            Err(e) => json!({"jsonrpc": "2.0", "id": id,
                             "error": {"code": e.code, "message": e.message}}),
        };
        self.send(&msg);
    }

    /// Send a request and wait for its answer; `Err` when the peer answers with an error or
    /// the connection ends first.
    pub(crate) fn request(&self, method: &str, params: Value) -> Result<Value, RpcError> {
        let id = self.next_id.fetch_add(1, Ordering::SeqCst);
        let (tx, rx) = mpsc::channel();
        self.waiting
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, tx);
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        rx.recv()
            .unwrap_or_else(|_| Err(RpcError::internal("the client went away")))
    }

    /// Route an answer to the request waiting for it; an answer nobody waits for is dropped.
    pub(crate) fn answered(&self, id: &Value, result: Result<Value, RpcError>) {
        let Some(id) = id.as_i64() else { return };
        let waiter = self
            .waiting
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&id);
        if let Some(tx) = waiter {
            let _ = tx.send(result);
        }
    }

    /// The connection ended: every request still waiting gets an error.
    pub(crate) fn close(&self) {
        self.waiting
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_four_shapes() {
        let r = parse(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#);
        assert!(matches!(r, Ok(Incoming::Request { ref method, .. }) if method == "initialize"));
        let n = parse(r#"{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}"#);
        assert!(matches!(n, Ok(Incoming::Notification { .. })));
        let ok = parse(r#"{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"cancelled"}}}"#);
        assert!(matches!(ok, Ok(Incoming::Response { result: Ok(_), .. })));
        let err = parse(r#"{"jsonrpc":"2.0","id":0,"error":{"code":-32603,"message":"no"}}"#);
        assert_eq!(
            err,
            Ok(Incoming::Response {
                id: json!(0),
                result: Err(RpcError::new(-32603, "no"))
            })
        );
    }

    #[test]
    fn bad_lines_get_the_errors_json_rpc_names() {
        assert_eq!(parse("{oops").unwrap_err().1.code, RpcError::PARSE);
        let (id, e) = parse(r#"{"id":7,"method":"x"}"#).unwrap_err();
        assert_eq!((id, e.code), (json!(7), RpcError::INVALID_REQUEST));
    }

    #[test]
    fn an_answer_reaches_the_request_waiting_for_it() {
        let conn = std::sync::Arc::new(Conn::new(Box::new(std::io::sink())));
        let c = conn.clone();
        let asker = std::thread::spawn(move || c.request("session/request_permission", json!({})));
        while conn.waiting.lock().unwrap().is_empty() {
            std::thread::yield_now();
        }
        conn.answered(&json!(0), Ok(json!({"ok": true})));
        assert_eq!(asker.join().unwrap(), Ok(json!({"ok": true})));
    }
}
