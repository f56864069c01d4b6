//! Approvals: in a session whose approval mode is `ask`, a call to a tool that changes things
//! (`write`, `edit`, `bash`, every MCP tool) waits for a person's decision before it runs.
//!
//! The guard decides first and alone: an approval can only narrow what the policy allows,
//! never widen it. The decision comes from an [`Approver`] the front end supplies — the
//! terminal, an editor over ACP — and with none (a script, a pipe, a cron job) the call is
//! denied with a tool error that says how to allow it, never left waiting. Every decision a
//! person makes is a `system/approval` chunk in the turn, so `ag-log cat` and the exports show
//! who allowed what; "allow for this session" is remembered in the session's settings.

use std::path::Path;

use serde_json::{Map, Value};

pub(crate) use crate::policy::approval::{Approval, ApprovalMode};
use crate::policy::Tool;

/// What a person is shown before deciding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Preview {
    /// `write` and `edit`: the change as a unified diff of the file.
    Diff { path: String, diff: String },
    /// `bash`: the command line.
    Command(String),
    /// Anything else: the call's input as JSON.
    Input(String),
}

/// A call waiting for a decision. The terminal shows the preview; an editor also gets the
/// call's id and input (ACP's permission request names the tool call).
#[derive(Debug)]
pub(crate) struct Ask<'a> {
    pub(crate) call_id: &'a str,
    pub(crate) tool: &'a str,
    pub(crate) input: &'a Value,
    pub(crate) preview: Preview,
}

/// A person's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Decision {
    AllowOnce,
    /// Allow this tool for the rest of the session.
    AllowSession,
    /// Deny, with the reason the model is told.
    Deny(String),
}

impl Decision {
    fn word(&self) -> &'static str {
        match self {
            Decision::AllowOnce => "allow-once",
            Decision::AllowSession => "allow-session",
            Decision::Deny(_) => "deny",
        }
    }
}

/// Whoever decides: the terminal, an editor. Called on the turn's thread; the turn waits.
pub(crate) trait Approver: Send + Sync {
    /// Who decides, as the log records it (`terminal`, `zed`, …).
    fn who(&self) -> String;
    fn decide(&self, ask: &Ask<'_>) -> Decision;
}

/// The tool error a model gets for a call nobody could be asked about.
pub(crate) fn nobody_to_ask(tool: &str) -> String {
    format!(
        "{tool} was not run: this session asks a person before a tool changes anything \
         (approval mode ask), and there is no terminal to ask. Tell the user; they can allow \
         it with --yes or --approval auto"
    )
}

/// The tool error a model gets for a call a person denied.
pub(crate) fn denied(tool: &str, by: &str, reason: &str) -> String {
    let reason = reason.trim();
    if reason.is_empty() {
        format!("{tool} was not run: the user ({by}) denied it")
    } else {
        format!("{tool} was not run: the user ({by}) denied it: {reason}")
    }
}

/// The `system/approval` record of a decision.
pub(crate) fn record(
    call_id: &str,
    tool: &str,
    decision: &Decision,
    by: &str,
) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("kind".into(), "approval".into());
    m.insert("call_id".into(), call_id.into());
    m.insert("tool".into(), tool.into());
    m.insert("decision".into(), decision.word().into());
    if let Decision::Deny(reason) = decision {
        m.insert("reason".into(), reason.as_str().into());
    }
    m.insert("by".into(), by.into());
    m
}

/// What a person sees of a call: a diff for `write` and `edit` (read from the file when it
/// lies in the session's directory; the tool itself refuses one outside), the command for
/// `bash`, the input otherwise.
pub(crate) fn preview(tool: &str, input: &Value, cwd: &Path) -> Preview {
    let s = |k: &str| input.get(k).and_then(Value::as_str);
    match (Tool::parse(tool), s("path")) {
        (Some(Tool::Bash), _) => match s("command") {
            Some(c) => Preview::Command(c.to_string()),
            None => Preview::Input(input.to_string()),
        },
        (Some(Tool::Write), Some(path)) => {
            let old = current(cwd, path).unwrap_or_default();
            let new = s("content").unwrap_or_default();
            Preview::Diff {
                path: path.to_string(),
                diff: diff(path, &old, new),
            }
        }
        (Some(Tool::Edit), Some(path)) => {
            let (old_s, new_s) = (s("old_string").unwrap_or(""), s("new_string").unwrap_or(""));
            let all = input.get("replace_all").and_then(Value::as_bool) == Some(true);
            let diff = match current(cwd, path) {
                Some(old) if !old_s.is_empty() && old.contains(old_s) => {
                    let new = match all {
                        true => old.replace(old_s, new_s),
                        false => old.replacen(old_s, new_s, 1),
                    };
                    self::diff(path, &old, &new)
                }
                _ => self::diff(path, old_s, new_s),
            };
            Preview::Diff {
                path: path.to_string(),
                diff,
            }
        }
        _ => Preview::Input(serde_json::to_string_pretty(input).unwrap_or_default()),
    }
}

