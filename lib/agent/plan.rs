//! The resolved plan for one turn: which session (and its claim), which model, which tools,
//! which system prompt and limits. `ag-prompt`, `ag-fork --btw` and the children `ag-summon`
//! starts all come through here, so each decision is made once, in one order; the commands
//! only parse flags before and print after.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use super::{Agent, TurnOptions};
use crate::config::Config;
use crate::paths::Home;
use crate::policy::Policy;
use crate::provider::{self, ChooseError, ModelSources, Provider};
use crate::settings::Settings;
use crate::store::{Lease, Leased, NewSession, Session, Store, StoreError};
use crate::summon::AgentDef;
use crate::tools::ToolCtx;

/// Which session a turn runs in.
#[derive(Debug, Clone)]
pub(crate) enum SessionChoice {
    /// A new session in the current directory, titled `title` or after the prompt, with
    /// the chosen `id` (`--session-id`) or a new one.
    New {
        title: Option<String>,
        id: Option<String>,
    },
    /// An existing session, as the person referred to it (handle, id, title, `last`).
    Existing(String),
    /// `-c`: what `last` means here (the store's scope); without a terminal, only a session
    /// the calling shell made.
    Last,
    /// `--name NAME`: the session of that name in the current directory, made on first use
    /// (titled `title` or after the name).
    Named { name: String, title: Option<String> },
}

/// What a command asks for; [`prepare`] turns it into a [`TurnPlan`].
#[derive(Debug, Clone)]
pub(crate) struct TurnRequest {
    /// The prompt; `None` when the run only compacts.
    pub(crate) text: Option<String>,
    pub(crate) session: SessionChoice,
    /// `-m`.
    pub(crate) model: Option<String>,
    /// `--max-cost`: the model must have a price; checked before anything is written.
    pub(crate) max_cost: Option<f64>,
    /// `--tools`: a new session gets it (default read-only); an existing one is narrowed by it.
    /// Signed words (`+edit`, `-bash`) change the defaults, or the session's own tools.
    pub(crate) tools: Option<crate::policy::ToolsAsk>,
    /// `--system`.
    pub(crate) system: Option<String>,
    /// `--agent`: a new session starts from this definition.
    pub(crate) agent: Option<AgentDef>,
    pub(crate) max_steps: Option<u32>,
    pub(crate) thinking: Option<u64>,
    /// Compact the session before the turn (`--compact`).
    pub(crate) compact: bool,
    /// `--sandbox`: a new session's mode; an existing one's can only tighten.
    pub(crate) sandbox: Option<crate::sandbox::Mode>,
    /// `--net`.
    pub(crate) net: bool,
    /// `--approval`: how the session's calls that change something are decided from now on.
    pub(crate) approval: Option<super::ApprovalMode>,
    /// When the session is busy: queue the prompt (`true`) or refuse.
    pub(crate) queue: bool,
    /// The (canonical) current directory: a new session's directory.
    pub(crate) cwd: PathBuf,
    /// A new session reads the project's instructions (`--no-project-context`: not).
    pub(crate) project_context: bool,
    /// How many images go with the prompt: the model must take images, and the prompt
    /// cannot wait in a busy session's queue (queued input is text).
    pub(crate) images: usize,
}

