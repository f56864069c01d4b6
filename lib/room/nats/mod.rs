//! Rooms on NATS JetStream ("Rooms across machines" in `docs/decisions.md`). One stream,
//! `AG_ROOMS`, holds every room, one subject a room (`ag.rooms.TOKEN`); a line's id is its
//! `Nats-Msg-Id`, so a retried publish is stored once; a position is a stream sequence.
//! Claims live in the KV bucket `ag_claims` (one key a room, written with compare-and-set),
//! presence in `ag_presence` (one key a session, refreshed by a heartbeat, gone when stale).
//!
//! The rest of `ag` is synchronous: this module owns a small tokio runtime and waits on it.
//! A server that cannot be reached is [`RoomError::Unavailable`] (a temporary failure);
//! after a failed connection the next attempt waits [`RETRY_AFTER`], so a running agent
//! that asks at every step does not stall on a dead server.

mod conn;
mod kv;

use std::collections::HashMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::StreamExt;

use super::backend::{Backend, Check, CheckState, Decide, Present, Waking};
use super::file::{self, Flow};
use super::{repo, Line, Room, RoomError};
use crate::config::rooms::RoomServer;
use conn::Connected;

/// The stream that holds every room.
pub(crate) const STREAM: &str = "AG_ROOMS";
/// Its subjects: `ag.rooms.TOKEN`.
pub(crate) const SUBJECT_PREFIX: &str = "ag.rooms.";
/// The claims bucket: one key a room.
pub(crate) const CLAIMS: &str = "ag_claims";
/// The presence bucket: one key a session, `TOKEN.SESSION`.
pub(crate) const PRESENCE: &str = "ag_presence";
/// A presence entry not refreshed for this long is gone (the bucket's max age).
pub(crate) const STALE_AFTER: Duration = Duration::from_secs(30);
/// How often a running session refreshes its presence.
pub(crate) const HEARTBEAT: Duration = Duration::from_secs(10);

/// [`HEARTBEAT`], or `AG_HEARTBEAT_MS` when set (tests that watch a refresh; never above
/// [`HEARTBEAT`], so an entry cannot go stale between beats).
pub(crate) fn heartbeat() -> Duration {
    std::env::var("AG_HEARTBEAT_MS")
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|ms| *ms > 0)
        .map_or(HEARTBEAT, |ms| Duration::from_millis(ms).min(HEARTBEAT))
}
/// How long after a failed connection the next one is tried.
pub(crate) const RETRY_AFTER: Duration = Duration::from_secs(3);
/// How long one request (a publish's acknowledgement, a read) may take.
pub(crate) const OP_TIMEOUT: Duration = Duration::from_secs(5);

/// The NATS backend.
pub(crate) struct Nats {
    /// Itself, for the threads that wake followers.
    me: std::sync::Weak<Nats>,
    server: RoomServer,
    /// Its own runtime; `None` only while it is dropped.
    rt: Option<tokio::runtime::Runtime>,
    conn: Mutex<ConnState>,
    names: Mutex<HashMap<PathBuf, String>>,
}

#[derive(Default)]
struct ConnState {
    ok: Option<Connected>,
    failed: Option<(Instant, String, bool)>,
}

