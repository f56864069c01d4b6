//! The slash commands an editor offers for a session (`available_commands_update`), each the
//! library's own operation, as in the chat: `/btw QUESTION` is the side chat (`ag-fork --btw`:
//! a read-only fork answers, nothing is written to this session), `/fork [TITLE]` is
//! `ag-fork`, `/compact` is `ag-prompt --compact`; and the custom commands of the session's
//! folder ([`crate::commands`]), each a prompt that runs as the turn.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use agent_client_protocol_schema::v1::{
    AvailableCommand, AvailableCommandInput, AvailableCommandsUpdate, PromptResponse,
    SessionUpdate, StopReason, UnstructuredCommandInput,
};

use super::rpc::RpcError;
use super::{Open, Server};
use crate::agent::side::{side_chat, SideAsk};
use crate::agent::{Event, Manual, Prepared, SessionChoice};
use crate::fork::{ChildTools, ForkSpec, Side};
use crate::store::SessionKind;

/// A command the editor may send as a prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Command {
    Btw,
    Fork,
    Compact,
}

const TABLE: [(Command, &str, &str, Option<&str>); 3] = [
    (
        Command::Btw,
        "btw",
        "Ask a side question: answered read-only beside this session, which it does not change",
        Some("question"),
    ),
    (
        Command::Fork,
        "fork",
        "Fork this session at its latest completed turn (O(1)); load the fork to go on there",
        Some("title (optional)"),
    ),
    (
        Command::Compact,
        "compact",
        "Summarize what came before the latest turns; the session goes on from the summary",
        None,
    ),
];

/// A prompt that is one of the commands: the command and the rest of its text.
pub(crate) fn parse(text: &str) -> Option<(Command, &str)> {
    let rest = text.trim_start().strip_prefix('/')?;
    let (word, arg) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    let command = TABLE.iter().find(|(_, n, ..)| *n == word)?.0;
    Some((command, arg.trim()))
}

/// The built-ins' names, which no custom command takes.
fn reserved() -> Vec<&'static str> {
    TABLE.iter().map(|r| r.1).collect()
}

/// A prompt that runs a custom command of `cwd`'s: the command's prompt for its arguments.
pub(crate) fn custom(text: &str, cwd: &std::path::Path) -> Option<String> {
    let rest = text.trim_start().strip_prefix('/')?;
    let (word, arg) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    let commands = crate::commands::Commands::load(cwd, &reserved());
    commands.get(word).map(|c| c.expand(arg))
}

/// The update that tells the editor which commands there are: the built-ins, then `custom`.
pub(crate) fn advertised(custom: &crate::commands::Commands) -> SessionUpdate {
    let input = |h: &str| AvailableCommandInput::Unstructured(UnstructuredCommandInput::new(h));
    let builtin = TABLE
        .iter()
        .map(|(_, name, about, hint)| AvailableCommand::new(*name, *about).input(hint.map(input)));
    let files = custom.by_name.values().map(|c| {
        AvailableCommand::new(c.name.clone(), c.summary())
            .input(c.argument_hint.as_deref().map(input))
    });
    let commands = builtin.chain(files).collect();
    SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(commands))
}

impl Server {
    /// Tell the editor about the commands of a session it just opened.
    pub(super) fn advertise(&self, acp_id: &str) {
        let cwd = self.state().sessions.get(acp_id).map(|o| o.cwd.clone());
        let custom = match cwd {
            Some(cwd) => crate::commands::Commands::load(&cwd, &reserved()),
            None => crate::commands::Commands::default(),
        };
        for p in &custom.problems {
            (self.opts.notify)(p);
        }
        super::updates::send(&self.conn, acp_id, advertised(&custom));
    }

    /// Run a command sent as a prompt; what it did is said as the agent's message.
    pub(super) fn command(
        &self,
        acp_id: &str,
        open: &Open,
        (command, arg): (Command, &str),
        interrupt: Arc<AtomicBool>,
    ) -> Result<PromptResponse, RpcError> {
        if !open.made {
            return Err(RpcError::invalid_params(format!(
                "/{} needs a conversation: this session has no turn yet",
                TABLE.iter().find(|r| r.0 == command).map_or("", |r| r.1)
            )));
        }
        let say = |text: String| {
            super::updates::send(
                &self.conn,
                acp_id,
                SessionUpdate::AgentMessageChunk(super::updates::text(text)),
            )
        };
        let stop = match command {
            Command::Btw => self.btw(acp_id, open, arg, interrupt)?,
            Command::Fork => {
                say(self.fork(open, arg)?);
                StopReason::EndTurn
            }
            Command::Compact => {
                say(self.compact(acp_id, open, interrupt)?);
                StopReason::EndTurn
            }
        };
        Ok(PromptResponse::new(stop))
    }

