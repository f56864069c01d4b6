//! The session methods: `session/new` (an id now, the session in the store with its first
//! prompt, titled after it like any), `session/load` (an existing session, replayed), and
//! `session/prompt` (one turn through [`crate::agent::prepare`] and the agent loop, its events
//! relayed as updates).

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use agent_client_protocol_schema::v1::{
    LoadSessionRequest, LoadSessionResponse, NewSessionRequest, NewSessionResponse, PromptRequest,
    PromptResponse,
};
use serde_json::json;

use super::rpc::RpcError;
use super::{Open, Server};
use crate::agent::{ApprovalMode, Outcome, PlanError, Prepared, SessionChoice, TurnRequest};

/// A new session's tools in `ask` mode when `--tools` does not say: the defaults, and the
/// tools that change files and run commands.
const ASKED_TOOLS: &str = "+write,+edit,+bash";
use crate::config::Config;
use crate::store::Store;

impl Server {
    pub(super) fn new_session(&self, r: NewSessionRequest) -> Result<NewSessionResponse, RpcError> {
        let cwd = directory(&r.cwd)?;
        let mcp = super::mcp::from_client(&r.mcp_servers).map_err(RpcError::invalid_params)?;
        let id = crate::ids::new_id();
        let open = Open {
            id: id.clone(),
            cwd,
            made: false,
            mcp,
            running: None,
        };
        self.state().sessions.insert(id.clone(), open);
        Ok(NewSessionResponse::new(id))
    }

    pub(super) fn load_session(
        &self,
        r: LoadSessionRequest,
    ) -> Result<LoadSessionResponse, RpcError> {
        let acp_id = r.session_id.to_string();
        let mcp = super::mcp::from_client(&r.mcp_servers).map_err(RpcError::invalid_params)?;
        let store = self.store(&self.config(&directory(&r.cwd)?)?)?;
        let session = store.resolve(&acp_id).map_err(|e| match e {
            crate::store::StoreError::SessionNotFound(_) => {
                RpcError::new(RpcError::NOT_FOUND, e.to_string())
            }
            e => RpcError::invalid_params(e.to_string()),
        })?;
        // Tools run in the session's own directory, as for `ag-prompt -s`.
        let cwd = match &session.cwd {
            Some(c) => PathBuf::from(c),
            None => directory(&r.cwd)?,
        };
        let chunks = store
            .load_view(&session)
            .map_err(|e| RpcError::internal(e.to_string()))?;
        super::updates::replay(&self.conn, &acp_id, &cwd, &chunks);
        let open = Open {
            id: session.id.clone(),
            cwd,
            made: true,
            mcp,
            running: None,
        };
        self.state().sessions.insert(acp_id, open);
        Ok(LoadSessionResponse::new())
    }

    pub(super) fn prompt(&self, r: PromptRequest) -> Result<PromptResponse, RpcError> {
        let acp_id = r.session_id.to_string();
        let interrupt = Arc::new(AtomicBool::new(false));
        let open = {
            let mut state = self.state();
            let open = state.sessions.get_mut(&acp_id).ok_or_else(|| {
                RpcError::new(
                    RpcError::NOT_FOUND,
                    format!("no session {acp_id} on this connection"),
                )
            })?;
            if open.running.is_some() {
                return Err(RpcError::invalid_params(format!(
                    "session {acp_id} is already running a prompt; cancel it first"
                )));
            }
            open.running = Some(interrupt.clone());
            open.clone()
        };
        let result = self.turn(&acp_id, &open, &r, interrupt);
        if let Some(o) = self.state().sessions.get_mut(&acp_id) {
            o.running = None;
        }
        result
    }

    fn turn(
        &self,
        acp_id: &str,
        open: &Open,
        r: &PromptRequest,
        interrupt: Arc<AtomicBool>,
    ) -> Result<PromptResponse, RpcError> {
        let input = super::input::read(&r.prompt).map_err(RpcError::invalid_params)?;
        if let Some(command) =
            super::commands::parse(&input.text).filter(|_| input.images.is_empty())
        {
            return self.command(acp_id, open, command, interrupt);
        }
        let input = match super::commands::custom(&input.text, &open.cwd) {
            Some(text) => super::input::Input { text, ..input },
            None => input,
        };
        let config = self.config(&open.cwd)?;
        let store = self.store(&config)?;
        let req = self.request(open, &input)?;
        let mut plan = match crate::agent::prepare(&store, &config, req) {
            Ok(Prepared::Ready(plan)) => plan,
            Ok(_) => return Err(RpcError::internal("the session is busy")),
            Err(e) => return Err(RpcError::internal(plan_message(e))),
        };
        for n in plan.notes.iter().chain(&plan.warnings) {
            (self.opts.notify)(n);
        }
        if !open.made {
            self.record_client(&store, &mut plan)?;
            if let Some(o) = self.state().sessions.get_mut(acp_id) {
                o.made = true;
            }
        }
        let mut agent = plan.into_agent(&store, &self.opts.home, &config, &open.cwd, interrupt);
        agent.mcp = super::mcp::servers(
            &config,
            &open.mcp,
            &agent.policy,
            &self.opts.home,
            self.opts.notify.clone(),
        );
        agent.tool_ctx.editor =
            super::files::EditorFiles::offered(&self.state().caps, &self.conn, acp_id);
        agent.approver = Some(Arc::new(super::permission::EditorApprover {
            conn: self.conn.clone(),
            session: acp_id.to_string(),
            client: self.client_name(),
            cwd: agent.tool_ctx.cwd.clone(),
        }));
        let mut relay = super::updates::Relay::new(
            self.conn.clone(),
            acp_id,
            &agent.tool_ctx.cwd,
            Some(&agent.approval),
        );
        let outcome = agent.run_turn(&input.text, input.images, &mut |ev| relay.event(ev));
        match outcome {
            Ok(Outcome::Done { stop_reason }) => Ok(PromptResponse::new(
                super::updates::stop_reason(stop_reason),
            )),
            Ok(Outcome::Interrupted) => Ok(PromptResponse::new(
                agent_client_protocol_schema::v1::StopReason::Cancelled,
            )),
            Ok(Outcome::TooLarge { message }) => Err(RpcError::internal(message)),
            Ok(Outcome::Failed { message, .. }) => Err(RpcError::internal(format!(
                "the turn ended with an error: {message}"
            ))),
            Err(e) => Err(RpcError::internal(e.to_string())),
        }
    }

