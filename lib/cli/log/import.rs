//! `ag-log import`: Claude Code sessions, Codex rollouts and `ag` exports become sessions,
//! one transaction per source session; `--follow` keeps importing as the files grow.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use serde_json::json;

use crate::cli::{CliError, CliResult, Ctx};
use crate::follow::{Follower, Next};
use crate::import::{self, PlannedSession, SourceKind};
use crate::store::Store;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum From {
    /// Tell each file's format from its lines
    Auto,
    /// Claude Code session files (~/.claude/projects/*/*.jsonl)
    Claude,
    /// Codex rollouts (~/.codex/sessions/**/rollout-*.jsonl)
    Codex,
    /// Files written by `ag-log export --format ndjson`
    Ag,
}

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Files or directories (searched recursively for *.jsonl and *.ndjson); `-` is stdin
    #[arg(value_name = "PATH", required = true)]
    paths: Vec<PathBuf>,
    /// Which tool wrote the files
    #[arg(long, value_name = "TOOL", default_value = "auto")]
    from: From,
    /// After importing, keep watching and import new sessions and new lines as they are
    /// written, until interrupted
    #[arg(short, long)]
    follow: bool,
}

pub(crate) fn run(ctx: &mut Ctx, args: Args) -> CliResult<()> {
    let store = ctx.store()?;
    let kind = match args.from {
        From::Auto => None,
        From::Claude => Some(SourceKind::ClaudeCode),
        From::Codex => Some(SourceKind::Codex),
        From::Ag => Some(SourceKind::Ag),
    };
    let mut run = Importer {
        kind,
        follow: args.follow,
        warned: HashSet::new(),
        seen: HashMap::new(),
        here: std::env::current_dir()?,
    };
    let files = collect(&args.paths)?;
    let mut failed = Vec::new();
    let bar = match files.len() {
        0 | 1 => ctx.out.progress_none(),
        n => ctx.out.progress(n as u64, "importing"),
    };
    // Files are read and parsed on a second thread while this one stores the file before:
    // parsing is about half the work, and waiting for the disk most of the rest. Stored in
    // the order named, so agent files still come after their parents and warnings in order.
    std::thread::scope(|scope| {
        let (tx, rx) = std::sync::mpsc::sync_channel(2);
        let (kind, follow, names) = (run.kind, run.follow, &files);
        scope.spawn(move || {
            for f in names {
                if tx.send(Loaded::load(kind, follow, f)).is_err() {
                    break;
                }
            }
        });
        for (f, (seen, loaded)) in files.iter().zip(rx) {
            run.saw(f, seen);
            if let Err(e) = loaded.and_then(|l| run.store_file(ctx, &store, f, l)) {
                failed.push((f.clone(), e));
            }
            bar.inc(1);
        }
    });
    drop(bar);
    ctx.out.flush()?;
    if args.follow {
        // Said now, as a later pass says it: following goes on around a bad file.
        for (_, e) in &failed {
            e.render(crate::cli::program());
        }
        return run.follow(ctx, &store, &args.paths);
    }
    match failed.len() {
        0 => Ok(()),
        1 if files.len() == 1 => Err(failed.pop().expect("one").1),
        n => {
            for (_, e) in &failed {
                e.render(crate::cli::program());
            }
            Err(CliError::msg(format!(
                "{n} of {} files could not be imported",
                files.len()
            )))
        }
    }
}

/// The files named, directories walked recursively. Subagent files (`agent-*.jsonl`) come
/// after the others, so their parents are there first.
fn collect(paths: &[PathBuf]) -> CliResult<Vec<PathBuf>> {
    let mut out = Vec::new();
    for p in paths {
        if p.as_os_str() == "-" || !p.is_dir() {
            if p.as_os_str() != "-" && !p.exists() {
                return Err(CliError::new(
                    crate::cli::Exit::NotFound,
                    format!("{}: no such file or directory", p.display()),
                ));
            }
            out.push(p.clone());
            continue;
        }
        let mut found = Vec::new();
        walk(p, &mut found)
            .map_err(|e| CliError::from(e).context(format!("cannot read {}", p.display())))?;
        found.sort_by_key(|f| (is_agent_file(f), f.clone()));
        out.extend(found);
    }
    Ok(out)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        let ty = entry.file_type()?;
        if ty.is_dir() {
            walk(&path, out)?;
        } else if ty.is_file()
            && matches!(
                path.extension().and_then(|e| e.to_str()),
                Some("jsonl" | "ndjson")
            )
        {
            out.push(path);
        }
    }
    Ok(())
}

fn is_agent_file(p: &Path) -> bool {
    p.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with("agent-"))
}

/// A file's length and modification time.
type Stamp = (u64, Option<SystemTime>);

fn stamp(path: &Path) -> Option<Stamp> {
    let m = std::fs::metadata(path).ok()?;
    Some((m.len(), m.modified().ok()))
}

/// A file read and parsed, not yet stored.
struct Loaded {
    parsed: import::Parsed,
    /// How messages name it.
    shown: String,
    /// How its sessions record where they came from.
    record: String,
}

impl Loaded {
    /// The file's length and modification time before it was read, and what it holds.
    fn load(
        kind: Option<SourceKind>,
        follow: bool,
        path: &Path,
    ) -> (Option<Stamp>, CliResult<Loaded>) {
        // Length and time are taken before the read: a write that lands while the file is
        // read then leaves them different, and the next pass reads the file again. (Taken
        // after, they would describe bytes this read never saw, and the rest would wait for
        // a write that may never come.)
        (stamp(path), Loaded::read_parse(kind, follow, path))
    }

