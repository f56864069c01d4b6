//! What a script gets from `ag-prompt`: the prompt built from the argument, piped stdin and
//! `-a` files; and the turn's answer as one `result` object (`--json`, `--output json`) or
//! as a file (`-o`).

use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};

use crate::log::event::{LiveEvent, TurnDone};
use serde_json::Value;

use crate::cli::{CliError, CliResult};
use crate::log::image::{self, ImageType};
use crate::log::ChunkData;
use crate::store::{Session, Store};

/// Attached text files larger than this are refused: the model gets text, not a dump.
/// Images have their own limit, [`crate::log::image::MAX_IMAGE_BYTES`].
const MAX_ATTACHMENT: u64 = 1 << 20;

/// What the person gives a turn: the prompt's text, and the images attached with `-a`.
pub(super) struct Prompt {
    pub(crate) text: String,
    /// What a new session is titled after: the typed prompt's first line, else the first line
    /// of what came on stdin (`<stdin>` would title every piped run alike), else the first
    /// attached text file's path; none for images alone.
    pub(crate) title: Option<String>,
    /// `user/image` chunk payloads, in the order given; they go before the text.
    pub(crate) images: Vec<ChunkData>,
}

/// One `-a` file: text for the prompt, or an image of its own.
enum Attachment {
    Text(String),
    Image(ChunkData),
}

/// `--output`: what stdout carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Output {
    /// The answer as it streams (the default)
    Text,
    /// Only the result object: {session, handle, turn, answer, stop_reason, usage}
    Json,
}

/// Where the answer goes besides the live view.
#[derive(Debug, Clone, Default)]
pub(crate) struct Want {
    /// `--json`: the live events end with a `result` event.
    pub(crate) result_event: bool,
    /// `--output json`: stdout is the result object alone.
    pub(crate) result_only: bool,
    /// `-o FILE`: the answer is written there.
    pub(crate) file: Option<PathBuf>,
    /// `--schema`: stdout gets the validated answer, not the streamed text.
    pub(crate) structured: bool,
}

/// The prompt: the argument (or stdin for `-`), after piped stdin when both are given (so
/// `git diff | ag-prompt 'review this'` sends the diff), after each `-a` text file; `-a`
/// images go beside it.
pub(super) fn build(arg: Option<String>, attach: &[PathBuf]) -> CliResult<Prompt> {
    let mut parts = Vec::new();
    let mut images = Vec::new();
    let mut attached = None;
    for path in attach {
        match attachment(path)? {
            Attachment::Text(t) => {
                attached.get_or_insert_with(|| path.display().to_string());
                parts.push(t)
            }
            Attachment::Image(i) => images.push(i),
        }
    }
    let piped = match arg.as_deref() {
        Some("-") | None => None,
        Some(_) if std::io::stdin().is_terminal() => None,
        Some(_) => Some(read_stdin()?).filter(|s| !s.trim().is_empty()),
    };
    let piped_title = piped.as_deref().map(|s| crate::text::headline(s, 60));
    if let Some(s) = piped {
        parts.push(format!("<stdin>\n{}\n</stdin>", s.trim_end_matches('\n')));
    }
    let text = match arg.as_deref() {
        Some("-") => read_stdin()?,
        Some(t) => t.to_string(),
        None if !parts.is_empty() || !images.is_empty() => String::new(),
        None => {
            return Err(CliError::usage("no prompt given")
                .with_hint("pass the prompt as an argument, or `-` to read it from stdin"))
        }
    };
    let text = text.trim_end_matches('\n').to_string();
    if text.trim().is_empty() && parts.is_empty() && images.is_empty() {
        return Err(CliError::usage("the prompt is empty"));
    }
    let typed_title = crate::text::headline(&text, 60);
    if !text.trim().is_empty() {
        parts.push(text);
    }
    let title = [
        Some(typed_title),
        piped_title,
        attached.map(|a| crate::text::headline(&a, 60)),
    ]
    .into_iter()
    .flatten()
    .find(|t| !t.is_empty());
    Ok(Prompt {
        text: parts.join("\n\n"),
        title,
        images,
    })
}

