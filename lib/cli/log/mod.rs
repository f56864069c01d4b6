//! `ag-log`: the append-only chunk log from the shell.

mod append;
mod compact;
mod complete;
mod export;
mod fold;
mod import;
mod ingest;
mod prune;
mod read;
mod render;
mod search;
mod sessions;
mod show;
mod usage;

use std::process::ExitCode;

pub(crate) use append::parse_uuid;
pub(crate) use fold::text_or_file;
pub(crate) use render::clip;
pub(crate) use show::context_use;

use clap::{CommandFactory, Parser, Subcommand};

use super::{finish, CliResult, Ctx, GlobalArgs};

const ABOUT: &str =
    "The append-only chunk log of agent sessions: write, read, follow, search, fold";

const EXAMPLES: &str = "\
Examples:
  ag-log append --new --title demo 'What is in this repo?'
  printf '%s\\n' '{\"role\":\"assistant\",\"type\":\"text\",\"data\":{\"text\":\"Hi\"}}' | ag-log append -s last
  id=$(ag-log append --new -q 'hello')  # -q with --new: the new session's id alone
  ag-log cat last                      # this directory's latest chat session, for people
  ag-log cat last~1 --any              # the one before it, from any directory
  ag-log cat parser --turn ptxqvm      # by title fragment, one turn by its handle
  ag-log cat last --limit 50 --json    # the newest 50 chunks as NDJSON
  ag-log tail -f last                  # follow new chunks as they are written
  ag-log fold last --dialect openai --system @prompt.md | curl … -d @-
  ag-log ls --here --since 1d          # this directory's sessions of the last day
  ag-log ls -q --kind side | xargs -r ag-log rm -f   # ids only, one a line
  ag-log search 'cache breakpoint' -s last
  ag-log compact last --summary @notes.md  # a summary you wrote stands for the older part
  ag-log prune last                    # old tool results become placeholders, no summary
  ag-log fold last --full              # the request as if nothing had been compacted";

const IMPORT_EXAMPLES: &str = "\
Examples:
  ag-log import ~/.claude/projects             # every Claude Code session, subagents as children
  ag-log import --from codex ~/.codex/sessions # every Codex rollout
  id=$(ag-log import session.jsonl | jq -r .session | head -1) && ag-fork \"$id\" --btw 'what changed?'
  ag-log import --follow ~/.claude/projects/-home-me-repo   # keep importing as it runs
  ag-log export SESSION --format ndjson | ssh host ag-log import -

Prints one NDJSON line per source session: {session, source, source_id, chunks, skipped}
(chunks: appended by this run; skipped: source lines that gave no chunk). Importing again
is idempotent, and a file that grew appends only its new part.

A file grants nothing: an imported session belongs to the directory the import ran in, runs
on your default model, and has a new session's tools and sandbox until a turn's flags widen
them (ag-prompt -s ID --tools …). The directory and model the source recorded are shown by
ag-log show, never used.";

const EXPORT_EXAMPLES: &str = "\
Examples:
  ag-log export last --format html -o session.html   # one page, open it anywhere
  ag-log export last > session.md                    # Markdown (the default)
  ag-log export SESSION --format ndjson | ssh host ag-log import -
  ag-log export --all --format html -o ~/sessions    # one file per session
  ag-log export --here --format md -o notes/         # the sessions of this directory";

#[derive(Debug, Parser)]
#[command(
    name = "ag-log",
    version,
    about = ABOUT,
    long_about = None,
    after_help = EXAMPLES,
    disable_help_subcommand = true
)]
pub(crate) struct Cli {
    #[command(flatten)]
    pub(crate) global: GlobalArgs,
    #[command(subcommand)]
    pub(crate) verb: Verb,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Verb {
    /// Append chunks: one user text, or NDJSON chunks from stdin, in one transaction
    Append(append::Args),
    /// Print a session's chunks (text, --json NDJSON, or --format md)
    Cat(read::CatArgs),
    /// Print the newest chunks; -f follows new ones as they are written
    Tail(read::TailArgs),
    /// List sessions
    Ls(sessions::LsArgs),
    /// Show one session: metadata, lineage, counts by type, token usage
    Show(show::ShowArgs),
    /// Print the provider request body a session folds into
    Fold(fold::Args),
    /// Append a provider SSE stream from stdin as one assistant step
    Ingest(ingest::Args),
    /// Import Claude Code sessions, Codex rollouts and ag exports as sessions
    #[command(after_help = IMPORT_EXAMPLES)]
    Import(import::Args),
    /// Compact a session: a summary stands for its older part in later requests (the log
    /// keeps everything)
    Compact(compact::Args),
    /// Prune a session: its old tool results are sent as placeholders in later requests
    /// (the log keeps them; `recall` fetches them)
    Prune(prune::Args),
    /// Write sessions as Markdown, a self-contained HTML page, or NDJSON to import elsewhere
    #[command(after_help = EXPORT_EXAMPLES)]
    Export(export::Args),
    /// Full-text search over what was said and done (text, thinking, tool calls and results,
    /// peer speech, errors); exits 1 when nothing matched, like grep
    Search(search::SearchArgs),
    /// Tokens and dollars by day, model, session or folder, from the turns' records: what
    /// runs cost (list prices, or the configuration's)
    Usage(usage::UsageArgs),
    /// Set a session's title
    Title(sessions::TitleArgs),
    /// Remove sessions and their chunks
    Rm(sessions::RmArgs),
}

/// The clap command, for man pages and completions.
pub fn command() -> clap::Command {
    Cli::command()
}

pub fn main() -> ExitCode {
    // The completion helper is not a verb: it stays out of help, man pages and completions.
    if let Some(kind) = complete::requested() {
        return complete::main(kind);
    }
    let cli: Cli = super::parse("ag-log");
    finish("ag-log", run(cli))
}

fn run(cli: Cli) -> CliResult<()> {
    let mut ctx = Ctx::new(cli.global)?;
    let result = match cli.verb {
        Verb::Append(a) => append::run(&mut ctx, a),
        Verb::Cat(a) => read::cat(&mut ctx, a),
        Verb::Tail(a) => read::tail(&mut ctx, a),
        Verb::Ls(a) => sessions::ls(&mut ctx, a),
        Verb::Show(a) => show::show(&mut ctx, a),
        Verb::Fold(a) => fold::run(&mut ctx, a),
        Verb::Ingest(a) => ingest::run(&mut ctx, a),
        Verb::Import(a) => import::run(&mut ctx, a),
        Verb::Compact(a) => compact::run(&mut ctx, a),
        Verb::Prune(a) => prune::run(&mut ctx, a),
        Verb::Export(a) => export::run(&mut ctx, a),
        Verb::Search(a) => search::search(&mut ctx, a),
        Verb::Usage(a) => usage::run(&mut ctx, a),
        Verb::Title(a) => sessions::title(&mut ctx, a),
        Verb::Rm(a) => sessions::rm(&mut ctx, a),
    };
    ctx.conclude(result)
}
