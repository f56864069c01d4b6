//! What `--json` prints while a session runs or is followed (DESIGN §2 "Live events"): one
//! typed value per event kind and one serializer, so `ag-prompt --json`, `ag-log tail -f
//! --json` and the live file carry the same fields for the same event. Every event names its
//! session.

use serde::Serialize;
use serde_json::Value;

use super::StopReason;

/// Token counts: of one step as the provider reported them, of a turn as its `turn_end`
/// records them, of an imported turn as its source did. The one shape, in events too.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Usage {
    #[serde(default)]
    pub input: u64,
    #[serde(default)]
    pub output: u64,
    #[serde(default)]
    pub cache_read: u64,
    #[serde(default)]
    pub cache_write: u64,
}

impl Usage {
    /// Add `o`'s counts to these.
    pub fn add(&mut self, o: &Usage) {
        self.input += o.input;
        self.output += o.output;
        self.cache_read += o.cache_read;
        self.cache_write += o.cache_write;
    }
}

/// One line of NDJSON a running or followed session prints.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub(crate) enum LiveEvent {
    /// `ag-prompt --json`'s first line: the session and its sandbox.
    Session {
        session: String,
        sandbox: Value,
    },
    /// A prompt queued for the process that runs the session.
    Queued {
        session: String,
        owner_pid: i64,
    },
    ChunkOpen {
        session: String,
        id: String,
        turn: String,
        step: i64,
        role: &'static str,
        chunk_type: &'static str,
    },
    ChunkDelta {
        session: String,
        id: String,
        text: String,
    },
    /// A chunk as stored (`Chunk::to_value`).
    ChunkSeal {
        session: String,
        chunk: Value,
    },
    Retry {
        session: String,
        attempt: u32,
        wait_ms: u64,
        reason: String,
    },
    Warning {
        session: String,
        message: String,
    },
    Compacted {
        session: String,
        trigger: &'static str,
        tokens_before: u64,
        tokens_after: u64,
        model: String,
    },
    Pruned {
        session: String,
        cleared: usize,
        tokens_before: u64,
        tokens_after: u64,
    },
    CompactFailed {
        session: String,
        trigger: &'static str,
        reason: String,
    },
    /// An MCP server's report on the running call.
    ToolProgress {
        session: String,
        name: String,
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
    },
    TurnDone(TurnDone),
}

/// A turn ended: how, and what it used and cost.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct TurnDone {
    pub(crate) session: String,
    pub(crate) turn: String,
    pub(crate) stop_reason: StopReason,
    pub(crate) usage: Usage,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) cost_usd: Option<f64>,
}

impl TurnDone {
    /// The event of a stored `turn_end` record's fields.
    pub(crate) fn from_record(session: &str, turn: &str, end: &Value) -> TurnDone {
        TurnDone {
            session: session.to_string(),
            turn: turn.to_string(),
            stop_reason: end["stop_reason"]
                .as_str()
                .and_then(StopReason::parse)
                .unwrap_or(StopReason::Unknown),
            usage: serde_json::from_value(end["usage"].clone()).unwrap_or_default(),
            cost_usd: end["cost_usd"].as_f64(),
        }
    }
}

impl LiveEvent {
    /// The event as JSON.
    pub(crate) fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// The event as one NDJSON line (no newline).
    pub(crate) fn to_line(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// One of each kind, in the order the enum lists them; the match makes a new kind without
    /// a sample a compile error.
    fn one_of_each() -> Vec<LiveEvent> {
        let s = || "s1".to_string();
        let all = vec![
            LiveEvent::Session {
                session: s(),
                sandbox: json!({"mode": "workspace-write", "network": false}),
            },
            LiveEvent::Queued {
                session: s(),
                owner_pid: 4242,
            },
            LiveEvent::ChunkOpen {
                session: s(),
                id: "c1".into(),
                turn: "t1".into(),
                step: 1,
                role: "assistant",
                chunk_type: "text",
            },
            LiveEvent::ChunkDelta {
                session: s(),
                id: "c1".into(),
                text: "Hel".into(),
            },
            LiveEvent::ChunkSeal {
                session: s(),
                chunk: json!({"id": "c1", "seq": 3, "type": "text", "data": {"text": "Hello"}}),
            },
            LiveEvent::Retry {
                session: s(),
                attempt: 2,
                wait_ms: 1500,
                reason: "the provider answered 529 (overloaded)".into(),
            },
            LiveEvent::Warning {
                session: s(),
                message: "mcp: server git failed to start".into(),
            },
            LiveEvent::Compacted {
                session: s(),
                trigger: "auto",
                tokens_before: 142_000,
                tokens_after: 9_000,
                model: "anthropic/claude-haiku-4-5".into(),
            },
            LiveEvent::Pruned {
                session: s(),
                cleared: 4,
                tokens_before: 12_000,
                tokens_after: 6_000,
            },
            LiveEvent::CompactFailed {
                session: s(),
                trigger: "overflow",
                reason: "the summarizer failed: 500".into(),
            },
            LiveEvent::ToolProgress {
                session: s(),
                name: "mcp__git__index".into(),
                progress: 3.0,
                total: Some(8.0),
                message: Some("indexing src".into()),
            },
            LiveEvent::TurnDone(TurnDone {
                session: s(),
                turn: "t1".into(),
                stop_reason: StopReason::EndTurn,
                usage: Usage {
                    input: 120,
                    output: 30,
                    cache_read: 100,
                    cache_write: 0,
                },
                cost_usd: Some(0.0012),
            }),
        ];
        for e in &all {
            match e {
                LiveEvent::Session { .. }
                | LiveEvent::Queued { .. }
                | LiveEvent::ChunkOpen { .. }
                | LiveEvent::ChunkDelta { .. }
                | LiveEvent::ChunkSeal { .. }
                | LiveEvent::Retry { .. }
                | LiveEvent::Warning { .. }
                | LiveEvent::Compacted { .. }
                | LiveEvent::Pruned { .. }
                | LiveEvent::CompactFailed { .. }
                | LiveEvent::ToolProgress { .. }
                | LiveEvent::TurnDone(_) => {}
            }
        }
        all
    }

    /// Each kind's line, as scripts read it: a change of a field name or shape shows here.
    #[test]
    fn every_event_kind_prints_its_fields() {
        let lines: Vec<String> = one_of_each().iter().map(LiveEvent::to_line).collect();
        insta::assert_snapshot!(lines.join("\n"));
        for e in one_of_each() {
            assert_eq!(e.to_value()["session"], "s1", "{e:?}");
        }
    }

    #[test]
    fn a_stored_turn_end_and_a_live_turn_print_the_same_event() {
        let end = json!({"kind": "turn_end", "stop_reason": "end_turn",
                         "usage": {"input": 10, "output": 2, "cache_read": 0, "cache_write": 0},
                         "cost_usd": 0.001});
        let stored = LiveEvent::TurnDone(TurnDone::from_record("s1", "t1", &end));
        let live = LiveEvent::TurnDone(TurnDone {
            session: "s1".into(),
            turn: "t1".into(),
            stop_reason: StopReason::EndTurn,
            usage: Usage {
                input: 10,
                output: 2,
                ..Default::default()
            },
            cost_usd: Some(0.001),
        });
        assert_eq!(stored.to_line(), live.to_line());
        assert_eq!(
            stored.to_value(),
            json!({"type": "turn-done", "session": "s1", "turn": "t1", "stop_reason": "end_turn",
                   "usage": {"input": 10, "output": 2, "cache_read": 0, "cache_write": 0},
                   "cost_usd": 0.001})
        );
    }
}
