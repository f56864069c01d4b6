//! `ag-prompt acp`: serve the Agent Client Protocol on stdin and stdout for an editor. The
//! flags choose what the sessions it starts run with; `crate::acp` does the rest.

use std::sync::Arc;

use super::super::{escape_controls, CliError, CliResult, Ctx};

pub(super) const EXAMPLES: &str = "\
Examples:
  ag-prompt acp -m sonnet                    # what an editor runs; it speaks ACP on stdin/stdout
  ag-prompt acp -m sonnet --approval auto --tools +edit   # edits without asking, no bash
  ag-log tail -f last                        # meanwhile, in a shell: follow the editor's session
  ag-fork last --btw 'what is it doing?'     # a side question beside it

In Zed's settings.json:
  \"agent_servers\": {\"ag\": {\"type\": \"custom\", \"command\": \"ag-prompt\", \"args\": [\"acp\", \"-m\", \"sonnet\"]}}";

#[derive(Debug, clap::Args)]
pub(crate) struct AcpArgs {
    /// The model of the sessions the editor starts: PROVIDER/MODEL, an alias, `echo` or
    /// `script:FILE` [env: AG_MODEL; config: model]
    #[arg(short, long, value_name = "MODEL")]
    model: Option<String>,
    /// A new session's tools, as for ag-prompt --tools; the tools of the MCP servers the
    /// editor passes are added [default: +write,+edit,+bash in ask mode, the read-only
    /// defaults in auto mode]
    #[arg(long, value_name = "LIST", allow_hyphen_values = true)]
    tools: Option<String>,
    /// How a new session's calls that change something (write, edit, bash, MCP tools) are
    /// decided: ask (the editor asks you: allow once, allow for the session, or reject) or
    /// auto (the tool policy alone); a loaded session keeps its own unless this is given
    /// [default: ask]
    #[arg(long, value_name = "MODE", value_parser = super::parse_approval)]
    approval: Option<crate::agent::ApprovalMode>,
    /// The sandbox bash runs in: workspace-write (default), read-only, or off [config:
    /// sandbox.mode]
    #[arg(long, value_name = "MODE", value_parser = super::parse_sandbox_mode)]
    sandbox: Option<crate::sandbox::Mode>,
    /// Let sandboxed bash commands use the network [config: sandbox.network]
    #[arg(long)]
    net: bool,
    /// Stop a turn after N model round trips (at least 1); the editor sees max_turn_requests
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    max_steps: Option<u32>,
}

pub(super) fn run(ctx: &mut Ctx, args: AcpArgs) -> CliResult<()> {
    // Checked here, so a typo fails at start rather than at the first prompt.
    super::super::tools_flag(args.tools.as_deref())?;
    let quiet = ctx.global.quiet;
    let notify: crate::mcp::Notify = Arc::new(move |line: &str| {
        if !quiet {
            let line = escape_controls(line, true);
            super::super::output::eprint_quiet(&format!(
                "{}: {line}\n",
                super::super::output::program()
            ));
        }
    });
    crate::acp::serve(crate::acp::Options {
        home: ctx.home.clone(),
        model: args.model,
        tools: args.tools,
        sandbox: args.sandbox,
        net: args.net,
        max_steps: args.max_steps,
        approval: args.approval,
        notify,
    })
    .map_err(CliError::msg)
}
