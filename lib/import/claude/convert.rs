//! Claude Code lines becoming chunks: a person's words, assistant blocks (one step per
//! message id), tool results, compactions, errors; and what bookkeeping ends a turn.

use std::collections::HashMap;

use serde_json::Value;

use super::{blocks, Line, Obj};
use crate::import::plan::{Builder, Usage};
use crate::import::SourceKind;
use crate::log::{ChunkData, StopReason};

/// Lines of one conversation becoming chunks.
pub(super) struct Conversion {
    pub(super) b: Builder,
    /// Tool names by call id, for the results.
    names: HashMap<String, String>,
    /// A compact boundary waiting for its summary: (trigger, tokens before).
    compact: Option<(String, Option<i64>)>,
    pub(super) skipped: usize,
}

const INTERRUPTED: &str = "[Request interrupted by user";

impl Conversion {
    pub(super) fn new(source_id: &str) -> Conversion {
        Conversion {
            b: Builder::new(SourceKind::ClaudeCode, source_id),
            names: HashMap::new(),
            compact: None,
            skipped: 0,
        }
    }

    /// Returns whether the line gave anything.
    pub(super) fn line(&mut self, l: &Line) -> bool {
        match l.ty() {
            "user" if l.flag("isMeta") => false,
            "user" if l.flag("isCompactSummary") => {
                let text = l.message().map(user_text).unwrap_or_default();
                let (trigger, before) = self.compact.take().unwrap_or(("auto".into(), None));
                self.b.compaction(&l.key(), text, &trigger, before, l.ts());
                true
            }
            "user" => self.user(l),
            "assistant" => self.assistant(l),
            "system" => self.system(l),
            _ => false,
        }
    }

    fn user(&mut self, l: &Line) -> bool {
        let Some(m) = l.message() else { return false };
        let key = l.key();
        if let Some(Value::String(s)) = m.get("content") {
            return self.human(&key, s, l.ts());
        }
        let mut any = false;
        for (j, b) in blocks(m).into_iter().enumerate() {
            let bkey = format!("{key}:{j}");
            any |= match b.get("type").and_then(Value::as_str) {
                Some("text") => {
                    let t = b.get("text").and_then(Value::as_str).unwrap_or("");
                    self.human(&bkey, t, l.ts())
                }
                Some("tool_result") => {
                    let call_id = b
                        .get("tool_use_id")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string();
                    if call_id.is_empty() {
                        continue;
                    }
                    let name = self.names.get(&call_id).cloned().unwrap_or_default();
                    let data = ChunkData::ToolResult {
                        call_id,
                        name,
                        result: Value::String(result_text(b.get("content"))),
                        is_error: b.get("is_error").and_then(Value::as_bool).unwrap_or(false),
                        synthetic: false,
                    };
                    self.b.tool_result(&bkey, data, l.ts());
                    true
                }
                Some("image") | Some("document") => {
                    self.b.user_text(&bkey, attachment(b), l.ts());
                    true
                }
                _ => false,
            };
        }
        any
    }

    fn human(&mut self, key: &str, text: &str, ts: Option<i64>) -> bool {
        if text.trim().is_empty() {
            return false;
        }
        if text.starts_with(INTERRUPTED) {
            if !self.b.turn_open() {
                return false;
            }
            self.b.end_turn(Some(StopReason::Interrupted));
            return true;
        }
        self.b.user_text(key, crate::import::typed_text(text), ts);
        true
    }

    fn assistant(&mut self, l: &Line) -> bool {
        let Some(m) = l.message() else { return false };
        let model = m.get("model").and_then(Value::as_str).unwrap_or("");
        let key = l.key();
        if model == "<synthetic>" {
            if !l.flag("isApiErrorMessage") {
                return false;
            }
            let message = user_text(m);
            let data = ChunkData::Error {
                message,
                status: None,
            };
            self.b.record(&key, data, l.ts());
            return true;
        }
        let step = m
            .get("id")
            .and_then(Value::as_str)
            .or(l.s("requestId"))
            .unwrap_or(&key)
            .to_string();
        let mut any = false;
        for (j, b) in blocks(m).into_iter().enumerate() {
            let Some(data) = self.assistant_block(b) else {
                continue;
            };
            self.b.assistant(&format!("{key}:{j}"), &step, data, l.ts());
            any = true;
        }
        if any {
            if !model.is_empty() {
                self.b.step_model(model);
            }
            if let Some(u) = m.get("usage").and_then(Value::as_object) {
                let n = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
                self.b.step_usage(Usage {
                    input: n("input_tokens"),
                    output: n("output_tokens"),
                    cache_read: n("cache_read_input_tokens"),
                    cache_write: n("cache_creation_input_tokens"),
                });
            }
            if let Some(r) = m.get("stop_reason").and_then(Value::as_str) {
                self.b.stop_reason(StopReason::from_provider(r));
            }
        }
        any
    }

