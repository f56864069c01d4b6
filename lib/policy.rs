//! Tool policy: which tools a session may use, and the guard that decides each call.
//!
//! A policy is an allow-list stored in the session row. It is enforced twice: only allowed
//! tools are offered to the model, and `guard` denies any call outside the list. The guard is
//! fail-closed: an unknown tool or an empty list denies, and a damaged stored list is an
//! error before any tool runs (see `settings`).

use std::collections::BTreeSet;

/// Every tool this build implements, in the order they are offered.
pub const KNOWN: &[&str] = &[
    "read",
    "glob",
    "grep",
    "write",
    "edit",
    "bash",
    "summon",
    "retrieve",
    "peer_message",
    "peer_inbox",
    "peer_peek",
    "peer_claim",
    "peer_release",
];

/// What a session gets when nothing wider was asked for: look, never touch.
/// Talking to peers and claiming files changes no file, so the `peer_*` tools are in it.
pub const READ_ONLY: &[&str] = &[
    "read",
    "glob",
    "grep",
    "peer_message",
    "peer_inbox",
    "peer_peek",
    "peer_claim",
    "peer_release",
];

/// Look and nothing else: `ag-fork --read-only` and the side chat (no room talk either).
pub const LOOK_ONLY: &[&str] = &["read", "glob", "grep"];

/// Tools that change files or run programs.
pub const MUTATING: &[&str] = &["write", "edit", "bash"];

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    tools: BTreeSet<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Allow,
    Deny(String),
}

impl Policy {
    pub fn read_only() -> Policy {
        Policy::of(READ_ONLY.iter().copied())
    }

    pub fn none() -> Policy {
        Policy {
            tools: BTreeSet::new(),
        }
    }

    pub fn of<'a>(names: impl IntoIterator<Item = &'a str>) -> Policy {
        Policy {
            tools: names.into_iter().map(str::to_string).collect(),
        }
    }

    /// Parse a `--tools` list: names separated by commas or spaces, plus the sets `read-only`
    /// (read, glob, grep), `all` (every known tool) and `none`. Unknown names are an error.
    pub fn parse_list(list: &str) -> Result<Policy, String> {
        let mut tools = BTreeSet::new();
        for word in list
            .split([',', ' '])
            .map(str::trim)
            .filter(|w| !w.is_empty())
        {
            match word {
                "none" => {}
                "read-only" | "readonly" => tools.extend(READ_ONLY.iter().map(|s| s.to_string())),
                "all" => tools.extend(KNOWN.iter().map(|s| s.to_string())),
                name if KNOWN.contains(&name) => {
                    tools.insert(name.to_string());
                }
                other => {
                    return Err(format!(
                        "unknown tool {other:?} (known: {}; sets: read-only, all, none)",
                        KNOWN.join(", ")
                    ))
                }
            }
        }
        Ok(Policy { tools })
    }

    /// The allowed tools in offering order (known tools first, in KNOWN order).
    pub fn names(&self) -> Vec<String> {
        let mut out: Vec<String> = KNOWN
            .iter()
            .filter(|k| self.tools.contains(**k))
            .map(|s| s.to_string())
            .collect();
        out.extend(
            self.tools
                .iter()
                .filter(|t| !KNOWN.contains(&t.as_str()))
                .cloned(),
        );
        out
    }

    pub fn allows(&self, name: &str) -> bool {
        self.tools.contains(name)
    }

    /// What both allow: a child never gains a tool.
    pub fn intersect(&self, other: &Policy) -> Policy {
        Policy {
            tools: self.tools.intersection(&other.tools).cloned().collect(),
        }
    }

    /// The tools of `self` that `limit` takes away.
    pub fn dropped_by(&self, limit: &Policy) -> Vec<String> {
        self.tools.difference(&limit.tools).cloned().collect()
    }

    pub fn is_read_only(&self) -> bool {
        self.tools.iter().all(|t| !MUTATING.contains(&t.as_str()))
    }
}

/// Decide one tool call. Fail-closed: only a tool that is both implemented and on the list
/// runs; everything else is denied with a reason the model can read.
pub fn guard(policy: &Policy, name: &str) -> Verdict {
    if !KNOWN.contains(&name) {
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
    fn default_is_read_only() {
        let p = Policy::read_only();
        assert!(p.is_read_only());
        assert_eq!(guard(&p, "read"), Verdict::Allow);
        assert!(matches!(guard(&p, "write"), Verdict::Deny(_)));
        assert!(matches!(guard(&p, "bash"), Verdict::Deny(_)));
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
                "peer_peek",
                "peer_claim",
                "peer_release"
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
}