impl Drop for Nats {
    /// The last holder of the rooms may let go of them inside an async context (`ag-room
    /// mcp` serves on a runtime of its own): the runtime is shut down without waiting there.
    fn drop(&mut self) {
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

impl Nats {
    /// The backend of the server `server` names (connected on first use).
    pub(crate) fn open(server: RoomServer) -> Arc<Nats> {
        Arc::new_cyclic(|me| Nats::new(server, me.clone()))
    }

    fn new(server: RoomServer, me: std::sync::Weak<Nats>) -> Nats {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("ag-rooms")
            .enable_all()
            .build()
            .expect("a tokio runtime for the room connection");
        Nats {
            me,
            server,
            rt: Some(rt),
            conn: Mutex::new(ConnState::default()),
            names: Mutex::new(HashMap::new()),
        }
    }

    /// Run `fut` on this backend's runtime and wait for it, from any thread (an async caller
    /// included: the future runs on the runtime's own worker).
    fn block<T: Send + 'static>(&self, fut: impl Future<Output = T> + Send + 'static) -> T {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let rt = self
            .rt
            .as_ref()
            .expect("the room connection's runtime lives with it");
        rt.spawn(async move {
            let _ = tx.send(fut.await);
        });
        rx.recv().expect("the room connection's runtime stopped")
    }

    /// The connection, made on first use.
    fn connected(&self) -> Result<Connected, RoomError> {
        let mut st = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(c) = &st.ok {
            if c.client.connection_state() == async_nats::connection::State::Connected {
                return Ok(c.clone());
            }
            // A lost connection is not waited on: this call fails at once, and one after
            // RETRY_AFTER makes a fresh connection (the old one may still be backing off).
            let msg = format!(
                "the room server {} is not connected now (lost the connection)",
                self.server.url
            );
            st.ok = None;
            st.failed = Some((Instant::now(), msg.clone(), true));
            return Err(RoomError::Unavailable(msg));
        }
        if let Some((at, msg, temporary)) = &st.failed {
            if at.elapsed() < RETRY_AFTER {
                return Err(if *temporary {
                    RoomError::Unavailable(msg.clone())
                } else {
                    RoomError::Config(msg.clone())
                });
            }
        }
        let server = self.server.clone();
        match self.block(conn::connect(server)) {
            Ok(c) => {
                st.ok = Some(c.clone());
                st.failed = None;
                Ok(c)
            }
            Err(e) => {
                let temporary = matches!(e, RoomError::Unavailable(_));
                st.failed = Some((Instant::now(), e.to_string(), temporary));
                Err(e)
            }
        }
    }

    fn token(room: &Room) -> &str {
        room.name.strip_prefix("nats:").unwrap_or(&room.name)
    }

    fn subject(room: &Room) -> String {
        format!("{SUBJECT_PREFIX}{}", Nats::token(room))
    }

    fn unavailable(&self, what: &str, e: impl std::fmt::Display) -> RoomError {
        RoomError::Unavailable(format!(
            "the room server {} did not answer ({what}): {e}",
            self.server.url
        ))
    }

    /// What `ag-room doctor` reports: one line a check, and whether it passed.
    pub(crate) fn doctor(&self) -> Vec<Check> {
        let mut out = vec![Check::ok(format!(
            "config: rooms on {} (from {}), {}",
            self.server.url,
            self.server.url_from,
            conn::describe_credential(&self.server.credential)
        ))];
        let c = match self.connected() {
            Ok(c) => {
                out.push(Check::ok(format!(
                    "connection: {} answers",
                    self.server.url
                )));
                c
            }
            Err(e) => {
                // A server that is not there now is a temporary failure; one that refuses the
                // credential is not.
                let state = match e {
                    RoomError::Unavailable(_) => CheckState::Unreachable,
                    _ => CheckState::Failed,
                };
                out.push(Check {
                    state,
                    text: format!("connection: {e}"),
                });
                return out;
            }
        };
        out.extend(
            self.block(conn::check(c))
                .into_iter()
                .map(|(ok, text)| Check::of(ok, text)),
        );
        out
    }
}

/// The next item of a stream the server feeds (a fetched batch, a key listing), or an error
/// after [`OP_TIMEOUT`]. Those streams have no deadline of their own: one whose server went
/// away while it answered would wait for ever, and a running agent with it.
pub(super) async fn next_within<S: futures_util::Stream + Unpin>(
    s: &mut S,
) -> Result<Option<S::Item>, String> {
    next_before(s, OP_TIMEOUT).await
}

async fn next_before<S: futures_util::Stream + Unpin>(
    s: &mut S,
    limit: Duration,
) -> Result<Option<S::Item>, String> {
    tokio::time::timeout(limit, s.next())
        .await
        .map_err(|_| format!("no answer within {} s", limit.as_secs_f32()))
}

/// The position of a message: its stream sequence.
async fn publish(c: Connected, subject: String, id: String, bytes: Vec<u8>) -> Result<(), String> {
    let mut headers = async_nats::HeaderMap::new();
    headers.insert("Nats-Msg-Id", id.as_str());
    let mut last = String::new();
    // A publish whose acknowledgement was lost is sent again with the same id: the server
    // stores it once.
    for _ in 0..3 {
        let sent =
            c.js.publish_with_headers(subject.clone(), headers.clone(), bytes.clone().into())
                .await;
        match sent {
            Ok(ack) => match tokio::time::timeout(OP_TIMEOUT, ack).await {
                Ok(Ok(_)) => return Ok(()),
                Ok(Err(e)) => last = e.to_string(),
                Err(_) => last = "no acknowledgement within 5 s".into(),
            },
            Err(e) => last = e.to_string(),
        }
    }
    Err(last)
}

/// Every message of `subject` from sequence `from` on, with its sequence.
async fn read_from(
    c: Connected,
    subject: String,
    from: u64,
) -> Result<Vec<(u64, Vec<u8>)>, String> {
    let last = c
        .stream
        .get_info()
        .await
        .map_err(|e| e.to_string())?
        .state
        .last_sequence;
    let from = from.max(1);
    if from > last {
        return Ok(Vec::new());
    }
    fetch_all(&c.stream, subject, from, last).await
}

/// The messages of `subject` from sequence `from` to `last` (or until the stream has nothing
/// more), each with its sequence, through a fresh consumer: no-wait batches, which the server
/// ends itself, each item within [`OP_TIMEOUT`].
async fn fetch_all(
    stream: &async_nats::jetstream::stream::Stream,
    subject: String,
    from: u64,
    last: u64,
) -> Result<Vec<(u64, Vec<u8>)>, String> {
    use async_nats::jetstream::consumer::{pull, AckPolicy, DeliverPolicy};
    let consumer = stream
        .create_consumer(pull::Config {
            filter_subject: subject,
            deliver_policy: DeliverPolicy::ByStartSequence {
                start_sequence: from,
            },
            ack_policy: AckPolicy::None,
            inactive_threshold: Duration::from_secs(10),
            memory_storage: true,
            ..Default::default()
        })
        .await
        .map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    'batches: loop {
        let mut batch = consumer
            .fetch()
            .max_messages(512)
            .messages()
            .await
            .map_err(|e| e.to_string())?;
        let mut n = 0;
        while let Some(m) = next_within(&mut batch).await? {
            let m = m.map_err(|e| e.to_string())?;
            let info = m.info().map_err(|e| e.to_string())?;
            let (seq, pending) = (info.stream_sequence, info.pending);
            out.push((seq, m.payload.to_vec()));
            n += 1;
            if pending == 0 || seq >= last {
                break 'batches;
            }
        }
        if n == 0 {
            break;
        }
    }
    let _ = stream.delete_consumer(&consumer.cached_info().name).await;
    Ok(out)
}

