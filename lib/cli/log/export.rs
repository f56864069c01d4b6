//! `ag-log export`: sessions as Markdown, a self-contained HTML page, or NDJSON that
//! `ag-log import` reads back into an identical log.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::cli::{CliError, CliResult, Ctx};
use crate::export::{self, Document};
use crate::store::{Session, Store};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Format {
    /// Markdown, for reading and pasting
    Md,
    /// One self-contained HTML page (no network when viewed)
    Html,
    /// The session row and its chunks, for `ag-log import` on another machine
    Ndjson,
}

impl Format {
    fn ext(self) -> &'static str {
        match self {
            Format::Md => "md",
            Format::Html => "html",
            Format::Ndjson => "ndjson",
        }
    }
}

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The session: a handle, an id or prefix, a title, `last` (this directory's latest chat) or `last~N`
    #[arg(value_name = "SESSION", required_unless_present_any = ["all", "here"], conflicts_with_all = ["all", "here"])]
    session: Option<String>,
    /// What to write
    #[arg(long, value_name = "FORMAT", default_value = "md")]
    format: Format,
    /// Write to FILE instead of stdout; with --all or --here, the directory to write into
    #[arg(short, long, value_name = "PATH")]
    output: Option<PathBuf>,
    /// Every session in the store, one file each (needs -o DIR)
    #[arg(long, conflicts_with = "here")]
    all: bool,
    /// Every session of the current directory, one file each (needs -o DIR)
    #[arg(long)]
    here: bool,
}

pub(crate) fn run(ctx: &mut Ctx, args: Args) -> CliResult<()> {
    let store = ctx.read_store()?;
    if let Some(reference) = &args.session {
        let session = store.resolve(reference)?;
        let working = ctx
            .out
            .progress(0, &format!("exporting {}", session.handle));
        let text = render(&store, &session, args.format)?;
        drop(working);
        return match &args.output {
            Some(path) => write_private(path, &text),
            // On a terminal the page is read, not stored: untrusted text is escaped.
            None if ctx.out.stdout_is_terminal() => {
                Ok(ctx.out.raw(&crate::cli::escape_controls(&text, true))?)
            }
            None => Ok(ctx.out.raw(&text)?),
        };
    }
    let Some(dir) = &args.output else {
        return Err(CliError::usage(
            "--all and --here write one file per session: name the directory with -o DIR",
        ));
    };
    let here = std::env::current_dir()?;
    let here = here.canonicalize().unwrap_or(here);
    let sessions: Vec<Session> = store
        .list_sessions(None)?
        .into_iter()
        .map(|(s, _)| s)
        .filter(|s| args.all || s.cwd.as_deref().map(Path::new) == Some(here.as_path()))
        .collect();
    crate::paths::create_private_dir(dir)
        .map_err(|e| CliError::from(e).context(format!("cannot create {}", dir.display())))?;
    let bar = ctx.out.progress(sessions.len() as u64, "exporting");
    for s in &sessions {
        let path = dir.join(format!("{}.{}", s.id, args.format.ext()));
        write_private(&path, &render(&store, s, args.format)?)?;
        bar.inc(1);
        if !ctx.global.quiet {
            ctx.out.line(&path.display().to_string())?;
        }
    }
    if sessions.is_empty() {
        ctx.out.warn("no sessions to export");
    }
    Ok(())
}

fn render(store: &Store, session: &Session, format: Format) -> CliResult<String> {
    let chunks = store.load_view(session)?;
    let lineage = store.lineage(session)?;
    let source = store.import_source(&session.id)?;
    let doc = Document {
        session,
        lineage: &lineage,
        source: source.as_ref(),
        chunks: &chunks,
    };
    Ok(match format {
        Format::Md => export::markdown_document(&doc),
        Format::Html => export::html(&doc),
        Format::Ndjson => {
            let mut out = export::ndjson_header(&doc);
            out.push('\n');
            for c in &chunks {
                out.push_str(&c.to_ndjson());
                out.push('\n');
            }
            out
        }
    })
}

/// Write a file readable by its owner only (it holds a whole conversation).
fn write_private(path: &Path, text: &str) -> CliResult<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| CliError::from(e).context(format!("cannot write {}", path.display())))?;
    f.write_all(text.as_bytes())
        .map_err(|e| CliError::from(e).context(format!("cannot write {}", path.display())))?;
    Ok(())
}
