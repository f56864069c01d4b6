//! Codex rollouts (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`): `{timestamp, type,
//! payload}` lines. `session_meta` names the session, `turn_context` the model, and
//! `response_item`s are the conversation the model saw: messages, reasoning, function and
//! custom tool calls and their outputs. `compacted` is a compaction. `event_msg` lines are
//! what the terminal showed; they give no chunks, but `user_message` carries the person's
//! words when no response item does, `token_count` the usage and `task_complete` the end of
//! a turn. Older rollouts put items on lines of their own, without the envelope.

use serde_json::{json, Map, Value};

use super::plan::{Builder, Usage};
use super::{lines, object, ImportError, LineProblem, Parsed, PlannedSession, Source, SourceKind};
use crate::log::{ChunkData, StopReason};

type Obj = Map<String, Value>;

/// Messages Codex puts in the user role that no person typed: instructions and environment.
const CONTEXT_PREFIXES: &[&str] = &[
    "<environment_context>",
    "<user_instructions>",
    "# AGENTS.md instructions",
    "<permissions instructions>",
    "<collaboration_mode>",
    "<skills_instructions>",
    "<plugins_instructions>",
    "<turn_aborted>",
];

pub(crate) fn parse(name: &str, bytes: &[u8]) -> Result<Parsed, ImportError> {
    let mut parsed = Parsed::default();
    let mut rollout = Rollout::new(name);
    let mut any = false;
    let mut used_lines = 0usize;
    let mut readable = 0usize;
    for (n, text) in lines(bytes) {
        let obj = match object(&text) {
            Ok(o) => o,
            Err(message) => {
                parsed.problems.push(LineProblem { line: n, message });
                continue;
            }
        };
        readable += 1;
        let ts = obj
            .get("timestamp")
            .and_then(Value::as_str)
            .and_then(crate::clock::parse_iso);
        let ty = obj.get("type").and_then(Value::as_str).unwrap_or("");
        let payload = obj.get("payload").and_then(Value::as_object);
        let used = match (ty, payload) {
            ("session_meta", Some(p)) => {
                any = true;
                rollout.meta(p, ts)
            }
            ("turn_context", Some(p)) => rollout.turn_context(p),
            ("response_item", Some(p)) => {
                any = true;
                rollout.item(n, p, ts)
            }
            ("event_msg", Some(p)) => {
                any = true;
                rollout.event(n, p, ts)
            }
            ("compacted", Some(p)) => rollout.compacted(n, p, ts),
            // The envelope-less layout of early rollouts.
            (_, None) if obj.contains_key("id") && obj.contains_key("instructions") => {
                any = true;
                rollout.meta(&obj, ts)
            }
            (_, None) if is_item(ty) => {
                any = true;
                rollout.item(n, &obj, ts)
            }
            _ => false,
        };
        used_lines += usize::from(used);
    }
    if readable == 0 {
        return Ok(parsed);
    }
    if !any {
        return Err(ImportError::WrongFormat {
            expected: SourceKind::Codex,
            why: "no session_meta, response_item or event_msg line".into(),
        });
    }
    let skipped = readable - used_lines + parsed.problems.len();
    parsed.sessions.push(rollout.finish(skipped));
    Ok(parsed)
}

fn is_item(ty: &str) -> bool {
    matches!(ty, "message" | "reasoning") || ty.ends_with("_call") || ty.ends_with("_call_output")
}

struct Rollout {
    source_id: String,
    meta_seen: bool,
    b: Builder,
    version: Option<String>,
    cwd: Option<String>,
    provider: Option<String>,
    model: Option<String>,
    created_at: Option<i64>,
    /// Tool names by call id.
    names: std::collections::HashMap<String, String>,
    /// The person's latest words, until the model answers: the same words come again as an
    /// event (or as an item, when the event came first) and must not start a second turn.
    pending_human: Option<String>,
    /// A tool output ended the model's step; the next assistant item starts another.
    step_closed: bool,
    step_no: usize,
    /// `total_token_usage` as last reported, to turn running totals into per-turn usage.
    total: Option<Usage>,
    last_input: Option<i64>,
    first_human: Option<String>,
    /// The rollout reports its turns' lifecycle (`task_started`, `task_complete`,
    /// `turn_aborted`): only those events end a turn, so a file still being written never
    /// gets an end its source has not written yet.
    lifecycle: bool,
}

impl Rollout {
    fn new(name: &str) -> Rollout {
        let stem = name.strip_suffix(".jsonl").unwrap_or(name).to_string();
        Rollout {
            b: Builder::new(SourceKind::Codex, &stem),
            source_id: stem,
            meta_seen: false,
            version: None,
            cwd: None,
            provider: None,
            model: None,
            created_at: None,
            names: Default::default(),
            pending_human: None,
            step_closed: true,
            step_no: 0,
            total: None,
            last_input: None,
            first_human: None,
            lifecycle: false,
        }
    }