impl Backend for Nats {
    fn worktree_name(&self, key: &Path) -> String {
        let mut names = self.names.lock().unwrap_or_else(|p| p.into_inner());
        names
            .entry(key.to_path_buf())
            .or_insert_with(|| {
                let id = repo::identity(key);
                let slug_from = match id.slug_source() {
                    "" => key
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default(),
                    s => s.to_string(),
                };
                // The file room's naming (slug and hash) over the repository's identity.
                let name = super::room_name(Path::new(&id.key()));
                let hash = name
                    .trim_end_matches(".jsonl")
                    .rsplit('-')
                    .next()
                    .unwrap_or("");
                let slug = super::room_name(Path::new(&slug_from));
                let slug = slug
                    .trim_end_matches(".jsonl")
                    .rsplit_once('-')
                    .map_or("", |s| s.0);
                format!("nats:{slug}-{hash}")
            })
            .clone()
    }

    fn device_name(&self) -> String {
        "nats:team".into()
    }

    fn append(&self, room: &Room, line: &Line) -> Result<(), RoomError> {
        let mut bytes = file::encode(line)?;
        bytes.pop();
        let c = self.connected()?;
        self.block(publish(c, Nats::subject(room), line.id.clone(), bytes))
            .map_err(|e| self.unavailable("posting a line", e))
    }

