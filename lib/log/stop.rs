//! Why a step or a turn ended: the `stop_reason` of a provider's step and of a `turn_end`
//! record, as one closed vocabulary (Anthropic's words for what a provider says, our own for
//! what the loop decides).

use std::fmt;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The model finished its answer.
    EndTurn,
    /// The model asked for tools.
    ToolUse,
    /// The answer hit the output token limit.
    MaxTokens,
    /// A stop sequence ended the answer.
    StopSequence,
    /// The provider paused a long turn (Anthropic's server tools).
    PauseTurn,
    /// The provider refused to go on (Anthropic's `refusal`, OpenAI's `content_filter`).
    Refusal,
    /// The model's context window was full.
    #[serde(rename = "model_context_window_exceeded")]
    ContextWindowExceeded,
    /// The loop stopped at `--max-steps`.
    MaxSteps,
    /// The loop stopped before a step that would have passed `--max-cost`.
    MaxCost,
    /// The turn was interrupted (Ctrl-C, `ag-summon cancel`).
    Interrupted,
    /// The provider stayed unavailable or refused the request.
    Error,
    /// The provider ended the stream without a reason, or with one this build does not know.
    Unknown,
}

impl StopReason {
    pub(crate) const ALL: [StopReason; 12] = [
        StopReason::EndTurn,
        StopReason::ToolUse,
        StopReason::MaxTokens,
        StopReason::StopSequence,
        StopReason::PauseTurn,
        StopReason::Refusal,
        StopReason::ContextWindowExceeded,
        StopReason::MaxSteps,
        StopReason::MaxCost,
        StopReason::Interrupted,
        StopReason::Error,
        StopReason::Unknown,
    ];

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            StopReason::EndTurn => "end_turn",
            StopReason::ToolUse => "tool_use",
            StopReason::MaxTokens => "max_tokens",
            StopReason::StopSequence => "stop_sequence",
            StopReason::PauseTurn => "pause_turn",
            StopReason::Refusal => "refusal",
            StopReason::ContextWindowExceeded => "model_context_window_exceeded",
            StopReason::MaxSteps => "max_steps",
            StopReason::MaxCost => "max_cost",
            StopReason::Interrupted => "interrupted",
            StopReason::Error => "error",
            StopReason::Unknown => "unknown",
        }
    }

    /// A stored reason, exactly as written.
    pub(crate) fn parse(s: &str) -> Option<StopReason> {
        StopReason::ALL.into_iter().find(|r| r.as_str() == s)
    }

    /// What a provider (or a transcript of one) said, in Anthropic's words. Words only the
    /// loop uses (`max_steps`, `interrupted`, `error`) and words this build does not know
    /// become [`StopReason::Unknown`]: a provider cannot make a turn look interrupted.
    pub(crate) fn from_provider(s: &str) -> StopReason {
        match StopReason::parse(s) {
            Some(
                StopReason::MaxSteps
                | StopReason::MaxCost
                | StopReason::Interrupted
                | StopReason::Error,
            )
            | None => StopReason::Unknown,
            Some(r) => r,
        }
    }

    /// The error message for a stored word that is not a reason.
    pub(crate) fn unknown_message(found: &str) -> String {
        let known: Vec<&str> = StopReason::ALL.iter().map(|r| r.as_str()).collect();
        format!(
            "unknown stop_reason {found:?} (expected one of {})",
            known.join(", ")
        )
    }
}

impl fmt::Display for StopReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reason_round_trips_through_its_word_and_serde() {
        for r in StopReason::ALL {
            assert_eq!(StopReason::parse(r.as_str()), Some(r));
            let json = serde_json::to_value(r).unwrap();
            assert_eq!(json, r.as_str());
            assert_eq!(serde_json::from_value::<StopReason>(json).unwrap(), r);
        }
        assert_eq!(StopReason::parse("end-turn"), None);
    }

    #[test]
    fn a_provider_cannot_claim_the_loops_words() {
        assert_eq!(StopReason::from_provider("tool_use"), StopReason::ToolUse);
        assert_eq!(
            StopReason::from_provider("interrupted"),
            StopReason::Unknown
        );
        assert_eq!(StopReason::from_provider("error"), StopReason::Unknown);
        assert_eq!(StopReason::from_provider("brand_new"), StopReason::Unknown);
    }
}
