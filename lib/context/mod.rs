//! Context management (DESIGN §3, "Compaction"): each model's window, estimates of what a
//! request takes, where a compaction cuts the log, the durable state a handoff restates, the
//! compaction itself, and the prune tried before it. The fold side (how a compacted view folds) is
//! [`crate::fold::compaction`]; the triggers live in the agent loop.

pub(crate) mod brief;
pub(crate) mod by_hand;
pub(crate) mod compact;
pub(crate) mod cut;
pub(crate) mod handoff;
pub(crate) mod prune;
pub(crate) mod window;

#[cfg(test)]
mod proptests;

pub(crate) use compact::{compact, CompactError, Compacted, Request, Summarizer, SummarySource};
pub(crate) use window::lookup;