/// A file's text, when it is a file in `cwd`.
fn current(cwd: &Path, path: &str) -> Option<String> {
    let p = crate::tools::confine(cwd, path).ok()?;
    std::fs::read_to_string(p).ok()
}

fn diff(path: &str, old: &str, new: &str) -> String {
    similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{path}"), &format!("b/{path}"))
        .to_string()
}

impl super::Agent<'_> {
    /// Whether the call may run: `None` when it may, else the tool error the model is told.
    /// A person's decision is logged first, as a `system/approval` chunk of the step.
    pub(super) fn approve(
        &self,
        (turn, step): (&str, i64),
        call_id: &str,
        tool: &str,
        input: &Value,
        on: &mut dyn FnMut(super::Event),
    ) -> Result<Option<String>, super::AgentError> {
        let must_ask = self
            .approval
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .must_ask(tool);
        if !must_ask {
            return Ok(None);
        }
        let Some(approver) = &self.approver else {
            return Ok(Some(nobody_to_ask(tool)));
        };
        let ask = Ask {
            call_id,
            tool,
            input,
            preview: preview(tool, input, &self.tool_ctx.cwd),
        };
        let decision = approver.decide(&ask);
        let by = approver.who();
        let chunk = crate::log::NewChunk::new(
            crate::log::Role::System,
            crate::log::ChunkData::System(record(call_id, tool, &decision, &by)),
        )
        .in_turn(turn, step);
        self.append(vec![chunk], on)?;
        Ok(match decision {
            Decision::AllowOnce => None,
            Decision::AllowSession => {
                self.remember_allowed(tool)?;
                None
            }
            Decision::Deny(reason) => Some(denied(tool, &by, &reason)),
        })
    }

    /// "Allow for this session": kept in the session's settings, so a follow-up turn (or a
    /// chat's next prompt) does not ask again.
    fn remember_allowed(&self, tool: &str) -> Result<(), super::AgentError> {
        let mut approval = self.approval.lock().unwrap_or_else(|e| e.into_inner());
        if !approval.allowed.iter().any(|t| t == tool) {
            approval.allowed.push(tool.to_string());
        }
        let stored = self.store.resolve(&self.session.id)?;
        let mut settings = stored.settings()?;
        let mut kept = settings.approval.clone().unwrap_or_default();
        if !kept.allowed.iter().any(|t| t == tool) {
            kept.allowed.push(tool.to_string());
        }
        settings.approval = Some(kept);
        self.store.set_settings(&self.session.id, &settings)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn only_changing_tools_ask_and_a_session_allowance_is_per_tool() {
        let mut a = Approval {
            mode: ApprovalMode::Ask,
            allowed: vec![],
        };
        for t in ["write", "edit", "bash", "mcp__git__commit"] {
            assert!(a.must_ask(t), "{t}");
        }
        for t in ["read", "grep", "glob", "peer_message", "recall", "summon"] {
            assert!(!a.must_ask(t), "{t}");
        }
        a.allowed.push("bash".into());
        assert!(!a.must_ask("bash") && a.must_ask("edit"));
        a.mode = ApprovalMode::Auto;
        assert!(!a.must_ask("edit"));
    }

    #[test]
    fn a_damaged_stored_approval_is_an_error() {
        assert!(serde_json::from_value::<Approval>(json!({"mode": "sometimes"})).is_err());
        assert!(serde_json::from_value::<Approval>(json!({"mode": "ask", "x": 1})).is_err());
        let a: Approval = serde_json::from_value(json!({"mode": "ask"})).unwrap();
        assert_eq!(a.mode, ApprovalMode::Ask);
    }

    #[test]
    fn previews_show_the_change() {
        let dir = std::env::temp_dir().join(format!("ag-approve-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("f.txt"), "one\ntwo\nthree\n").unwrap();
        let edit = json!({"path": "f.txt", "old_string": "two", "new_string": "TWO"});
        let Preview::Diff { diff, .. } = preview("edit", &edit, &dir) else {
            panic!("edit shows a diff")
        };
        assert!(
            diff.contains("-two\n+TWO\n") && diff.contains(" one\n"),
            "{diff}"
        );
        let write = json!({"path": "new.txt", "content": "hello\n"});
        let Preview::Diff { diff, .. } = preview("write", &write, &dir) else {
            panic!("write shows a diff")
        };
        assert!(diff.contains("+hello"), "{diff}");
        // A path outside the directory is not read for the preview.
        let outside = json!({"path": "/etc/passwd", "content": "x\n"});
        let Preview::Diff { diff, .. } = preview("write", &outside, &dir) else {
            panic!()
        };
        assert!(!diff.contains("root:"), "{diff}");
        let bash = json!({"command": "rm -rf build"});
        assert_eq!(
            preview("bash", &bash, &dir),
            Preview::Command("rm -rf build".into())
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_record_names_the_decision_and_who_made_it() {
        let r = record("c1", "bash", &Decision::Deny("not now".into()), "terminal");
        assert_eq!(
            Value::Object(r),
            json!({"kind": "approval", "call_id": "c1", "tool": "bash",
                   "decision": "deny", "reason": "not now", "by": "terminal"})
        );
    }
}