/// Why a turn could not be planned.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PlanError {
    #[error("session {session} is busy (pid {owner} is running a turn)")]
    Busy { session: String, owner: i64 },
    #[error("session {session} is busy (pid {owner} is running a turn), and a prompt with images cannot be queued")]
    BusyWithImages { session: String, owner: i64 },
    #[error("the model {model} does not take images")]
    NoImages { model: String },
    #[error("--max-cost: model {model} has no price, so its cost cannot be counted")]
    NoPrice { model: String },
    #[error(transparent)]
    Model(#[from] ChooseError),
    #[error(transparent)]
    Sandbox(#[from] crate::sandbox::ResolveError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Everything a turn runs with, decided.
pub(crate) struct TurnPlan<'s> {
    pub(crate) session: Session,
    pub(crate) model: String,
    pub(crate) provider: Box<dyn Provider>,
    /// What chose the model.
    pub(crate) origin: provider::Origin,
    /// The guard's allow-list.
    pub(crate) tools: Policy,
    /// The session's stored settings: the system prompt and the offered tools come from them.
    pub(crate) settings: Settings,
    pub(crate) max_steps: Option<u32>,
    /// Extended-thinking budget tokens; `None` takes the config's.
    pub(crate) thinking: Option<u64>,
    /// Compact the session before the turn.
    pub(crate) compact: bool,
    /// What was asked for and not granted, for the person to read.
    pub(crate) notes: Vec<String>,
    /// What the sandbox's sources tightened or ignored.
    pub(crate) warnings: Vec<String>,
    /// `--allow-protected`: this turn's `write` and `edit` may change `.git/`, `.ag/`, `.claude/`.
    pub(crate) allow_protected: bool,
    /// `--yes`: this run allows whatever the policy allows, asking nobody.
    pub(crate) yes: bool,
    /// `--schema`: the answer this turn must give.
    pub(crate) schema: Option<Arc<crate::structured::AnswerSchema>>,
    /// `--max-cost`: US dollars this turn may spend.
    pub(crate) max_cost: Option<f64>,
    /// `--context-window`: the window this run plans against.
    pub(crate) context_window: Option<u64>,
    claim: Lease<'s>,
}

/// A planned turn, or a prompt (or compaction) queued for the process already running the
/// session.
pub(crate) enum Prepared<'s> {
    Ready(Box<TurnPlan<'s>>),
    /// `item` is the queue row, for `--wait`.
    Queued {
        session: Box<Session>,
        owner: i64,
        item: i64,
    },
    CompactionQueued {
        session: Box<Session>,
        owner: i64,
    },
}

/// Resolve a request: choose and claim the session (or queue the prompt), choose the model,
/// narrow the tools, and store the settings the turn runs with.
pub(crate) fn prepare<'s>(
    store: &'s Store,
    config: &Config,
    req: TurnRequest,
) -> Result<Prepared<'s>, PlanError> {
    let existing = match &req.session {
        SessionChoice::New { .. } => None,
        SessionChoice::Existing(r) => Some(store.resolve(r)?),
        // `last` as the store's scope reads it; finding none says what is near.
        // A job without a terminal continues its own session, never a person's chat here.
        SessionChoice::Last => Some(store.continued(!crate::proc::has_terminal())?),
        SessionChoice::Named { name, .. } => store.named(&req.cwd.to_string_lossy(), name)?,
    };
    let def = req.agent.as_ref();
    let choose = || {
        provider::choose(
            &ModelSources {
                flag: req.model.as_deref(),
                definition: def.map(|d| (d.slug.as_str(), d.models.as_slice())),
                session: existing.as_ref().and_then(|s| s.model.as_deref()),
                ..ModelSources::with_env()
            },
            config,
        )
    };
    // Images are refused before anything is claimed or written when the model cannot see
    // them.
    let early = match req.images {
        0 => None,
        _ => Some(seeing(choose()?)?),
    };
    // A running session takes the prompt as queued input.
    let claim = match &existing {
        Some(s) => match claim_existing(store, s, &req)? {
            Ok(claim) => Some(claim),
            Err(queued) => return Ok(queued),
        },
        None => None,
    };
    let chosen = match early {
        Some(chosen) => chosen,
        None => choose()?,
    };
    // A budget needs a price to count against: refused before a session is made or claimed.
    if req.max_cost.is_some() && crate::usage::price(&chosen.model, config).is_none() {
        return Err(PlanError::NoPrice {
            model: chosen.model,
        });
    }
    // An imported session records no tools (a file grants nothing): its first turn here grants
    // them as for a new session, from the flags and the user's defaults. A session made with
    // `ag-log append` stays read-only.
    let imported = match &existing {
        Some(s) => store.import_source(&s.id)?.is_some(),
        None => false,
    };
    let stored = existing
        .as_ref()
        .map(Session::settings)
        .transpose()?
        .filter(|s| s.tools.is_some() || !imported);
    let (tools, notes) = narrow(stored.as_ref().map(Settings::tools), &req);
    let (sandbox, mut warnings) = sandbox_for(config, &req, stored.as_ref())?;
    if req.thinking.is_some() && !thinks(chosen.provider.as_ref(), config) {
        warnings.push(format!(
            "{} does not take extended thinking: --thinking is ignored",
            chosen.model
        ));
    }
    let (session, claim) = match (existing, claim) {
        (Some(s), Some(claim)) => (s, claim),
        _ => {
            let s = match create(store, &req, (&tools, &sandbox), &chosen.model) {
                // Another run of the same job made it a moment ago: continue that one.
                Err(StoreError::NameTaken(name)) => {
                    let cwd = req.cwd.to_string_lossy().into_owned();
                    let Some(other) = store.named(&cwd, &name)? else {
                        return Err(StoreError::NameTaken(name).into());
                    };
                    let mut req = req;
                    req.session = SessionChoice::Existing(other.id);
                    return prepare(store, config, req);
                }
                r => r?,
            };
            match store.lease(&s.id, None)? {
                Leased::Held(claim) => (s, claim),
                // A named session: another run of the same job found it a moment ago and runs
                // it now. This run goes the way of any run on a busy session.
                Leased::Queued { .. } | Leased::Busy { .. } => {
                    let mut req = req;
                    req.session = SessionChoice::Existing(s.id);
                    return prepare(store, config, req);
                }
            }
        }
    };
    let mut notes = notes;
    let mut settings = compose_settings(stored, &req, (&tools, &sandbox), &mut notes);
    approval_for(&mut settings, req.approval, config);
    store.set_model_and_settings(&session.id, &chosen.model, &settings)?;
    let mut plan = TurnPlan::with(session, chosen, tools, settings, claim);
    plan.max_steps = req.max_steps.or(def.and_then(|d| d.max_steps));
    plan.thinking = req.thinking;
    plan.compact = req.compact;
    plan.notes = notes;
    plan.warnings = warnings;
    Ok(Prepared::Ready(Box::new(plan)))
}

