//! Tool policy: which tools a session may use, and the guard that decides each call.
//!
//! A policy is an allow-list stored in the session row. It is enforced twice: only allowed
//! tools are offered to the model, and `guard` denies any call outside the list. The guard is
//! fail-closed: an unknown tool or an empty list denies, and a damaged stored list is an
//! error before any tool runs (see `settings`).

pub(crate) mod approval;
mod tool;

pub(crate) use tool::Effect;
pub use tool::Tool;

use std::collections::BTreeSet;

/// Tools of MCP servers are named `mcp__SERVER__TOOL`. An allow-list entry ending in `*`
/// takes every tool whose name starts with the rest: `mcp__git__*` (one server's tools),
/// `mcp__*` (every server's). `all` does not include them: a server's tools are named.
pub(crate) const MCP_PREFIX: &str = "mcp__";

/// Whether `word` can stand in an allow-list as an MCP tool name or pattern.
fn is_mcp_entry(word: &str) -> bool {
    let Some(rest) = word.strip_prefix(MCP_PREFIX) else {
        return false;
    };
    let body = rest.strip_suffix('*').unwrap_or(rest);
    (rest.ends_with('*') || !body.is_empty())
        && body
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.')
}

/// Whether allow-list `entry` covers `name` (a tool name or another entry).
fn covers(entry: &str, name: &str) -> bool {
    match entry.strip_suffix('*') {
        Some(prefix) if prefix.starts_with(MCP_PREFIX) => name.starts_with(prefix),
        _ => entry == name,
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    tools: BTreeSet<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    Allow,
    Deny(String),
}

impl Policy {
    /// What a session gets when nothing wider was asked for: look and talk, never touch.
    pub(crate) fn read_only() -> Policy {
        Policy::of(Tool::names_of(tool::READ_ONLY))
    }

    /// Look and nothing else: `ag-fork --read-only` and the side chat (no room talk either).
    pub(crate) fn look_only() -> Policy {
        Policy::of(Tool::names_of(tool::LOOK_ONLY))
    }

    #[cfg(test)]
    pub(crate) fn none() -> Policy {
        Policy {
            tools: BTreeSet::new(),
        }
    }

    pub(crate) fn of<'a>(names: impl IntoIterator<Item = &'a str>) -> Policy {
        Policy {
            tools: names.into_iter().map(str::to_string).collect(),
        }
    }

    /// Parse a `--tools` list: names separated by commas or spaces, plus the sets `read-only`
    /// (read, glob, grep, the `peer_*` tools, recall), `all` (every known tool) and `none`. Unknown names are an error.
    pub(crate) fn parse_list(list: &str) -> Result<Policy, String> {
        let mut tools = BTreeSet::new();
        for word in list
            .split([',', ' '])
            .map(str::trim)
            .filter(|w| !w.is_empty())
        {
            match word {
                "none" => {}
                "read-only" | "readonly" => {
                    tools.extend(Tool::names_of(tool::READ_ONLY).map(str::to_string))
                }
                "all" => tools.extend(Tool::names().map(str::to_string)),
                name if Tool::parse(name).is_some() || is_mcp_entry(name) => {
                    tools.insert(name.to_string());
                }
                other => {
                    return Err(format!(
                        "unknown tool {other:?} (known: {}; sets: read-only, all, none; \
                         MCP tools: mcp__SERVER__TOOL or mcp__SERVER__*)",
                        Tool::names().collect::<Vec<_>>().join(", ")
                    ))
                }
            }
        }
        Ok(Policy { tools })
    }

    /// The allowed tools in offering order (built-in tools first, in [`Tool`] order).
    pub(crate) fn names(&self) -> Vec<String> {
        let mut out: Vec<String> = Tool::names()
            .filter(|k| self.tools.contains(*k))
            .map(str::to_string)
            .collect();
        out.extend(
            self.tools
                .iter()
                .filter(|t| Tool::parse(t).is_none())
                .cloned(),
        );
        out
    }

    pub(crate) fn allows(&self, name: &str) -> bool {
        self.tools.iter().any(|e| covers(e, name))
    }

    /// What both allow: a child never gains a tool. With patterns, each side keeps the
    /// entries the other side covers (`mcp__git__*` ∩ `mcp__git__log` = `mcp__git__log`).
    pub(crate) fn intersect(&self, other: &Policy) -> Policy {
        let kept = |a: &Policy, b: &Policy| {
            a.tools
                .iter()
                .filter(|e| b.allows(e))
                .cloned()
                .collect::<Vec<_>>()
        };
        let mut tools: BTreeSet<String> = kept(self, other).into_iter().collect();
        tools.extend(kept(other, self));
        Policy { tools }
    }

    /// The tools of `self` that `limit` takes away.
    pub(crate) fn dropped_by(&self, limit: &Policy) -> Vec<String> {
        self.tools
            .iter()
            .filter(|e| !limit.allows(e))
            .cloned()
            .collect()
    }

    /// Whether some entry may allow a tool of MCP server `server`: only those servers are
    /// started for a turn.
    pub(crate) fn may_use_server(&self, server: &str) -> bool {
        let prefix = format!("{MCP_PREFIX}{server}__");
        self.tools.iter().any(|e| match e.strip_suffix('*') {
            Some(p) if p.starts_with(MCP_PREFIX) => prefix.starts_with(p) || p.starts_with(&prefix),
            _ => e.starts_with(&prefix),
        })
    }

    /// No tool that can change files or the world: MCP tools count as able to.
    #[cfg(test)]
    pub(crate) fn is_read_only(&self) -> bool {
        self.tools.iter().all(|t| match Tool::parse(t) {
            Some(tool) => tool.effect() != Effect::Change,
            None => !t.starts_with(MCP_PREFIX),
        })
    }
}

