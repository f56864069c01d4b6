//! Spawning from inside the agent loop: the `summon` and `retrieve` tools.

use std::time::Duration;

use serde_json::{json, Value};

use super::Agent;
use crate::fold::ToolSpec;
use crate::policy::Tool;
use crate::store::{SessionKind, SessionStatus};
use crate::summon::spawn::{self, Request, Spawner};
use crate::summon::Catalog;
use crate::tools::ToolOutput;

/// How long `retrieve` waits when the model names no timeout.
const DEFAULT_RETRIEVE_S: f64 = 600.0;

impl Agent<'_> {
    /// A `summon` or `retrieve` call (the registry sends no other tool here).
    pub(super) fn summon_tool(&self, tool: Tool, args: &Value) -> ToolOutput {
        match tool {
            Tool::Summon => self.summon(args),
            Tool::Retrieve => self.retrieve(args),
            other => ToolOutput::error(format!("{other} is not summon or retrieve")),
        }
    }

    /// The schema of `summon` or `retrieve` as this session may see it; `None` otherwise.
    pub(super) fn summon_tool_spec(&self, tool: Tool) -> Option<ToolSpec> {
        match tool {
            Tool::Summon => {
                let catalog = Catalog::load(&self.tool_ctx.cwd);
                Some(summon_spec(&catalog, self.config.user_agents_allowed()))
            }
            Tool::Retrieve => Some(ToolSpec {
                name: Tool::Retrieve.name().into(),
                description: "Wait for a subagent started with summon (background: true) to finish and return its final answer and status. User agents cannot be retrieved.".into(),
                input_schema: json!({
                    "type": "object",
                    "properties": {
                        "id": {"type": "string", "description": "The agent_id summon returned, or `last` for your most recent subagent."},
                        "timeout_s": {"type": "number", "minimum": 0, "description": "Seconds to wait before returning with the agent still running (default 600)."}
                    },
                    "required": ["id"],
                    "additionalProperties": false
                }),
            }),
            _ => None,
        }
    }

    fn summon(&self, args: &Value) -> ToolOutput {
        let str_arg = |k: &str| args.get(k).and_then(Value::as_str).map(str::to_string);
        let (Some(agent), Some(task)) = (str_arg("agent"), str_arg("task")) else {
            return ToolOutput::error("summon needs `agent` (a definition's name) and `task`");
        };
        let top_level = args
            .get("top_level")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let background = args
            .get("background")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let tools = match args.get("tools") {
            None | Some(Value::Null) => None,
            Some(Value::Array(list)) => {
                let names: Vec<&str> = list.iter().filter_map(Value::as_str).collect();
                match crate::policy::ToolsAsk::parse(&names.join(",")) {
                    Ok(p) => Some(p),
                    Err(e) => return ToolOutput::error(format!("summon: tools: {e}")),
                }
            }
            Some(_) => return ToolOutput::error("summon: tools must be a list of tool names"),
        };
        let spawner = Spawner {
            session: Some(
                self.store
                    .session(&self.session.id)
                    .unwrap_or_else(|_| self.session.clone()),
            ),
            tools: Some(self.policy.clone()),
            cwd: self.tool_ctx.cwd.clone(),
        };
        let req = Request {
            agent,
            task,
            tools,
            cwd: str_arg("working_directory").or_else(|| str_arg("cwd")),
            top_level,
        };
        let catalog = Catalog::load(&self.tool_ctx.cwd);
        let spawned =
            match spawn::spawn(self.store, self.home, self.config, &catalog, &spawner, &req) {
                Ok(s) => s,
                Err(e) => return ToolOutput::error(format!("summon refused: {e}")),
            };
        let id = spawned.child.id.clone();
        let mut text = format!("agent_id: {id}\n");
        for note in spawned
            .withheld
            .iter()
            .chain(spawned.dropped_note().as_ref())
        {
            text.push_str(note);
            text.push('\n');
        }
        if top_level {
            text.push_str(
                "status: running as a user agent (fire-and-forget: it cannot be retrieved)",
            );
            return ToolOutput::ok(text);
        }
        if background {
            text.push_str("status: running in the background; call retrieve with this agent_id for its answer");
            return ToolOutput::ok(text);
        }
        self.child_result(&id, None, text)
    }

    fn retrieve(&self, args: &Value) -> ToolOutput {
        let Some(id) = args
            .get("id")
            .or_else(|| args.get("agent_id"))
            .and_then(Value::as_str)
        else {
            return ToolOutput::error("retrieve needs `id`, the agent_id summon returned");
        };
        let found = if id == "last" {
            // The most recent subagent of this session.
            match self.store.spawned(Some(&self.session.id)) {
                Ok(kids) => kids
                    .into_iter()
                    .rev()
                    .find(|k| k.kind == SessionKind::Subagent)
                    .ok_or_else(|| "this session has no subagents".to_string()),
                Err(e) => Err(e.to_string()),
            }
        } else {
            self.store.resolve(id).map_err(|e| e.to_string())
        };
        let child = match found {
            Ok(s) => s,
            Err(e) => return ToolOutput::error(format!("retrieve: {e}")),
        };
        if child.kind == SessionKind::UserAgent {
            return ToolOutput::error(format!(
                "{} is a user agent (a top-level session) and cannot be retrieved: user agents are fire-and-forget",
                child.id
            ));
        }
        if child.kind != SessionKind::Subagent
            || child.parent_id.as_deref() != Some(&self.session.id)
        {
            return ToolOutput::error(format!("{} is not a subagent of this session", child.id));
        }
        let secs = args
            .get("timeout_s")
            .and_then(Value::as_f64)
            .unwrap_or(DEFAULT_RETRIEVE_S)
            .clamp(0.0, 86_400.0);
        self.child_result(
            &child.id,
            Some(Duration::from_secs_f64(secs)),
            format!("agent_id: {}\n", child.id),
        )
    }

    /// Wait for a child and describe how it ended.
    fn child_result(&self, id: &str, timeout: Option<Duration>, mut text: String) -> ToolOutput {
        let r = match spawn::wait(self.store, id, timeout, Some(&self.interrupt)) {
            Ok(r) => r,
            Err(e) => return ToolOutput::error(format!("{text}cannot read the agent: {e}")),
        };
        if r.timed_out && self.interrupted() {
            // Interrupted while waiting for it: the subagent goes with the wait (a user agent
            // is never waited for, so it is never cancelled here).
            let status = spawn::cancel(self.store, &r.session, CANCEL_GRACE)
                .map(|s| s.as_str().to_string())
                .unwrap_or_else(|e| format!("running (cancelling it failed: {e})"));
            text.push_str(&format!(
                "status: {status} (the turn was interrupted while waiting for it)"
            ));
            return ToolOutput::error(text);
        }
        if r.timed_out {
            text.push_str("status: running (still working; call retrieve again later)");
            return ToolOutput::ok(text);
        }
        text.push_str(&format!("status: {}\n", r.status.as_str()));
        if let Some(e) = &r.error {
            text.push_str(&format!("error: {e}\n"));
        }
        match &r.answer {
            Some(a) => {
                text.push('\n');
                text.push_str(a);
            }
            None => text.push_str("(no answer)"),
        }
        ToolOutput {
            text,
            is_error: r.status != SessionStatus::Done,
        }
    }
}

