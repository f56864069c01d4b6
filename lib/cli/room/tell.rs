//! `ag-room tell`: post a line or a direct message, and optionally wait for its delivery.

use std::time::{Duration, Instant};

use serde_json::json;

use super::{cwd, me, read_text, resolve, room_err};
use crate::cli::{CliError, CliResult, Ctx, Exit};
use crate::room::post::{Post, PostError, Posted};
use crate::room::presence;
use crate::room::Room;

#[derive(Debug, clap::Args)]
pub(crate) struct TellArgs {
    /// The text (`-` reads it from stdin)
    #[arg(value_name = "TEXT")]
    text: String,
    /// A direct message to this session: handle, id, unique id prefix, pid, or a unique
    /// fragment of its title or goal (never `all`: without --to the line reaches everyone here)
    #[arg(long, value_name = "TARGET")]
    to: Option<String>,
    /// The message this answers
    #[arg(long, value_name = "MSG")]
    reply_to: Option<String>,
    /// Send through the device room (direct messages across folders; needs --to)
    #[arg(long)]
    device: bool,
    /// Wait until the line is delivered (exit 0) or DUR passes (exit 75): seconds, or 90s, 5m…
    /// [default: 60]
    #[arg(long, value_name = "DUR", num_args = 0..=1, default_missing_value = "60",
          require_equals = true, value_parser = crate::clock::parse_duration)]
    wait: Option<Duration>,
}

pub(super) fn tell(ctx: &mut Ctx, from: Option<&str>, a: TellArgs) -> CliResult<()> {
    let text = read_text(&a.text)?;
    // A line to the room from a hook or a script needs no store: it is opened only to look up
    // the speaking session (AG_SESSION) or the addressee.
    let store = match a.to.is_some() || super::session_env().is_some() {
        true => Some(ctx.store()?),
        false => None,
    };
    let me = match &store {
        Some(store) => me(store, from)?,
        None => super::named(from),
    };
    let rooms = ctx.rooms();
    let to = match (&a.to, &store) {
        (Some(t), Some(store)) => Some(resolve(&rooms, store, t)?),
        _ => None,
    };
    let post = Post {
        text: &text,
        to: to.as_ref(),
        reply_to: a.reply_to.as_deref(),
        device: a.device,
        // Where to look for the receipt; on a room server that costs a request, so only then.
        mark_start: a.wait.is_some(),
    };
    let Posted { line, room, start } = match rooms.post(store.as_ref(), &me, &cwd()?, post) {
        Ok(p) => p,
        Err(PostError::Refused(why)) if a.device && a.to.is_none() => {
            return Err(CliError::usage(why).with_hint(
                "add --to TARGET for a direct message, or drop --device to talk to this worktree's room",
            ))
        }
        Err(PostError::Refused(why)) => return Err(CliError::usage(why)),
        Err(PostError::Room(e)) => return Err(room_err(e)),
    };
    ctx.out.done(format!("the line {} was posted", line.id));
    if ctx.global.json {
        ctx.out.line(
            &json!({"id": line.id, "room": room.label(), "to": line.to, "from": line.from})
                .to_string(),
        )?;
    } else if !ctx.global.quiet {
        // The id is for scripts that capture it; -q (a git hook) prints nothing.
        ctx.out.line(&line.id)?;
    }
    match &to {
        Some(s) => ctx.out.note(&format!(
            "posted to {} in {} (resolved {})",
            presence::display_name(s),
            room.label(),
            s.id
        )),
        None => ctx.out.detail(&format!("posted to {}", room.label())),
    }
    ctx.out.flush()?;
    match a.wait {
        Some(wait) => wait_delivered(ctx, &room, start.unwrap_or(0), &line.id, wait),
        None => Ok(()),
    }
}

/// `--wait`: poll the room from `start` until a `delivered` receipt for `id` comes, or the
/// wait runs out (exit 75, the line stays posted).
fn wait_delivered(
    ctx: &mut Ctx,
    room: &Room,
    start: u64,
    id: &str,
    wait: Duration,
) -> CliResult<()> {
    let dir = ctx.home.rooms_dir();
    crate::paths::create_private_dir(&dir)?;
    match room
        .wait_delivered(&dir, start, id, Instant::now() + wait)
        .map_err(room_err)?
    {
        Some(d) => {
            ctx.out
                .note(&format!("delivered to {} at {}", d.from.display(), d.ts));
            Ok(())
        }
        None => Err(CliError::new(
            Exit::TempFail,
            format!("{id} was not delivered within {} s", wait.as_secs_f64()),
        )
        .with_hint(format!("`ag-room status {id}` shows it later"))),
    }
}
