//! Compactions in the fold (DESIGN §3, "Compaction"): the `system/compaction` record, and how
//! a view that holds one folds — one user-side handoff message (the summary and the durable
//! state), then the chunks from `kept_from_seq` on. The log keeps everything; only the
//! latest compaction counts, and `--full` folds ignore them all.

use serde_json::{json, Map, Value};

use crate::log::{Chunk, ChunkData};

/// The `kind` of a compaction record.
pub(crate) const KIND: &str = "compaction";

/// What opens the handoff message: fixed text, so the fold stays byte-stable.
pub(crate) const HANDOFF_HEAD: &str =
    "[This conversation was compacted. What came before is summarized \
below; the full history stays in the session's log.]";

/// Why a compaction happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Trigger {
    /// The estimated input passed `compact_at` of the window.
    Auto,
    /// The provider said the request was too long.
    Overflow,
    /// A person or a script asked for it.
    Manual,
}

impl Trigger {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Trigger::Auto => "auto",
            Trigger::Overflow => "overflow",
            Trigger::Manual => "manual",
        }
    }

    pub(crate) fn parse(s: &str) -> Option<Trigger> {
        [Trigger::Auto, Trigger::Overflow, Trigger::Manual]
            .into_iter()
            .find(|t| t.as_str() == s)
    }
}

/// A `system/compaction` record.
#[derive(Debug, Clone, PartialEq)]
pub struct Compaction {
    pub(crate) summary: String,
    /// The last seq the summary covers.
    pub(crate) through_seq: i64,
    /// The first seq folded verbatim after the handoff (the kept suffix). Everything from it
    /// on folds, including what was appended after the compaction.
    pub(crate) kept_from_seq: i64,
    pub(crate) trigger: Trigger,
    pub(crate) tokens_before: u64,
    pub(crate) tokens_after: u64,
    /// The model that wrote the summary (`manual` for a given one).
    pub(crate) model: String,
    /// The durable state that survived (goal, files, peers, claims), as the handoff states it.
    /// Optional: an imported compaction carries only a summary.
    pub(crate) state: Option<String>,
}

impl Compaction {
    /// Read a system record's fields; `None` when it is not a compaction or lacks the fields
    /// the fold needs (`summary`, `kept_from_seq`).
    pub(crate) fn from_system(m: &Map<String, Value>) -> Option<Compaction> {
        if m.get("kind").and_then(Value::as_str) != Some(KIND) {
            return None;
        }
        let int = |k: &str| m.get(k).and_then(Value::as_i64);
        let uint = |k: &str| m.get(k).and_then(Value::as_u64).unwrap_or(0);
        let kept_from_seq = int("kept_from_seq")?;
        Some(Compaction {
            summary: m.get("summary")?.as_str()?.to_string(),
            through_seq: int("through_seq").unwrap_or(kept_from_seq - 1),
            kept_from_seq,
            trigger: m
                .get("trigger")
                .and_then(Value::as_str)
                .and_then(Trigger::parse)
                .unwrap_or(Trigger::Manual),
            tokens_before: uint("tokens_before"),
            tokens_after: uint("tokens_after"),
            model: m
                .get("model")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            state: m
                .get("state")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_string),
        })
    }

    /// The chunk's data. Field order is fixed: the record is replayed into every later fold.
    pub(crate) fn to_data(&self) -> ChunkData {
        let mut fields = json!({
            "summary": self.summary,
            "through_seq": self.through_seq,
            "kept_from_seq": self.kept_from_seq,
            "trigger": self.trigger.as_str(),
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "model": self.model,
        });
        if let Some(s) = &self.state {
            fields["state"] = s.clone().into();
        }
        ChunkData::system(KIND, fields)
    }

    /// The user-side message that stands for everything before `kept_from_seq`.
    pub(crate) fn handoff(&self) -> String {
        let mut out = format!(
            "{HANDOFF_HEAD}\n\n<summary>\n{}\n</summary>",
            self.summary.trim()
        );
        if let Some(state) = &self.state {
            out.push_str("\n\n");
            out.push_str(state.trim());
        }
        out
    }
}

/// The compaction a chunk holds, if it is one.
pub fn of_chunk(c: &Chunk) -> Option<Compaction> {
    match &c.data {
        ChunkData::System(m) => Compaction::from_system(m),
        _ => None,
    }
}

/// The latest compaction in `chunks` (in seq order) and where its kept suffix starts in the
/// slice.
pub(crate) fn latest(chunks: &[Chunk]) -> Option<(Compaction, usize)> {
    let c = chunks.iter().rev().find_map(of_chunk)?;
    let from = chunks.partition_point(|x| x.seq < c.kept_from_seq);
    Some((c, from))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Compaction {
        Compaction {
            summary: "Goal: fix the parser.".into(),
            through_seq: 40,
            kept_from_seq: 41,
            trigger: Trigger::Auto,
            tokens_before: 142_000,
            tokens_after: 9_000,
            model: "anthropic/claude-x".into(),
            state: Some("Files edited: src/a.rs".into()),
        }
    }

    #[test]
    fn a_compaction_round_trips_through_its_record() {
        let c = sample();
        let ChunkData::System(m) = c.to_data() else {
            panic!()
        };
        assert_eq!(Compaction::from_system(&m), Some(c.clone()));
        let keys: Vec<&str> = m.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "kind",
                "summary",
                "through_seq",
                "kept_from_seq",
                "trigger",
                "tokens_before",
                "tokens_after",
                "model",
                "state"
            ]
        );
    }

    #[test]
    fn an_imported_shape_without_state_or_through_seq_still_folds() {
        let m = json!({"kind": "compaction", "summary": "s", "kept_from_seq": 9})
            .as_object()
            .unwrap()
            .clone();
        let c = Compaction::from_system(&m).unwrap();
        assert_eq!(c.through_seq, 8);
        assert_eq!(c.trigger, Trigger::Manual);
        assert_eq!(c.state, None);
        assert!(c.handoff().ends_with("<summary>\ns\n</summary>"));
        let bad = json!({"kind": "compaction", "summary": 3, "kept_from_seq": 9});
        assert_eq!(Compaction::from_system(bad.as_object().unwrap()), None);
        let other = json!({"kind": "turn_end", "summary": "s", "kept_from_seq": 9});
        assert_eq!(Compaction::from_system(other.as_object().unwrap()), None);
    }

    #[test]
    fn the_handoff_holds_the_summary_then_the_state() {
        let h = sample().handoff();
        assert!(h.starts_with(HANDOFF_HEAD));
        let s = h.find("Goal: fix the parser.").unwrap();
        let f = h.find("Files edited").unwrap();
        assert!(s < f, "{h}");
    }
}
