//! The shared half of the importers: stable ids, and a builder that turns "a person said",
//! "the model sent this block", "a tool answered" into chunks with the right turns and steps,
//! closing each turn with a `turn_end` that carries the usage the source recorded.

use std::collections::HashSet;

use serde_json::{json, Value};

use super::SourceKind;
use crate::log::{ChunkData, NewChunk, Role, StopReason};

/// A uuid-shaped id (version 8) derived from `parts`: FNV-1a over the parts, 128 bits. The
/// same source line always gets the same id, which is what makes re-import idempotent.
pub(crate) fn stable_id(parts: &[&str]) -> String {
    const OFFSET: u128 = 0x6c62272e07bb014262b821756295c58d;
    const PRIME: u128 = 0x0000000001000000000000000000013B;
    let mut h = OFFSET;
    for (i, p) in parts.iter().enumerate() {
        if i > 0 {
            h ^= 0x1f;
            h = h.wrapping_mul(PRIME);
        }
        for b in p.bytes() {
            h ^= u128::from(b);
            h = h.wrapping_mul(PRIME);
        }
    }
    // FNV's low bits mix poorly over short inputs: fold the halves together once.
    h ^= h >> 64;
    h = h.wrapping_mul(PRIME);
    let mut b = h.to_be_bytes();
    b[6] = (b[6] & 0x0f) | 0x80;
    b[8] = (b[8] & 0x3f) | 0x80;
    uuid::Uuid::from_bytes(b).hyphenated().to_string()
}

pub(crate) use crate::log::Usage;

struct OpenTurn {
    id: String,
    step: i64,
    /// What the source calls the current step (a message id), to merge lines of one step.
    step_key: Option<String>,
    started: i64,
    last_ts: i64,
    usage: Usage,
    step_usage: Usage,
    model: Option<String>,
    stop_reason: Option<StopReason>,
    open_calls: HashSet<String>,
}

/// Builds one session's chunks in order.
pub(crate) struct Builder {
    kind: SourceKind,
    source_id: String,
    pub(crate) chunks: Vec<NewChunk>,
    turn: Option<OpenTurn>,
    last_ts: i64,
    /// The model of the latest step, for `turn_end`.
    pub(crate) model: Option<String>,
}

impl Builder {
    pub(crate) fn new(kind: SourceKind, source_id: &str) -> Builder {
        Builder {
            kind,
            source_id: source_id.to_string(),
            chunks: Vec::new(),
            turn: None,
            last_ts: 0,
            model: None,
        }
    }

    pub(crate) fn id(&self, key: &str) -> String {
        stable_id(&[self.kind.as_str(), &self.source_id, key])
    }

    /// A line's time, or the previous one's when it has none (never going backwards).
    fn ts(&mut self, ts: Option<i64>) -> i64 {
        let t = ts.unwrap_or(self.last_ts).max(self.last_ts);
        self.last_ts = t;
        t
    }

    fn push(&mut self, key: &str, role: Role, data: ChunkData, ts: i64) {
        let turn = self.turn.as_mut().expect("a turn is open");
        turn.last_ts = ts;
        let mut c = NewChunk::new(role, data).in_turn(&turn.id, turn.step);
        c.id = Some(self.id(key));
        c.ts = Some(ts);
        self.chunks.push(c);
    }

    fn open_turn(&mut self, key: &str, ts: i64) {
        self.turn = Some(OpenTurn {
            id: self.id(&format!("turn:{key}")),
            step: 0,
            step_key: None,
            started: ts,
            last_ts: ts,
            usage: Usage::default(),
            step_usage: Usage::default(),
            model: None,
            stop_reason: None,
            open_calls: HashSet::new(),
        });
    }

    /// Whether the open turn has had a model step yet.
    pub(crate) fn in_model_step(&self) -> bool {
        self.turn.as_ref().is_some_and(|t| t.step > 0)
    }

    pub(crate) fn turn_open(&self) -> bool {
        self.turn.is_some()
    }

