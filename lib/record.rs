//! What a command records in the store outside a turn: chunks appended by hand (`ag-log
//! append`), a provider stream ingested as one assistant step (`ag-log ingest`), a session's
//! new title (`ag-log title`) and a transcript imported from another tool (`ag-log import`).
//! The rules (which turn and step a stream joins, what an imported session may keep) are
//! decided here; the commands parse their arguments and print.

use std::io::Read;
use std::path::Path;

use serde_json::json;

use crate::fold::Dialect;
use crate::import::PlannedSession;
use crate::log::{Chunk, ChunkData, NewChunk, Role};
use crate::reduce::{ChunkOp, StepEnd, StreamReader};
use crate::store::{
    AppendTarget, ImportPlan, ImportSource, Imported, NewSession, Page, Session, SessionKind,
    Store, StoreError,
};

/// Append a stream of chunks to `target` (an existing session or a new one) in one
/// transaction; each stored chunk goes to `sink` once the batch is committed. An empty stream
/// is refused ([`StoreError::EmptyBatch`]) and writes nothing.
pub(crate) fn append(
    store: &Store,
    target: AppendTarget,
    chunks: impl Iterator<Item = Result<NewChunk, StoreError>>,
    sink: &mut dyn FnMut(Chunk),
) -> Result<(Session, usize), StoreError> {
    store.append_stream(target, chunks, sink)
}

/// Give a session a new title.
pub(crate) fn retitle(store: &Store, session: &Session, title: &str) -> Result<(), StoreError> {
    store.set_title(&session.id, title)
}

/// What ingesting a stream stored, and how the stream ended: its step's end, or why it broke
/// off (the blocks sealed before the break are kept, followed by an error chunk).
#[derive(Debug)]
pub(crate) struct Ingested {
    pub(crate) stored: Vec<Chunk>,
    pub(crate) end: Result<StepEnd, String>,
}

/// A provider stream in `dialect`, read from `input` to its end, becomes one assistant step of
/// `session`: in `turn` when given, else in the session's open turn (no `turn_end` yet), else
/// in a new turn. `end_turn` closes the turn with a `turn_end` when the stream completes.
pub(crate) fn ingest(
    store: &Store,
    session: &Session,
    dialect: Dialect,
    turn: Option<String>,
    end_turn: bool,
    input: impl Read,
) -> Result<Ingested, StoreError> {
    let (turn, step) = turn_and_step(store, session, turn)?;
    let (mut batch, end) = read_stream(dialect, &turn, step, input);
    match &end {
        Ok(step_end) if end_turn => {
            batch.push(NewChunk::new(Role::System, turn_end(step_end)).in_turn(&turn, step))
        }
        Ok(_) => {}
        Err(message) => batch.push(
            NewChunk::new(
                Role::System,
                ChunkData::Error {
                    message: format!("ingest: {message}"),
                    status: None,
                },
            )
            .in_turn(&turn, step),
        ),
    }
    let stored = store.append(&session.id, batch)?;
    Ok(Ingested { stored, end })
}

/// Which turn and step the stream's blocks go to: the open turn (no `turn_end` yet) goes on
/// with its next step, else a turn starts; `asked` names one.
fn turn_and_step(
    store: &Store,
    session: &Session,
    asked: Option<String>,
) -> Result<(String, i64), StoreError> {
    let mut last = None;
    store.for_each_chunk(
        session,
        &Page {
            limit: Some(1),
            ..Default::default()
        },
        |c| {
            last = Some(c);
            Ok::<(), StoreError>(())
        },
    )?;
    // Steps only grow within a turn, so the open turn's last chunk carries its latest step.
    let open = last.filter(|c| !c.data.is_turn_end());
    Ok(match (asked, open) {
        (Some(t), Some(c)) if t == c.turn => (t, c.step + 1),
        (Some(t), _) => (t, 1),
        (None, Some(c)) => (c.turn, c.step + 1),
        (None, None) => (crate::ids::new_id(), 1),
    })
}

/// Read the stream to its end (or its break): the sealed blocks, and how it ended.
fn read_stream(
    dialect: Dialect,
    turn: &str,
    step: i64,
    mut input: impl Read,
) -> (Vec<NewChunk>, Result<StepEnd, String>) {
    let mut reader = StreamReader::new(dialect);
    let mut sealed: Vec<NewChunk> = Vec::new();
    let mut keep = |op: ChunkOp| {
        if let ChunkOp::Seal { data, .. } = op {
            sealed.push(NewChunk::new(Role::Assistant, data).in_turn(turn, step));
        }
    };
    let mut failure: Option<String> = None;
    let mut buf = vec![0u8; 64 * 1024];
    while !reader.is_done() {
        let n = match input.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                failure = Some(format!("reading stdin: {e}"));
                break;
            }
        };
        if let Err(e) = reader.push(&buf[..n], &mut keep) {
            failure = Some(e.to_string());
            break;
        }
    }
    let end = match failure {
        Some(f) => Err(f),
        None => reader.finish(&mut keep).map_err(|e| e.to_string()),
    };
    (sealed, end)
}

fn turn_end(end: &StepEnd) -> ChunkData {
    ChunkData::system(
        crate::log::TURN_END,
        json!({
            "stop_reason": end.stop_reason,
            "usage": {
                "input": end.usage.input,
                "output": end.usage.output,
                "cache_read": end.usage.cache_read,
                "cache_write": end.usage.cache_write,
            },
            "model": end.model,
            "duration_ms": 0,
        }),
    )
}

/// Store one session parsed from another tool's transcript (read from `path`, recorded as
/// where it came from), in one transaction: created, or grown by the chunks the store does not
/// have yet.
///
/// A data file grants nothing: the session runs in the directory the import ran in (`here`),
/// on the user's default model, with the tools and sandbox any new session gets until a turn's
/// flags widen them. What the source recorded (its directory and model) is kept beside it, to
/// be shown; its tools, sandbox and system prompt are not kept. An exported session's settings
/// that do not read are still refused: the file is damaged.
pub(crate) fn import(
    store: &Store,
    p: PlannedSession,
    path: &str,
    here: &Path,
) -> Result<Imported, StoreError> {
    if let Some(policy) = p.policy {
        crate::settings::Settings::from_value(policy).map_err(|message| {
            StoreError::BadSettings {
                session: p.source.source_id.clone(),
                message,
            }
        })?;
    }
    store.import_session(ImportPlan {
        source: ImportSource {
            source: p.source.kind.as_str().to_string(),
            source_id: p.source.source_id,
            path: path.to_string(),
            tool_version: p.source.tool_version,
            leaf: p.source.leaf,
            parent_source_id: p.source.parent_source_id,
            cwd: p.cwd,
            model: p.model,
        },
        session: NewSession {
            title: p.title,
            kind: Some(SessionKind::parse(&p.kind)),
            cwd: Some(here.to_string_lossy().into_owned()),
            agent: p.agent,
            ..Default::default()
        },
        keep_id: p.keep_id,
        created_at: p.created_at,
        chunks: p.chunks,
    })
}