    fn assistant_block(&mut self, b: &Obj) -> Option<ChunkData> {
        let s = |k: &str| b.get(k).and_then(Value::as_str);
        Some(match s("type")? {
            // Whitespace-only text is refused by providers, and says nothing.
            "text" => ChunkData::text(s("text").filter(|t| !t.trim().is_empty())?),
            "thinking" => ChunkData::Thinking {
                text: s("thinking").unwrap_or_default().to_string(),
                signature: s("signature").filter(|t| !t.is_empty()).map(str::to_string),
                redacted: None,
            },
            "redacted_thinking" => ChunkData::Thinking {
                text: String::new(),
                signature: None,
                redacted: Some(s("data")?.to_string()),
            },
            "tool_use" => {
                let call_id = s("id").filter(|t| !t.is_empty())?.to_string();
                let name = s("name").unwrap_or_default().to_string();
                self.names.insert(call_id.clone(), name.clone());
                ChunkData::ToolCall {
                    call_id,
                    name,
                    arguments: b.get("input").cloned().unwrap_or(Value::Null),
                }
            }
            _ => return None,
        })
    }

    fn system(&mut self, l: &Line) -> bool {
        match l.s("subtype").unwrap_or("") {
            "compact_boundary" => {
                let meta = l.obj.get("compactMetadata").and_then(Value::as_object);
                let trigger = meta
                    .and_then(|m| m.get("trigger"))
                    .and_then(Value::as_str)
                    .unwrap_or("auto");
                let before = meta
                    .and_then(|m| m.get("preTokens"))
                    .and_then(Value::as_i64);
                self.compact = Some((trigger.to_string(), before));
                true
            }
            "turn_duration" | "stop_hook_summary" if self.b.in_model_step() => {
                self.b.end_turn(None);
                true
            }
            // A command the person ran in Claude Code (`/model`) and what it printed: kept as
            // what they are, a record beside the conversation (the model never saw them).
            "local_command" => {
                let text = crate::import::typed_text(l.s("content").unwrap_or_default());
                if text.trim().is_empty() {
                    return false;
                }
                let data = ChunkData::system("local_command", serde_json::json!({ "text": text }));
                self.b.record(&l.key(), data, l.ts());
                true
            }
            "api_error" => {
                let message = l
                    .obj
                    .get("error")
                    .and_then(|e| e.get("message").or(Some(e)))
                    .map(|v| v.as_str().map(str::to_string).unwrap_or(v.to_string()))
                    .or(l.s("content").map(str::to_string))
                    .unwrap_or_else(|| "API error".into());
                let data = ChunkData::Error {
                    message,
                    status: None,
                };
                self.b.record(&l.key(), data, l.ts());
                true
            }
            _ => false,
        }
    }
}

/// The text of a message: its string content, or its text blocks joined.
pub(super) fn user_text(m: &Obj) -> String {
    match m.get("content") {
        Some(Value::String(s)) => s.clone(),
        _ => blocks(m)
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
    }
}

/// A tool result's content as text: text blocks joined, attachments as references.
fn result_text(content: Option<&Value>) -> String {
    match content {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(a)) => a
            .iter()
            .map(|b| match b.as_object() {
                Some(o) if o.get("type").and_then(Value::as_str) == Some("text") => o
                    .get("text")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
                Some(o)
                    if matches!(
                        o.get("type").and_then(Value::as_str),
                        Some("image" | "document")
                    ) =>
                {
                    attachment(o)
                }
                _ => b.to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Some(other) => other.to_string(),
    }
}

/// An image or document kept as a reference: its kind, media type, size and a digest, so it
/// can be told apart and found again in the source file, without its bytes.
fn attachment(b: &Obj) -> String {
    let ty = b
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("attachment");
    let src = b.get("source").and_then(Value::as_object);
    let media = src
        .and_then(|s| s.get("media_type"))
        .and_then(Value::as_str)
        .unwrap_or("unknown type");
    let data = src
        .and_then(|s| s.get("data").or(s.get("url")))
        .and_then(Value::as_str)
        .unwrap_or("");
    let digest = &crate::import::stable_id(&[data])[..8];
    let kb = (data.len() * 3 / 4).div_ceil(1024);
    format!("[{ty}: {media}, {kb} KB, not imported; digest {digest}]")
}
