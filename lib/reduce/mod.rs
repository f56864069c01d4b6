//! Reduce: a provider's streamed response to chunk lifecycle ops (DESIGN §2, §4).
//!
//! This module owns the provider wire formats on the way *in*: SSE framing ([`SseParser`]),
//! and one [`Reducer`] per dialect that turns the events of one model round trip (a step) into
//! [`ChunkOp`]s — open a block, stream its deltas, seal it with the data to persist — plus the
//! step's [`StepEnd`] (stop reason, usage, model). It is pure: no I/O, no clock, no store. The
//! agent loop owns retries and persistence; this module only decides whether a stream was
//! complete, and says so through [`StreamError`] rather than guessing an answer from a broken
//! one.

mod anthropic;
mod openai;
mod sse;
mod stream;

use serde_json::Value;

use crate::log::{ChunkData, ChunkType, Role, StopReason};

pub(crate) use anthropic::AnthropicReducer;
pub(crate) use openai::OpenAiReducer;
pub(crate) use sse::{SseEvent, SseParser};
pub(crate) use stream::StreamReader;

/// One step in the life of a chunk, in stream order.
#[derive(Debug, Clone, PartialEq)]
pub enum ChunkOp {
    /// A block starts. `key` is the block's index within this step, unique per step and
    /// increasing in open order.
    Open {
        key: usize,
        role: Role,
        ty: ChunkType,
    },
    /// Text or thinking text appended to an open block; for tool calls, the raw fragment of
    /// the argument JSON (display only: the sealed data carries the parsed value).
    Delta { key: usize, text: String },
    /// The block is complete: persist it.
    Seal { key: usize, data: ChunkData },
}

impl ChunkOp {
    pub(crate) fn key(&self) -> usize {
        match self {
            ChunkOp::Open { key, .. } | ChunkOp::Delta { key, .. } | ChunkOp::Seal { key, .. } => {
                *key
            }
        }
    }
}

pub use crate::log::Usage;

/// How a complete step ended. Both dialects' reasons map to one [`StopReason`] (Anthropic's
/// vocabulary), so the agent loop and the log speak one language.
#[derive(Debug, Clone, PartialEq)]
pub struct StepEnd {
    pub stop_reason: StopReason,
    pub usage: Usage,
    pub model: Option<String>,
}

/// Why a stream cannot be taken as a finished answer. Every variant means a failed attempt;
/// [`StreamError::retryable`] says whether trying again can help.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum StreamError {
    #[error("malformed {event} event: {message}")]
    Malformed { event: String, message: String },
    #[error("the stream ended before its stop event")]
    Truncated,
    #[error("provider error ({kind}): {message}")]
    Provider { kind: String, message: String },
}

impl StreamError {
    pub(crate) fn malformed(event: &str, message: impl std::fmt::Display) -> StreamError {
        StreamError::Malformed {
            event: event.to_owned(),
            message: message.to_string(),
        }
    }

    /// Whether the step is worth another attempt. A broken or garbled stream is a transport
    /// accident; a provider error is retried unless it says the request itself is at fault,
    /// because an error *inside* a 200 stream is overwhelmingly overload or a server fault.
    pub(crate) fn retryable(&self) -> bool {
        match self {
            StreamError::Malformed { .. } | StreamError::Truncated => true,
            StreamError::Provider { kind, .. } => provider_kind_retryable(kind),
        }
    }
}

fn provider_kind_retryable(kind: &str) -> bool {
    // OpenAI-compatible servers sometimes give only a numeric HTTP-like code.
    if let Ok(code) = kind.parse::<u16>() {
        return matches!(code, 408 | 409 | 429) || code >= 500;
    }
    let k = kind.to_ascii_lowercase();
    const PERMANENT: [&str; 14] = [
        "invalid_request",
        "authentication",
        "permission",
        "not_found",
        "notfound",
        "billing",
        "insufficient_quota",
        "request_too_large",
        "context_length",
        "invalid_api_key",
        "badrequest",
        "unauthorized",
        "forbidden",
        "unprocessable",
    ];
    !PERMANENT.iter().any(|p| k.contains(p))
}

/// Turns the events of one step into chunk ops. A reducer serves exactly one step (one HTTP
/// response); make a new one per attempt.
pub(crate) trait Reducer {
    /// Feeds one event. An error means the attempt failed; ops returned by earlier calls stand
    /// (their chunks are already sealed), and the caller stops feeding.
    fn event(&mut self, ev: &SseEvent) -> Result<Vec<ChunkOp>, StreamError>;
    /// The stream closed: `Ok` only when the dialect's stop event was seen.
    fn finish(&mut self) -> Result<StepEnd, StreamError>;
    /// The stop event was seen; the caller may stop reading.
    fn is_done(&self) -> bool;
}

