//! The `script:FILE` model: a TOML script of steps, one per model request, with text,
//! thinking, tool calls and gates a test or a demo opens.

use std::time::Duration;

use serde::Deserialize;
use serde_json::{Map, Value};

use super::{step_end, Emitter};
use crate::fold::Dialect;
use crate::log::StopReason;
use crate::provider::Sizes;
use crate::provider::{AttemptError, ModelError, Provider};
use crate::reduce::{ChunkOp, StepEnd};

/// A script of steps, one per model request.
#[derive(Debug)]
pub(crate) struct ScriptProvider {
    name: String,
    path: String,
    steps: Vec<Step>,
    /// The keyed replies (`reply_to`), outside the order.
    replies: Vec<Step>,
    /// `context_window = N` at the top of the script: the window the run plans against.
    context_window: Option<u64>,
    /// The last request's assistant messages and the step that answered it, so a run that
    /// compacts inside a turn (fewer assistant messages than steps answered) goes on to the
    /// next step rather than back to an earlier one.
    place: std::sync::Mutex<Option<(usize, usize)>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScriptFile {
    /// The model's window, in tokens, so compaction can be exercised offline.
    context_window: Option<u64>,
    #[serde(default)]
    step: Vec<Step>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Step {
    thinking: Option<String>,
    text: Option<String>,
    #[serde(default)]
    delay_ms: u64,
    /// A gate: the step is not finished until this file exists (relative to the current
    /// directory), so a test or a demo can hold an agent mid-turn without guessing a delay.
    wait_for: Option<String>,
    #[serde(default)]
    tool_calls: Vec<ScriptCall>,
    /// A keyed reply: the step answers any request whose latest user message contains this
    /// text, wherever it comes; keyed steps are not counted in the script's order.
    reply_to: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScriptCall {
    name: String,
    #[serde(default)]
    arguments: Option<Value>,
    id: Option<String>,
}

impl ScriptProvider {
    /// Reads and checks the script at `path` (relative to the current directory).
    pub(crate) fn load(path: &str) -> Result<ScriptProvider, ModelError> {
        let text = std::fs::read_to_string(path).map_err(|source| ModelError::Script {
            path: path.into(),
            source,
        })?;
        Self::parse(path, &text)
    }

    /// A script from its text; `path` names it in messages.
    pub(crate) fn parse(path: &str, text: &str) -> Result<ScriptProvider, ModelError> {
        let bad = |message: String| ModelError::BadScript {
            path: path.into(),
            message,
        };
        let file: ScriptFile =
            toml::from_str(text).map_err(|e| bad(crate::config::toml_error::describe(text, &e)))?;
        for (n, step) in file.step.iter().enumerate() {
            for (i, call) in step.tool_calls.iter().enumerate() {
                let at = format!("step {}, tool call {}", n + 1, i + 1);
                if call.name.trim().is_empty() {
                    return Err(bad(format!("{at}: the name is empty")));
                }
                if !matches!(call.arguments, None | Some(Value::Object(_))) {
                    return Err(bad(format!("{at}: arguments must be a table")));
                }
            }
        }
        if file.context_window.is_some_and(|w| w < 256) {
            return Err(bad("context_window must be at least 256 tokens".into()));
        }
        let (replies, steps) = file.step.into_iter().partition(|s| s.reply_to.is_some());
        Ok(ScriptProvider {
            name: format!("script:{path}"),
            path: path.into(),
            steps,
            replies,
            context_window: file.context_window,
            place: Default::default(),
        })
    }

    /// How many steps the script has.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.steps.len()
    }
}

impl ScriptProvider {
    /// The request's place in the script (`assistants`: its assistant messages): one
    /// assistant message per answered step, so a
    /// retried attempt gets the same step again. After a compaction the request holds fewer
    /// assistant messages than the run answered: it gets the step after the last one served.
    /// A summarizer's request (it ends with the summary prompt) is placed by its own count.
    fn place(&self, body: &Value, assistants: usize) -> usize {
        let messages = body["messages"].as_array();
        let n = assistants;
        let summary = messages.and_then(|ms| ms.last()).is_some_and(|m| {
            m.to_string()
                .contains(&crate::context::compact::SUMMARY_PROMPT[..23])
        });
        if summary {
            return n;
        }
        let mut place = self.place.lock().unwrap_or_else(|e| e.into_inner());
        let at = match *place {
            Some((seen, served)) if n == seen => served,
            Some((seen, served)) if n > seen => served + (n - seen),
            Some((_, served)) => served + 1,
            None => n,
        };
        *place = Some((n, at));
        at
    }
}

impl ScriptProvider {
    /// The keyed reply for a request whose latest user message contains its key.
    fn keyed(&self, body: &Value) -> Option<&Step> {
        let last_user = body["messages"]
            .as_array()?
            .iter()
            .rev()
            .find(|m| m["role"] == "user")?
            .to_string();
        self.replies.iter().find(|s| {
            s.reply_to
                .as_deref()
                .is_some_and(|k| !k.is_empty() && last_user.contains(k))
        })
    }
}

impl Provider for ScriptProvider {
    fn name(&self) -> &str {
        &self.name
    }

    fn dialect(&self) -> Dialect {
        Dialect::Anthropic
    }

    fn api_model(&self) -> &str {
        "script"
    }

    fn context_window(&self) -> Option<u64> {
        self.context_window
    }

    fn attempt(
        &self,
        body: &Value,
        sink: &mut dyn FnMut(ChunkOp),
    ) -> Result<StepEnd, AttemptError> {
        self.attempt_sized(body, &Sizes::of(body), sink)
    }

    fn attempt_sized(
        &self,
        body: &Value,
        sizes: &Sizes,
        sink: &mut dyn FnMut(ChunkOp),
    ) -> Result<StepEnd, AttemptError> {
        let keyed = self.keyed(body);
        let n = match keyed {
            Some(_) => 0,
            None => self.place(body, sizes.assistant_messages),
        };
        let Some(step) = keyed.or_else(|| self.steps.get(n)) else {
            return Err(AttemptError {
                message: format!(
                    "the script {} has {} step{}; request {} has none left to answer it",
                    self.path,
                    self.steps.len(),
                    if self.steps.len() == 1 { "" } else { "s" },
                    n + 1
                ),
                status: None,
                retryable: false,
                retry_after: None,
            });
        };
        let mut out = Emitter::new(sink);
        if let Some(thinking) = step.thinking.as_deref().filter(|t| !t.is_empty()) {
            out.thinking(thinking, "script");
        }
        if let Some(text) = step.text.as_deref().filter(|t| !t.is_empty()) {
            out.text(text);
        }
        for (i, call) in step.tool_calls.iter().enumerate() {
            let call_id = call.id.clone().unwrap_or_else(|| format!("call_{n}_{i}"));
            let arguments = call
                .arguments
                .clone()
                .unwrap_or_else(|| Value::Object(Map::new()));
            out.tool_call(call_id, &call.name, arguments);
        }
        if step.delay_ms > 0 {
            std::thread::sleep(Duration::from_millis(step.delay_ms));
        }
        if let Some(gate) = &step.wait_for {
            wait_for_gate(gate).map_err(|message| AttemptError {
                message: format!("the script {}: {message}", self.path),
                status: None,
                retryable: false,
                retry_after: None,
            })?;
        }
        let stop = if step.tool_calls.is_empty() {
            StopReason::EndTurn
        } else {
            StopReason::ToolUse
        };
        Ok(step_end(stop, sizes, out.chars, "script"))
    }
}

/// How long a `wait_for` gate stays closed before the step fails.
const GATE_LIMIT: Duration = Duration::from_secs(120);

/// Wait until `path` exists, polling; an error after `GATE_LIMIT`.
fn wait_for_gate(path: &str) -> Result<(), String> {
    let until = std::time::Instant::now() + GATE_LIMIT;
    while !std::path::Path::new(path).exists() {
        if std::time::Instant::now() >= until {
            return Err(format!(
                "the gate {path} did not open within {} s",
                GATE_LIMIT.as_secs()
            ));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok(())
}
