//! The chunk model of the log (DESIGN §2) and its NDJSON form.
//!
//! A chunk is one sealed block of a conversation: a user text, an assistant thinking block,
//! one tool call, one tool result, a peer message batch, or a system record. Chunks are
//! immutable once written; the log of a session is its chunks in `seq` order.

mod stop;

pub use stop::StopReason;

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Who produced a chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
    Tool,
    System,
    Peer,
}

impl Role {
    pub const ALL: [Role; 5] = [
        Role::User,
        Role::Assistant,
        Role::Tool,
        Role::System,
        Role::Peer,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
            Role::System => "system",
            Role::Peer => "peer",
        }
    }

    pub fn parse(s: &str) -> Option<Role> {
        Role::ALL.into_iter().find(|r| r.as_str() == s)
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The kind of block a chunk holds; it decides the shape of `data`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChunkType {
    Text,
    Thinking,
    ToolCall,
    ToolResult,
    Error,
    System,
    Peer,
}

impl ChunkType {
    pub const ALL: [ChunkType; 7] = [
        ChunkType::Text,
        ChunkType::Thinking,
        ChunkType::ToolCall,
        ChunkType::ToolResult,
        ChunkType::Error,
        ChunkType::System,
        ChunkType::Peer,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ChunkType::Text => "text",
            ChunkType::Thinking => "thinking",
            ChunkType::ToolCall => "tool_call",
            ChunkType::ToolResult => "tool_result",
            ChunkType::Error => "error",
            ChunkType::System => "system",
            ChunkType::Peer => "peer",
        }
    }

    pub fn parse(s: &str) -> Option<ChunkType> {
        ChunkType::ALL.into_iter().find(|t| t.as_str() == s)
    }
}

impl fmt::Display for ChunkType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PeerMessage {
    pub id: String,
    pub from: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    pub text: String,
}

/// The payload of a chunk, by type. Field order is the serialization order, which the fold's
/// byte stability relies on: never reorder fields.
#[derive(Debug, Clone, PartialEq)]
pub enum ChunkData {
    Text {
        text: String,
    },
    Thinking {
        text: String,
        signature: Option<String>,
        /// Anthropic's opaque `redacted_thinking` data, replayed verbatim.
        redacted: Option<String>,
    },
    ToolCall {
        call_id: String,
        name: String,
        arguments: Value,
    },
    ToolResult {
        call_id: String,
        name: String,
        /// Usually a string; any JSON value is kept and folded as its JSON text.
        result: Value,
        is_error: bool,
        synthetic: bool,
    },
    Error {
        message: String,
        status: Option<u16>,
    },
    /// `{kind, ...}`: `turn_end`, `attempt_abandoned`, notices. Kept as an ordered map so
    /// records from newer versions survive a round trip.
    System(Map<String, Value>),
    Peer {
        messages: Vec<PeerMessage>,
        omitted: u64,
        room: String,
    },
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct TextD {
    text: String,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ThinkingD {
    text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    signature: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    redacted: Option<String>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ToolCallD {
    call_id: String,
    name: String,
    arguments: Value,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ToolResultD {
    call_id: String,
    name: String,
    result: Value,
    #[serde(default)]
    is_error: bool,
    #[serde(default, skip_serializing_if = "is_false")]
    synthetic: bool,
}

#[derive(Serialize)]
struct TextS<'a> {
    text: &'a str,
}

#[derive(Serialize)]
struct ThinkingS<'a> {
    text: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    signature: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    redacted: Option<&'a str>,
}

#[derive(Serialize)]
struct ToolCallS<'a> {
    call_id: &'a str,
    name: &'a str,
    arguments: &'a Value,
}

#[derive(Serialize)]
struct ToolResultS<'a> {
    call_id: &'a str,
    name: &'a str,
    result: &'a Value,
    is_error: bool,
    #[serde(skip_serializing_if = "is_false")]
    synthetic: bool,
}