pub(super) fn read_stdin() -> CliResult<String> {
    let mut bytes = Vec::new();
    std::io::stdin()
        .read_to_end(&mut bytes)
        .map_err(|e| CliError::from(e).context("reading the prompt from stdin"))?;
    let s = String::from_utf8(bytes).map_err(|e| {
        CliError::usage(format!(
            "the prompt on stdin is not UTF-8 text (byte {} is not)",
            e.utf8_error().valid_up_to()
        ))
        .with_hint("convert it first, e.g. `iconv -f latin1 -t utf-8 FILE | ag-prompt …`")
    })?;
    Ok(s)
}

/// `-a FILE`: an image (PNG, JPEG, GIF or WebP, told by its content), or the file's text
/// marked with its path.
fn attachment(path: &Path) -> CliResult<Attachment> {
    let what = || format!("-a {}", path.display());
    let too_big = |len: u64, max: u64, kind: &str| {
        CliError::usage(format!(
            "{}: {len} bytes is more than the {max} {kind} may have",
            what()
        ))
    };
    let meta = std::fs::metadata(path).map_err(|e| CliError::from(e).context(what()))?;
    let max_image = image::MAX_IMAGE_BYTES as u64;
    if meta.len() > max_image.max(MAX_ATTACHMENT) {
        return Err(too_big(
            meta.len(),
            max_image.max(MAX_ATTACHMENT),
            "an attachment",
        ));
    }
    let bytes = std::fs::read(path).map_err(|e| CliError::from(e).context(what()))?;
    let len = bytes.len() as u64;
    if let Some(ty) = ImageType::sniff(&bytes) {
        if len > max_image {
            return Err(too_big(len, max_image, "an image"));
        }
        return Ok(Attachment::Image(ChunkData::Image {
            media_type: ty.media_type().into(),
            data: image::encode(&bytes),
        }));
    }
    if ImageType::by_extension(path).is_some() {
        return Err(CliError::usage(format!(
            "{}: named like an image, but its content is not a PNG, JPEG, GIF or WebP image",
            what()
        )));
    }
    if len > MAX_ATTACHMENT {
        return Err(too_big(len, MAX_ATTACHMENT, "a text attachment"));
    }
    let text = String::from_utf8(bytes).map_err(|e| {
        CliError::usage(format!(
            "{}: not UTF-8 text (byte {}); only text files and PNG, JPEG, GIF or WebP images can be attached",
            what(),
            e.utf8_error().valid_up_to()
        ))
    })?;
    Ok(Attachment::Text(format!(
        "<file path=\"{}\">\n{}\n</file>",
        path.display(),
        text.trim_end_matches('\n')
    )))
}

/// The `result` object of a turn that ended (`turn_done` is its `turn-done` event), and the
/// answer's text: a validated `--schema` answer as compact JSON (also as `structured`), else
/// the text of the turn's last step.
///
/// Every result says whether it is a good answer: `is_error` and a `subtype`, as `claude -p`
/// reports them — `success` for a turn the model ended (and, with `--schema`, whose answer
/// satisfies it), else `error_` and why: `error_schema` (no answer satisfied `--schema`),
/// `error_max_steps`, `error_max_tokens`, `error_refusal`, `error_context_window`,
/// `error_interrupted`, `error_during_execution` (the provider failed), `error_incomplete`
/// (a turn the model did not end: paused, a tool call left, an unknown reason).
pub(super) fn result(
    store: &Store,
    session: &Session,
    turn_done: &TurnDone,
    schema: bool,
) -> CliResult<(Value, String)> {
    let (text, structured) = crate::agent::turn_answer(store, session, &turn_done.turn)?;
    // The result object is the turn-done event's fields, and what a script needs besides.
    let mut v = LiveEvent::TurnDone(turn_done.clone()).to_value();
    v["type"] = "result".into();
    v["handle"] = session.handle.clone().into();
    v["answer"] = text.clone().into();
    // A validated answer is the good answer, whatever the step's stop (Anthropic answers
    // through a forced tool call, so its turn stops on `tool_use`).
    let subtype = if schema && structured.is_some() {
        "success"
    } else {
        subtype(turn_done.stop_reason.as_str(), schema)
    };
    v["is_error"] = (subtype != "success").into();
    v["subtype"] = subtype.into();
    if let Some(s) = structured {
        v["structured"] = s;
    }
    // Which tools the session has, when they are not the defaults (`--tools +edit`, an agent).
    if let Some(tools) = non_default_tools(store, session) {
        v["tools"] = tools.into();
    }
    Ok((v, text))
}

