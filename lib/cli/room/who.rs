//! `ag-room who` and `ag-room peek`: the live sessions here, and what one of them is doing.

use serde_json::json;

use super::{cwd, resolve};
use crate::cli::{escape_controls, CliResult, Ctx};
use crate::room::{presence, roster};
use crate::text;

#[derive(Debug, clap::Args)]
pub(crate) struct PeekArgs {
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
    let store = ctx.read_store()?;
    let room = ctx.rooms().worktree(&cwd()?);
    let here = roster::here(&store, &room)?;
    if let Some(why) = crate::room::remote::unreachable(&room) {
        ctx.out
            .warn(&format!("{why}; only this machine's sessions are listed"));
    }
    if ctx.global.quiet {
        for h in &here {
            ctx.out.line(&h.session.id)?;
        }
        return Ok(());
    }
    if ctx.global.json {
        for h in &here {
            let s = &h.session;
            ctx.out.line(
                &json!({"id": s.id, "handle": s.handle, "title": s.title, "goal": h.goal,
                    "status": s.status.as_str(), "pid": s.pid, "cwd": s.cwd, "where": h.at,
                    "last_tool": h.last_tool, "last_said": h.last_said, "age": h.age})
                .to_string(),
            )?;
        }
        return Ok(());
    }
    if here.is_empty() {
        ctx.out.note("no live session in this worktree");
        return Ok(());
    }
    let dash = |s: &str, max: usize| {
        if s.trim().is_empty() {
            "-".to_string()
        } else {
            one_line(s, max)
        }
    };
    let rows = here
        .iter()
        .map(|h| {
            let s = &h.session;
            vec![
                s.handle.clone(),
                dash(&s.title, 200),
                s.status.as_str().into(),
                s.pid.map_or("-".into(), |p| p.to_string()),
                format!("{} ago", h.age),
                dash(&h.at, 200),
                dash(&h.goal, 200),
                dash(&h.last_tool, 200),
                dash(&h.last_said, 200),
            ]
        })
        .collect();
    let header = [
        "ID",
        "TITLE",
        "STATUS",
        "PID",
        "SEEN",
        "WHERE",
        "GOAL",
        "LAST TOOL",
        "SAID",
    ];
    crate::cli::table::print(&mut ctx.out, &header, rows)?;
    Ok(())
}

pub(super) fn peek(ctx: &mut Ctx, a: PeekArgs) -> CliResult<()> {
    let store = ctx.read_store()?;
    let rooms = ctx.rooms();
    let s = resolve(&rooms, &store, &a.target)?;
    let room = rooms.worktree(&cwd()?);
    if ctx.global.json && store.session(&s.id).is_err() {
        // A session of another machine: what its presence says and what it said in the room;
        // what it heard is kept on its own machine (`heard_on`).
        let seen = crate::room::remote::seen(&store, &room, &s, a.n);
        let p = seen.present.as_ref();
        ctx.out.line(
            &json!({"id": s.id, "title": s.title, "status": s.status.as_str(), "live": true,
                "remote": true, "host": seen.host(), "where": p.map(|p| &p.at),
                "goal": p.map(|p| &p.goal), "last_tool": p.map(|p| &p.last_tool),
                "last_said": p.map(|p| &p.last_said), "peer_said": seen.said,
                "heard_on": seen.host()})
            .to_string(),
        )?;
    } else if ctx.global.json {
        let act = store.activity(&s.id, a.n)?;
        ctx.out.line(
            &json!({"id": s.id, "title": s.title, "status": s.status.as_str(), "live": presence::is_live(&s),
                "goal": act.goal, "last_prompt": act.last_prompt,
                "tools": act.tools.iter().map(|(n, a)| json!({"name": n, "arguments": a})).collect::<Vec<_>>(),
                "said": act.said,
                "heard": act.heard.iter().map(crate::fold::peer::peer_line).collect::<Vec<_>>(),
                "peer_said": act.spoke})
            .to_string(),
        )?;
    } else {
        let text = presence::peek_text(&store, &room, &s, a.n)?;
        ctx.out.line(&escape_controls(&text, true))?;
    }
    Ok(())
}
