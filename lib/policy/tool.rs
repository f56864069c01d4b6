//! The tools this build implements, in one table: each tool's name and what it can do to the
//! world. The allow-list sets (`read-only`, `all`, the side chat's look-only set) and the
//! offering order come from this table; `agent::registry` maps each tool to its spec and its
//! executor with one exhaustive match, so a tool cannot be named here and run nowhere.

use std::fmt;

/// A built-in tool. MCP tools (`mcp__SERVER__TOOL`) are not in this table: their names come
/// from the servers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Tool {
    Read,
    Glob,
    Grep,
    Write,
    Edit,
    Bash,
    Summon,
    Retrieve,
    PeerMessage,
    PeerInbox,
    PeerWho,
    PeerPeek,
    PeerClaim,
    PeerRelease,
    Recall,
}

/// What a tool can do, which decides the sets it belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Effect {
    /// Reads files in the session's directory.
    Look,
    /// Changes files or runs programs.
    Change,
    /// Starts or waits for other agents.
    Spawn,
    /// Talks in rooms and claims files; changes no file.
    Talk,
    /// Reads the session's own history (its log and lineage); nothing outside it.
    Remember,
}

/// The table, in the order tools are offered to a model.
const TABLE: [(Tool, &str, Effect); 15] = [
    (Tool::Read, "read", Effect::Look),
    (Tool::Glob, "glob", Effect::Look),
    (Tool::Grep, "grep", Effect::Look),
    (Tool::Write, "write", Effect::Change),
    (Tool::Edit, "edit", Effect::Change),
    (Tool::Bash, "bash", Effect::Change),
    (Tool::Summon, "summon", Effect::Spawn),
    (Tool::Retrieve, "retrieve", Effect::Spawn),
    (Tool::PeerMessage, "peer_message", Effect::Talk),
    (Tool::PeerInbox, "peer_inbox", Effect::Talk),
    (Tool::PeerWho, "peer_who", Effect::Talk),
    (Tool::PeerPeek, "peer_peek", Effect::Talk),
    (Tool::PeerClaim, "peer_claim", Effect::Talk),
    (Tool::PeerRelease, "peer_release", Effect::Talk),
    (Tool::Recall, "recall", Effect::Remember),
];

impl Tool {
    /// Every tool, in offering order.
    pub fn all() -> impl Iterator<Item = Tool> {
        TABLE.iter().map(|(t, ..)| *t)
    }

    fn row(self) -> &'static (Tool, &'static str, Effect) {
        TABLE
            .iter()
            .find(|(t, ..)| *t == self)
            .expect("every tool has a row in TABLE")
    }

    pub(crate) fn name(self) -> &'static str {
        self.row().1
    }

    pub(crate) fn effect(self) -> Effect {
        self.row().2
    }

    pub(crate) fn parse(name: &str) -> Option<Tool> {
        TABLE.iter().find(|(_, n, _)| *n == name).map(|(t, ..)| *t)
    }

    /// The names of every tool, in offering order.
    pub(crate) fn names() -> impl Iterator<Item = &'static str> {
        TABLE.iter().map(|(_, n, _)| *n)
    }

    /// The names of the tools whose effect is one of `effects`, in offering order.
    pub(crate) fn names_of(effects: &'static [Effect]) -> impl Iterator<Item = &'static str> {
        TABLE
            .iter()
            .filter(move |(_, _, e)| effects.contains(e))
            .map(|(_, n, _)| *n)
    }
}

impl fmt::Display for Tool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What a session gets when nothing wider was asked for: look, never touch. Talking to peers
/// and claiming files changes no file, so the `peer_*` tools are in it; `recall` reads only
/// the session's own history.
pub(crate) const READ_ONLY: &[Effect] = &[Effect::Look, Effect::Talk, Effect::Remember];

/// Look and nothing else: `ag-fork --read-only` and the side chat (no room talk either; a
/// side chat may still recall its own lineage's history).
pub(crate) const LOOK_ONLY: &[Effect] = &[Effect::Look, Effect::Remember];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_has_one_row_and_its_name_parses_back() {
        for (i, (tool, name, _)) in TABLE.iter().enumerate() {
            assert_eq!(Tool::parse(name), Some(*tool));
            assert_eq!(tool.name(), *name);
            assert!(
                TABLE[i + 1..]
                    .iter()
                    .all(|(t, n, _)| t != tool && n != name),
                "{name} twice"
            );
        }
        assert_eq!(Tool::parse("Read"), None);
    }
}