#[derive(Serialize)]
struct ErrorS<'a> {
    message: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<u16>,
}

#[derive(Serialize)]
struct PeerS<'a> {
    messages: &'a [PeerMessage],
    omitted: u64,
    room: &'a str,
}

fn is_false(b: &bool) -> bool {
    !*b
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ErrorD {
    message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    status: Option<u16>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct PeerD {
    messages: Vec<PeerMessage>,
    #[serde(default)]
    omitted: u64,
    room: String,
}

impl ChunkData {
    pub fn text(text: impl Into<String>) -> ChunkData {
        ChunkData::Text { text: text.into() }
    }

    /// A `system` record of the given kind with extra fields.
    pub fn system(kind: &str, fields: Value) -> ChunkData {
        let mut map = Map::new();
        map.insert("kind".into(), Value::String(kind.into()));
        if let Value::Object(extra) = fields {
            for (k, v) in extra {
                if k != "kind" {
                    map.insert(k, v);
                }
            }
        }
        ChunkData::System(map)
    }

    pub fn chunk_type(&self) -> ChunkType {
        match self {
            ChunkData::Text { .. } => ChunkType::Text,
            ChunkData::Thinking { .. } => ChunkType::Thinking,
            ChunkData::ToolCall { .. } => ChunkType::ToolCall,
            ChunkData::ToolResult { .. } => ChunkType::ToolResult,
            ChunkData::Error { .. } => ChunkType::Error,
            ChunkData::System(_) => ChunkType::System,
            ChunkData::Peer { .. } => ChunkType::Peer,
        }
    }

    /// The `kind` of a system record.
    pub fn system_kind(&self) -> Option<&str> {
        match self {
            ChunkData::System(m) => m.get("kind").and_then(Value::as_str),
            _ => None,
        }
    }

    /// Why the turn ended, for a `turn_end` record (checked when the record was decoded).
    pub fn stop_reason(&self) -> Option<StopReason> {
        match self {
            ChunkData::System(m) if self.system_kind() == Some("turn_end") => m
                .get("stop_reason")
                .and_then(Value::as_str)
                .and_then(StopReason::parse),
            _ => None,
        }
    }

    /// The JSON object stored in `data_json` and printed as `data`.
    pub fn to_value(&self) -> Value {
        let v = match self {
            ChunkData::Text { text } => serde_json::to_value(TextD { text: text.clone() }),
            ChunkData::Thinking {
                text,
                signature,
                redacted,
            } => serde_json::to_value(ThinkingD {
                text: text.clone(),
                signature: signature.clone(),
                redacted: redacted.clone(),
            }),
            ChunkData::ToolCall {
                call_id,
                name,
                arguments,
            } => serde_json::to_value(ToolCallD {
                call_id: call_id.clone(),
                name: name.clone(),
                arguments: arguments.clone(),
            }),
            ChunkData::ToolResult {
                call_id,
                name,
                result,
                is_error,
                synthetic,
            } => serde_json::to_value(ToolResultD {
                call_id: call_id.clone(),
                name: name.clone(),
                result: result.clone(),
                is_error: *is_error,
                synthetic: *synthetic,
            }),
            ChunkData::Error { message, status } => serde_json::to_value(ErrorD {
                message: message.clone(),
                status: *status,
            }),
            ChunkData::System(m) => return Value::Object(m.clone()),
            ChunkData::Peer {
                messages,
                omitted,
                room,
            } => serde_json::to_value(PeerD {
                messages: messages.clone(),
                omitted: *omitted,
                room: room.clone(),
            }),
        };
        v.expect("chunk data serializes")
    }

    /// The `data_json` text: serialized straight from the fields (no intermediate `Value`),
    /// in the same field order as `to_value`.
    pub fn to_json(&self) -> String {
        let r = match self {
            ChunkData::Text { text } => serde_json::to_string(&TextS { text }),
            ChunkData::Thinking {
                text,
                signature,
                redacted,
            } => serde_json::to_string(&ThinkingS {
                text,
                signature: signature.as_deref(),
                redacted: redacted.as_deref(),
            }),
            ChunkData::ToolCall {
                call_id,
                name,
                arguments,
            } => serde_json::to_string(&ToolCallS {
                call_id,
                name,
                arguments,
            }),
            ChunkData::ToolResult {
                call_id,
                name,
                result,
                is_error,
                synthetic,
            } => serde_json::to_string(&ToolResultS {
                call_id,
                name,
                result,
                is_error: *is_error,
                synthetic: *synthetic,
            }),
            ChunkData::Error { message, status } => serde_json::to_string(&ErrorS {
                message,
                status: *status,
            }),
            ChunkData::System(m) => serde_json::to_string(m),
            ChunkData::Peer {
                messages,
                omitted,
                room,
            } => serde_json::to_string(&PeerS {
                messages,
                omitted: *omitted,
                room,
            }),
        };
        r.expect("chunk data serializes")
    }

    /// Decode `data` from its JSON text straight into the typed fields. Falls back to the
    /// `Value` path for the precise error message when the text does not fit.
    pub fn from_json(ty: ChunkType, text: &str) -> Result<ChunkData, String> {
        let fast = match ty {
            ChunkType::Text => serde_json::from_str::<TextD>(text)
                .ok()
                .map(|d| ChunkData::Text { text: d.text }),
            ChunkType::Thinking => {
                serde_json::from_str::<ThinkingD>(text)
                    .ok()
                    .map(|d| ChunkData::Thinking {
                        text: d.text,
                        signature: d.signature,
                        redacted: d.redacted,
                    })
            }
            ChunkType::ToolCall => serde_json::from_str::<ToolCallD>(text)
                .ok()
                .filter(|d| !d.call_id.is_empty())
                .map(|d| ChunkData::ToolCall {
                    call_id: d.call_id,
                    name: d.name,
                    arguments: d.arguments,
                }),
            ChunkType::ToolResult => serde_json::from_str::<ToolResultD>(text)
                .ok()
                .filter(|d| !d.call_id.is_empty())
                .map(|d| ChunkData::ToolResult {
                    call_id: d.call_id,
                    name: d.name,
                    result: d.result,
                    is_error: d.is_error,
                    synthetic: d.synthetic,
                }),
            ChunkType::Error => {
                serde_json::from_str::<ErrorD>(text)
                    .ok()
                    .map(|d| ChunkData::Error {
                        message: d.message,
                        status: d.status,
                    })
            }
            ChunkType::System => serde_json::from_str::<Map<String, Value>>(text)
                .ok()
                .filter(|m| matches!(m.get("kind"), Some(Value::String(_))))
                .filter(|m| check_system(m).is_ok())
                .map(ChunkData::System),
            ChunkType::Peer => serde_json::from_str::<PeerD>(text)
                .ok()
                .map(|d| ChunkData::Peer {
                    messages: d.messages,
                    omitted: d.omitted,
                    room: d.room,
                }),
        };
        match fast {
            Some(d) => Ok(d),
            None => {
                let v: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
                ChunkData::from_value(ty, v)
            }
        }
    }

    /// Validate and decode a `data` object for a chunk type. The error names the offending
    /// field where serde can tell.
    pub fn from_value(ty: ChunkType, value: Value) -> Result<ChunkData, String> {
        if !value.is_object() {
            return Err(format!(
                "must be a JSON object for a {ty} chunk, found {}",
                json_kind(&value)
            ));
        }
        let e = |err: serde_json::Error| err.to_string();
        Ok(match ty {
            ChunkType::Text => {
                let d: TextD = serde_json::from_value(value).map_err(e)?;
                ChunkData::Text { text: d.text }
            }
            ChunkType::Thinking => {
                let d: ThinkingD = serde_json::from_value(value).map_err(e)?;
                ChunkData::Thinking {
                    text: d.text,
                    signature: d.signature,
                    redacted: d.redacted,
                }
            }
            ChunkType::ToolCall => {
                let d: ToolCallD = serde_json::from_value(value).map_err(e)?;
                if d.call_id.is_empty() {
                    return Err("`call_id` must not be empty".into());
                }
                ChunkData::ToolCall {
                    call_id: d.call_id,
                    name: d.name,
                    arguments: d.arguments,
                }
            }
            ChunkType::ToolResult => {
                let d: ToolResultD = serde_json::from_value(value).map_err(e)?;
                if d.call_id.is_empty() {
                    return Err("`call_id` must not be empty".into());
                }
                ChunkData::ToolResult {
                    call_id: d.call_id,
                    name: d.name,
                    result: d.result,
                    is_error: d.is_error,
                    synthetic: d.synthetic,
                }
            }
            ChunkType::Error => {
                let d: ErrorD = serde_json::from_value(value).map_err(e)?;
                ChunkData::Error {
                    message: d.message,
                    status: d.status,
                }
            }
            ChunkType::System => {
                let Value::Object(m) = value else {
                    unreachable!()
                };
                match m.get("kind") {
                    Some(Value::String(_)) => {
                        check_system(&m)?;
                        ChunkData::System(m)
                    }
                    Some(other) => {
                        return Err(format!(
                            "`kind` must be a string, found {}",
                            json_kind(other)
                        ))
                    }
                    None => return Err("missing field `kind`".into()),
                }
            }
            ChunkType::Peer => {
                let d: PeerD = serde_json::from_value(value).map_err(e)?;
                ChunkData::Peer {
                    messages: d.messages,
                    omitted: d.omitted,
                    room: d.room,
                }
            }
        })
    }
}

/// The typed fields of the system records that have them: a `turn_end` names a known
/// [`StopReason`], so a typo or a damaged row is an error where it is read, never a turn
/// that ended in some unheard-of way.
fn check_system(m: &Map<String, Value>) -> Result<(), String> {
    if m.get("kind").and_then(Value::as_str) != Some("turn_end") {
        return Ok(());
    }
    match m.get("stop_reason") {
        Some(Value::String(s)) if StopReason::parse(s).is_some() => Ok(()),
        Some(Value::String(s)) => Err(format!("turn_end: {}", StopReason::unknown_message(s))),
        Some(other) => Err(format!(
            "turn_end: `stop_reason` must be a string, found {}",
            json_kind(other)
        )),
        None => Err("turn_end: missing field `stop_reason`".into()),
    }
}

/// The first non-blank line of a text, cut at `max` characters with an ellipsis: how a
/// prompt or a question becomes a session title.
pub fn headline(text: &str, max: usize) -> String {
    let line = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    if line.chars().count() <= max {
        return line.to_string();
    }
    let mut t: String = line
        .chars()
        .take(max)
        .collect::<String>()
        .trim_end()
        .to_string();
    t.push('…');
    t
}

pub fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A stored chunk.
#[derive(Debug, Clone, PartialEq)]
pub struct Chunk {
    pub id: String,
    pub session: String,
    pub seq: i64,
    pub turn: String,
    pub step: i64,
    pub role: Role,
    pub data: ChunkData,
    /// Unix milliseconds.
    pub ts: i64,
}

impl Chunk {
    pub fn chunk_type(&self) -> ChunkType {
        self.data.chunk_type()
    }

    /// The NDJSON object: `{"id","session","seq","turn","step","role","type","data","ts"}`.
    pub fn to_value(&self) -> Value {
        let mut m = Map::new();
        m.insert("id".into(), self.id.clone().into());
        m.insert("session".into(), self.session.clone().into());
        m.insert("seq".into(), self.seq.into());
        m.insert("turn".into(), self.turn.clone().into());
        m.insert("step".into(), self.step.into());
        m.insert("role".into(), self.role.as_str().into());
        m.insert("type".into(), self.chunk_type().as_str().into());
        m.insert("data".into(), self.data.to_value());
        m.insert("ts".into(), crate::clock::iso(self.ts).into());
        Value::Object(m)
    }

    /// One NDJSON line, without the newline.
    pub fn to_ndjson(&self) -> String {
        self.to_value().to_string()
    }
}

/// A chunk on its way in: what NDJSON input may carry. `id`, `session`, `seq` and `ts` are
/// assigned by the store when missing; `turn` may be left for the caller to fill.
#[derive(Debug, Clone, PartialEq)]
pub struct NewChunk {
    pub id: Option<String>,
    pub session: Option<String>,
    pub seq: Option<i64>,
    pub turn: Option<String>,
    pub step: i64,
    pub role: Role,
    pub data: ChunkData,
    pub ts: Option<i64>,
}

impl NewChunk {
    pub fn new(role: Role, data: ChunkData) -> NewChunk {
        NewChunk {
            id: None,
            session: None,
            seq: None,
            turn: None,
            step: 0,
            role,
            data,
            ts: None,
        }
    }

    pub fn in_turn(mut self, turn: &str, step: i64) -> NewChunk {
        self.turn = Some(turn.to_string());
        self.step = step;
        self
    }
}

/// A problem with one NDJSON input line.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("line {line}: {}{message}", field.as_ref().map(|f| format!("field `{f}`: ")).unwrap_or_default())]
pub struct DecodeError {
    pub line: usize,
    pub field: Option<String>,
    pub message: String,
}

/// The shape of a well-formed input line, borrowed from the text: the common case decodes
/// without building a `Value` tree.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FastLine<'a> {
    #[serde(default, borrow)]
    id: Option<std::borrow::Cow<'a, str>>,
    #[serde(default, borrow)]
    session: Option<std::borrow::Cow<'a, str>>,
    #[serde(default)]
    seq: Option<i64>,
    #[serde(default, borrow)]
    turn: Option<std::borrow::Cow<'a, str>>,
    #[serde(default)]
    step: Option<i64>,
    #[serde(borrow)]
    role: std::borrow::Cow<'a, str>,
    #[serde(rename = "type", borrow)]
    ty: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    data: &'a serde_json::value::RawValue,
    #[serde(default, borrow)]
    ts: Option<std::borrow::Cow<'a, str>>,
}

fn decode_fast(line: &str) -> Option<NewChunk> {
    let f: FastLine<'_> = serde_json::from_str(line).ok()?;
    let non_empty = |v: Option<std::borrow::Cow<'_, str>>| -> Option<Option<String>> {
        match v {
            Some(s) if s.is_empty() => None,
            other => Some(other.map(|s| s.into_owned())),
        }
    };
    let role = Role::parse(&f.role)?;
    let ty = ChunkType::parse(&f.ty)?;
    check_role_type(role, ty).ok()?;
    if f.seq.is_some_and(|s| s < 1) || f.step.is_some_and(|s| s < 0) {
        return None;
    }
    let ts = match f.ts {
        Some(t) => Some(crate::clock::parse_iso(&t)?),
        None => None,
    };
    Some(NewChunk {
        id: non_empty(f.id)?,
        session: non_empty(f.session)?,
        seq: f.seq,
        turn: non_empty(f.turn)?,
        step: f.step.unwrap_or(0),
        role,
        data: ChunkData::from_json(ty, f.data.get()).ok()?,
        ts,
    })
}

