//! What a `peer` chunk carries: the lines a session heard (speech and the receipts for what it
//! said) and, when the set of live sessions in its worktree changed, the roster of who is here.

use serde::{Deserialize, Serialize};

/// What a heard line is: speech, or a receipt for a line this session posted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum PeerKind {
    #[default]
    Say,
    /// The addressee's loop took the line into its model's context.
    Delivered,
    /// The addressee acknowledged the line.
    Ack,
}

impl PeerKind {
    pub(crate) fn is_say(&self) -> bool {
        *self == PeerKind::Say
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            PeerKind::Say => "say",
            PeerKind::Delivered => "delivered",
            PeerKind::Ack => "ack",
        }
    }
}

/// One heard line. Fields added after the first version are optional, so older chunks read
/// (and fold) as before.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PeerMessage {
    pub(crate) id: String,
    pub(crate) from: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) to: Option<String>,
    pub(crate) text: String,
    /// The sender's short session handle (`kqzvxm`), when a session sent it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) handle: Option<String>,
    /// The message this one answers; for a receipt, the message it is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) in_reply_to: Option<String>,
    #[serde(default, skip_serializing_if = "PeerKind::is_say")]
    pub(crate) kind: PeerKind,
}

/// One live session of the roster: who, what for, where.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PeerPresent {
    /// The full session id (what a change of the roster is measured by).
    pub(crate) session: String,
    pub(crate) handle: String,
    pub(crate) name: String,
    /// Its goal (first prompt), clipped.
    pub(crate) goal: String,
    /// Its directory relative to the worktree's top (`.` for the top).
    #[serde(rename = "where")]
    pub(crate) at: String,
}
