//! The behaviours the three room front ends share (`ag-room`, the agent's `peer_*` tools,
//! `ag-room mcp`), each tested once here against the value they all call (`Rooms`, `Room`
//! and the room layer's functions); `tests/e2e/room_front_ends.rs` holds the table of where
//! each is tested through each front end. Posting's rules are tested beside `Rooms::post`.

use std::time::{Duration, Instant};

use super::claims::{self, Outcome};
use super::inbox::{self, Take};
use super::post::Post;
use super::presence::Me;
use super::tail::Followed;
use super::{Line, LineKind, Rooms};
use crate::follow::Next;
use crate::paths::Home;
use crate::store::{NewSession, Session, Store};

/// A home with file rooms, a store, and two idle sessions (`alpha`, `beta`) in one folder.
pub(super) struct World {
    pub(super) dir: tempfile::TempDir,
    pub(super) home: Home,
    pub(super) rooms: Rooms,
    pub(super) store: Store,
    pub(super) a: Session,
    pub(super) b: Session,
}

pub(super) fn world() -> World {
    let dir = tempfile::tempdir().unwrap();
    let home = Home {
        dir: dir.path().join("home"),
    };
    let store = Store::open_path(&dir.path().join("ag.db")).unwrap();
    let cwd = dir.path().to_string_lossy().into_owned();
    let new = |title: &str| {
        store
            .create_session(NewSession {
                title: title.into(),
                cwd: Some(cwd.clone()),
                ..Default::default()
            })
            .unwrap()
    };
    let (a, b) = (new("alpha"), new("beta"));
    World {
        rooms: Rooms::files(&home),
        home,
        dir,
        store,
        a,
        b,
    }
}

impl World {
    fn say(&self, me: &Me, text: &str, to: Option<&Session>) -> Line {
        let post = Post {
            text,
            to,
            ..Default::default()
        };
        self.rooms
            .post(Some(&self.store), me, self.dir.path(), post)
            .unwrap()
            .line
    }

    fn texts(&self, me: &Me, take: Take) -> Vec<String> {
        let rooms = self.rooms.heard_in(self.dir.path());
        inbox::take(&self.store, me, &rooms, take)
            .unwrap()
            .heard
            .iter()
            .map(|h| h.line.text.clone().unwrap_or_default())
            .collect()
    }

    fn receipts_for(&self, id: &str) -> usize {
        let room = self.rooms.worktree(self.dir.path());
        let mut n = 0;
        room.scan(0, &mut |_| {}, &mut |_, l| {
            n += usize::from(l.ty == LineKind::Delivered && l.in_reply_to.as_deref() == Some(id));
            super::file::Flow::Go
        })
        .unwrap();
        n
    }
}

#[test]
fn the_inbox_gives_held_lines_then_new_ones_once_with_receipts() {
    let w = world();
    let (amy, b) = (Me::named("amy", "human"), Me::session(&w.b));
    let held = w.say(&amy, "held back", None);
    // The session heard the first line but held it back from its context.
    let room = w.rooms.worktree(w.dir.path());
    let end = room.end().unwrap();
    w.store
        .room_advance(
            &b.reader,
            &[(room.name.clone(), end)],
            &[(room.name.clone(), 0, held.id.clone())],
        )
        .unwrap();
    let new = w.say(&amy, "new", None);
    w.say(&amy, "for alpha only", Some(&w.a));
    // A peek consumes nothing.
    let peek = Take {
        new: true,
        peek: true,
        ..Default::default()
    };
    assert_eq!(w.texts(&b, peek), ["held back", "new"]);
    assert_eq!(w.receipts_for(&new.id), 0);
    // Held lines alone (the agent's peer_inbox), then the new ones (ag-room inbox, MCP).
    assert_eq!(w.texts(&b, Take::default()), ["held back"]);
    assert_eq!(w.receipts_for(&held.id), 1);
    let take_new = Take {
        new: true,
        ..Default::default()
    };
    assert_eq!(w.texts(&b, take_new), ["new"]);
    assert_eq!(w.receipts_for(&new.id), 1);
    assert!(w.texts(&b, take_new).is_empty(), "taken once");
    // With receipts, the teller hears who took its line.
    let with_receipts = Take {
        new: true,
        receipts: true,
        ..Default::default()
    };
    let told: Vec<LineKind> = inbox::take(
        &w.store,
        &amy,
        &w.rooms.heard_in(w.dir.path()),
        with_receipts,
    )
    .unwrap()
    .heard
    .into_iter()
    .map(|h| h.line.ty)
    .collect();
    assert_eq!(told, [LineKind::Delivered, LineKind::Delivered], "{told:?}");
}