/// Decode one NDJSON line (1-based `line` for messages).
pub fn decode_line(line_no: usize, line: &str) -> Result<NewChunk, DecodeError> {
    if let Some(chunk) = decode_fast(line) {
        return Ok(chunk);
    }
    decode_slow(line_no, line)
}

/// The careful path: every problem named by line and field.
fn decode_slow(line_no: usize, line: &str) -> Result<NewChunk, DecodeError> {
    let err = |field: Option<&str>, message: String| DecodeError {
        line: line_no,
        field: field.map(str::to_string),
        message,
    };
    let value: Value =
        serde_json::from_str(line).map_err(|e| err(None, format!("malformed JSON: {e}")))?;
    let Value::Object(mut obj) = value else {
        return Err(err(
            None,
            format!("expected a JSON object, found {}", json_kind(&value)),
        ));
    };
    const KNOWN: [&str; 9] = [
        "id", "session", "seq", "turn", "step", "role", "type", "data", "ts",
    ];
    if let Some(k) = obj.keys().find(|k| !KNOWN.contains(&k.as_str())) {
        return Err(err(
            Some(k),
            format!("unknown field (expected one of {})", KNOWN.join(", ")),
        ));
    }
    let opt_str = |obj: &mut Map<String, Value>, f: &str| -> Result<Option<String>, DecodeError> {
        match obj.remove(f) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if !s.is_empty() => Ok(Some(s)),
            Some(Value::String(_)) => Err(err(Some(f), "must not be empty".into())),
            Some(v) => Err(err(
                Some(f),
                format!("expected a string, found {}", json_kind(&v)),
            )),
        }
    };
    let opt_int =
        |obj: &mut Map<String, Value>, f: &str, min: i64| -> Result<Option<i64>, DecodeError> {
            match obj.remove(f) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::Number(n)) => match n.as_i64() {
                    Some(i) if i >= min => Ok(Some(i)),
                    _ => Err(err(
                        Some(f),
                        format!("expected an integer ≥ {min}, found {n}"),
                    )),
                },
                Some(v) => Err(err(
                    Some(f),
                    format!("expected an integer, found {}", json_kind(&v)),
                )),
            }
        };
    let id = opt_str(&mut obj, "id")?;
    let session = opt_str(&mut obj, "session")?;
    let seq = opt_int(&mut obj, "seq", 1)?;
    let turn = opt_str(&mut obj, "turn")?;
    let step = opt_int(&mut obj, "step", 0)?.unwrap_or(0);
    let role = match obj.remove("role") {
        None | Some(Value::Null) => return Err(err(Some("role"), "missing".into())),
        Some(Value::String(s)) => Role::parse(&s).ok_or_else(|| {
            err(
                Some("role"),
                format!("unknown role {s:?} (expected user, assistant, tool, system or peer)"),
            )
        })?,
        Some(v) => {
            return Err(err(
                Some("role"),
                format!("expected a string, found {}", json_kind(&v)),
            ))
        }
    };
    let ty = match obj.remove("type") {
        None | Some(Value::Null) => return Err(err(Some("type"), "missing".into())),
        Some(Value::String(s)) => ChunkType::parse(&s).ok_or_else(|| {
            err(
                Some("type"),
                format!(
                    "unknown type {s:?} (expected text, thinking, tool_call, tool_result, error, system or peer)"
                ),
            )
        })?,
        Some(v) => {
            return Err(err(
                Some("type"),
                format!("expected a string, found {}", json_kind(&v)),
            ))
        }
    };
    let data = match obj.remove("data") {
        None | Some(Value::Null) => return Err(err(Some("data"), "missing".into())),
        Some(v) => ChunkData::from_value(ty, v).map_err(|m| err(Some("data"), m))?,
    };
    let ts = match obj.remove("ts") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(
            crate::clock::parse_iso(&s)
                .ok_or_else(|| err(Some("ts"), format!("not an ISO-8601 timestamp: {s:?}")))?,
        ),
        Some(Value::Number(n)) => Some(
            n.as_i64()
                .ok_or_else(|| err(Some("ts"), format!("expected unix milliseconds, found {n}")))?,
        ),
        Some(v) => {
            return Err(err(
                Some("ts"),
                format!("expected an ISO-8601 string, found {}", json_kind(&v)),
            ))
        }
    };
    check_role_type(role, ty).map_err(|m| err(Some("role"), m))?;
    Ok(NewChunk {
        id,
        session,
        seq,
        turn,
        step,
        role,
        data,
        ts,
    })
}

