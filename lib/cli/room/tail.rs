//! `ag-room tail`: a room's lines as text or JSON, optionally followed.

use std::collections::HashMap;
use std::time::Duration;

use super::{cwd, me, room_err};
use crate::cli::{escape_controls, CliError, CliResult, Ctx};
use crate::follow::{Follower, Next};
use crate::room::claims;
use crate::room::file::Flow;
use crate::room::presence::Me;
use crate::room::{Line, LineKind, Room, RoomError};
use crate::store::Store;

#[derive(Debug, clap::Args)]
pub(crate) struct TailArgs {
    /// Keep following the room
    #[arg(short, long)]
    follow: bool,
    /// Start with the last N lines [default: all; with -f: 10]
    #[arg(short = 'n', long, value_name = "N")]
    lines: Option<usize>,
    /// Show every line: direct messages between others and receipts too
    #[arg(long)]
    all: bool,
}

/// The sessions room lines address, shown the one way ([`Store::shown`]: by handle), each
/// looked up once.
pub(super) struct Names<'a> {
    store: &'a Store,
    known: HashMap<String, String>,
}

impl<'a> Names<'a> {
    pub(super) fn new(store: &'a Store) -> Names<'a> {
        Names {
            store,
            known: HashMap::new(),
        }
    }

    pub(super) fn of(&mut self, id: &str) -> String {
        if let Some(n) = self.known.get(id) {
            return n.clone();
        }
        let n = self.store.shown(id);
        self.known.insert(id.to_string(), n.clone());
        n
    }
}

/// How a line reads on a terminal.
fn render(l: &Line, names: &mut Names) -> String {
    let t = l.ts.get(11..19).unwrap_or(&l.ts);
    let to =
        l.to.as_deref()
            .map(|t| format!(" → {}", names.of(t)))
            .unwrap_or_default();
    let body = match &l.ty {
        LineKind::Say => format!(
            "{}{to}: {}",
            l.from.display(),
            escape_controls(l.text.as_deref().unwrap_or(""), true)
        ),
        LineKind::Claim => format!(
            "{} claims {} ({}, {} s): {} [{}]",
            l.from.display(),
            l.paths.clone().unwrap_or_default().join(", "),
            l.mode.as_deref().unwrap_or("exclusive"),
            l.ttl_s.unwrap_or(claims::DEFAULT_TTL_S),
            escape_controls(l.intent.as_deref().unwrap_or(""), false),
            l.id
        ),
        LineKind::Release => format!(
            "{} releases {}",
            l.from.display(),
            l.claims.clone().unwrap_or_default().join(", ")
        ),
        other @ (LineKind::Delivered | LineKind::Ack | LineKind::Other(_)) => format!(
            "{} {other} {}",
            l.from.display(),
            l.in_reply_to.as_deref().unwrap_or("")
        ),
    };
    // A newline inside a message cannot start what looks like a line of its own: the rest
    // of the message is indented under it.
    format!(
        "{} {}",
        escape_controls(t, false),
        escape_controls(&body, true).replace('\n', "\n         ")
    )
}

/// Whether `tail` shows a line without --all: speech to the room or involving me, and claims.
fn shown(l: &Line, me: &Me, all: bool) -> bool {
    if all {
        return true;
    }
    match l.ty {
        LineKind::Say => match &l.to {
            None => true,
            Some(t) => me.is_addressed(t) || l.from.same(&me.from),
        },
        LineKind::Claim | LineKind::Release | LineKind::Ack => true,
        LineKind::Delivered | LineKind::Other(_) => false,
    }
}

pub(super) fn emit(ctx: &mut Ctx, names: &mut Names, l: &Line) -> CliResult<()> {
    if ctx.global.json {
        ctx.out
            .line(&serde_json::to_string(l).map_err(|e| CliError::msg(e.to_string()))?)?;
    } else {
        ctx.out.line(&render(l, names))?;
    }
    Ok(())
}

pub(super) fn tail(ctx: &mut Ctx, from: Option<&str>, a: TailArgs) -> CliResult<()> {
    let store = ctx.store()?;
    let me = me(&store, from)?;
    let mut names = Names::new(&store);
    let room = ctx.rooms().worktree(&cwd()?);
    let keep = a.lines.or(if a.follow { Some(10) } else { None });
    let mut ring: std::collections::VecDeque<Line> = Default::default();
    let mut warns = Vec::new();
    // The last N lines shown: read from a little before the end, further back only when
    // too few of the lines read there are shown (the start of the room at the most).
    let end = room.end().map_err(room_err)?;
    let mut back = keep.map(|k| k as u64);
    let mut offset = loop {
        let from = match back {
            Some(b) => room.rewind(end, b).map_err(room_err)?,
            None => 0,
        };
        ring.clear();
        warns.clear();
        let next = room
            .scan(from, &mut |w| warns.push(w), &mut |_, l| {
                if shown(&l, &me, a.all) {
                    ring.push_back(l);
                    if keep.is_some_and(|k| ring.len() > k) {
                        ring.pop_front();
                    }
                }
                Flow::Go
            })
            .map_err(room_err)?;
        match back {
            Some(b) if from > 0 && keep.is_some_and(|k| ring.len() < k) => {
                back = Some(b.saturating_mul(4).max(64));
            }
            _ => break next,
        }
    };
    for w in warns.drain(..) {
        ctx.out.warn(&w);
    }
    for l in ring.drain(..) {
        emit(ctx, &mut names, &l)?;
    }
    ctx.out.flush()?;
    if !a.follow {
        return Ok(());
    }
    follow(ctx, &mut names, &room, &mut offset, &me, a.all)
}

/// Follow a room: a change in the rooms folder wakes us (on NATS, a message on the room's
/// subject), a poll every 250 ms is the backstop; a reader of stdout that went away ends it
/// even when nothing new comes. A room server that goes away is waited for: the cursor
/// (`offset`) stays where it was, so nothing is lost or shown twice when it is back.
fn follow(
    ctx: &mut Ctx,
    names: &mut Names,
    room: &Room,
    offset: &mut u64,
    me: &Me,
    all: bool,
) -> CliResult<()> {
    let dir = ctx.home.rooms_dir();
    crate::paths::create_private_dir(&dir)?;
    let follower = Follower::new(Duration::from_millis(250)).watch(&dir, false);
    let _waking = room.backend.wake(room, follower.waker());
    let mut down = false;
    follower.run(|| {
        if ctx.out.reader_gone() {
            return Ok(Next::Stop);
        }
        let mut lines = Vec::new();
        let mut warns = Vec::new();
        let scanned = room.scan(*offset, &mut |w| warns.push(w), &mut |_, l| {
            if shown(&l, me, all) {
                lines.push(l);
            }
            Flow::Go
        });
        match scanned {
            Ok(next) => *offset = next,
            Err(e @ RoomError::Unavailable(_)) => {
                if !down {
                    ctx.out
                        .warn(&format!("{e}; still following, waiting for it"));
                    down = true;
                }
                // Lines read before the failure are not shown: the cursor did not move, so
                // they come again, once, when the server is back.
                return Ok(Next::Wait);
            }
            Err(e) => return Err(room_err(e)),
        }
        if down {
            ctx.out.note("the room server is back");
            down = false;
        }
        for w in warns {
            ctx.out.warn(&w);
        }
        for l in &lines {
            emit(ctx, names, l)?;
        }
        if !lines.is_empty() {
            ctx.out.flush()?;
        }
        Ok(Next::Wait)
    })
}
