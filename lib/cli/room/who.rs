//! `ag-room who` and `ag-room peek`: the live sessions here, and what one of them is doing.

use serde_json::json;

use super::{cwd, resolve};
use crate::cli::{escape_controls, CliResult, Ctx};
use crate::room::presence;
use crate::text;

#[derive(Debug, clap::Args)]
pub struct PeekArgs {
    #[arg(value_name = "TARGET")]
    target: String,
    /// How many tool calls and texts to show
    #[arg(short = 'n', long, default_value_t = 3)]
    n: usize,
}

fn one_line(s: &str, max: usize) -> String {
    escape_controls(&text::clip_bytes(&text::one_line(s), max), false)
}

pub(super) fn who(ctx: &mut Ctx) -> CliResult<()> {
    let store = ctx.store()?;
    let key = crate::room::worktree_key(&cwd()?);
    let live = presence::live_in(&store, &key)?;
    let now = crate::clock::now_ms();
    if live.is_empty() && !ctx.global.json {
        ctx.out.note("no live session in this worktree");
    }
    for s in &live {
        let a = store.activity(&s.id, 1)?;
        let goal = a.goal.clone().unwrap_or_default();
        let tool = a.tools.first().map(|t| t.0.clone()).unwrap_or_default();
        let said = a.said.first().cloned().unwrap_or_default();
        let age = crate::clock::age(a.last_at.unwrap_or(s.updated_at), now);
        if ctx.global.json {
            ctx.out.line(
                &json!({"id": s.id, "title": s.title, "goal": goal, "status": s.status.as_str(),
                    "pid": s.pid, "cwd": s.cwd, "last_tool": tool, "last_said": said, "age": age})
                .to_string(),
            )?;
        } else {
            ctx.out.line(&format!(
                "{}  {}  {}  pid {}  {} ago\n    goal: {}\n    last tool: {}  said: {}",
                s.handle.clone(),
                one_line(&s.title, 40),
                s.status.as_str(),
                s.pid.unwrap_or(0),
                age,
                one_line(&goal, 100),
                if tool.is_empty() { "-".into() } else { tool },
                one_line(&said, 100)
            ))?;
        }
    }
    Ok(())
}

pub(super) fn peek(ctx: &mut Ctx, a: PeekArgs) -> CliResult<()> {
    let store = ctx.store()?;
    let s = resolve(&store, &a.target)?;
    if ctx.global.json {
        let act = store.activity(&s.id, a.n)?;
        ctx.out.line(
            &json!({"id": s.id, "title": s.title, "status": s.status.as_str(), "live": presence::is_live(&s),
                "goal": act.goal, "last_prompt": act.last_prompt,
                "tools": act.tools.iter().map(|(n, a)| json!({"name": n, "arguments": a})).collect::<Vec<_>>(),
                "said": act.said})
            .to_string(),
        )?;
    } else {
        let text = presence::peek_text(&store, &s, a.n)?;
        ctx.out.line(&escape_controls(&text, true))?;
    }
    Ok(())
}
