//! Posting a line of speech: the one way `ag-room tell`, the agent's `peer_message` and
//! `ag-room mcp`'s `peer_message` post, so they agree on what they accept and where a line
//! goes. Each front end resolves its addressee its own way (a person may name any session; a
//! model only one within its reach) and words the outcome; the rules are here.

use std::path::Path;

use super::presence::{self, Me};
use super::{Line, LineKind, Room, RoomError, Rooms};
use crate::store::{Session, Store};

/// What to post.
#[derive(Debug, Default)]
pub(crate) struct Post<'a> {
    pub(crate) text: &'a str,
    /// A direct message to this session; `None`: to everyone in the worktree room.
    pub(crate) to: Option<&'a Session>,
    /// The id of the line this answers (empty is none).
    pub(crate) reply_to: Option<&'a str>,
    /// Through the device room, whatever the addressee's folder (direct messages only).
    pub(crate) device: bool,
    /// Note where the room ended before the line (to wait for its receipt from there).
    pub(crate) mark_start: bool,
}

/// A line that was posted, and where.
#[derive(Debug)]
pub(crate) struct Posted {
    pub(crate) line: Line,
    pub(crate) room: Room,
    /// Where the room ended just before the line, when asked.
    pub(crate) start: Option<u64>,
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum PostError {
    /// What was asked breaks a rule of rooms: nothing was posted.
    #[error("{0}")]
    Refused(String),
    #[error(transparent)]
    Room(#[from] RoomError),
}

impl Rooms {
    /// Post `post` as `me`, from the worktree of `dir`. A line to everyone goes to the
    /// worktree room; a direct message goes there too when its addressee works in this
    /// worktree or is a session of another machine, else through the device room. Refused,
    /// with nothing written: empty text, a direct message to oneself, and a line to
    /// everyone through the device room (it would reach every session on this machine).
    pub(crate) fn post(
        &self,
        store: Option<&Store>,
        me: &Me,
        dir: &Path,
        post: Post<'_>,
    ) -> Result<Posted, PostError> {
        let text = post.text.trim_end();
        if text.trim().is_empty() {
            return Err(PostError::Refused("the text is empty".into()));
        }
        if post.device && post.to.is_none() {
            return Err(PostError::Refused(
                "a device-wide broadcast is refused: the device room carries only direct \
                 messages, because a line to every folder would reach every session on this \
                 machine"
                    .into(),
            ));
        }
        if let (Some(to), Some(mine)) = (post.to, &me.session) {
            if to.id == mine.id {
                return Err(PostError::Refused(
                    "that is this session; message another one".into(),
                ));
            }
        }
        let key = super::worktree_key(dir);
        let here = self.of_key(key.clone());
        let room = match (post.to, store) {
            (None, _) => here,
            (Some(_), _) if post.device => self.device(),
            (Some(to), Some(store)) => presence::room_for_message(store, self, here, &key, to),
            (Some(_), None) => here,
        };
        let mut line = Line::new(LineKind::Say, me.from.clone());
        line.text = Some(text.to_string());
        line.in_reply_to = post
            .reply_to
            .map(str::trim)
            .filter(|r| !r.is_empty())
            .map(str::to_string);
        line.to = post.to.map(|s| s.id.clone());
        let start = match post.mark_start {
            true => Some(room.end()?),
            false => None,
        };
        room.append(&line)?;
        Ok(Posted { line, room, start })
    }
}

impl Room {
    /// Wait for the `delivered` receipt of line `id`, reading from position `start` on (where
    /// the room ended before the line was posted) until `deadline`: the receipt, or `None`
    /// when the time ran out. It wakes when the room changes (the rooms folder's watch, a
    /// room server's subscription) and reads only what came since its last look.
    pub(crate) fn wait_delivered(
        &self,
        rooms_dir: &Path,
        start: u64,
        id: &str,
        deadline: std::time::Instant,
    ) -> Result<Option<Line>, RoomError> {
        let follower = crate::follow::Follower::new(std::time::Duration::from_millis(250))
            .watch(rooms_dir, false);
        let _waking = self.backend.wake(self, follower.waker());
        let mut at = start;
        loop {
            let mut got: Option<Line> = None;
            at = self.scan(at, &mut |_| {}, &mut |_, l| {
                if l.ty == LineKind::Delivered && l.in_reply_to.as_deref() == Some(id) {
                    got = Some(l);
                    return super::file::Flow::Stop;
                }
                super::file::Flow::Go
            })?;
            if got.is_some() {
                return Ok(got);
            }
            if std::time::Instant::now() >= deadline {
                return Ok(None);
            }
            follower.wait(Some(deadline));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_front_end_posts_by_the_same_rules() {
        let super::super::behaviours::World {
            dir,
            rooms,
            store,
            a,
            b,
            ..
        } = super::super::behaviours::world();
        let me = Me::session(&a);
        let post = |p: Post<'_>| rooms.post(Some(&store), &me, dir.path(), p);
        // An empty reply id is none; the line goes to the worktree room.
        let done = post(Post {
            text: "hello",
            reply_to: Some("  "),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(done.line.in_reply_to, None);
        assert_eq!(done.room, rooms.worktree(dir.path()));
        assert_eq!(done.room.scan_all().len(), 1);
        // A direct message to a session of this worktree stays in its room.
        let done = post(Post {
            text: "just you",
            to: Some(&b),
            reply_to: Some(&done.line.id),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(done.line.to.as_deref(), Some(b.id.as_str()));
        assert!(done.line.in_reply_to.is_some());
        assert!(!done.room.is_device());
        // Through the device room when asked.
        let done = post(Post {
            text: "via the device",
            to: Some(&b),
            device: true,
            ..Default::default()
        })
        .unwrap();
        assert!(done.room.is_device());
        // Refused, with nothing written.
        for refused in [
            Post {
                text: " \n",
                ..Default::default()
            },
            Post {
                text: "to me",
                to: Some(&a),
                ..Default::default()
            },
            Post {
                text: "everyone, everywhere",
                device: true,
                ..Default::default()
            },
        ] {
            assert!(matches!(post(refused), Err(PostError::Refused(_))));
        }
        assert_eq!(rooms.worktree(dir.path()).scan_all().len(), 2);
        assert_eq!(rooms.device().scan_all().len(), 1);
    }

    impl Room {
        fn scan_all(&self) -> Vec<Line> {
            let mut out = Vec::new();
            self.scan(0, &mut |_| {}, &mut |_, l| {
                out.push(l);
                super::super::file::Flow::Go
            })
            .unwrap();
            out
        }
    }
}
