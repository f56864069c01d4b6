//! `ag-room inbox`, `status` and `ack`: unread lines, what happened to a message, acknowledging it.

use std::path::PathBuf;

use serde_json::json;

use super::tail::{emit, Names};
use super::{ambiguous, cwd, me, room_err, warner};
use crate::cli::{escape_controls, CliError, CliResult, Ctx, Exit};
use crate::room::inbox;
use crate::room::presence::Me;
use crate::room::target::{self, Resolved};
use crate::room::{Line, LineKind};

#[derive(Debug, clap::Args)]
pub(crate) struct InboxArgs {
    /// Read as this session (target) or person (name)
    #[arg(long = "as", value_name = "TARGET|NAME")]
    as_: Option<String>,
    /// Show without moving the cursor or writing receipts
    #[arg(long)]
    peek: bool,
}

pub(super) fn inbox_cmd(ctx: &mut Ctx, from: Option<&str>, a: InboxArgs) -> CliResult<()> {
    let store = ctx.store()?;
    let me = match &a.as_ {
        None => me(&store, from)?,
        Some(t) => match target::resolve(&ctx.rooms(), &store, t)? {
            Resolved::One(s) => {
                if !a.peek {
                    let own = std::env::var("AG_SESSION").ok();
                    inbox::may_consume(&s, own.as_deref()).map_err(|why| {
                        CliError::new(Exit::Conflict, why).with_hint(
                            "`--peek` shows them without consuming; the session reads its own",
                        )
                    })?;
                }
                Me::session(&s)
            }
            Resolved::Ambiguous(c) => return Err(ambiguous(t, &c)),
            Resolved::Everyone => return Err(super::everyone()),
            Resolved::None => Me::named(t, "human"),
        },
    };
    let dir = match me.session.as_ref().and_then(|s| s.cwd.clone()) {
        Some(c) => PathBuf::from(c),
        None => cwd()?,
    };
    let rooms = ctx.rooms().heard_in(&dir);
    let take = inbox::Take {
        new: true,
        peek: a.peek,
        ..Default::default()
    };
    let taken = inbox::take(&store, &me, &rooms, take).map_err(room_err)?;
    for w in &taken.warnings {
        ctx.out.warn(w);
    }
    let mut names = Names::new(&store);
    for h in &taken.heard {
        emit(ctx, &mut names, &h.line)?;
    }
    Ok(())
}

fn find(ctx: &Ctx, msg: &str) -> CliResult<inbox::Status> {
    let rooms = ctx.rooms().heard_in(&cwd()?);
    let mut w = warner(ctx);
    inbox::status(&rooms, msg, &mut w)
        .map_err(room_err)?
        .ok_or_else(|| {
            CliError::new(
                Exit::NotFound,
                format!("no message {msg:?} in this worktree's room or the device room"),
            )
            .with_hint("`ag-room tail` shows the room's lines with their ids (--json)")
        })
}

pub(super) fn status(ctx: &mut Ctx, msg: &str) -> CliResult<()> {
    let st = find(ctx, msg)?;
    let m = &st.message.line;
    if ctx.global.json {
        let rec = |ls: &[Line]| {
            ls.iter()
                .map(|l| json!({"by": l.from, "ts": l.ts, "id": l.id}))
                .collect::<Vec<_>>()
        };
        ctx.out.line(
            &json!({"id": m.id, "room": st.message.room.label(), "from": m.from, "to": m.to,
                "posted": m.ts, "delivered": rec(&st.delivered), "acked": rec(&st.acked),
                "replies": rec(&st.replies)})
            .to_string(),
        )?;
        return Ok(());
    }
    let store = ctx.store()?;
    // Every field comes from the room file: each line is escaped whole.
    ctx.out.line(&escape_controls(
        &format!(
            "posted     {} by {} in {}{}",
            m.ts,
            m.from.display(),
            st.message.room.label(),
            m.to.as_deref()
                .map(|t| format!(" to {}", Names::new(&store).of(t)))
                .unwrap_or_default()
        ),
        false,
    ))?;
    for (word, ls) in [
        ("delivered", &st.delivered),
        ("acked", &st.acked),
        ("replied", &st.replies),
    ] {
        if ls.is_empty() && word == "delivered" {
            ctx.out.line("delivered  (not yet)")?;
        }
        for l in ls.iter() {
            ctx.out.line(&escape_controls(
                &format!("{word:<10} {} by {}", l.ts, l.from.display()),
                false,
            ))?;
        }
    }
    Ok(())
}

pub(super) fn ack(ctx: &mut Ctx, from: Option<&str>, msg: &str) -> CliResult<()> {
    let st = find(ctx, msg)?;
    let store = ctx.store()?;
    let me = me(&store, from)?;
    let mut l = Line::new(LineKind::Ack, me.from.clone());
    l.in_reply_to = Some(st.message.line.id.clone());
    l.to = Some(
        st.message
            .line
            .from
            .session
            .clone()
            .unwrap_or_else(|| st.message.line.from.name.clone()),
    );
    st.message.room.append(&l).map_err(room_err)?;
    ctx.out.line(&l.id)?;
    Ok(())
}