    fn end(&self, _room: &Room) -> Result<u64, RoomError> {
        let c = self.connected()?;
        let info = self
            .block(async move { c.stream.get_info().await.map_err(|e| e.to_string()) })
            .map_err(|e| self.unavailable("reading the room's end", e))?;
        Ok(info.state.last_sequence + 1)
    }

    fn scan(
        &self,
        room: &Room,
        from: u64,
        warn: &mut dyn FnMut(String),
        f: &mut dyn FnMut(u64, Line) -> Flow,
    ) -> Result<u64, RoomError> {
        let c = self.connected()?;
        let msgs = self
            .block(read_from(c, Nats::subject(room), from))
            .map_err(|e| self.unavailable("reading the room", e))?;
        let mut next = from;
        for (seq, payload) in msgs {
            next = seq + 1;
            match serde_json::from_slice::<Line>(&payload) {
                Ok(line) => {
                    if let Flow::Stop = f(seq, line) {
                        return Ok(next);
                    }
                }
                Err(_) => warn(format!(
                    "{}: message {seq}: skipped a message that is not a room line",
                    room.label()
                )),
            }
        }
        Ok(next)
    }

    fn read_at(&self, room: &Room, at: u64) -> Option<Line> {
        let c = self.connected().ok()?;
        let subject = Nats::subject(room);
        let m = self
            .block(async move { c.stream.get_raw_message(at).await.ok() })
            .filter(|m| m.subject.as_str() == subject)?;
        serde_json::from_slice(&m.payload).ok()
    }

    fn claim_lines(
        &self,
        room: &Room,
        _warn: &mut dyn FnMut(String),
    ) -> Result<Vec<Line>, RoomError> {
        let c = self.connected()?;
        let token = Nats::token(room).to_string();
        let got = self
            .block(async move { kv::claims_entry(&c, &token).await })
            .map_err(|e| self.unavailable("reading the claims", e))?;
        Ok(got.map(|(lines, _)| lines).unwrap_or_default())
    }

    fn append_checked(
        &self,
        room: &Room,
        _warn: &mut dyn FnMut(String),
        decide: &mut Decide<'_>,
    ) -> Result<(), RoomError> {
        let c = self.connected()?;
        let token = Nats::token(room).to_string();
        for _ in 0..50 {
            let (c1, t1) = (c.clone(), token.clone());
            let got = self
                .block(async move { kv::claims_entry(&c1, &t1).await })
                .map_err(|e| self.unavailable("reading the claims", e))?;
            let (lines, revision) = got.unwrap_or_default();
            let Some(line) = decide(&lines)? else {
                return Ok(());
            };
            let kept = kv::prune(lines, &line);
            let (c2, t2) = (c.clone(), token.clone());
            let written = self
                .block(async move { kv::claims_write(&c2, &t2, &kept, revision).await })
                .map_err(|e| self.unavailable("writing the claims", e))?;
            if written {
                // The claim stands (the bucket is the record); the room hears of it too.
                let _ = self.append(room, &line);
                return Ok(());
            }
        }
        Err(RoomError::Unavailable(
            "the claims kept changing under this claim; try again".into(),
        ))
    }

