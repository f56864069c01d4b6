//! A compaction asked for by hand (`ag-log compact`), whole: take the session's lease or, when
//! another process runs it, queue the compaction for that process's next step; write the
//! summary (given, or by the summarizer) over everything before the latest turns; leave the
//! session in the status it had. The command only parses and words.

use std::path::PathBuf;
use std::sync::Arc;

use super::{compact, window, CompactError, Compacted, Request, Summarizer, SummarySource};
use crate::config::Config;
use crate::fold::compaction::Trigger;
use crate::fold::ToolSpec;
use crate::store::{Leased, Session, Store};

/// What `ag-log compact` asks for.
pub(crate) struct Ask {
    /// A summary a person or a script wrote; `None`: the summarizer writes one.
    pub(crate) summary: Option<String>,
    /// The latest turns kept verbatim (at least one).
    pub(crate) keep_turns: usize,
    /// What the summarizer should keep or focus on.
    pub(crate) instructions: Option<String>,
    /// Queue the compaction when another process runs the session (else: `Busy`).
    pub(crate) queue: bool,
}

/// What came of it.
#[derive(Debug)]
pub(crate) enum Outcome {
    Done(Box<Compacted>),
    /// Nothing lies before the turns kept.
    Nothing,
    /// Another process runs the session: the compaction waits for its next step.
    Queued {
        owner: i64,
    },
    /// Another process runs the session, and queueing was not wanted.
    Busy {
        owner: i64,
    },
}

/// Compact `session` by hand.
pub(crate) fn by_hand(
    store: &Store,
    rooms: &crate::room::Rooms,
    config: &Config,
    session: &Session,
    ask: Ask,
) -> Result<Outcome, CompactError> {
    let lease = match store.lease(&session.id, None)? {
        Leased::Held(lease) => lease,
        Leased::Busy { owner } if !ask.queue => return Ok(Outcome::Busy { owner }),
        Leased::Busy { owner } | Leased::Queued { owner, .. } => {
            store.enqueue_compaction(&session.id, ask.summary.as_deref())?;
            return Ok(Outcome::Queued { owner });
        }
    };
    // Whatever happens, the session goes back to the status it had.
    lease.end_as(session.status);
    let source = match ask.summary {
        Some(s) => SummarySource::Given(s),
        None => SummarySource::Model(for_session(store, config, session)?),
    };
    let cwd = PathBuf::from(session.cwd.clone().unwrap_or_else(|| ".".into()));
    let req = Request {
        store,
        rooms,
        session,
        cwd: &cwd,
        trigger: Trigger::Manual,
        keep_tokens: config.context.keep_tokens,
        keep_turns: Some(ask.keep_turns.max(1)),
        instructions: ask.instructions,
        tokens_before: None,
        turn: None,
        recall: session
            .settings()?
            .tools()
            .allows(crate::policy::Tool::Recall.name()),
    };
    let view = store.load_context_view(session)?;
    Ok(match compact(&req, &view, source)? {
        Some(done) => Outcome::Done(Box::new(done)),
        None => Outcome::Nothing,
    })
}

/// The summarizer of a session no process is running: `[context] compact_model`, else the
/// session's model, with the session's system prompt and its tools (a built-in tool's spec; a
/// bare schema for one this process cannot describe, such as an MCP server's: the summarizer
/// is told not to call tools, but a provider refuses replayed calls of an unknown tool).
fn for_session(
    store: &Store,
    config: &Config,
    session: &Session,
) -> Result<Summarizer, CompactError> {
    let model = config
        .context
        .compact_model
        .clone()
        .or_else(|| session.model.clone())
        .ok_or_else(|| {
            CompactError::Summarizer(format!(
                "session {} has no model to summarize it; set [context] compact_model",
                session.id
            ))
        })?;
    let settings = session.settings()?;
    let system = settings.system_prompt().filter(|s| !s.is_empty());
    let tools = settings
        .tools
        .clone()
        .unwrap_or_default()
        .iter()
        .map(|n| {
            crate::policy::Tool::parse(n)
                .and_then(crate::tools::spec)
                .unwrap_or_else(|| ToolSpec {
                    name: n.clone(),
                    description: n.clone(),
                    input_schema: serde_json::json!({"type": "object"}),
                })
        })
        .collect();
    summarizer(store, config, &model, None, system, tools, None)
}

/// The one way a summarizer is made, for the loop and by hand: `model`'s provider (or
/// `provider`, the running session's own, when it is that model), its window (`window` when
/// the run was given one, else the configured, learned or built-in one), and `[network]`.
pub(crate) fn summarizer(
    store: &Store,
    config: &Config,
    model: &str,
    provider: Option<Arc<dyn crate::provider::Provider>>,
    system: Option<String>,
    tools: Vec<ToolSpec>,
    window_given: Option<u64>,
) -> Result<Summarizer, CompactError> {
    let provider = match provider {
        Some(p) => p,
        None => Arc::from(crate::provider::resolve(model, config).map_err(|e| {
            CompactError::Summarizer(format!("the summarizer's model {model:?}: {e}"))
        })?),
    };
    let window = match window_given {
        Some(w) => w,
        None => {
            let learned = store
                .learned_window(&window::learned_key(provider.as_ref()))
                .ok()
                .flatten();
            super::lookup(model, config, learned).context_window
        }
    };
    Ok(Summarizer {
        provider,
        system,
        tools,
        window,
        network: config.network.clone(),
    })
}