    /// What a person typed: starts a turn, unless the open turn has no model step yet (the
    /// person's input came in several lines, like a slash command and its expansion).
    pub(crate) fn user_text(&mut self, key: &str, text: String, ts: Option<i64>) {
        let ts = self.ts(ts);
        if self.in_model_step() {
            self.end_turn(None);
        }
        if self.turn.is_none() {
            self.open_turn(key, ts);
        }
        self.push(key, Role::User, ChunkData::Text { text }, ts);
    }

    /// An assistant block; `step_key` names the model round trip it belongs to.
    pub(crate) fn assistant(
        &mut self,
        key: &str,
        step_key: &str,
        data: ChunkData,
        ts: Option<i64>,
    ) {
        let ts = self.ts(ts);
        if self.turn.is_none() {
            self.open_turn(key, ts);
        }
        let turn = self.turn.as_mut().expect("open");
        if turn.step == 0 || turn.step_key.as_deref() != Some(step_key) {
            let u = std::mem::take(&mut turn.step_usage);
            turn.usage.add(&u);
            turn.step += 1;
            turn.step_key = Some(step_key.to_string());
            turn.stop_reason = None;
        }
        if let ChunkData::ToolCall { call_id, .. } = &data {
            turn.open_calls.insert(call_id.clone());
        }
        self.push(key, Role::Assistant, data, ts);
    }

    /// A tool's answer, in the step of its call.
    pub(crate) fn tool_result(&mut self, key: &str, data: ChunkData, ts: Option<i64>) {
        let ts = self.ts(ts);
        if self.turn.is_none() {
            self.open_turn(key, ts);
        }
        if let (ChunkData::ToolResult { call_id, .. }, Some(t)) = (&data, self.turn.as_mut()) {
            t.open_calls.remove(call_id);
        }
        self.push(key, Role::Tool, data, ts);
    }

    /// A display-only record (or an error) in the open turn, or in a turn of its own.
    pub(crate) fn record(&mut self, key: &str, data: ChunkData, ts: Option<i64>) {
        let ts = self.ts(ts);
        if self.turn.is_none() {
            self.open_turn(key, ts);
        }
        self.push(key, Role::System, data, ts);
    }

    /// `system/compaction` (DESIGN §3). Nothing of the source's context survives a compaction
    /// but the summary, so nothing is kept verbatim: `kept_from_seq` is the record's own seq.
    pub(crate) fn compaction(
        &mut self,
        key: &str,
        summary: String,
        trigger: &str,
        tokens_before: Option<i64>,
        ts: Option<i64>,
    ) {
        // Between turns, the record opens the next one (the person's next words join it).
        if self.turn_finished() {
            self.end_turn(None);
        }
        let seq = self.chunks.len() as i64 + 1;
        let model = self.model.clone();
        let data = ChunkData::system(
            "compaction",
            json!({
                "summary": summary,
                "through_seq": seq - 1,
                "kept_from_seq": seq,
                "trigger": trigger,
                "tokens_before": tokens_before,
                "tokens_after": Value::Null,
                "model": model,
            }),
        );
        self.record(key, data, ts);
    }

    /// The usage of the current step, as last reported (sources repeat it on every line of
    /// a step, growing).
    pub(crate) fn step_usage(&mut self, u: Usage) {
        if let Some(t) = self.turn.as_mut() {
            t.step_usage = u;
        }
    }

    /// Usage the source reports for the turn as a whole, added up.
    pub(crate) fn add_usage(&mut self, u: Usage) {
        if let Some(t) = self.turn.as_mut() {
            t.usage.add(&u);
        }
    }

    pub(crate) fn step_model(&mut self, model: &str) {
        self.model = Some(model.to_string());
        if let Some(t) = self.turn.as_mut() {
            t.model = Some(model.to_string());
        }
    }

    pub(crate) fn stop_reason(&mut self, reason: StopReason) {
        if let Some(t) = self.turn.as_mut() {
            t.stop_reason = Some(reason);
        }
    }