/// A `--tools` value: a list of tools, or changes to a base list — `+edit` adds, `-bash` takes
/// away — where the base is the defaults (a new session's read-only set, or its agent's
/// tools), or the session's own tools on a follow-up. `read,+edit` is `read,edit`: words
/// without a sign make the base themselves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ToolsAsk {
    /// The words without a sign, when there are any.
    list: Option<Policy>,
    add: Policy,
    remove: Policy,
}

impl ToolsAsk {
    /// Parse a `--tools` value ([`Policy::parse_list`]'s words, each optionally signed).
    pub(crate) fn parse(list: &str) -> Result<ToolsAsk, String> {
        let (mut plain, mut add, mut remove) = (Vec::new(), Vec::new(), Vec::new());
        for word in list
            .split([',', ' '])
            .map(str::trim)
            .filter(|w| !w.is_empty())
        {
            match (word.strip_prefix('+'), word.strip_prefix('-')) {
                (Some(w), _) => add.push(w),
                (_, Some(w)) => remove.push(w),
                _ => plain.push(word),
            }
        }
        for w in add.iter().chain(&remove) {
            if w.is_empty() || w.starts_with(['+', '-']) {
                return Err(format!(
                    "a sign needs a tool after it: `+edit` adds edit, `-bash` takes bash away (got {list:?})"
                ));
            }
        }
        Ok(ToolsAsk {
            list: (!plain.is_empty() || (add.is_empty() && remove.is_empty()))
                .then(|| Policy::parse_list(&plain.join(",")))
                .transpose()?,
            add: Policy::parse_list(&add.join(","))?,
            remove: Policy::parse_list(&remove.join(","))?,
        })
    }

    /// The tools asked for, given the base the signed words change.
    pub(crate) fn resolve(&self, base: &Policy) -> Policy {
        let mut tools = self.list.as_ref().unwrap_or(base).tools.clone();
        tools.extend(self.add.tools.iter().cloned());
        tools.retain(|t| !self.remove.allows(t));
        Policy { tools }
    }
}

