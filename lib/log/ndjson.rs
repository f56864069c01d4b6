//! The NDJSON input form of chunks: one object per line, decoded with a borrowed fast path
//! and, when a line does not fit, a slow path whose error names the line and the field.

use serde::Deserialize;
use serde_json::{Map, Value};

use super::{json_kind, ChunkData, ChunkType, NewChunk, Role};

/// A problem with one NDJSON input line.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("line {line}: {}{message}", field.as_ref().map(|f| format!("field `{f}`: ")).unwrap_or_default())]
pub(crate) struct DecodeError {
    pub(crate) line: usize,
    pub(crate) field: Option<String>,
    pub(crate) message: String,
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
pub(crate) fn decode_line(line_no: usize, line: &str) -> Result<NewChunk, DecodeError> {
    if let Some(chunk) = decode_fast(line) {
        return Ok(chunk);
    }
    decode_slow(line_no, line)
}

/// The careful path: every problem named by line and field.
fn decode_slow(line_no: usize, line: &str) -> Result<NewChunk, DecodeError> {
    let fields = Fields::parse(line_no, line)?;
    fields.chunk()
}

/// One line's JSON object, taken apart field by field; each error names its field.
struct Fields {
    line: usize,
    obj: Map<String, Value>,
}

const KNOWN_FIELDS: [&str; 9] = [
    "id", "session", "seq", "turn", "step", "role", "type", "data", "ts",
];

impl Fields {
    fn parse(line: usize, text: &str) -> Result<Fields, DecodeError> {
        let fail = |message: String| DecodeError {
            line,
            field: None,
            message,
        };
        let value: Value =
            serde_json::from_str(text).map_err(|e| fail(format!("malformed JSON: {e}")))?;
        let Value::Object(obj) = value else {
            return Err(fail(format!(
                "expected a JSON object, found {}",
                json_kind(&value)
            )));
        };
        let fields = Fields { line, obj };
        if let Some(k) = fields
            .obj
            .keys()
            .find(|k| !KNOWN_FIELDS.contains(&k.as_str()))
        {
            return Err(fields.err(
                k,
                format!(
                    "unknown field (expected one of {})",
                    KNOWN_FIELDS.join(", ")
                ),
            ));
        }
        Ok(fields)
    }

    fn chunk(mut self) -> Result<NewChunk, DecodeError> {
        let id = self.opt_str("id")?;
        let session = self.opt_str("session")?;
        let seq = self.opt_int("seq", 1)?;
        let turn = self.opt_str("turn")?;
        let step = self.opt_int("step", 0)?.unwrap_or(0);
        let role = self.named("role", Role::parse, || {
            "expected user, assistant, tool, system or peer".into()
        })?;
        let ty = self.named("type", ChunkType::parse, || {
            "expected text, thinking, tool_call, tool_result, error, system or peer".into()
        })?;
        let data = match self.obj.remove("data") {
            None | Some(Value::Null) => return Err(self.err("data", "missing".into())),
            Some(v) => ChunkData::from_value(ty, v).map_err(|m| self.err("data", m))?,
        };
        let ts = self.ts()?;
        check_role_type(role, ty).map_err(|m| self.err("role", m))?;
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

    fn err(&self, field: &str, message: String) -> DecodeError {
        DecodeError {
            line: self.line,
            field: Some(field.to_string()),
            message,
        }
    }

    fn wrong_kind(&self, field: &str, expected: &str, found: &Value) -> DecodeError {
        self.err(
            field,
            format!("expected {expected}, found {}", json_kind(found)),
        )
    }

    fn opt_str(&mut self, f: &str) -> Result<Option<String>, DecodeError> {
        match self.obj.remove(f) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if !s.is_empty() => Ok(Some(s)),
            Some(Value::String(_)) => Err(self.err(f, "must not be empty".into())),
            Some(v) => Err(self.wrong_kind(f, "a string", &v)),
        }
    }

    fn opt_int(&mut self, f: &str, min: i64) -> Result<Option<i64>, DecodeError> {
        match self.obj.remove(f) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) => match n.as_i64() {
                Some(i) if i >= min => Ok(Some(i)),
                _ => Err(self.err(f, format!("expected an integer ≥ {min}, found {n}"))),
            },
            Some(v) => Err(self.wrong_kind(f, "an integer", &v)),
        }
    }

    /// A required string field naming one of a fixed set of values.
    fn named<T>(
        &mut self,
        f: &str,
        parse: impl Fn(&str) -> Option<T>,
        expected: impl Fn() -> String,
    ) -> Result<T, DecodeError> {
        match self.obj.remove(f) {
            None | Some(Value::Null) => Err(self.err(f, "missing".into())),
            Some(Value::String(s)) => {
                parse(&s).ok_or_else(|| self.err(f, format!("unknown {f} {s:?} ({})", expected())))
            }
            Some(v) => Err(self.wrong_kind(f, "a string", &v)),
        }
    }

    fn ts(&mut self) -> Result<Option<i64>, DecodeError> {
        match self.obj.remove("ts") {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => crate::clock::parse_iso(&s)
                .map(Some)
                .ok_or_else(|| self.err("ts", format!("not an ISO-8601 timestamp: {s:?}"))),
            Some(Value::Number(n)) => n
                .as_i64()
                .map(Some)
                .ok_or_else(|| self.err("ts", format!("expected unix milliseconds, found {n}"))),
            Some(v) => Err(self.wrong_kind("ts", "an ISO-8601 string", &v)),
        }
    }
}

/// The role/type pairs that make sense in a log; anything else would fold into nonsense.
pub(crate) fn check_role_type(role: Role, ty: ChunkType) -> Result<(), String> {
    use ChunkType as T;
    let ok = match ty {
        T::Text => matches!(role, Role::User | Role::Assistant),
        T::Image => role == Role::User,
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
