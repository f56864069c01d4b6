//! The read-only side chat (`ag-fork --btw`) planned like any turn: what it may be asked on,
//! its model, its tools (look-only, and never one its source lacks), the O(1) fork, and the
//! lease on the fork. The command only parses, runs the turn and words.

use super::plan::{PlanError, TurnPlan};
use crate::config::Config;
use crate::fork::{self, ChildTools, ForkError, ForkSpec, Side};
use crate::policy::Policy;
use crate::provider::ModelSources;
use crate::store::{Session, SessionKind, Store};

/// What a side question asks.
pub(crate) struct SideAsk<'a> {
    pub(crate) source: &'a Session,
    pub(crate) question: &'a str,
    /// The side chat's title; without one, `BTW · QUESTION`.
    pub(crate) title: Option<String>,
    /// `-m`: without it, the source's model, else the usual sources.
    pub(crate) model: Option<&'a str>,
    /// Keep the source's cached prefix byte for byte (its tools offered, refused if called).
    pub(crate) keep_cache: bool,
}

/// A side chat ready to run.
pub(crate) struct SideChat<'s> {
    pub(crate) plan: TurnPlan<'s>,
    /// The prompt its turn takes.
    pub(crate) prompt: String,
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum SideError {
    /// No side chat was made.
    #[error(transparent)]
    Fork(#[from] ForkError),
    /// The side chat `child` was made and cannot run now.
    #[error("{error}")]
    Plan {
        child: Box<Session>,
        error: PlanError,
    },
    /// Nothing was made: the model cannot be chosen.
    #[error(transparent)]
    Model(PlanError),
}

/// Plan a side chat on `ask.source`. Everything that can be refused is checked before the
/// fork exists, so a refusal leaves no side chat behind.
pub(crate) fn side_chat<'s>(
    store: &'s Store,
    config: &Config,
    ask: SideAsk<'_>,
) -> Result<SideChat<'s>, SideError> {
    let source = ask.source;
    if fork::latest_turn_end(store, source)
        .map_err(ForkError::from)?
        .is_none()
    {
        return Err(ForkError::NoCompletedTurn(source.id.clone()).into());
    }
    let chosen = crate::provider::choose(
        &ModelSources {
            flag: ask.model,
            session: source.model.as_deref(),
            ..ModelSources::with_env()
        },
        config,
    )
    .map_err(|e| SideError::Model(e.into()))?;
    // The side chat looks only, and never with a tool its source lacks.
    let tools = source
        .settings()
        .map_err(|e| SideError::Model(e.into()))?
        .tools();
    let read_only = Policy::look_only().intersect(&tools);
    let (child, _) = fork::fork(
        store,
        ForkSpec {
            source: source.clone(),
            at: None,
            title: Some(ask.title.unwrap_or_else(|| fork::side_title(ask.question))),
            kind: SessionKind::Side,
            tools: ChildTools::Set(read_only.clone()),
            side: if ask.keep_cache {
                Side::KeepCache
            } else {
                Side::Section
            },
            model: Some(chosen.model.clone()),
        },
    )?;
    let prompt = if ask.keep_cache {
        fork::keep_cache_text(ask.question)
    } else {
        ask.question.to_string()
    };
    // Nobody else knows the child's id yet: the lease cannot be contested.
    let plan = TurnPlan::claimed(store, child.clone(), chosen, read_only).map_err(|error| {
        SideError::Plan {
            child: Box::new(child),
            error,
        }
    })?;
    Ok(SideChat { plan, prompt })
}
