//! The NDJSON input form of chunks: one object per line, decoded with a borrowed fast path
//! and, when a line does not fit, a slow path whose error names the line and the field.

use serde::Deserialize;
use serde_json::{Map, Value};

use super::{json_kind, ChunkData, ChunkType, NewChunk, Role};

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