    fn wake(&self, room: &Room, tx: std::sync::mpsc::Sender<()>) -> Option<Waking> {
        let stop = Arc::new(AtomicBool::new(false));
        let (subject, stopped) = (Nats::subject(room), stop.clone());
        let nats = self.me.upgrade()?;
        std::thread::Builder::new()
            .name("ag-room-wake".into())
            .spawn(move || wake_loop(&nats, &subject, &tx, &stopped))
            .ok()?;
        Some(Waking(Some(Box::new(move || {
            stop.store(true, Ordering::SeqCst)
        }))))
    }

    fn describe(&self) -> String {
        self.server.url.clone()
    }

    fn shared(&self) -> bool {
        true
    }

    fn announce(&self, room: &Room, p: &Present) -> Result<(), RoomError> {
        let c = self.connected()?;
        let key = format!("{}.{}", Nats::token(room), kv::key_part(&p.session));
        let bytes = serde_json::to_vec(p).map_err(|e| RoomError::Invalid(e.to_string()))?;
        self.block(async move {
            let p = c.presence().await?;
            p.put(key, bytes.into()).await.map_err(|e| e.to_string())
        })
        .map(|_| ())
        .map_err(|e| self.unavailable("refreshing presence", e))
    }

    fn leave(&self, room: &Room, session: &str) -> Result<(), RoomError> {
        let c = self.connected()?;
        let key = format!("{}.{}", Nats::token(room), kv::key_part(session));
        self.block(async move {
            let p = c.presence().await?;
            p.delete(key).await.map_err(|e| e.to_string())
        })
        .map_err(|e| self.unavailable("leaving", e))
    }

    fn present(&self, room: &Room) -> Result<Vec<Present>, RoomError> {
        let c = self.connected()?;
        let prefix = format!("{}.", Nats::token(room));
        self.block(async move { kv::present(&c, &prefix).await })
            .map_err(|e| self.unavailable("reading presence", e))
    }

    fn doctor(&self) -> Vec<Check> {
        Nats::doctor(self)
    }
}

/// Wakes a follower when the room's subject carries a message (every publish to the stream
/// is also delivered to plain subscribers), until `stop`; the subscription comes back by
/// itself after a reconnection, and the follower's read from its cursor covers whatever it
/// missed meanwhile.
fn wake_loop(nats: &Nats, subject: &str, tx: &std::sync::mpsc::Sender<()>, stop: &AtomicBool) {
    let mut sub: Option<Arc<tokio::sync::Mutex<async_nats::Subscriber>>> = None;
    while !stop.load(Ordering::SeqCst) {
        if sub.is_none() {
            if let Ok(c) = nats.connected() {
                let subject = subject.to_string();
                let got = nats.block(async move { c.client.subscribe(subject).await });
                sub = got.ok().map(|s| Arc::new(tokio::sync::Mutex::new(s)));
            }
        }
        let Some(s) = sub.clone() else {
            std::thread::sleep(Duration::from_millis(250));
            continue;
        };
        let woke = nats.block(async move {
            let mut s = s.lock().await;
            match tokio::time::timeout(Duration::from_millis(500), s.next()).await {
                Ok(Some(_)) => Some(true),
                Ok(None) => None,
                Err(_) => Some(false),
            }
        });
        match woke {
            Some(true) => {
                if tx.send(()).is_err() {
                    return;
                }
            }
            Some(false) => {}
            None => sub = None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stream the server stopped feeding (gone mid-answer) ends the read with an error
    /// instead of holding it, and whatever came before is still read.
    #[test]
    fn a_stream_that_stops_answering_ends_the_read() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let got = rt.block_on(async {
            let mut s = futures_util::stream::iter([1, 2]).chain(futures_util::stream::pending());
            let limit = Duration::from_millis(20);
            let first = next_before(&mut s, limit).await;
            let second = next_before(&mut s, limit).await;
            (first, second, next_before(&mut s, limit).await)
        });
        assert_eq!(got.0, Ok(Some(1)));
        assert_eq!(got.1, Ok(Some(2)));
        assert_eq!(got.2, Err("no answer within 0.02 s".to_string()));
    }
}
