//! `ag-log fold`: the provider request body a session folds into.

use crate::cli::{CliError, CliResult, Ctx};
use crate::fold::{fold_to_writer, Dialect, FoldOptions};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DialectArg {
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
pub struct Args {
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
pub fn text_or_file(v: &str, flag: &str) -> CliResult<String> {
    match v.strip_prefix('@') {
        Some(path) => std::fs::read_to_string(path).map_err(|e| {
            CliError::from(e).context(format!("{flag} @{path}: cannot read the file"))
        }),
        None => Ok(v.to_string()),
    }
}

pub fn run(ctx: &mut Ctx, args: Args) -> CliResult<()> {
    let system = args
        .system
        .as_deref()
        .map(|s| text_or_file(s, "--system"))
        .transpose()?;
    let store = ctx.store()?;
    let session = store.resolve(&args.session)?;
    let chunks = if args.full {
        let mut all = store.load_fold_view(&session)?;
        all.retain(|c| {
            crate::fold::compaction::of_chunk(c).is_none()
                && crate::fold::prune::of_chunk(c).is_none()
        });
        all
    } else {
        // Only what the fold reads: from the latest compaction's kept suffix on.
        store.load_context_view(&session)?
    };
    let opts = FoldOptions {
        model: args.model.or_else(|| {
            // Stored names carry the provider (`anthropic/claude-…`); the API wants the rest.
            session.model.as_deref().map(api_model_name)
        }),
        system,
        stream: args.stream,
        ..Default::default()
    };
    // Straight from the log to JSON text, with no `Value` tree in between.
    let mut text = Vec::with_capacity(1 << 16);
    fold_to_writer(&chunks, args.dialect.into(), &opts, args.pretty, &mut text)
        .map_err(|e| CliError::msg(e.to_string()))?;
    text.push(b'\n');
    // Serialized from `String`s and `Value`s, so the text is UTF-8.
    let text = String::from_utf8(text).map_err(|e| CliError::msg(e.to_string()))?;
    ctx.out.raw(&text)?;
    // A large session is a large view; the process is about to exit, so let the OS take the
    // memory back instead of freeing it piece by piece.
    std::mem::forget(chunks);
    std::mem::forget(text);
    Ok(())
}
