//! The `echo` model: it answers with the person's last words.

use serde_json::Value;

use super::{step_end, Emitter};
use crate::fold::Dialect;
use crate::log::StopReason;
use crate::provider::Sizes;
use crate::provider::{AttemptError, Provider};
use crate::reduce::{ChunkOp, StepEnd};

/// What echo says when the last user message holds no words of the person's.
pub(crate) const NOTHING_TO_ECHO: &str = "(nothing to echo)";

/// The `echo` model.
#[derive(Debug, Default)]
pub(crate) struct EchoProvider;

impl EchoProvider {
    pub(crate) fn new() -> Self {
        EchoProvider
    }
}

impl Provider for EchoProvider {
    fn name(&self) -> &str {
        "echo"
    }

    fn dialect(&self) -> Dialect {
        Dialect::Anthropic
    }

    fn api_model(&self) -> &str {
        "echo"
    }

    fn attempt(
        &self,
        body: &Value,
        sink: &mut dyn FnMut(ChunkOp),
    ) -> Result<StepEnd, AttemptError> {
        self.attempt_sized(body, &Sizes::of(body), sink)
    }

    fn attempt_sized(
        &self,
        body: &Value,
        sizes: &Sizes,
        sink: &mut dyn FnMut(ChunkOp),
    ) -> Result<StepEnd, AttemptError> {
        let answer = last_user_words(body).unwrap_or_else(|| NOTHING_TO_ECHO.to_owned());
        let mut out = Emitter::new(sink);
        out.text(&answer);
        Ok(step_end(StopReason::EndTurn, sizes, out.chars, "echo"))
    }
}

/// The person's text in the last user message: its text blocks, minus tool results and
/// wrapped peer messages, joined with newlines.
fn last_user_words(body: &Value) -> Option<String> {
    let messages = body["messages"].as_array()?;
    let last = messages.iter().rev().find(|m| m["role"] == "user")?;
    let words: Vec<&str> = match &last["content"] {
        Value::String(s) => vec![s.as_str()],
        Value::Array(blocks) => blocks
            .iter()
            .filter(|b| b["type"] == "text")
            .filter_map(|b| b["text"].as_str())
            .collect(),
        _ => Vec::new(),
    };
    let words: Vec<&str> = words.into_iter().filter(|t| !is_peer_text(t)).collect();
    let joined = words.join("\n");
    (!joined.trim().is_empty()).then_some(joined)
}

/// Whether a user-side text block is a wrapped peer batch (see `fold::peer_text`), which
/// carries other sessions' words, not the person's.
fn is_peer_text(text: &str) -> bool {
    let t = text.trim_start();
    if t.starts_with("<peer from=") {
        return true;
    }
    // A batch with every line left unread is only its "N more" note.
    t.strip_prefix('(')
        .and_then(|r| r.trim_end().strip_suffix(" more: call peer_inbox)"))
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}
