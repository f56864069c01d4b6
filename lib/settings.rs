//! A session's durable settings, stored as JSON in its row (`policy_json`): the tools it may
//! use, its system prompt and prompt sections, and the tools offered to the model when they
//! differ from the allowed ones. A follow-up, a rename or a fork reads them back, so they are
//! typed: a damaged row is an error, never some other policy.
//!
//! To add a setting, add a field with `#[serde(default, skip_serializing_if = …)]`: rows
//! written before it read as its default, and keys this build does not know are kept as they
//! are when the settings are written back.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::policy::Policy;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Settings {
    /// The allow-list the guard decides on; `None` (rows from `ag-log append`, imports) is the
    /// read-only default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) tools: Option<Vec<String>>,
    /// The system prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) system: Option<String>,
    /// The project's instructions (`AGENTS.md`/`CLAUDE.md`), framed, as read when the session
    /// was made; sent after the system prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) project: Option<String>,
    /// Prompt sections sent after the system prompt (the side chat's rules).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) sections: Option<String>,
    /// The tools offered to the model when they differ from `tools` (a `--keep-cache` side
    /// chat offers its source's list, byte for byte); the guard still decides on `tools`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) offered: Option<Vec<String>>,
    /// The sandbox `bash` runs in (see `sandbox`); `None` for a session from before sandboxes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) sandbox: Option<Value>,
    /// A user agent that a session started: how many summons lie above it, so its own
    /// summons count toward `agent.max_summon_depth` (a subagent counts through `parent_id`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) summon_depth: Option<u32>,
    /// Whether a person decides each call that changes something, and the tools allowed for
    /// the rest of the session (see `agent::approve`); `None` is `auto`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) approval: Option<crate::policy::approval::Approval>,
    /// The program that started the session when it was not an `ag` command: an editor over
    /// ACP, `{"protocol": "acp", "name": "zed", "version": "…"}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) client: Option<Value>,
    /// Keys written by another version of ag, kept as they are.
    #[serde(flatten)]
    pub(crate) other: Map<String, Value>,
}

impl Settings {
    /// Settings with exactly these tools.
    pub(crate) fn with_tools(tools: &Policy) -> Settings {
        Settings {
            tools: Some(tools.names()),
            ..Settings::default()
        }
    }

    /// Read stored settings; anything that is not a settings object is an error.
    pub(crate) fn from_json(text: &str) -> Result<Settings, String> {
        serde_json::from_str(text).map_err(|e| e.to_string())
    }

    pub(crate) fn from_value(v: Value) -> Result<Settings, String> {
        serde_json::from_value(v).map_err(|e| e.to_string())
    }

    pub(crate) fn to_json(&self) -> String {
        serde_json::to_string(self).expect("settings serialize")
    }

    pub(crate) fn to_value(&self) -> Value {
        serde_json::to_value(self).expect("settings serialize")
    }

    /// The tools the guard allows: the stored list, else the read-only default.
    pub(crate) fn tools(&self) -> Policy {
        match &self.tools {
            Some(names) => Policy::of(names.iter().map(String::as_str)),
            None => Policy::read_only(),
        }
    }

    /// Replace the tools, keeping everything else.
    pub(crate) fn set_tools(&mut self, tools: &Policy) {
        self.tools = Some(tools.names());
    }

    /// The stored sandbox: `None` when there is none; a damaged value reads as the strictest
    /// settings, never a looser one.
    pub(crate) fn sandbox(&self) -> Option<crate::sandbox::Settings> {
        self.sandbox
            .as_ref()
            .map(crate::sandbox::Settings::from_stored)
    }

    pub(crate) fn set_sandbox(&mut self, sandbox: &crate::sandbox::Settings) {
        self.sandbox = Some(sandbox.to_json());
    }

    /// The system prompt sent: `system`, then `project`, then `sections`.
    pub(crate) fn system_prompt(&self) -> Option<String> {
        let parts: Vec<&str> = [&self.system, &self.project, &self.sections]
            .into_iter()
            .filter_map(|p| p.as_deref())
            .collect();
        (!parts.is_empty()).then(|| parts.join("\n\n"))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn round_trip_keeps_unknown_keys_and_order() {
        let text = r#"{"tools":["read","edit"],"system":"S","future":{"x":1}}"#;
        let s = Settings::from_json(text).unwrap();
        assert_eq!(s.tools().names(), ["read", "edit"]);
        assert_eq!(s.system.as_deref(), Some("S"));
        assert_eq!(s.to_json(), text);
    }

    #[test]
    fn no_stored_list_is_the_read_only_default() {
        let s = Settings::from_json("{}").unwrap();
        assert_eq!(s.tools(), Policy::read_only());
    }

    #[test]
    fn a_damaged_row_is_an_error_never_another_policy() {
        for bad in [
            r#"{"tools": "everything"}"#,
            r#"{"tools": ["read", 7]}"#,
            r#"{"system": 3}"#,
            "[]",
            "not json",
        ] {
            assert!(Settings::from_json(bad).is_err(), "{bad}");
        }
        assert!(Settings::from_value(json!({"offered": "read"})).is_err());
    }

    #[test]
    fn the_system_prompt_is_system_then_sections() {
        let mut s = Settings::default();
        assert_eq!(s.system_prompt(), None);
        s.sections = Some("B".into());
        assert_eq!(s.system_prompt().as_deref(), Some("B"));
        s.system = Some("A".into());
        assert_eq!(s.system_prompt().as_deref(), Some("A\n\nB"));
        s.project = Some("P".into());
        assert_eq!(s.system_prompt().as_deref(), Some("A\n\nP\n\nB"));
    }
}
