//! A prune: the cheap reduction tried before a summary. A `system/prune {through_seq,
//! cleared}` record names old tool results whose content the fold replaces with a one-line
//! placeholder naming the tool and saying `recall` can fetch it. The log keeps the results
//! whole; only requests built after the record change (a prune, like a compaction, resets
//! the provider's cached prefix, so it happens only where a compaction would).

use std::collections::HashSet;

use serde_json::{json, Map, Value};

use crate::log::{Chunk, ChunkData};

/// The `kind` of a prune record.
pub(crate) const KIND: &str = "prune";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prune {
    /// The newest seq the prune looked at: the last cleared result.
    pub(crate) through_seq: i64,
    /// The ids of the tool-result chunks whose content is cleared.
    pub(crate) cleared: Vec<String>,
}

impl Prune {
    /// Read a system record's fields; `None` when it is not a prune or has no id list.
    pub(crate) fn from_system(m: &Map<String, Value>) -> Option<Prune> {
        if m.get("kind").and_then(Value::as_str) != Some(KIND) {
            return None;
        }
        let cleared = m
            .get("cleared")?
            .as_array()?
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect();
        Some(Prune {
            through_seq: m.get("through_seq").and_then(Value::as_i64).unwrap_or(0),
            cleared,
        })
    }

    pub(crate) fn to_data(&self) -> ChunkData {
        ChunkData::system(
            KIND,
            json!({"through_seq": self.through_seq, "cleared": self.cleared}),
        )
    }
}

/// The prune a chunk holds, if it is one.
pub fn of_chunk(c: &Chunk) -> Option<Prune> {
    match &c.data {
        ChunkData::System(m) => Prune::from_system(m),
        _ => None,
    }
}

/// The ids every prune record in `chunks` clears.
pub(crate) fn cleared_ids(chunks: &[Chunk]) -> HashSet<&str> {
    chunks
        .iter()
        .filter(|c| c.data.system_kind() == Some(KIND))
        .filter_map(|c| match &c.data {
            ChunkData::System(m) => m.get("cleared").and_then(Value::as_array),
            _ => None,
        })
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

/// What a cleared result is sent as: fixed text from the tool's name and the result's seq,
/// so every later request folds it to the same bytes.
pub(crate) fn placeholder(tool: &str, seq: i64) -> String {
    format!(
        "[the result of {tool} was cleared to save context; call recall with {{\"seq\": {seq}}} \
         to see it in full]"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prune_round_trips_and_other_records_are_not_prunes() {
        let p = Prune {
            through_seq: 9,
            cleared: vec!["a".into(), "b".into()],
        };
        let ChunkData::System(m) = p.to_data() else {
            panic!()
        };
        assert_eq!(Prune::from_system(&m), Some(p));
        let other = json!({"kind": "turn_end", "cleared": []});
        assert_eq!(Prune::from_system(other.as_object().unwrap()), None);
        let bad = json!({"kind": "prune", "cleared": "a"});
        assert_eq!(Prune::from_system(bad.as_object().unwrap()), None);
        assert!(placeholder("read", 12).contains("read") && placeholder("read", 12).contains("12"));
    }
}
