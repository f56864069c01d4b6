//! Approvals in the editor: a session in `ask` mode asks the editor with
//! `session/request_permission` before a call that changes something runs. The options are
//! allow once, allow always (for the rest of the session, kept in its settings) and reject;
//! the agent loop records the decision as a `system/approval` chunk naming the editor.

use std::sync::Arc;

use agent_client_protocol_schema::v1::{
    PermissionOption, PermissionOptionKind, RequestPermissionOutcome, RequestPermissionRequest,
    RequestPermissionResponse, SessionUpdate, ToolCallContent, ToolCallStatus, ToolCallUpdate,
    ToolCallUpdateFields,
};

use super::rpc::Conn;
use crate::agent::approve::{Ask, Decision, Preview};
use crate::agent::Approver;

const ALLOW_ONCE: &str = "allow_once";
const ALLOW_ALWAYS: &str = "allow_always";
const REJECT_ONCE: &str = "reject_once";

/// The editor on the other end of the connection, deciding for one session.
pub(crate) struct EditorApprover {
    pub(crate) conn: Arc<Conn>,
    /// The session's id as the editor knows it.
    pub(crate) session: String,
    /// The editor's name, as the log records who decided.
    pub(crate) client: String,
    pub(crate) cwd: std::path::PathBuf,
}

impl Approver for EditorApprover {
    fn who(&self) -> String {
        self.client.clone()
    }

    fn decide(&self, ask: &Ask<'_>) -> Decision {
        let request = RequestPermissionRequest::new(
            self.session.clone(),
            self.call(ask),
            vec![
                PermissionOption::new(ALLOW_ONCE, "Allow once", PermissionOptionKind::AllowOnce),
                PermissionOption::new(
                    ALLOW_ALWAYS,
                    format!("Allow {} for this session", ask.tool),
                    PermissionOptionKind::AllowAlways,
                ),
                PermissionOption::new(REJECT_ONCE, "Reject", PermissionOptionKind::RejectOnce),
            ],
        );
        let params = serde_json::to_value(request).expect("a permission request serializes");
        let answer = self
            .conn
            .request("session/request_permission", params)
            .map_err(|e| e.message)
            .and_then(|v| {
                serde_json::from_value::<RequestPermissionResponse>(v).map_err(|e| e.to_string())
            });
        let decided = decision(answer, &self.client);
        if !matches!(decided, Decision::Deny(_)) {
            // Allowed: the call runs now.
            let fields = ToolCallUpdateFields::new().status(ToolCallStatus::InProgress);
            let update = ToolCallUpdate::new(ask.call_id.to_string(), fields);
            super::updates::send(
                &self.conn,
                &self.session,
                SessionUpdate::ToolCallUpdate(update),
            );
        }
        decided
    }
}

impl EditorApprover {
    /// The call the editor is asked about: announced already, so its id, with what it would
    /// change.
    fn call(&self, ask: &Ask<'_>) -> ToolCallUpdate {
        let mut fields = ToolCallUpdateFields::new()
            .title(super::tools::title(ask.tool, ask.input))
            .kind(super::tools::kind(ask.tool))
            .status(ToolCallStatus::Pending)
            .raw_input(ask.input.clone());
        let content = match (
            &ask.preview,
            super::tools::diff(ask.tool, ask.input, &self.cwd),
        ) {
            (_, Some(diff)) => Some(ToolCallContent::Diff(diff)),
            (Preview::Command(c), None) => Some(ToolCallContent::from(format!("```sh\n{c}\n```"))),
            (Preview::Diff { diff, .. }, None) => {
                Some(ToolCallContent::from(format!("```diff\n{diff}```")))
            }
            (Preview::Input(_), None) => None,
        };
        if let Some(c) = content {
            fields = fields.content(vec![c]);
        }
        ToolCallUpdate::new(ask.call_id.to_string(), fields)
    }
}

/// What the editor's answer decides. A cancelled prompt, an answer that names no offered
/// option and a failed request are all denials: a call runs only when the person said so.
fn decision(answer: Result<RequestPermissionResponse, String>, client: &str) -> Decision {
    match answer {
        Ok(r) => match r.outcome {
            RequestPermissionOutcome::Selected(s) => match &*s.option_id.0 {
                ALLOW_ONCE => Decision::AllowOnce,
                ALLOW_ALWAYS => Decision::AllowSession,
                REJECT_ONCE => Decision::Deny(format!("rejected in {client}")),
                other => Decision::Deny(format!(
                    "{client} answered with an unknown option {other:?}"
                )),
            },
            RequestPermissionOutcome::Cancelled => {
                Decision::Deny(format!("the prompt was cancelled in {client}"))
            }
            _ => Decision::Deny(format!("{client} gave an answer ag does not know")),
        },
        Err(e) => Decision::Deny(format!("{client} could not be asked: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn answer(v: serde_json::Value) -> Decision {
        decision(Ok(serde_json::from_value(v).unwrap()), "Zed")
    }

    #[test]
    fn the_editors_options_map_to_decisions() {
        let sel = |id: &str| json!({"outcome": {"outcome": "selected", "optionId": id}});
        assert_eq!(answer(sel("allow_once")), Decision::AllowOnce);
        assert_eq!(answer(sel("allow_always")), Decision::AllowSession);
        assert_eq!(
            answer(sel("reject_once")),
            Decision::Deny("rejected in Zed".into())
        );
        assert!(matches!(answer(sel("yes please")), Decision::Deny(_)));
        assert!(matches!(
            answer(json!({"outcome": {"outcome": "cancelled"}})),
            Decision::Deny(_)
        ));
        assert!(matches!(
            decision(Err("the client went away".into()), "Zed"),
            Decision::Deny(_)
        ));
    }
}
