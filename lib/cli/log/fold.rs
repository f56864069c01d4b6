//! `ag-log fold`: the provider request body a session folds into.

use crate::cli::{CliError, CliResult, Ctx};
use crate::fold::stream::{fold_to_writer, StreamError};
use crate::fold::{Dialect, FoldOptions};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum DialectArg {
    /// Anthropic Messages API
    Anthropic,
    /// OpenAI Chat Completions
    Openai,
}

impl From<DialectArg> for Dialect {
    fn from(d: DialectArg) -> Self {
        match d {
            DialectArg::Anthropic => Dialect::Anthropic,
            DialectArg::Openai => Dialect::OpenAi,
        }
    }
}

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The session: a handle, an id or prefix, a title, `last` (this directory's latest chat) or `last~N`
    #[arg(value_name = "SESSION", default_value = "last")]
    session: String,
    /// The request dialect
    #[arg(long, value_name = "DIALECT", default_value = "anthropic")]
    dialect: DialectArg,
    /// System prompt: the text itself, or @FILE to read it from a file
    #[arg(long, value_name = "TEXT|@FILE")]
    system: Option<String>,
    /// The model name to put in the request
    #[arg(long, value_name = "MODEL")]
    model: Option<String>,
    /// Add `"stream": true` (and the dialect's usage option)
    #[arg(long)]
    stream: bool,
    /// Pretty-print the JSON
    #[arg(long)]
    pretty: bool,
    /// Fold the whole log, ignoring compactions and prunes (by default the fold starts from
    /// the latest compaction's summary, and pruned tool results are placeholders)
    #[arg(long)]
    full: bool,
}

/// The name a provider's API wants: `anthropic/claude-x` → `claude-x`; the offline models
/// (`echo`, `script:FILE`) keep their whole name.
fn api_model_name(model: &str) -> String {
    if model == "echo" || model.starts_with("script:") {
        return model.to_string();
    }
    model
        .split_once('/')
        .map_or(model, |(_, name)| name)
        .to_string()
}

/// `TEXT` or `@FILE`.
pub(crate) fn text_or_file(v: &str, flag: &str) -> CliResult<String> {
    match v.strip_prefix('@') {
        Some(path) => std::fs::read_to_string(path).map_err(|e| {
            CliError::from(e).context(format!("{flag} @{path}: cannot read the file"))
        }),
        None => Ok(v.to_string()),
    }
}

pub(crate) fn run(ctx: &mut Ctx, args: Args) -> CliResult<()> {
    let system = args
        .system
        .as_deref()
        .map(|s| text_or_file(s, "--system"))
        .transpose()?;
    let store = ctx.read_store()?;
    let session = store.resolve(&args.session)?;
    let opts = FoldOptions {
        model: args.model.or_else(|| {
            // Stored names carry the provider (`anthropic/claude-…`); the API wants the rest.
            session.model.as_deref().map(api_model_name)
        }),
        system,
        stream: args.stream,
        ..Default::default()
    };
    // Straight from the log to stdout as it is read: the view is never held in memory.
    let out = &mut ctx.out;
    store
        .with_fold_source(&session, |src| {
            fold_to_writer(
                src,
                args.full,
                args.dialect.into(),
                &opts,
                args.pretty,
                DataWriter(out),
            )
        })?
        .map_err(|e| match e {
            StreamError::Source(e) => CliError::from(e),
            StreamError::Write(e) => CliError::from(std::io::Error::from(e)),
        })?;
    ctx.out.raw("\n")?;
    Ok(())
}

/// Stdout as an `io::Write`, through the printer.
struct DataWriter<'o>(&'o mut crate::cli::Out);

impl std::io::Write for DataWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.raw_bytes(buf)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