    fn read_parse(kind: Option<SourceKind>, follow: bool, path: &Path) -> CliResult<Loaded> {
        let stdin = path.as_os_str() == "-";
        let mut bytes = if stdin {
            let mut b = Vec::new();
            std::io::Read::read_to_end(&mut std::io::stdin(), &mut b)?;
            b
        } else {
            std::fs::read(path)
                .map_err(|e| CliError::from(e).context(format!("cannot read {}", path.display())))?
        };
        // When following, only whole lines: a line still being written is imported once it
        // is whole.
        if follow {
            let whole = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
            bytes.truncate(whole);
        }
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "stdin".into());
        let shown = if stdin {
            "stdin".into()
        } else {
            path.display().to_string()
        };
        let parsed = import::parse(kind, &name, &bytes).map_err(|e| {
            CliError::msg(format!("{shown}: {e}"))
                .with_hint("ag-log import reads Claude Code session files, Codex rollouts and ag exports; --from names the format")
        })?;
        let record = if stdin {
            "-".to_string()
        } else {
            std::path::absolute(path)
                .unwrap_or_else(|_| path.to_path_buf())
                .to_string_lossy()
                .into_owned()
        };
        Ok(Loaded {
            parsed,
            shown,
            record,
        })
    }
}

struct Importer {
    kind: Option<SourceKind>,
    follow: bool,
    /// (file, line) of problems already reported, so following does not repeat them.
    warned: HashSet<(PathBuf, usize)>,
    /// Length and modification time of each file as last imported.
    seen: HashMap<PathBuf, Stamp>,
    /// Where the import runs: the imported sessions' directory.
    here: PathBuf,
}

impl Importer {
    fn file(&mut self, ctx: &mut Ctx, store: &Store, path: &Path) -> CliResult<()> {
        let (seen, loaded) = Loaded::load(self.kind, self.follow, path);
        self.saw(path, seen);
        self.store_file(ctx, store, path, loaded?)
    }

    /// Remember a file's length and time as read (also when it could not be imported, so
    /// following does not report it again until it changes).
    fn saw(&mut self, path: &Path, seen: Option<Stamp>) {
        if let Some(seen) = seen {
            self.seen.insert(path.to_path_buf(), seen);
        }
    }

    /// Store what [`Loaded::load`] made of the file at `path`.
    fn store_file(
        &mut self,
        ctx: &mut Ctx,
        store: &Store,
        path: &Path,
        loaded: Loaded,
    ) -> CliResult<()> {
        let Loaded {
            parsed,
            shown,
            record,
        } = loaded;
        for p in &parsed.problems {
            if self.warned.insert((path.to_path_buf(), p.line)) {
                ctx.out
                    .warn(&format!("{shown}:{}: skipped: {}", p.line, p.message));
            }
        }
        let mut first_err = None;
        for planned in parsed.sessions {
            if planned.chunks.is_empty() {
                continue;
            }
            match self.store_one(store, planned, &record, &shown) {
                Ok(Some(line)) if !ctx.global.quiet => ctx.out.line(&line.to_string())?,
                Ok(_) => {}
                Err(e) if first_err.is_none() => first_err = Some(e),
                Err(e) => e.render(crate::cli::program()),
            }
        }
        ctx.out.flush()?;
        first_err.map_or(Ok(()), Err)
    }

    /// Store one planned session; the line to print about it (when following, only news).
    fn store_one(
        &self,
        store: &Store,
        planned: PlannedSession,
        record: &str,
        shown: &str,
    ) -> CliResult<Option<serde_json::Value>> {
        let (source, source_id, skipped) = (
            planned.source.kind,
            planned.source.source_id.clone(),
            planned.skipped,
        );
        let done = crate::record::import(store, planned, record, &self.here).map_err(|e| {
            CliError::from(e).context(format!("{shown}: {source} session {source_id}"))
        })?;
        let news = done.appended > 0 || !self.follow || done.created;
        Ok(news.then(|| {
            json!({
                "session": done.session.id,
                "source": source.as_str(),
                "source_id": source_id,
                "chunks": done.appended,
                "skipped": skipped,
            })
        }))
    }

    /// Watch the paths (notifications, and a poll as the backstop where they do not arrive)
    /// and import whatever file changed, until interrupted.
    fn follow(&mut self, ctx: &mut Ctx, store: &Store, paths: &[PathBuf]) -> CliResult<()> {
        let stop = Arc::new(AtomicBool::new(false));
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            let _ = signal_hook::flag::register(sig, stop.clone());
        }
        let follower = paths
            .iter()
            .fold(Follower::new(Duration::from_millis(500)), |f, p| {
                f.watch(p, true)
            });
        follower.run(|| -> CliResult<Next> {
            if stop.load(Ordering::SeqCst) {
                return Ok(Next::Stop);
            }
            let Ok(files) = collect(paths) else {
                return Ok(Next::Wait);
            };
            for f in files {
                let Some(now) = stamp(&f) else {
                    continue;
                };
                if self.seen.get(&f) == Some(&now) {
                    continue;
                }
                if let Err(e) = self.file(ctx, store, &f) {
                    e.render(crate::cli::program());
                }
            }
            Ok(Next::Wait)
        })
    }
}
