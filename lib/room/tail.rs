//! Watching a room as a person does (`ag-room tail`): which lines a watcher is shown, the last
//! N of them, then the room followed as it grows. Reading moves no cursor and writes no
//! receipt: watching is not hearing.

use std::path::Path;
use std::time::Duration;

use super::file::Flow;
use super::presence::Me;
use super::{Line, LineKind, Room, RoomError};
use crate::follow::{Follower, Next};

/// Whether a watcher is shown a line without `all`: speech to the room or involving it, and
/// claims, releases and acknowledgements; not receipts, nor direct messages between others.
pub(crate) fn shown(l: &Line, me: &Me, all: bool) -> bool {
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

/// The last lines of a room a watcher is shown, oldest first.
#[derive(Debug, Default)]
pub(crate) struct Last {
    pub(crate) lines: Vec<Line>,
    /// Problems with the room's lines (a torn line).
    pub(crate) warnings: Vec<String>,
    /// Where the room ended: following goes on from here.
    pub(crate) end: u64,
}

/// What a follower is told on each wake.
#[derive(Debug)]
pub(crate) enum Followed {
    /// The lines that came since the last look (none, on a wake that brought none), and
    /// problems reading them.
    Lines(Vec<Line>, Vec<String>),
    /// The room server went away (told once); following goes on, waiting for it.
    Down(RoomError),
    /// The room server is back.
    Back,
}

impl Room {
    /// The last `keep` lines `show` keeps (all of them for `None`): read from a little
    /// before the end, further back only when too few of the lines read there are shown, so
    /// the cost follows the lines asked for, not the room.
    pub(crate) fn last(
        &self,
        keep: Option<usize>,
        show: &dyn Fn(&Line) -> bool,
    ) -> Result<Last, RoomError> {
        let end = self.end()?;
        let mut back = keep.map(|k| k as u64);
        loop {
            let from = match back {
                Some(b) => self.rewind(end, b)?,
                None => 0,
            };
            let mut last = Last::default();
            let mut ring = std::collections::VecDeque::new();
            last.end = self.scan(from, &mut |w| last.warnings.push(w), &mut |_, l| {
                if show(&l) {
                    ring.push_back(l);
                    if keep.is_some_and(|k| ring.len() > k) {
                        ring.pop_front();
                    }
                }
                Flow::Go
            })?;
            match back {
                Some(b) if from > 0 && keep.is_some_and(|k| ring.len() < k) => {
                    back = Some(b.saturating_mul(4).max(64));
                }
                _ => {
                    last.lines = ring.into();
                    return Ok(last);
                }
            }
        }
    }

    /// Follow the room from `offset` until `on` says stop, telling `on` what `show` keeps of
    /// each wake's new lines. A change in the rooms folder (`rooms_dir`) wakes it, or on a
    /// room server a message on the room's subject; a poll every 250 ms is the backstop, and
    /// `on` is called on every wake, so a caller whose reader went away stops even when nothing
    /// came. A room server that goes away is waited for: the cursor stays where it was, so
    /// nothing is lost or told twice when it is back.
    pub(crate) fn follow(
        &self,
        rooms_dir: &Path,
        mut offset: u64,
        show: &dyn Fn(&Line) -> bool,
        on: &mut dyn FnMut(Followed) -> Next,
    ) -> Result<(), RoomError> {
        crate::paths::create_private_dir(rooms_dir).map_err(|e| RoomError::io(rooms_dir, e))?;
        let follower = Follower::new(Duration::from_millis(250)).watch(rooms_dir, false);
        let _waking = self.backend.wake(self, follower.waker());
        let mut down = false;
        follower.run(|| {
            let mut lines = Vec::new();
            let mut warnings = Vec::new();
            let scanned = self.scan(offset, &mut |w| warnings.push(w), &mut |_, l| {
                if show(&l) {
                    lines.push(l);
                }
                Flow::Go
            });
            match scanned {
                Ok(next) => offset = next,
                Err(e @ RoomError::Unavailable(_)) => {
                    // Lines read before the failure are not told: the cursor did not move,
                    // so they come again, once, when the server is back.
                    if !down {
                        down = true;
                        return Ok(on(Followed::Down(e)));
                    }
                    return Ok(Next::Wait);
                }
                Err(e) => return Err(e),
            }
            if down {
                down = false;
                if on(Followed::Back) == Next::Stop {
                    return Ok(Next::Stop);
                }
            }
            Ok(on(Followed::Lines(lines, warnings)))
        })
    }
}