/// How long a subagent cancelled by an interrupt gets to end on SIGTERM before SIGKILL.
const CANCEL_GRACE: Duration = Duration::from_secs(3);

/// The summon schema: `top_level` and the user-agent catalog only when user agents are
/// permitted.
pub(crate) fn summon_spec(catalog: &Catalog, user_agents: bool) -> ToolSpec {
    let mut props = json!({
        "agent": {"type": "string", "description": "The agent definition to run (a name from the list above)."},
        "task": {"type": "string", "description": "What the agent should do; it sees nothing else of this conversation."},
        "tools": {"type": "array", "items": {"type": "string"}, "description": "Tools for the agent. Defaults to the agent definition's tools. Intersected with your own tools: an agent never gets a tool you lack."},
        "background": {"type": "boolean", "description": "Return at once with the agent_id instead of waiting for the answer; call retrieve later."},
        "working_directory": {"type": "string", "description": "The agent's directory, relative to yours; a subagent's must lie inside yours."}
    });
    let mut description = String::from(
        "Start an agent from a definition on a task. A subagent runs as your child: by default \
         this waits and returns its final answer; with background: true it returns the agent_id \
         at once (use retrieve).",
    );
    if user_agents {
        props["top_level"] = json!({"type": "boolean", "description": "Start a user agent: an independent top-level session from a non-subagent definition. Fire-and-forget: it cannot be retrieved."});
        description.push_str(" With top_level: true it starts an independent user agent instead.");
    }
    description.push_str("\n\n");
    description.push_str(&catalog.describe(user_agents));
    ToolSpec {
        name: Tool::Summon.name().into(),
        description,
        input_schema: json!({
            "type": "object",
            "properties": props,
            "required": ["agent", "task"],
            "additionalProperties": false
        }),
    }
}
