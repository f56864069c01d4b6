//! A chunk's payload by type ([`ChunkData`]) and its JSON form: the typed fields of each
//! chunk type, checked on the way in, written in a fixed field order on the way out.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The kind of the record that ends a turn (DESIGN §2).
pub(crate) const TURN_END: &str = "turn_end";

use super::{json_kind, ChunkType, PeerMessage, PeerPresent, StopReason};

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
        /// Who is live in the worktree now, when that changed since the session was last told.
        roster: Option<Vec<PeerPresent>>,
    },
    /// An image the person gave: its media type and its bytes in base64 (see
    /// [`super::image`]).
    Image {
        media_type: String,
        data: String,
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

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ImageD {
    media_type: String,
    data: String,
}

#[derive(Serialize)]
struct ImageS<'a> {
    media_type: &'a str,
    data: &'a str,
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
    #[serde(skip_serializing_if = "Option::is_none")]
    roster: &'a Option<Vec<PeerPresent>>,
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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    roster: Option<Vec<PeerPresent>>,
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

    pub(crate) fn chunk_type(&self) -> ChunkType {
        match self {
            ChunkData::Text { .. } => ChunkType::Text,
            ChunkData::Thinking { .. } => ChunkType::Thinking,
            ChunkData::ToolCall { .. } => ChunkType::ToolCall,
            ChunkData::ToolResult { .. } => ChunkType::ToolResult,
            ChunkData::Error { .. } => ChunkType::Error,
            ChunkData::System(_) => ChunkType::System,
            ChunkData::Peer { .. } => ChunkType::Peer,
            ChunkData::Image { .. } => ChunkType::Image,
        }
    }

    /// The `kind` of a system record.
    /// Whether this is a `turn_end` record.
    pub(crate) fn is_turn_end(&self) -> bool {
        self.system_kind() == Some(TURN_END)
    }

    pub(crate) fn system_kind(&self) -> Option<&str> {
        match self {
            ChunkData::System(m) => m.get("kind").and_then(Value::as_str),
            _ => None,
        }
    }

    /// Why the turn ended, for a `turn_end` record (checked when the record was decoded).
    #[cfg(test)]
    pub(crate) fn stop_reason(&self) -> Option<StopReason> {
        match self {
            ChunkData::System(m) if self.is_turn_end() => m
                .get("stop_reason")
                .and_then(Value::as_str)
                .and_then(StopReason::parse),
            _ => None,
        }
    }

    /// The JSON object stored in `data_json` and printed as `data`.
    pub(crate) fn to_value(&self) -> Value {
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
                roster,
            } => serde_json::to_value(PeerD {
                messages: messages.clone(),
                omitted: *omitted,
                room: room.clone(),
                roster: roster.clone(),
            }),
            ChunkData::Image { media_type, data } => serde_json::to_value(ImageD {
                media_type: media_type.clone(),
                data: data.clone(),
            }),
        };
        v.expect("chunk data serializes")
    }

    /// The `data_json` text: serialized straight from the fields (no intermediate `Value`),
    /// in the same field order as `to_value`.
    pub(crate) fn to_json(&self) -> String {
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
                roster,
            } => serde_json::to_string(&PeerS {
                messages,
                omitted: *omitted,
                room,
                roster,
            }),
            ChunkData::Image { media_type, data } => {
                serde_json::to_string(&ImageS { media_type, data })
            }
        };
        r.expect("chunk data serializes")
    }

    /// Decode `data` from its JSON text straight into the typed fields. Falls back to the
    /// `Value` path for the precise error message when the text does not fit.
    pub(crate) fn from_json(ty: ChunkType, text: &str) -> Result<ChunkData, String> {
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
                    roster: d.roster,
                }),
            ChunkType::Image => serde_json::from_str::<ImageD>(text)
                .ok()
                .filter(|d| super::image::check(&d.media_type, &d.data).is_ok())
                .map(|d| ChunkData::Image {
                    media_type: d.media_type,
                    data: d.data,
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
    pub(crate) fn from_value(ty: ChunkType, value: Value) -> Result<ChunkData, String> {
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
            ChunkType::System => system_from(value)?,
            ChunkType::Peer => {
                let d: PeerD = serde_json::from_value(value).map_err(e)?;
                ChunkData::Peer {
                    messages: d.messages,
                    omitted: d.omitted,
                    room: d.room,
                    roster: d.roster,
                }
            }
            ChunkType::Image => {
                let d: ImageD = serde_json::from_value(value).map_err(e)?;
                super::image::check(&d.media_type, &d.data)?;
                ChunkData::Image {
                    media_type: d.media_type,
                    data: d.data,
                }
            }
        })
    }
}

/// A system record: an object whose `kind` is a string, checked by [`check_system`].
fn system_from(value: Value) -> Result<ChunkData, String> {
    let Value::Object(m) = value else {
        return Err(format!(
            "must be a JSON object for a system chunk, found {}",
            json_kind(&value)
        ));
    };
    match m.get("kind") {
        Some(Value::String(_)) => {
            check_system(&m)?;
            Ok(ChunkData::System(m))
        }
        Some(other) => Err(format!(
            "`kind` must be a string, found {}",
            json_kind(other)
        )),
        None => Err("missing field `kind`".into()),
    }
}

/// The typed fields of the system records that have them: a `turn_end` names a known
/// [`StopReason`], so a typo or a damaged row is an error where it is read, never a turn
/// that ended in some unheard-of way.
fn check_system(m: &Map<String, Value>) -> Result<(), String> {
    if m.get("kind").and_then(Value::as_str) != Some(TURN_END) {
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