/// Decide one tool call. Fail-closed: only a tool that is both implemented and on the list
/// runs; everything else is denied with a reason the model can read.
pub(crate) fn guard(policy: &Policy, name: &str) -> Verdict {
    let mcp = name.starts_with(MCP_PREFIX) && !name.contains('*');
    if Tool::parse(name).is_none() && !mcp {
        return Verdict::Deny(format!("unknown tool {name:?}: nothing was run"));
    }
    if !policy.allows(name) {
        let allowed = policy.names();
        return Verdict::Deny(format!(
            "tool {name:?} is not allowed in this session (allowed: {}); nothing was run",
            if allowed.is_empty() {
                "none".to_string()
            } else {
                allowed.join(", ")
            }
        ));
    }
    Verdict::Allow
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signed_tools_change_the_base_and_plain_words_replace_it() {
        let base = Policy::read_only();
        let plus = ToolsAsk::parse("+edit").unwrap();
        assert!(plus.list.is_none());
        let p = plus.resolve(&base);
        assert!(p.allows("edit") && p.allows("read") && p.allows("peer_message"));
        let p = ToolsAsk::parse("+edit,+bash,-peer_message")
            .unwrap()
            .resolve(&base);
        assert!(p.allows("bash") && p.allows("grep") && !p.allows("peer_message"));
        let p = ToolsAsk::parse("read,+edit").unwrap().resolve(&base);
        assert_eq!(p.names(), ["read", "edit"]);
        let p = ToolsAsk::parse("read,edit").unwrap();
        assert!(p.list.is_some());
        assert_eq!(p.resolve(&base).names(), ["read", "edit"]);
        let git = Policy::parse_list("read,mcp__git__log,mcp__git__diff").unwrap();
        let p = ToolsAsk::parse("-mcp__git__*").unwrap().resolve(&git);
        assert_eq!(p.names(), ["read"]);
        assert!(ToolsAsk::parse("+").is_err());
        assert!(ToolsAsk::parse("+nosuch")
            .unwrap_err()
            .contains("unknown tool"));
        assert_eq!(
            ToolsAsk::parse("none").unwrap().resolve(&base).names(),
            Vec::<String>::new()
        );
    }

    #[test]
    fn default_is_read_only() {
        let p = Policy::read_only();
        assert!(p.is_read_only());
        assert_eq!(guard(&p, "read"), Verdict::Allow);
        assert!(matches!(guard(&p, "write"), Verdict::Deny(_)));
        assert!(matches!(guard(&p, "bash"), Verdict::Deny(_)));
    }

    #[test]
    fn recall_is_read_only_and_a_child_gains_it_only_from_its_parent() {
        assert_eq!(guard(&Policy::read_only(), "recall"), Verdict::Allow);
        assert_eq!(guard(&Policy::look_only(), "recall"), Verdict::Allow);
        assert!(Policy::parse_list("recall").unwrap().is_read_only());
        let parent = Policy::parse_list("read,write").unwrap();
        let asked = Policy::parse_list("read,recall").unwrap();
        assert_eq!(asked.intersect(&parent).names(), ["read"]);
        assert_eq!(asked.dropped_by(&parent), ["recall"]);
        assert!(matches!(guard(&parent, "recall"), Verdict::Deny(_)));
        let parent = Policy::read_only();
        assert_eq!(asked.intersect(&parent).names(), ["read", "recall"]);
    }

    #[test]
    fn guard_is_fail_closed() {
        let all = Policy::parse_list("all").unwrap();
        assert!(matches!(guard(&all, "rm_rf"), Verdict::Deny(_)));
        assert!(matches!(guard(&Policy::none(), "read"), Verdict::Deny(_)));
    }

    #[test]
    fn parse_list_sets_and_errors() {
        let p = Policy::parse_list("read-only, write").unwrap();
        assert_eq!(
            p.names(),
            [
                "read",
                "glob",
                "grep",
                "write",
                "peer_message",
                "peer_inbox",
                "peer_who",
                "peer_peek",
                "peer_claim",
                "peer_release",
                "recall"
            ]
        );
        assert!(Policy::parse_list("read,launch_missiles").is_err());
        assert_eq!(Policy::parse_list("none").unwrap(), Policy::none());
    }

    #[test]
    fn intersection_never_gains() {
        let parent = Policy::parse_list("read,glob,write").unwrap();
        let asked = Policy::parse_list("read,bash").unwrap();
        let child = asked.intersect(&parent);
        assert_eq!(child.names(), ["read"]);
        assert_eq!(asked.dropped_by(&parent), ["bash"]);
    }

    #[test]
    fn mcp_tools_are_allowed_by_name_or_pattern_and_never_by_all() {
        let p = Policy::parse_list("read,mcp__git__*,mcp__db__query").unwrap();
        assert_eq!(guard(&p, "mcp__git__log"), Verdict::Allow);
        assert_eq!(guard(&p, "mcp__db__query"), Verdict::Allow);
        assert!(matches!(guard(&p, "mcp__db__drop"), Verdict::Deny(_)));
        assert!(matches!(guard(&p, "mcp__gitx__log"), Verdict::Deny(_)));
        assert!(matches!(guard(&p, "mcp__git__*"), Verdict::Deny(_)));
        let all = Policy::parse_list("all").unwrap();
        assert!(matches!(guard(&all, "mcp__git__log"), Verdict::Deny(_)));
        assert!(p.may_use_server("git") && p.may_use_server("db"));
        assert!(!p.may_use_server("gi") && !p.may_use_server("web"));
        assert!(Policy::parse_list("mcp__*").unwrap().may_use_server("web"));
        assert!(!p.is_read_only());
        for bad in ["mcp__", "mcp__a b", "mcp__x*y", "mcp_x"] {
            assert!(Policy::parse_list(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn mcp_patterns_intersect_without_gaining() {
        let parent = Policy::parse_list("mcp__git__*,mcp__db__query").unwrap();
        let asked = Policy::parse_list("mcp__git__log,mcp__db__*,mcp__web__*").unwrap();
        let child = asked.intersect(&parent);
        assert_eq!(child.names(), ["mcp__db__query", "mcp__git__log"]);
        assert_eq!(asked.dropped_by(&parent), ["mcp__db__*", "mcp__web__*"]);
        let wide = Policy::parse_list("mcp__*").unwrap();
        assert_eq!(parent.intersect(&wide), parent);
    }
}
