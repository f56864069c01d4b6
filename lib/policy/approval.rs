//! A session's approval mode: whether a person decides each call to a tool that changes
//! something (see `agent::approve`, which asks), and the tools a person allowed for the rest
//! of the session. Stored in the session's settings.

use serde::{Deserialize, Serialize};

use super::{Effect, Tool, MCP_PREFIX};

/// How mutating tool calls are decided.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum ApprovalMode {
    /// What the policy allows runs (the default: scripts have nobody to ask).
    #[default]
    Auto,
    /// A mutating call waits for a person's decision.
    Ask,
}

impl ApprovalMode {
    pub(crate) fn parse(s: &str) -> Result<ApprovalMode, String> {
        match s {
            "auto" => Ok(ApprovalMode::Auto),
            "ask" => Ok(ApprovalMode::Ask),
            other => Err(format!(
                "unknown approval mode {other:?} (ask: a person decides each call that changes \
                 something; auto: the tool policy alone decides)"
            )),
        }
    }
}

/// A session's stored approval settings.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Approval {
    pub(crate) mode: ApprovalMode,
    /// Tools a person allowed for the rest of the session.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) allowed: Vec<String>,
}

impl Approval {
    /// Whether a call to `tool` must be decided by a person first.
    pub(crate) fn must_ask(&self, tool: &str) -> bool {
        self.mode == ApprovalMode::Ask && changes(tool) && !self.allowed.iter().any(|t| t == tool)
    }
}

/// Whether a tool can change files or the world: the built-in tools whose effect is a change,
/// and every MCP tool (what a server's tool does is not known here).
pub(crate) fn changes(tool: &str) -> bool {
    match Tool::parse(tool) {
        Some(t) => t.effect() == Effect::Change,
        None => tool.starts_with(MCP_PREFIX),
    }
}