#[test]
fn a_running_sessions_inbox_is_its_own() {
    let w = world();
    let idle = w.store.session(&w.a.id).unwrap();
    assert!(inbox::may_consume(&idle, None).is_ok());
    let crate::store::Leased::Held(_lease) = w.store.lease(&w.a.id, None).unwrap() else {
        panic!("not leased");
    };
    let running = w.store.session(&w.a.id).unwrap();
    let why = inbox::may_consume(&running, None).unwrap_err();
    assert_eq!(why.handle, running.handle);
    assert!(why.to_string().contains("is running"), "{why}");
    assert!(inbox::may_consume(&running, Some(&w.b.id)).is_err());
    assert!(
        inbox::may_consume(&running, Some(&w.a.id)).is_ok(),
        "its own"
    );
}

#[test]
fn a_claim_refuses_an_overlapping_one_until_released() {
    let w = world();
    let room = w.rooms.worktree(w.dir.path());
    let (a, b) = (Me::session(&w.a), Me::session(&w.b));
    let claim = |me: &Me, path: &str| {
        claims::claim(
            &w.store,
            &room,
            me,
            vec![path.to_string()],
            "editing",
            false,
            600,
            &mut |_| {},
        )
        .unwrap()
    };
    assert!(matches!(claim(&a, "src/x.rs"), Outcome::Claimed(_)));
    match claim(&b, "src/*.rs") {
        Outcome::Refused(c) => assert_eq!(c.len(), 1),
        Outcome::Claimed(c) => panic!("claimed over another's claim: {c:?}"),
    }
    assert!(matches!(claim(&b, "docs/y.md"), Outcome::Claimed(_)));
    // Releasing another's path ends nothing; one's own ends it.
    let none = claims::release(&w.store, &room, &b, Some(&["src/x.rs".into()]), &mut |_| {});
    assert!(none.unwrap().is_empty());
    let ended = claims::release(&w.store, &room, &a, None, &mut |_| {}).unwrap();
    assert_eq!(ended.len(), 1);
    assert_eq!(ended[0].paths, ["src/x.rs"]);
    assert!(matches!(claim(&b, "src/*.rs"), Outcome::Claimed(_)));
    let bad = claims::claim(&w.store, &room, &a, vec![], "x", false, 60, &mut |_| {});
    assert!(bad.is_err());
}

#[test]
fn waiting_for_a_receipt_ends_when_the_line_is_taken_or_the_time_is_up() {
    let w = world();
    let amy = Me::named("amy", "human");
    let post = Post {
        text: "ping",
        mark_start: true,
        ..Default::default()
    };
    let posted = w
        .rooms
        .post(Some(&w.store), &amy, w.dir.path(), post)
        .unwrap();
    let start = posted.start.unwrap();
    let dir = w.home.rooms_dir();
    let soon = Instant::now() + Duration::from_millis(300);
    let none = posted
        .room
        .wait_delivered(&dir, start, &posted.line.id, soon);
    assert!(none.unwrap().is_none());
    let (db, rooms) = (w.dir.path().join("ag.db"), w.rooms.heard_in(w.dir.path()));
    std::thread::scope(|s| {
        s.spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            let store = Store::open_path(&db).unwrap();
            let bob = Me::named("bob", "human");
            let take = Take {
                new: true,
                ..Default::default()
            };
            inbox::take(&store, &bob, &rooms, take).unwrap();
        });
        let later = Instant::now() + Duration::from_secs(20);
        let got = posted
            .room
            .wait_delivered(&dir, start, &posted.line.id, later);
        let got = got.unwrap().expect("the receipt");
        assert_eq!(got.from.name, "bob");
    });
}

#[test]
fn a_follower_is_told_each_new_line_it_is_shown_once_and_stops_when_asked() {
    let w = world();
    let amy = Me::named("amy", "human");
    let watcher = Me::named("dave", "human");
    let room = w.rooms.worktree(w.dir.path());
    for n in 0..5 {
        w.say(&amy, &format!("old {n}"), None);
    }
    w.say(&amy, "between others", Some(&w.a));
    let show = |l: &Line| super::tail::shown(l, &watcher, false);
    let last = room.last(Some(2), &show).unwrap();
    let texts: Vec<_> = last.lines.iter().filter_map(|l| l.text.clone()).collect();
    assert_eq!(texts, ["old 3", "old 4"], "the last lines shown");
    let mut told = Vec::new();
    let (rooms, dir, a) = (w.rooms.clone(), w.dir.path().to_path_buf(), w.a.clone());
    std::thread::scope(|s| {
        s.spawn(move || {
            let amy = Me::named("amy", "human");
            for text in ["one", "two", "three"] {
                std::thread::sleep(Duration::from_millis(100));
                for to in [None, Some(&a)] {
                    let post = Post {
                        text: if to.is_some() { "hidden" } else { text },
                        to,
                        ..Default::default()
                    };
                    rooms.post(None, &amy, &dir, post).unwrap();
                }
            }
        });
        room.follow(&w.home.rooms_dir(), last.end, &show, &mut |f| {
            if let Followed::Lines(lines, _) = f {
                told.extend(lines.into_iter().filter_map(|l| l.text));
            }
            match told.len() {
                3 => Next::Stop,
                _ => Next::Wait,
            }
        })
        .unwrap();
    });
    assert_eq!(told, ["one", "two", "three"]);
}