    /// Whether the open turn looks finished: its last step stopped on its own and no call is
    /// waiting for an answer.
    pub(crate) fn turn_finished(&self) -> bool {
        self.turn.as_ref().is_some_and(|t| {
            t.open_calls.is_empty()
                && matches!(
                    t.stop_reason,
                    Some(
                        StopReason::EndTurn
                            | StopReason::StopSequence
                            | StopReason::MaxTokens
                            | StopReason::Refusal
                    )
                )
        })
    }

    /// Whether the open turn has a model step and every call in it has its answer.
    pub(crate) fn calls_answered(&self) -> bool {
        self.turn
            .as_ref()
            .is_some_and(|t| t.step > 0 && t.open_calls.is_empty())
    }

    /// Close the open turn with `turn_end` (`stop_reason` defaults to the last step's).
    pub(crate) fn end_turn(&mut self, stop_reason: Option<StopReason>) {
        let Some(mut t) = self.turn.take() else {
            return;
        };
        let u = std::mem::take(&mut t.step_usage);
        t.usage.add(&u);
        let reason = stop_reason.or(t.stop_reason).unwrap_or(StopReason::EndTurn);
        let data = ChunkData::system(
            crate::log::TURN_END,
            json!({
                "stop_reason": reason,
                "usage": {
                    "input": t.usage.input,
                    "output": t.usage.output,
                    "cache_read": t.usage.cache_read,
                    "cache_write": t.usage.cache_write,
                },
                "model": t.model.clone().or(self.model.clone()).unwrap_or_default(),
                "duration_ms": (t.last_ts - t.started).max(0),
            }),
        );
        let mut c = NewChunk::new(Role::System, data).in_turn(&t.id, t.step);
        c.id = Some(self.id(&format!("turn_end:{}", t.id)));
        c.ts = Some(t.last_ts);
        self.chunks.push(c);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stable_ids_are_uuid_shaped_and_differ_by_part_boundaries() {
        let a = stable_id(&["claude-code", "s", "u1"]);
        assert_eq!(a, stable_id(&["claude-code", "s", "u1"]));
        assert_ne!(a, stable_id(&["claude-code", "su", "1"]));
        assert_eq!(a.len(), 36);
        assert_eq!(&a[14..15], "8", "{a}");
        assert!(uuid::Uuid::parse_str(&a).is_ok());
    }

    #[test]
    fn turns_steps_and_usage() {
        let mut b = Builder::new(SourceKind::Codex, "s");
        b.user_text("1", "hi".into(), Some(10));
        b.assistant("2", "m1", ChunkData::text("a"), Some(11));
        b.step_usage(Usage {
            input: 5,
            output: 1,
            ..Default::default()
        });
        b.assistant(
            "3",
            "m1",
            ChunkData::ToolCall {
                call_id: "c".into(),
                name: "read".into(),
                arguments: json!({}),
            },
            None,
        );
        assert!(!b.turn_finished());
        b.step_usage(Usage {
            input: 5,
            output: 2,
            ..Default::default()
        });
        b.tool_result(
            "4",
            ChunkData::ToolResult {
                call_id: "c".into(),
                name: "read".into(),
                result: json!("x"),
                is_error: false,
                synthetic: false,
            },
            Some(12),
        );
        b.assistant("5", "m2", ChunkData::text("done"), Some(13));
        b.stop_reason(StopReason::EndTurn);
        assert!(b.turn_finished());
        b.user_text("6", "next".into(), Some(20));
        let steps: Vec<i64> = b.chunks.iter().map(|c| c.step).collect();
        assert_eq!(steps, vec![0, 1, 1, 1, 2, 2, 0]);
        let end = &b.chunks[5];
        assert_eq!(end.data.system_kind(), Some("turn_end"));
        let v = end.data.to_value();
        assert_eq!(v["usage"]["input"], 5);
        assert_eq!(v["usage"]["output"], 2);
        assert_eq!(v["duration_ms"], 3);
        assert_ne!(b.chunks[6].turn, b.chunks[0].turn);
    }
}
