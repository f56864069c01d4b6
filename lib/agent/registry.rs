//! The one table from a tool to its spec and its executor. [`Tool`] names every built-in
//! tool once (in `policy`); the two exhaustive matches below say, for each, who describes it to
//! the model and who runs it, so a tool cannot be offered without an executor or run without
//! a spec. MCP tools (`mcp__SERVER__TOOL`) come from their servers.

use std::time::Duration;

use serde_json::Value;

use super::{peer, Agent};
use crate::fold::ToolSpec;
use crate::policy::Tool;
use crate::tools::{self, ToolOutput};

impl Agent<'_> {
    /// The spec of one built-in tool as this session may see it.
    fn spec_of(&self, tool: Tool) -> Option<ToolSpec> {
        match tool {
            Tool::Read
            | Tool::Glob
            | Tool::Grep
            | Tool::Write
            | Tool::Edit
            | Tool::Bash
            | Tool::Recall => tools::spec_in(tool, &self.tool_ctx),
            Tool::Summon | Tool::Retrieve => self.summon_tool_spec(tool),
            Tool::PeerMessage
            | Tool::PeerInbox
            | Tool::PeerWho
            | Tool::PeerPeek
            | Tool::PeerClaim
            | Tool::PeerRelease => self.peer_tool_spec(tool),
        }
    }

    /// Run one call the guard allowed, inside the collision gate. `None` when the turn was
    /// interrupted while it ran.
    pub(super) fn execute(
        &self,
        name: &str,
        args: &Value,
        on: &mut dyn FnMut(super::Event),
    ) -> Option<ToolOutput> {
        let mut after = match self.before_call(name, args) {
            peer::Before::Refuse(out) => return Some(out),
            peer::Before::Run(after) => after,
        };
        let out = match Tool::parse(name) {
            // An MCP server's tool: to the server, on a worker as a built-in tool runs.
            None if name.starts_with(crate::policy::MCP_PREFIX) => self.run_mcp(name, args, on)?,
            Some(
                Tool::Read | Tool::Glob | Tool::Grep | Tool::Write | Tool::Edit | Tool::Bash,
            )
            // Names nobody knows: tools::run says so.
            | None => self.run_tool(name, args, std::mem::take(&mut after.read_only), on)?,
            Some(tool @ (Tool::Summon | Tool::Retrieve)) => self.summon_tool(tool, args),
            // The session's own history: read from the store, never another session's.
            Some(Tool::Recall) => {
                tools::recall::run(self.store, &self.session, args, self.tool_ctx.output_cap)
            }
            Some(
                tool @ (Tool::PeerMessage
                | Tool::PeerInbox
                | Tool::PeerWho
                | Tool::PeerPeek
                | Tool::PeerClaim
                | Tool::PeerRelease),
            ) => self.peer_tool(tool, args),
        };
        Some(self.after_call(out, after))
    }

    /// The tools offered to the model, in the policy's order (or the offered list a
    /// `--keep-cache` side chat keeps byte for byte), then the MCP servers' tools.
    pub(super) fn tool_specs(&self) -> Vec<ToolSpec> {
        let names = match &self.opts.offered {
            Some(names) => names.clone(),
            None => self.policy.names(),
        };
        let mut specs: Vec<_> = names
            .iter()
            .filter_map(|n| Tool::parse(n).and_then(|t| self.spec_of(t)))
            .collect();
        // MCP servers start here, at the first step that may offer their tools.
        if let (None, Some(mcp)) = (&self.opts.offered, &self.mcp) {
            specs.extend(mcp.specs(&self.policy));
        }
        // In a small window the definitions go brief (the same window, the same definitions:
        // a side chat that keeps its source's cache sends what its source sent).
        match self.window() {
            Some(w) => crate::context::brief::fit(specs, w.context_window),
            None => specs,
        }
    }

    /// Pass on what an MCP tool's server reported since notification `seen`; the last one
    /// passed on.
    fn report_progress(&self, name: &str, seen: u64, on: &mut dyn FnMut(super::Event)) -> u64 {
        let Some(p) = self
            .mcp
            .as_ref()
            .filter(|_| name.starts_with(crate::policy::MCP_PREFIX))
            .and_then(|m| m.progress())
            .filter(|p| p.n != seen)
        else {
            return seen;
        };
        on(super::Event::ToolProgress {
            name: name.to_string(),
            progress: p.progress,
            total: p.total,
            message: p.message,
        });
        p.n
    }

    /// Run one allowed built-in tool on a worker thread.
    fn run_tool(
        &self,
        name: &str,
        args: &Value,
        claimed: Vec<std::path::PathBuf>,
        on: &mut dyn FnMut(super::Event),
    ) -> Option<ToolOutput> {
        let (name_owned, args_owned, mut ctx) =
            (name.to_string(), args.clone(), self.tool_ctx.clone());
        ctx.claimed_by_others = claimed;
        self.on_worker(name, on, move || tools::run(&name_owned, &args_owned, &ctx))
    }

    /// Call an MCP server's tool (`mcp__SERVER__TOOL`) on a worker thread; its output is
    /// capped as a built-in tool's is.
    fn run_mcp(
        &self,
        name: &str,
        args: &Value,
        on: &mut dyn FnMut(super::Event),
    ) -> Option<ToolOutput> {
        let Some(servers) = self.mcp.clone() else {
            return Some(ToolOutput::error(format!(
                "unknown tool {name:?}: no MCP server is configured; nothing was run"
            )));
        };
        let (name_owned, args_owned, cap) =
            (name.to_string(), args.clone(), self.tool_ctx.output_cap);
        self.on_worker(name, on, move || {
            let out = servers.call(&name_owned, &args_owned);
            ToolOutput {
                text: tools::cap_text(out.text, cap),
                is_error: out.is_error,
            }
        })
    }

    /// Run `job` (one tool call) on a worker thread, so an interrupt is noticed while it
    /// runs and an MCP server's progress reaches the person. `None` when interrupted.
    fn on_worker(
        &self,
        name: &str,
        on: &mut dyn FnMut(super::Event),
        job: impl FnOnce() -> ToolOutput + Send + 'static,
    ) -> Option<ToolOutput> {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(job());
        });
        // The store learns the command's process group while it runs, so a later run can end
        // what this one leaves if it is killed.
        let mut recorded = None;
        let mut record = |group: Option<(i64, i64)>| {
            if group != recorded {
                let _ = self.store.set_tool_group(&self.session.id, group);
                recorded = group;
            }
        };
        let mut seen = 0;
        loop {
            let got = rx.recv_timeout(Duration::from_millis(50));
            let group = match &got {
                Ok(_) => None,
                Err(_) => *self
                    .tool_ctx
                    .running_group
                    .lock()
                    .unwrap_or_else(|e| e.into_inner()),
            };
            record(group);
            match got {
                Ok(out) => return Some(out),
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    seen = self.report_progress(name, seen, on);
                    if self.interrupted() {
                        // The tool sees the same flag and kills what it started; give it a
                        // moment so nothing outlives the turn.
                        if rx.recv_timeout(Duration::from_secs(2)).is_ok() {
                            record(None);
                        }
                        return None;
                    }
                }
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    return Some(ToolOutput {
                        text: format!("the {name} tool stopped unexpectedly"),
                        is_error: true,
                    })
                }
            }
        }
    }
}