/// The chosen model, when it can see images; refused otherwise.
fn seeing(chosen: provider::Chosen) -> Result<provider::Chosen, PlanError> {
    if chosen.provider.takes_images() {
        Ok(chosen)
    } else {
        Err(PlanError::NoImages {
            model: chosen.model,
        })
    }
}

/// The turn's sandbox: the stored settings bind a follow-up; the user chooses a new
/// session's, which a project file or a definition may only tighten.
fn sandbox_for(
    config: &Config,
    req: &TurnRequest,
    stored: Option<&Settings>,
) -> Result<(crate::sandbox::Settings, Vec<String>), PlanError> {
    let stored_sandbox = stored.and_then(Settings::sandbox);
    Ok(crate::sandbox::resolve(&crate::sandbox::Sources {
        definition: req.agent.as_ref().and_then(|d| d.sandbox),
        flag_mode: req.sandbox,
        flag_net: req.net,
        stored: stored_sandbox.as_ref(),
        ..config.sandbox_sources()
    })?)
}

/// The settings the turn runs with. The tools and system prompt are durable: follow-ups and
/// renames keep them, and a new session's prompt is composed once, so every later request
/// sends the same bytes.
fn compose_settings(
    stored: Option<Settings>,
    req: &TurnRequest,
    (tools, sandbox): (&Policy, &crate::sandbox::Settings),
    notes: &mut Vec<String>,
) -> Settings {
    let new_session = stored.is_none();
    let mut settings = stored.unwrap_or_default();
    settings.set_tools(tools);
    settings.set_sandbox(sandbox);
    let def = req.agent.as_ref();
    let asked = req
        .system
        .clone()
        .or_else(|| def.and_then(|d| d.system_prompt.clone()));
    if new_session {
        let date: String = crate::clock::iso(crate::clock::now_ms())
            .chars()
            .take(10)
            .collect();
        settings.system = Some(asked.unwrap_or_else(|| {
            super::instructions::default_system(&req.cwd, &date, tools, sandbox)
        }));
        if req.project_context {
            if let Some(p) = super::instructions::project_instructions(&req.cwd) {
                notes.push(project_note(&p));
                settings.project = Some(p.text);
            }
        }
    } else if let Some(sys) = asked {
        settings.system = Some(sys);
    }
    if !req.project_context {
        settings.project = None;
    }
    settings
}

/// The session's approval mode: `--approval` sets it; a new session without the flag gets the
/// user's `agent.approval`; otherwise it keeps its own. The tools a person allowed for the
/// session stay allowed.
fn approval_for(settings: &mut Settings, flag: Option<super::ApprovalMode>, config: &Config) {
    let mode = match (flag, &settings.approval) {
        (Some(mode), _) => mode,
        (None, Some(_)) => return,
        (None, None) => config.agent.approval,
    };
    if mode == super::ApprovalMode::Auto && settings.approval.is_none() {
        return;
    }
    settings.approval.get_or_insert_with(Default::default).mode = mode;
}

/// What the person reads about the project instructions a session got.
fn project_note(p: &super::instructions::ProjectInstructions) -> String {
    let files: Vec<String> = p.files.iter().map(|f| f.display().to_string()).collect();
    let cut = if p.cut { " (cut to fit)" } else { "" };
    format!(
        "project instructions from {}{cut}; --no-project-context leaves them out",
        files.join(", ")
    )
}