/// The session's tools by name (as stored now: this turn may have narrowed them), when they
/// differ from a new session's defaults.
pub(super) fn non_default_tools(store: &Store, session: &Session) -> Option<Vec<String>> {
    let tools = store.session(&session.id).ok()?.settings().ok()?.tools();
    (tools != crate::policy::Policy::read_only()).then(|| tools.names())
}

/// See [`result`].
fn subtype(stop_reason: &str, schema_unmet: bool) -> &'static str {
    use crate::log::StopReason as R;
    match R::parse(stop_reason) {
        Some(R::MaxSteps) => "error_max_steps",
        Some(R::MaxCost) => "error_max_cost",
        Some(R::MaxTokens) => "error_max_tokens",
        Some(R::Refusal) => "error_refusal",
        Some(R::ContextWindowExceeded) => "error_context_window",
        Some(R::Interrupted) => "error_interrupted",
        Some(R::Error) => "error_during_execution",
        Some(R::EndTurn | R::StopSequence) if schema_unmet => "error_schema",
        Some(R::EndTurn | R::StopSequence) => "success",
        Some(R::ToolUse | R::PauseTurn | R::Unknown) | None => "error_incomplete",
    }
}

/// With `--schema`, a result that is not a good answer fails the command: a script that
/// asked for a verdict must not take silence for one.
pub(super) fn schema_failure(result: &Value, session: &Session) -> Option<CliError> {
    (result["is_error"] == true).then(|| {
        CliError::msg(format!(
            "no answer satisfying --schema: the turn ended with {} ({})",
            result["stop_reason"].as_str().unwrap_or("no stop reason"),
            result["subtype"].as_str().unwrap_or_default()
        ))
        .with_hint(format!(
            "session {} keeps the turn; continue it with ag-prompt -s {} --schema …",
            session.handle, session.handle
        ))
    })
}

/// `--wait`: the queued prompt's turn ended (or could not): print its answer as the flags ask.
pub(super) fn waited(
    ctx: &mut crate::cli::Ctx,
    store: &Store,
    session: &Session,
    item: i64,
    text: &str,
    want: &Want,
) -> CliResult<()> {
    let (turn, end) = match crate::agent::wait_for_queued(store, session, item, text)? {
        crate::agent::Waited::Ended { turn, end } => (turn, end),
        crate::agent::Waited::OwnerGone => {
            return Err(CliError::new(
                crate::cli::Exit::TempFail,
                format!(
                    "the process running session {} ended before its turn took your prompt",
                    session.handle
                ),
            )
            .with_hint("the prompt stays queued: the session's next run takes it first"))
        }
    };
    let done = TurnDone::from_record(&session.id, &turn, &end);
    let (result, answer) = result(store, session, &done, want.structured)?;
    if want.result_only || want.result_event {
        ctx.out.line(&result.to_string())?;
    } else {
        ctx.out.line(&answer)?;
    }
    if let Some(path) = &want.file {
        std::fs::write(path, format!("{answer}\n")).map_err(|e| {
            CliError::from(e).context(format!("-o {}: writing the answer", path.display()))
        })?;
    }
    if end["stop_reason"] == "error" {
        return Err(CliError::msg(format!(
            "the turn that took your prompt in session {} ended with an error",
            session.handle
        )));
    }
    if want.structured {
        if let Some(e) = schema_failure(&result, session) {
            return Err(e);
        }
    }
    Ok(())
}
