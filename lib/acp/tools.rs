//! How a tool call looks to an editor: its title, its ACP kind (which picks the icon and what
//! the editor offers to do), the files it touches (so "follow the agent" opens them), and for
//! `write` and `edit` the change as a diff of the whole file, computed from the arguments
//! before the tool runs.

use std::path::{Path, PathBuf};

use agent_client_protocol_schema::v1::{
    Diff, ToolCall, ToolCallContent, ToolCallLocation, ToolCallStatus, ToolKind,
};
use serde_json::Value;

use crate::policy::Tool;

/// The `tool_call` update that announces a call: before it runs, with the change it would
/// make (`live`); replayed from the log, without (the files have moved on since).
pub(crate) fn announce(
    call_id: &str,
    name: &str,
    args: &Value,
    cwd: &Path,
    live: bool,
) -> ToolCall {
    let mut call = ToolCall::new(call_id.to_string(), title(name, args))
        .kind(kind(name))
        .status(ToolCallStatus::Pending)
        .raw_input(args.clone());
    let locations = locations(name, args, cwd);
    if !locations.is_empty() {
        call = call.locations(locations);
    }
    if let Some(diff) = diff(name, args, cwd).filter(|_| live) {
        call = call.content(vec![ToolCallContent::Diff(diff)]);
    }
    call
}

/// What the editor's list shows for the call: the tool and its main argument.
pub(crate) fn title(name: &str, args: &Value) -> String {
    let arg = |k: &str| args.get(k).and_then(Value::as_str).unwrap_or_default();
    let main = match Tool::parse(name) {
        Some(Tool::Read | Tool::Write | Tool::Edit) => arg("path").to_string(),
        Some(Tool::Glob | Tool::Grep) => match arg("path") {
            "" | "." => arg("pattern").to_string(),
            p => format!("{} in {p}", arg("pattern")),
        },
        Some(Tool::Bash) => arg("command").to_string(),
        Some(Tool::Summon) => arg("agent").to_string(),
        _ => String::new(),
    };
    let main = crate::text::headline(&main, 80);
    match main.is_empty() {
        true => name.to_string(),
        false => format!("{name} {main}"),
    }
}

/// The protocol's kind for a tool.
pub(crate) fn kind(name: &str) -> ToolKind {
    match Tool::parse(name) {
        Some(Tool::Read | Tool::Recall) => ToolKind::Read,
        Some(Tool::Glob | Tool::Grep) => ToolKind::Search,
        Some(Tool::Write | Tool::Edit) => ToolKind::Edit,
        Some(Tool::Bash) => ToolKind::Execute,
        _ => ToolKind::Other,
    }
}

/// The file a file tool names, absolute (relative paths are the session directory's).
fn file(name: &str, args: &Value, cwd: &Path) -> Option<PathBuf> {
    match Tool::parse(name) {
        Some(Tool::Read | Tool::Write | Tool::Edit) => {
            // Only a file in the session's directory is named or read: the tools refuse the
            // rest, and the editor is not shown what they would not touch.
            let p = args.get("path")?.as_str()?;
            crate::tools::confine(cwd, p).ok()
        }
        _ => None,
    }
}

fn locations(name: &str, args: &Value, cwd: &Path) -> Vec<ToolCallLocation> {
    let Some(path) = file(name, args, cwd) else {
        return Vec::new();
    };
    let line = match Tool::parse(name) {
        Some(Tool::Read) => args
            .get("offset")
            .and_then(Value::as_u64)
            .and_then(|l| u32::try_from(l).ok()),
        _ => None,
    };
    vec![ToolCallLocation::new(path).line(line)]
}

/// `write` and `edit` as a diff of the whole file: what it holds now (none for a new file) and
/// what it would hold after the call. An edit whose text is not found has no diff; the tool's
/// own error says why.
pub(crate) fn diff(name: &str, args: &Value, cwd: &Path) -> Option<Diff> {
    let path = file(name, args, cwd)?;
    let old = std::fs::read_to_string(&path).ok();
    let new = match Tool::parse(name)? {
        Tool::Write => args.get("content")?.as_str()?.to_string(),
        Tool::Edit => {
            let (from, to) = (
                args.get("old_string")?.as_str()?,
                args.get("new_string")?.as_str()?,
            );
            let text = old.as_deref()?;
            if from.is_empty() || !text.contains(from) {
                return None;
            }
            match args.get("replace_all").and_then(Value::as_bool) {
                Some(true) => text.replace(from, to),
                _ => text.replacen(from, to, 1),
            }
        }
        _ => return None,
    };
    Some(Diff::new(path, new).old_text(old))
}

/// A tool's result as the call's content.
pub(crate) fn result_content(result: &Value) -> Vec<ToolCallContent> {
    let text = match result {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    vec![ToolCallContent::from(text)]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_edit_is_a_diff_of_the_whole_file() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().canonicalize().unwrap();
        std::fs::write(dir.join("a.txt"), "one\ntwo\nthree\n").unwrap();
        let args = json!({"path": "a.txt", "old_string": "two", "new_string": "TWO"});
        let d = serde_json::to_value(diff("edit", &args, &dir).unwrap()).unwrap();
        assert_eq!(d["oldText"], "one\ntwo\nthree\n");
        assert_eq!(d["newText"], "one\nTWO\nthree\n");
        assert_eq!(d["path"], dir.join("a.txt").to_string_lossy().as_ref());
        let missing = json!({"path": "a.txt", "old_string": "four", "new_string": "x"});
        assert!(diff("edit", &missing, &dir).is_none());
        let outside = json!({"path": "/etc/passwd", "content": "x"});
        assert!(diff("write", &outside, &dir).is_none());
    }

    #[test]
    fn a_write_of_a_new_file_has_no_old_text() {
        let dir = tempfile::tempdir().unwrap();
        let args = json!({"path": "new.md", "content": "# hi\n"});
        let d = serde_json::to_value(diff("write", &args, dir.path()).unwrap()).unwrap();
        assert!(d.get("oldText").is_none_or(Value::is_null), "{d}");
        assert_eq!(d["newText"], "# hi\n");
    }

    #[test]
    fn calls_announce_their_kind_title_and_place() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = &tmp.path().canonicalize().unwrap();
        std::fs::create_dir(dir.join("src")).unwrap();
        let c = serde_json::to_value(announce(
            "c1",
            "read",
            &json!({"path": "src/x.rs", "offset": 40}),
            dir,
            true,
        ))
        .unwrap();
        assert_eq!(c["kind"], "read");
        // `pending` is the protocol's default, left out on the wire.
        assert!(c.get("status").is_none_or(|s| s == "pending"), "{c}");
        assert_eq!(c["title"], "read src/x.rs");
        let x = dir.join("src/x.rs");
        assert_eq!(c["locations"][0]["path"], x.to_string_lossy().as_ref());
        assert_eq!(c["locations"][0]["line"], 40);
        assert_eq!(kind("bash"), ToolKind::Execute);
        assert_eq!(kind("grep"), ToolKind::Search);
        assert_eq!(kind("mcp__git__log"), ToolKind::Other);
        assert_eq!(
            title("bash", &json!({"command": "cargo test"})),
            "bash cargo test"
        );
    }
}