    /// `/btw`: the side chat's answer streams as the agent's message; its tool calls show
    /// as calls. The side chat is a session of its own (kind `side`), forked in O(1).
    fn btw(
        &self,
        acp_id: &str,
        open: &Open,
        question: &str,
        interrupt: Arc<AtomicBool>,
    ) -> Result<StopReason, RpcError> {
        if question.is_empty() {
            return Err(RpcError::invalid_params("/btw needs a question"));
        }
        let config = self.config(&open.cwd)?;
        let store = self.store(&config)?;
        let source = store.resolve(&open.id).map_err(internal)?;
        let ask = SideAsk {
            source: &source,
            question,
            title: None,
            model: None,
            keep_cache: false,
        };
        let side = side_chat(&store, &config, ask).map_err(internal)?;
        let mut agent =
            side.plan
                .into_agent(&store, &self.opts.home, &config, &open.cwd, interrupt);
        agent.tool_ctx.editor =
            super::files::EditorFiles::offered(&self.state().caps, &self.conn, acp_id);
        let mut relay = super::updates::Relay::new(self.conn.clone(), acp_id, &open.cwd, None);
        let outcome = agent
            .run_turn(&side.prompt, Vec::new(), &mut |ev| relay.event(ev))
            .map_err(internal)?;
        Ok(match outcome {
            crate::agent::Outcome::Done { stop_reason } => super::updates::stop_reason(stop_reason),
            crate::agent::Outcome::Interrupted => StopReason::Cancelled,
            crate::agent::Outcome::TooLarge { message }
            | crate::agent::Outcome::Failed { message, .. } => {
                return Err(RpcError::internal(format!(
                    "the side chat failed: {message}"
                )))
            }
        })
    }

    /// `/fork`: the fork's id, to load or to continue with `ag-prompt -s`.
    fn fork(&self, open: &Open, title: &str) -> Result<String, RpcError> {
        let config = self.config(&open.cwd)?;
        let store = self.store(&config)?;
        let source = store.resolve(&open.id).map_err(internal)?;
        let (child, _) = crate::fork::fork(
            &store,
            ForkSpec {
                source,
                at: None,
                title: (!title.is_empty()).then(|| title.to_string()),
                kind: SessionKind::Chat,
                tools: ChildTools::Inherit,
                side: Side::No,
                model: None,
            },
        )
        .map_err(internal)?;
        Ok(format!(
            "Forked as session {} ({}) at seq {}: load it to go on there, or `ag-prompt -s {}`.",
            child.handle,
            child.id,
            child.fork_seq.unwrap_or(0),
            child.handle
        ))
    }

    /// `/compact`: the model summarizes; the session goes on from the summary.
    fn compact(
        &self,
        acp_id: &str,
        open: &Open,
        interrupt: Arc<AtomicBool>,
    ) -> Result<String, RpcError> {
        let config = self.config(&open.cwd)?;
        let store = self.store(&config)?;
        let mut req = self.request(open, &super::input::Input::default())?;
        req.text = None;
        req.compact = true;
        req.session = SessionChoice::Existing(open.id.clone());
        let plan = match crate::agent::prepare(&store, &config, req).map_err(internal)? {
            Prepared::Ready(plan) => plan,
            _ => return Err(RpcError::internal("the session is busy in another process")),
        };
        let agent = plan.into_agent(&store, &self.opts.home, &config, &open.cwd, interrupt);
        let mut sizes = None;
        let mut relay = super::updates::Relay::new(self.conn.clone(), acp_id, &open.cwd, None);
        let done = agent
            .compact_now(&mut |ev| {
                if let Event::Compacted {
                    tokens_before,
                    tokens_after,
                    ..
                } = &ev
                {
                    sizes = Some((*tokens_before, *tokens_after));
                }
                relay.event(ev)
            })
            .map_err(internal)?;
        Ok(match (done, sizes) {
            (Manual::Done, Some((before, after))) => format!(
                "Compacted: about {before} tokens of context became {after}; the log keeps everything."
            ),
            (Manual::Done, None) => "Compacted; the log keeps everything.".into(),
            (Manual::Nothing, _) => {
                "Nothing to compact: the session holds nothing before its latest turn.".into()
            }
        })
    }
}

fn internal(e: impl std::fmt::Display) -> RpcError {
    RpcError::internal(e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_recognised_by_their_word() {
        assert_eq!(parse("/btw why?"), Some((Command::Btw, "why?")));
        assert_eq!(parse("  /compact"), Some((Command::Compact, "")));
        assert_eq!(
            parse("/fork the other way"),
            Some((Command::Fork, "the other way"))
        );
        assert_eq!(parse("/forking"), None);
        assert_eq!(parse("btw /fork"), None);
        let u = serde_json::to_value(advertised(&Default::default())).unwrap();
        assert_eq!(u["sessionUpdate"], "available_commands_update");
        assert_eq!(u["availableCommands"][0]["name"], "btw");
        assert_eq!(u["availableCommands"][0]["input"]["hint"], "question");
    }
}