/// Claim an existing session; when another live process runs it, queue the prompt (or the
/// compaction) for that process instead (`Err` carries what was queued), or refuse.
#[allow(clippy::type_complexity)]
fn claim_existing<'s>(
    store: &'s Store,
    s: &Session,
    req: &TurnRequest,
) -> Result<Result<Lease<'s>, Prepared<'s>>, PlanError> {
    let text = req.text.as_deref().filter(|_| req.queue && req.images == 0);
    match store.lease(&s.id, text)? {
        Leased::Held(lease) => Ok(Ok(lease)),
        Leased::Queued { owner, id } => Ok(Err(Prepared::Queued {
            session: Box::new(s.clone()),
            owner,
            item: id,
        })),
        // The running loop takes the compaction at its next step boundary.
        Leased::Busy { owner } if req.compact && req.queue => {
            store.enqueue_compaction(&s.id, None)?;
            Ok(Err(Prepared::CompactionQueued {
                session: Box::new(s.clone()),
                owner,
            }))
        }
        Leased::Busy { owner } if req.images > 0 => Err(PlanError::BusyWithImages {
            session: s.id.clone(),
            owner,
        }),
        Leased::Busy { owner } => Err(PlanError::Busy {
            session: s.id.clone(),
            owner,
        }),
    }
}

/// The guard's list: an existing session keeps its stored tools and `--tools` only narrows
/// them; a new one gets `--tools` (narrowed by its definition's), else the definition's, else
/// the read-only default. Returns the notes about what was not granted.
pub(crate) fn narrow(stored: Option<Policy>, req: &TurnRequest) -> (Policy, Vec<String>) {
    let mut notes = Vec::new();
    let new_session = stored.is_none();
    let tools = match (stored, &req.tools) {
        (Some(stored), Some(ask)) => {
            let asked = ask.resolve(&stored);
            let dropped = asked.dropped_by(&stored);
            if !dropped.is_empty() {
                notes.push(format!(
                    "this session may not use {} (its tools: {}); not added",
                    dropped.join(", "),
                    stored.names().join(", ")
                ));
            }
            asked.intersect(&stored)
        }
        (Some(stored), None) => stored,
        (None, Some(ask)) => match &req.agent {
            Some(d) => {
                let limit = d.policy();
                let asked = ask.resolve(&limit);
                let dropped = asked.dropped_by(&limit);
                if !dropped.is_empty() {
                    notes.push(format!(
                        "agent {} does not have {}; not added",
                        d.slug,
                        dropped.join(", ")
                    ));
                }
                asked.intersect(&limit)
            }
            None => ask.resolve(&Policy::read_only()),
        },
        (None, None) => req
            .agent
            .as_ref()
            .map_or_else(Policy::read_only, AgentDef::policy),
    };
    if new_session {
        notes.extend(req.agent.as_ref().and_then(AgentDef::withheld_note));
    }
    (tools, notes)
}

/// A new session, born with its tools: there is no moment when it has none.
fn create(
    store: &Store,
    req: &TurnRequest,
    grants: (&Policy, &crate::sandbox::Settings),
    model: &str,
) -> Result<Session, StoreError> {
    let mut settings = Settings::with_tools(grants.0);
    settings.set_sandbox(grants.1);
    let title = match &req.session {
        SessionChoice::New { title: Some(t), .. } => t.clone(),
        SessionChoice::Named { name, title } => title.clone().unwrap_or_else(|| name.clone()),
        _ if req.images > 0 && req.text.as_deref().is_none_or(|t| t.trim().is_empty()) => {
            "(image)".into()
        }
        _ => crate::text::headline(req.text.as_deref().unwrap_or(""), 60),
    };
    let id = match &req.session {
        SessionChoice::New { id, .. } => id.clone(),
        _ => None,
    };
    let name = match &req.session {
        SessionChoice::Named { name, .. } => Some(name.clone()),
        _ => None,
    };
    store.create_session(NewSession {
        id,
        title,
        cwd: Some(req.cwd.to_string_lossy().into_owned()),
        model: Some(model.to_string()),
        agent: req.agent.as_ref().map(|d| d.slug.clone()),
        settings: Some(settings),
        name,
        ..Default::default()
    })
}