    /// The turn asked of the planner: the session (new with its chosen id, else existing),
    /// the command line's model, tools and sandbox.
    pub(super) fn request(
        &self,
        open: &Open,
        input: &super::input::Input,
    ) -> Result<TurnRequest, RpcError> {
        let mut words: Vec<String> = Vec::new();
        if !open.made {
            words.extend(self.opts.tools.clone().or_else(|| {
                // Editing is what an editor's agent is for; in `ask` mode each change waits
                // for the person's yes.
                (self.approval_of_new() == ApprovalMode::Ask).then(|| ASKED_TOOLS.to_string())
            }));
            words.extend(super::mcp::grants(&open.mcp));
        } else {
            words.extend(self.opts.tools.clone());
        }
        let tools = match words.is_empty() {
            true => None,
            false => Some(
                crate::policy::ToolsAsk::parse(&words.join(","))
                    .map_err(|e| RpcError::invalid_params(format!("--tools: {e}")))?,
            ),
        };
        let session = match open.made {
            true => SessionChoice::Existing(open.id.clone()),
            false => SessionChoice::New {
                title: None,
                id: Some(open.id.clone()),
            },
        };
        Ok(TurnRequest {
            text: Some(input.text.clone()),
            session,
            model: self.opts.model.clone(),
            max_cost: None,
            tools,
            system: None,
            agent: None,
            max_steps: self.opts.max_steps,
            thinking: None,
            compact: false,
            sandbox: self.opts.sandbox,
            net: self.opts.net,
            approval: match open.made {
                true => self.opts.approval,
                false => Some(self.approval_of_new()),
            },
            queue: false,
            cwd: open.cwd.clone(),
            project_context: true,
            images: input.images.len(),
        })
    }

    /// A new session's approval mode: `--approval`, else `ask`.
    fn approval_of_new(&self) -> ApprovalMode {
        self.opts.approval.unwrap_or(ApprovalMode::Ask)
    }

    /// Record which editor started the session, in its settings.
    fn record_client(
        &self,
        store: &Store,
        plan: &mut crate::agent::TurnPlan<'_>,
    ) -> Result<(), RpcError> {
        let client = self.state().client.clone();
        plan.settings.client = Some(json!({
            "protocol": "acp",
            "name": client.as_ref().map(|c| c.name.clone()),
            "version": client.as_ref().map(|c| c.version.clone()),
        }));
        store
            .set_model_and_settings(&plan.session.id, &plan.model, &plan.settings)
            .map_err(|e| RpcError::internal(e.to_string()))
    }

    /// The store, whose sessions release their claims in the rooms `config` names when they
    /// end (the rooms are opened only if one does).
    pub(super) fn store(&self, config: &Config) -> Result<Store, RpcError> {
        let mut store =
            Store::open(&self.opts.home).map_err(|e| RpcError::internal(e.to_string()))?;
        let (home, config) = (self.opts.home.clone(), config.clone());
        store.on_ended(Arc::new(move |s| {
            crate::room::claims::release_ended(&crate::room::Rooms::open(&home, &config), s)
        }));
        Ok(store)
    }

    /// The configuration as `ag-prompt` run in `cwd` reads it.
    pub(super) fn config(&self, cwd: &Path) -> Result<Config, RpcError> {
        let config = Config::load(cwd).map_err(|e| RpcError::internal(e.to_string()))?;
        crate::secrets::withdraw_configured(&config);
        for w in &config.warnings {
            (self.opts.notify)(w);
        }
        Ok(config)
    }
}

/// The session's directory: absolute, as the protocol requires, and there.
fn directory(cwd: &Path) -> Result<PathBuf, RpcError> {
    if !cwd.is_absolute() {
        return Err(RpcError::invalid_params(format!(
            "cwd {} is not an absolute path",
            cwd.display()
        )));
    }
    std::fs::canonicalize(cwd)
        .ok()
        .filter(|p| p.is_dir())
        .ok_or_else(|| {
            RpcError::invalid_params(format!("cwd {} is not a directory", cwd.display()))
        })
}

/// A planning refusal as the editor shows it, with what to do where that helps.
fn plan_message(e: PlanError) -> String {
    match e {
        PlanError::Model(crate::provider::ChooseError::NoModel) => format!(
            "no model given: start `ag-prompt acp -m PROVIDER/MODEL`, set AG_MODEL, or {}",
            crate::config::MODEL_SETTING_HINT
        ),
        e => e.to_string(),
    }
}