/// The reducer for a provider dialect.
pub(crate) fn reducer(dialect: crate::fold::Dialect) -> Box<dyn Reducer + Send> {
    match dialect {
        crate::fold::Dialect::Anthropic => Box::new(AnthropicReducer::new()),
        crate::fold::Dialect::OpenAi => Box::new(OpenAiReducer::new()),
    }
}

/// Tool arguments as persisted: a JSON object. No fragments at all means no arguments; a
/// value that is not an object would make the folded request unacceptable to the provider on
/// every later step, so it fails the attempt instead of entering the log.
fn parse_arguments(raw: &str, event: &str, name: &str) -> Result<Value, StreamError> {
    if raw.trim().is_empty() {
        return Ok(Value::Object(Default::default()));
    }
    match serde_json::from_str::<Value>(raw) {
        Ok(v @ Value::Object(_)) => Ok(v),
        Ok(Value::Null) => Ok(Value::Object(Default::default())),
        Ok(other) => Err(StreamError::malformed(
            event,
            format!("arguments of tool call {name:?} are not a JSON object: {other}"),
        )),
        Err(e) => Err(StreamError::malformed(
            event,
            format!("arguments of tool call {name:?} are not valid JSON ({e}): {raw}"),
        )),
    }
}

/// A token count field; absent or null leaves the previous value, because providers report
/// usage piecemeal across events.
fn read_count(obj: &Value, field: &str, into: &mut u64) {
    if let Some(n) = obj.get(field).and_then(Value::as_u64) {
        *into = n;
    }
}

fn non_empty(v: &Value) -> Option<&str> {
    v.as_str().filter(|s| !s.is_empty())
}

/// Helpers shared by the reducers' tests.
#[cfg(test)]
pub(crate) mod testkit {
    use super::*;

    /// Runs a literal SSE text through a reducer, stopping at the first error the way the
    /// agent loop does.
    pub(crate) fn run(
        mut r: impl Reducer,
        sse: &str,
    ) -> (Vec<ChunkOp>, Result<StepEnd, StreamError>) {
        let mut ops = Vec::new();
        for ev in SseParser::new().push(sse.as_bytes()) {
            match r.event(&ev) {
                Ok(more) => ops.extend(more),
                Err(e) => return (ops, Err(e)),
            }
        }
        let end = r.finish();
        (ops, end)
    }

    pub(crate) fn open(key: usize, ty: ChunkType) -> ChunkOp {
        ChunkOp::Open {
            key,
            role: Role::Assistant,
            ty,
        }
    }

    pub(crate) fn delta(key: usize, text: &str) -> ChunkOp {
        ChunkOp::Delta {
            key,
            text: text.to_owned(),
        }
    }

    pub(crate) fn seal(key: usize, data: ChunkData) -> ChunkOp {
        ChunkOp::Seal { key, data }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retryable_by_kind() {
        let p = |kind: &str| StreamError::Provider {
            kind: kind.into(),
            message: String::new(),
        };
        for kind in [
            "overloaded_error",
            "api_error",
            "rate_limit_error",
            "server_error",
            "500",
            "529",
            "429",
        ] {
            assert!(p(kind).retryable(), "{kind}");
        }
        for kind in [
            "invalid_request_error",
            "authentication_error",
            "permission_error",
            "not_found_error",
            "insufficient_quota",
            "BadRequestError",
            "400",
            "401",
        ] {
            assert!(!p(kind).retryable(), "{kind}");
        }
        assert!(StreamError::Truncated.retryable());
        assert!(StreamError::malformed("x", "y").retryable());
    }

    #[test]
    fn arguments() {
        assert_eq!(
            parse_arguments("", "e", "t").unwrap(),
            serde_json::json!({})
        );
        assert_eq!(
            parse_arguments(" \n", "e", "t").unwrap(),
            serde_json::json!({})
        );
        assert_eq!(
            parse_arguments("null", "e", "t").unwrap(),
            serde_json::json!({})
        );
        assert_eq!(
            parse_arguments(r#"{"a":[1]}"#, "e", "t").unwrap(),
            serde_json::json!({"a":[1]})
        );
        assert!(matches!(
            parse_arguments("[1]", "e", "t"),
            Err(StreamError::Malformed { .. })
        ));
        assert!(matches!(
            parse_arguments(r#"{"a":"#, "e", "t"),
            Err(StreamError::Malformed { .. })
        ));
    }
}