impl<'s> TurnPlan<'s> {
    /// Claim a session nobody else knows yet (a side chat just forked) and plan its turn with
    /// exactly these tools and its stored settings.
    pub(crate) fn claimed(
        store: &'s Store,
        session: Session,
        chosen: provider::Chosen,
        tools: Policy,
    ) -> Result<TurnPlan<'s>, PlanError> {
        let claim = match store.lease(&session.id, None)? {
            Leased::Held(lease) => lease,
            Leased::Queued { owner, .. } | Leased::Busy { owner } => {
                return Err(PlanError::Busy {
                    session: session.id.clone(),
                    owner,
                })
            }
        };
        let settings = session.settings()?;
        Ok(TurnPlan::with(session, chosen, tools, settings, claim))
    }

    /// A plan with these essentials and nothing else asked for.
    fn with(
        session: Session,
        chosen: provider::Chosen,
        tools: Policy,
        settings: Settings,
        claim: Lease<'s>,
    ) -> TurnPlan<'s> {
        TurnPlan {
            session,
            model: chosen.model,
            provider: chosen.provider,
            origin: chosen.origin,
            tools,
            settings,
            max_steps: None,
            thinking: None,
            compact: false,
            notes: Vec::new(),
            warnings: Vec::new(),
            allow_protected: false,
            yes: false,
            schema: None,
            max_cost: None,
            context_window: None,
            claim,
        }
    }

    /// The agent that runs this turn. From here the agent loop owns the session's release.
    /// Tools run in the session's directory (`cwd_now` when it has none), with `AG_SESSION`
    /// and `AG_HOME` set so an `ag-room` or `ag-summon` they start acts as this session.
    pub(crate) fn into_agent<'a>(
        self,
        store: &'a Store,
        home: &'a Home,
        config: &'a Config,
        cwd_now: &Path,
        interrupt: Arc<AtomicBool>,
    ) -> Agent<'a>
    where
        's: 'a,
    {
        let session_cwd = self
            .session
            .cwd
            .as_ref()
            .map(PathBuf::from)
            .unwrap_or_else(|| cwd_now.to_path_buf());
        let mut tool_ctx = ToolCtx::new(std::fs::canonicalize(&session_cwd).unwrap_or(session_cwd));
        tool_ctx.bash_timeout = Duration::from_secs(config.agent.bash_timeout_s);
        tool_ctx.output_cap = config.agent.output_cap;
        tool_ctx.env = vec![
            ("AG_SESSION".into(), self.session.id.clone()),
            ("AG_HOME".into(), home.dir.to_string_lossy().into_owned()),
        ];
        tool_ctx.cancel = interrupt.clone();
        tool_ctx.sandbox = self.settings.sandbox().unwrap_or_default();
        tool_ctx.secrets = std::sync::Arc::new(crate::secrets::Secrets::from_config(config));
        tool_ctx.allow_protected = self.allow_protected || config.protected_writes_allowed();
        Agent {
            store,
            home,
            config,
            opts: TurnOptions {
                max_steps: self.max_steps.unwrap_or(config.agent.max_steps),
                system: self.settings.system_prompt(),
                max_tokens: config.agent.max_tokens,
                thinking_budget: self
                    .thinking
                    .or(config.agent.thinking_budget)
                    .filter(|_| thinks(self.provider.as_ref(), config)),
                network: config.network.clone(),
                offered: self.settings.offered.clone(),
                schema: self.schema,
                schema_retries: config.agent.schema_retries,
                max_cost: self.max_cost,
                context_window: self.context_window,
            },
            session: self.session,
            provider: Arc::from(self.provider),
            policy: self.tools,
            tool_ctx,
            interrupt,
            warnings: Default::default(),
            peer: Default::default(),
            lease: self.claim,
            rooms: crate::room::Rooms::open(home, config),
            mcp: None,
            approval: std::sync::Mutex::new(match self.yes {
                true => super::Approval::default(),
                false => self.settings.approval.clone().unwrap_or_default(),
            }),
            approver: None,
        }
    }
}

/// Whether a request to `provider` may carry a thinking budget: an Anthropic model of a
/// family that takes it (or whose `[models]` entry says `reasoning = true`). OpenAI-dialect
/// requests decide in the fold (`reasoning_effort` for reasoning models only).
fn thinks(provider: &dyn crate::provider::Provider, config: &Config) -> bool {
    match provider.dialect() {
        crate::fold::Dialect::Anthropic => config
            .models
            .get(provider.name())
            .and_then(|m| m.reasoning)
            .unwrap_or_else(|| crate::fold::anthropic_thinks(provider.api_model())),
        crate::fold::Dialect::OpenAi => true,
    }
}