    fn meta(&mut self, p: &Obj, ts: Option<i64>) -> bool {
        let s = |k: &str| p.get(k).and_then(Value::as_str).map(str::to_string);
        // A resumed rollout repeats the meta of the session it came from: the first one names
        // this file's session.
        if !self.meta_seen {
            self.meta_seen = true;
            if let Some(id) = s("id").filter(|i| !i.is_empty()) {
                if self.b.chunks.is_empty() {
                    self.source_id = id;
                    self.b = Builder::new(SourceKind::Codex, &self.source_id);
                }
            }
            self.created_at = p
                .get("timestamp")
                .and_then(Value::as_str)
                .and_then(crate::clock::parse_iso)
                .or(ts);
        }
        self.version = s("cli_version").or(self.version.take());
        self.cwd = self.cwd.take().or(s("cwd"));
        self.provider = s("model_provider").or(self.provider.take());
        true
    }

    fn turn_context(&mut self, p: &Obj) -> bool {
        if let Some(m) = p.get("model").and_then(Value::as_str) {
            self.model = Some(m.to_string());
            self.b.step_model(m);
        }
        if let Some(c) = p.get("cwd").and_then(Value::as_str) {
            self.cwd.get_or_insert_with(|| c.to_string());
        }
        true
    }

    fn human(&mut self, key: &str, text: String, ts: Option<i64>) -> bool {
        let text = crate::import::typed_text(&text);
        if text.trim().is_empty() || self.pending_human.as_deref() == Some(text.as_str()) {
            return false;
        }
        self.first_human.get_or_insert_with(|| text.clone());
        self.pending_human = Some(text.clone());
        self.step_closed = true;
        self.b.user_text(key, text, ts);
        true
    }

    fn item(&mut self, n: usize, p: &Obj, ts: Option<i64>) -> bool {
        let key = format!("line{n}");
        let ty = p.get("type").and_then(Value::as_str).unwrap_or("");
        let s = |k: &str| p.get(k).and_then(Value::as_str);
        match ty {
            "message" => match s("role").unwrap_or("") {
                "user" => {
                    let text = content_text(p.get("content"));
                    if CONTEXT_PREFIXES
                        .iter()
                        .any(|c| text.trim_start().starts_with(c))
                    {
                        return false;
                    }
                    self.human(&key, text, ts)
                }
                "assistant" => {
                    let text = content_text(p.get("content"));
                    if text.trim().is_empty() {
                        return false;
                    }
                    self.assistant(&key, ChunkData::text(text), ts);
                    if s("phase") == Some("final_answer") {
                        self.b.stop_reason(StopReason::EndTurn);
                    }
                    true
                }
                _ => false,
            },
            "reasoning" => self.reasoning(&key, p, ts),
            "web_search_call" => {
                let data = ChunkData::system("web_search", json!({"action": p.get("action")}));
                self.b.record(&key, data, ts);
                true
            }
            t if t.ends_with("_call_output") => self.output(&key, p, ts),
            t if t.ends_with("_call") => self.call(&key, p, ts),
            _ => false,
        }
    }

    fn assistant(&mut self, key: &str, data: ChunkData, ts: Option<i64>) {
        if self.step_closed {
            self.step_no += 1;
            self.step_closed = false;
        }
        self.pending_human = None;
        let step = format!("step{}", self.step_no);
        self.b.assistant(key, &step, data, ts);
        if let Some(m) = &self.model {
            let m = m.clone();
            self.b.step_model(&m);
        }
    }

    fn reasoning(&mut self, key: &str, p: &Obj, ts: Option<i64>) -> bool {
        let mut parts: Vec<String> = Vec::new();
        for field in ["summary", "content"] {
            if let Some(Value::Array(a)) = p.get(field) {
                parts.extend(
                    a.iter()
                        .filter_map(|b| b.get("text").and_then(Value::as_str))
                        .filter(|t| !t.is_empty())
                        .map(str::to_string),
                );
            }
        }
        let encrypted = p.get("encrypted_content").and_then(Value::as_str);
        if parts.is_empty() && encrypted.is_none() {
            return false;
        }
        if !parts.is_empty() {
            let data = ChunkData::Thinking {
                text: parts.join("\n\n"),
                signature: None,
                redacted: None,
            };
            self.assistant(key, data, ts);
        }
        if let Some(e) = encrypted {
            // OpenAI's opaque reasoning state: kept for the record, never sent to another
            // provider (it would be rejected), so it is a record and not a thinking block.
            let data = ChunkData::system(
                "reasoning",
                json!({"provider": "openai", "encrypted_content": e}),
            );
            self.b.record(&format!("{key}:enc"), data, ts);
        }
        true
    }

