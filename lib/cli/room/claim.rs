//! `ag-room claim`, `release` and `claims`: file claims in this worktree.

use super::{cwd, me, room_err, warner};
use crate::cli::{escape_controls, CliError, CliResult, Ctx, Exit};
use crate::room::claims::{self, Claim, Outcome};
use crate::room::{Room, RoomError};

#[derive(Debug, clap::Args)]
pub(crate) struct ClaimArgs {
    /// Files, directories or globs, relative to the current directory
    #[arg(value_name = "PATH", required = true)]
    paths: Vec<String>,
    /// What you are about to do
    #[arg(long, value_name = "TEXT", required = true)]
    intent: String,
    /// Others may hold shared claims on the same paths
    #[arg(long)]
    shared: bool,
    /// How long the claim lasts: 90s, 30m, 2h, 1d, 1h30m or seconds [default: 30m]
    #[arg(long, value_name = "DUR")]
    ttl: Option<String>,
}

#[derive(Debug, clap::Args)]
pub(crate) struct ReleaseArgs {
    /// Release your claims overlapping these paths
    #[arg(value_name = "PATH", conflicts_with = "all")]
    paths: Vec<String>,
    /// Release all your claims here
    #[arg(long)]
    all: bool,
}

/// A claim's time to live in whole seconds (at least one), in the one duration grammar.
pub(crate) fn parse_duration(s: &str) -> Result<u64, String> {
    let d = crate::clock::parse_duration(s)?;
    if d < std::time::Duration::from_secs(1) {
        return Err(format!("{:?} is shorter than a second", s.trim()));
    }
    Ok(d.as_secs_f64().ceil() as u64)
}

pub(super) fn norm_all(paths: &[String], room: &Room) -> CliResult<Vec<String>> {
    let cwd = cwd()?;
    let key = room.key().ok_or_else(|| {
        CliError::usage("claims belong to a worktree's room, not the device room")
    })?;
    paths
        .iter()
        .map(|p| claims::normalize(p, &cwd, key).map_err(CliError::usage))
        .collect()
}

pub(super) fn claim(ctx: &mut Ctx, from: Option<&str>, a: ClaimArgs) -> CliResult<()> {
    let ttl = match &a.ttl {
        Some(t) => parse_duration(t).map_err(|e| CliError::usage(format!("--ttl: {e}")))?,
        None => claims::DEFAULT_TTL_S,
    };
    let store = ctx.store()?;
    let me = me(&store, from)?;
    let room = ctx.rooms().worktree(&cwd()?);
    let paths = norm_all(&a.paths, &room)?;
    let mut warns = Vec::new();
    let out = claims::claim(
        &store,
        &room,
        &me,
        paths,
        &a.intent,
        a.shared,
        ttl,
        &mut |w| warns.push(w),
    );
    for w in warns {
        ctx.out.warn(&w);
    }
    match out.map_err(|e| match e {
        RoomError::Invalid(m) => CliError::usage(m),
        e => room_err(e),
    })? {
        Outcome::Claimed(c) => {
            if ctx.global.json {
                ctx.out
                    .line(&serde_json::to_string(&c).unwrap_or_default())?;
            } else {
                ctx.out.line(&c.id)?;
            }
            Ok(())
        }
        Outcome::Refused(cs) => {
            let mut e = CliError::new(
                Exit::Conflict,
                format!(
                    "not claimed: {}",
                    cs.iter()
                        .map(|c| c.describe())
                        .collect::<Vec<_>>()
                        .join("; ")
                ),
            );
            e = e.with_hint(format!(
                "talk to them first: {}",
                cs[0].claim.how_to_reach()
            ));
            Err(e)
        }
    }
}

pub(super) fn release(ctx: &mut Ctx, from: Option<&str>, a: ReleaseArgs) -> CliResult<()> {
    if a.paths.is_empty() && !a.all {
        return Err(CliError::usage("release what? name PATHs or pass --all"));
    }
    let store = ctx.store()?;
    let me = me(&store, from)?;
    let room = ctx.rooms().worktree(&cwd()?);
    let paths = if a.all {
        None
    } else {
        Some(norm_all(&a.paths, &room)?)
    };
    let ended = {
        let mut w = warner(ctx);
        claims::release(&store, &room, &me, paths.as_deref(), &mut w).map_err(room_err)?
    };
    if ended.is_empty() {
        ctx.out.note("no claim of yours matched; nothing released");
    }
    for c in ended {
        ctx.out.line(&c.id)?;
    }
    Ok(())
}

/// One claim as a table row: every field of it comes from the room file, which any writer
/// of the room controls; the table escapes each cell.
fn claim_row(c: &Claim, now: i64, short_id: bool) -> Vec<String> {
    let left = (c.expires_ms - now).max(0) / 1000;
    let holder = match c.holder_state {
        Some(state) => format!("{} ({state})", c.holder.display()),
        None => c.holder.display(),
    };
    // Claim ids are time-ordered: on a terminal their random end tells them apart, where a
    // cut start would read the same for every claim.
    let id = match short_id {
        true => format!("…{}", &c.id[c.id.len().saturating_sub(8)..]),
        false => c.id.clone(),
    };
    vec![
        id,
        holder,
        c.mode.clone(),
        c.paths.join(", "),
        format!("{left}s"),
        c.intent.clone(),
    ]
}

pub(super) fn list_claims(ctx: &mut Ctx) -> CliResult<()> {
    let store = ctx.store()?;
    let room = ctx.rooms().worktree(&cwd()?);
    let mut warns = Vec::new();
    let active = claims::active(&store, &room, &mut |w| warns.push(w)).map_err(room_err)?;
    for w in warns {
        ctx.out.warn(&w);
    }
    if ctx.global.quiet {
        for c in &active {
            ctx.out.line(&escape_controls(&c.id, false))?;
        }
        return Ok(());
    }
    if ctx.global.json {
        for c in &active {
            ctx.out
                .line(&serde_json::to_string(c).unwrap_or_default())?;
        }
        return Ok(());
    }
    if active.is_empty() {
        ctx.out.note("no active claims in this worktree");
        return Ok(());
    }
    let now = crate::clock::now_ms();
    let short = ctx.out.stdout_is_terminal();
    let rows = active.iter().map(|c| claim_row(c, now, short)).collect();
    let header = ["ID", "HOLDER", "MODE", "PATHS", "LEFT", "INTENT"];
    crate::cli::table::print(&mut ctx.out, &header, rows)?;
    Ok(())
}