/// The role/type pairs that make sense in a log; anything else would fold into nonsense.
pub fn check_role_type(role: Role, ty: ChunkType) -> Result<(), String> {
    use ChunkType as T;
    let ok = match ty {
        T::Text => matches!(role, Role::User | Role::Assistant),
        T::Thinking | T::ToolCall => role == Role::Assistant,
        T::ToolResult => role == Role::Tool,
        T::Error => matches!(role, Role::System | Role::Assistant),
        T::System => role == Role::System,
        T::Peer => role == Role::Peer,
    };
    if ok {
        Ok(())
    } else {
        Err(format!("a {ty} chunk cannot have role {role}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_minimal_line() {
        let c = decode_line(1, r#"{"role":"user","type":"text","data":{"text":"hi"}}"#).unwrap();
        assert_eq!(c.role, Role::User);
        assert_eq!(c.data, ChunkData::text("hi"));
        assert_eq!(c.step, 0);
        assert!(c.turn.is_none());
    }

    #[test]
    fn errors_name_line_and_field() {
        let e = decode_line(7, r#"{"type":"text","data":{"text":"hi"}}"#).unwrap_err();
        assert_eq!(e.to_string(), "line 7: field `role`: missing");
        let e = decode_line(2, r#"{"role":"user","type":"blob","data":{}}"#).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("type"));
        let e = decode_line(3, r#"{"role":"tool","type":"tool_result","data":"x"}"#).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("data"));
        assert!(e.message.contains("JSON object"), "{e}");
        let e = decode_line(
            4,
            r#"{"seq":"1","role":"user","type":"text","data":{"text":""}}"#,
        )
        .unwrap_err();
        assert_eq!(e.field.as_deref(), Some("seq"));
        let e = decode_line(5, "{nope").unwrap_err();
        assert!(e.to_string().starts_with("line 5: malformed JSON"), "{e}");
    }

    #[test]
    fn a_turn_end_names_a_known_stop_reason() {
        let good = r#"{"kind":"turn_end","stop_reason":"max_steps"}"#;
        let d = ChunkData::from_json(ChunkType::System, good).unwrap();
        assert_eq!(d.stop_reason(), Some(StopReason::MaxSteps));
        for bad in [
            r#"{"kind":"turn_end","stop_reason":"done"}"#,
            r#"{"kind":"turn_end","stop_reason":3}"#,
            r#"{"kind":"turn_end"}"#,
        ] {
            let e = ChunkData::from_json(ChunkType::System, bad).unwrap_err();
            assert!(e.starts_with("turn_end: "), "{e}");
        }
        // Other records keep their free form.
        let note = ChunkData::from_json(ChunkType::System, r#"{"kind":"note","stop_reason":1}"#);
        assert_eq!(note.unwrap().stop_reason(), None);
    }

    #[test]
    fn chunk_round_trips_through_ndjson() {
        let c = Chunk {
            id: "c1".into(),
            session: "s1".into(),
            seq: 3,
            turn: "t1".into(),
            step: 1,
            role: Role::Assistant,
            data: ChunkData::Thinking {
                text: String::new(),
                signature: Some("sig".into()),
                redacted: None,
            },
            ts: 1_790_000_000_000,
        };
        let n = decode_line(1, &c.to_ndjson()).unwrap();
        assert_eq!(n.id.as_deref(), Some("c1"));
        assert_eq!(n.seq, Some(3));
        assert_eq!(n.ts, Some(c.ts));
        assert_eq!(n.data, c.data);
    }
}