    fn call(&mut self, key: &str, p: &Obj, ts: Option<i64>) -> bool {
        let Some(call_id) = p
            .get("call_id")
            .or(p.get("id"))
            .and_then(Value::as_str)
            .filter(|c| !c.is_empty())
        else {
            return false;
        };
        let ty = p.get("type").and_then(Value::as_str).unwrap_or("tool_call");
        let name = p
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or(ty.trim_end_matches("_call"))
            .to_string();
        let arguments = match (p.get("arguments"), p.get("input"), p.get("action")) {
            (Some(Value::String(a)), _, _) => {
                serde_json::from_str(a).unwrap_or_else(|_| Value::String(a.clone()))
            }
            (Some(a), _, _) => a.clone(),
            // A custom tool takes free text: kept as an object so every dialect can carry it.
            (None, Some(i), _) => json!({ "input": i }),
            (None, None, Some(a)) => a.clone(),
            _ => json!({}),
        };
        self.names.insert(call_id.to_string(), name.clone());
        let data = ChunkData::ToolCall {
            call_id: call_id.to_string(),
            name,
            arguments,
        };
        self.assistant(key, data, ts);
        true
    }

    fn output(&mut self, key: &str, p: &Obj, ts: Option<i64>) -> bool {
        let Some(call_id) = p
            .get("call_id")
            .and_then(Value::as_str)
            .filter(|c| !c.is_empty())
        else {
            return false;
        };
        let out = p.get("output");
        let is_error = out
            .and_then(|o| o.get("success"))
            .and_then(Value::as_bool)
            .is_some_and(|ok| !ok);
        let result = match out {
            Some(Value::Object(o)) if o.contains_key("content") => content_text(o.get("content")),
            other => content_text(other),
        };
        let data = ChunkData::ToolResult {
            call_id: call_id.to_string(),
            name: self.names.get(call_id).cloned().unwrap_or_default(),
            result: Value::String(result),
            is_error,
            synthetic: false,
        };
        self.step_closed = true;
        self.b.tool_result(key, data, ts);
        true
    }

    fn event(&mut self, n: usize, p: &Obj, ts: Option<i64>) -> bool {
        let kind = p.get("type").and_then(Value::as_str).unwrap_or("");
        if matches!(kind, "task_started" | "task_complete" | "turn_aborted") {
            self.lifecycle = true;
        }
        match kind {
            "user_message" => {
                let text = p
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string();
                self.human(&format!("line{n}"), text, ts)
            }
            "token_count" => {
                self.token_count(p);
                false
            }
            "task_complete" if self.b.turn_open() => {
                self.b.end_turn(Some(StopReason::EndTurn));
                self.pending_human = None;
                true
            }
            "turn_aborted" if self.b.turn_open() => {
                self.b.end_turn(Some(StopReason::Interrupted));
                self.pending_human = None;
                true
            }
            _ => false,
        }
    }

    fn token_count(&mut self, p: &Obj) {
        let Some(total) = p
            .get("info")
            .and_then(|i| i.get("total_token_usage"))
            .and_then(Value::as_object)
        else {
            return;
        };
        let n = |k: &str| total.get(k).and_then(Value::as_u64).unwrap_or(0);
        let cached = n("cached_input_tokens");
        let now = Usage {
            input: n("input_tokens").saturating_sub(cached),
            output: n("output_tokens"),
            cache_read: cached,
            cache_write: 0,
        };
        let before = self.total.unwrap_or_default();
        self.total = Some(now);
        self.last_input = p
            .get("info")
            .and_then(|i| i.get("last_token_usage"))
            .and_then(|u| u.get("input_tokens"))
            .and_then(Value::as_i64)
            .or(self.last_input);
        self.b.add_usage(Usage {
            input: now.input.saturating_sub(before.input),
            output: now.output.saturating_sub(before.output),
            cache_read: now.cache_read.saturating_sub(before.cache_read),
            cache_write: 0,
        });
    }

    fn compacted(&mut self, n: usize, p: &Obj, ts: Option<i64>) -> bool {
        let summary = p
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        // Codex does not record what triggered it; a rollout's compactions are mostly the
        // automatic kind.
        self.b
            .compaction(&format!("line{n}"), summary, "auto", self.last_input, ts);
        self.step_closed = true;
        true
    }

    fn finish(mut self, skipped: usize) -> PlannedSession {
        // Older rollouts never say when a turn ends: a last step that stopped on its own is
        // taken as the end.
        if !self.lifecycle && self.b.turn_finished() {
            self.b.end_turn(None);
        }
        let model = self.model.as_ref().map(|m| {
            let provider = self.provider.as_deref().unwrap_or("openai");
            format!("{provider}/{m}")
        });
        PlannedSession {
            source: Source {
                kind: SourceKind::Codex,
                source_id: self.source_id,
                tool_version: self.version,
                leaf: None,
                parent_source_id: None,
            },
            kind: "chat".into(),
            title: crate::text::headline(self.first_human.as_deref().unwrap_or(""), 80),
            model,
            cwd: self.cwd,
            created_at: self.created_at,
            keep_id: None,
            agent: None,
            policy: None,
            chunks: self.b.chunks,
            skipped,
        }
    }
}

/// Text of a message's content: a string, or the text of its blocks joined by newlines.
fn content_text(content: Option<&Value>) -> String {
    match content {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(|b| match b {
                Value::String(s) => Some(s.clone()),
                Value::Object(o) => o.get("text").and_then(Value::as_str).map(str::to_string),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Some(other) => other.to_string(),
    }
}
