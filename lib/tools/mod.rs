//! The built-in tools a model can call: `read`, `glob`, `grep`, `write`, `edit`, `bash`, and
//! [`recall`] (which reads the session's own log, so the agent loop runs it with the store).
//!
//! [`run`] only implements them. Whether a call may run at all is decided before it, by
//! `policy::guard`; keeping the two apart means the guard stays small enough to audit.
//!
//! File tools resolve every model-supplied path through [`confine`], so they stay inside the
//! session's cwd after `..` and symlinks are resolved. `bash` cannot be confined that way: it
//! runs in the session's sandbox ([`crate::sandbox`]), with a timeout, an output cap and an
//! environment without provider keys ([`scrubbed_env`]).
//!
//! Every failure — bad arguments, a missing file, a path outside the cwd, an invalid regex —
//! comes back as an `is_error` [`ToolOutput`] whose text the model can act on. `run` never
//! returns a Rust error and never panics: a tool result is part of the conversation, and a
//! crash would lose the turn.

mod bash;
mod beneath;
mod confine;
mod edit;
mod glob;
mod grep;
mod read;
pub mod recall;
mod specs;
mod walk;
mod write;

pub(crate) use bash::scrubbed_env;
pub(crate) use confine::confine;

use std::borrow::Cow;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value};

use crate::fold::ToolSpec;
use crate::policy::Tool;

/// How long `bash` may run when the call does not say.
pub(crate) const DEFAULT_BASH_TIMEOUT: Duration = Duration::from_secs(120);

/// Bytes of tool output kept by default.
pub(crate) const DEFAULT_OUTPUT_CAP: usize = 30_000;

/// Lines longer than this many characters are clipped by `read` and `grep`: a minified file
/// would otherwise spend the whole output cap on one line.
pub(crate) const MAX_LINE_CHARS: usize = 2000;

/// Lines `read` shows when the call gives no `limit`.
pub(crate) const DEFAULT_READ_LIMIT: u64 = 2000;

/// Files `glob` lists at most.
pub(crate) const GLOB_CAP: usize = 1000;

/// Matching lines `grep` shows at most.
pub(crate) const GREP_CAP: usize = 500;

/// Everything a tool call needs besides its arguments.
#[derive(Debug, Clone)]
pub(crate) struct ToolCtx {
    /// The session's cwd (canonical); file tools are confined to it.
    pub(crate) cwd: PathBuf,
    /// Extra environment for bash (the caller puts `AG_SESSION`, `AG_HOME` here). Added after
    /// the scrub, so whatever the caller puts here reaches the command.
    pub(crate) env: Vec<(String, String)>,
    /// How long bash may run unless the call asks for another limit.
    pub(crate) bash_timeout: Duration,
    /// Bytes of tool output kept; the rest is cut with a note saying how much was cut.
    pub(crate) output_cap: usize,
    /// Set when the turn is interrupted: a running command is killed with its process group.
    pub(crate) cancel: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// The sandbox `bash` runs in.
    pub(crate) sandbox: crate::sandbox::Settings,
    /// The key variables bash never sees, beyond the secret-looking names it never sees.
    pub(crate) secrets: std::sync::Arc<crate::secrets::Secrets>,
    /// Whether `write` and `edit` may change `.git/`, `.ag/` and `.claude/`.
    pub(crate) allow_protected: bool,
    /// The process group of the running `bash` command and its leader's start time, while
    /// one runs: the caller records it, so a later run can kill what a killed one left.
    pub(crate) running_group: std::sync::Arc<std::sync::Mutex<Option<(i64, i64)>>>,
    /// Existing paths other sessions claim: `bash` sees them read-only in its sandbox.
    pub(crate) claimed_by_others: Vec<PathBuf>,
    /// An editor holding the files (ACP's `fs/*`): `read`, `write` and `edit` go through it,
    /// after the same confinement, so they see and change its unsaved buffers.
    pub(crate) editor: Option<std::sync::Arc<dyn EditorFiles>>,
}

/// Files as an editor holds them: reads give its buffer's text, saved or not, and writes go
/// to its buffer. Each method is given a path already confined to the session's directory.
pub(crate) trait EditorFiles: Send + Sync + std::fmt::Debug {
    fn read(&self, path: &Path) -> Result<String, String>;
    fn write(&self, path: &Path, content: &str) -> Result<(), String>;
}

impl ToolCtx {
    pub(crate) fn new(cwd: PathBuf) -> ToolCtx {
        ToolCtx {
            cwd,
            env: Vec::new(),
            bash_timeout: DEFAULT_BASH_TIMEOUT,
            output_cap: DEFAULT_OUTPUT_CAP,
            cancel: Default::default(),
            sandbox: crate::sandbox::Settings::default(),
            secrets: Default::default(),
            allow_protected: false,
            running_group: Default::default(),
            claimed_by_others: Vec::new(),
            editor: None,
        }
    }

    /// The editor's text of `path`, when an editor holds the files and reads them.
    fn editor_read(&self, path: &Path) -> Option<Result<String, String>> {
        self.editor.as_ref().map(|e| e.read(path))
    }

    /// Write `path` through the editor, when an editor holds the files and writes them.
    fn editor_write(&self, path: &Path, content: &str) -> Option<Result<(), String>> {
        self.editor.as_ref().map(|e| e.write(path, content))
    }

    fn set_running_group(&self, group: Option<(i64, i64)>) {
        *self.running_group.lock().unwrap_or_else(|e| e.into_inner()) = group;
    }
}

/// What a tool call returns to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    pub text: String,
    pub is_error: bool,
}

impl ToolOutput {
    pub(crate) fn ok(text: impl Into<String>) -> ToolOutput {
        ToolOutput {
            text: text.into(),
            is_error: false,
        }
    }

    pub(crate) fn error(text: impl Into<String>) -> ToolOutput {
        ToolOutput {
            text: text.into(),
            is_error: true,
        }
    }
}

/// The spec offered to the model for one of the file tools or `bash`; `None` for the tools
/// the agent loop implements (`agent::registry` knows which is which).
pub(crate) fn spec(tool: Tool) -> Option<ToolSpec> {
    let (description, schema) = match tool {
        Tool::Read => specs::read(),
        Tool::Glob => specs::glob(),
        Tool::Grep => specs::grep(),
        Tool::Write => specs::write(),
        Tool::Edit => specs::edit(),
        Tool::Bash => specs::bash(),
        Tool::Recall => return Some(recall::spec()),
        Tool::Summon
        | Tool::Retrieve
        | Tool::PeerMessage
        | Tool::PeerInbox
        | Tool::PeerWho
        | Tool::PeerPeek
        | Tool::PeerClaim
        | Tool::PeerRelease => return None,
    };
    Some(ToolSpec {
        name: tool.name().to_string(),
        description: description.to_string(),
        input_schema: schema,
    })
}

/// The spec offered for `name` in a session: `bash`'s also says what its sandbox allows, so
/// the model does not retry what cannot work.
pub(crate) fn spec_in(tool: Tool, ctx: &ToolCtx) -> Option<ToolSpec> {
    let mut s = spec(tool)?;
    if tool == Tool::Bash {
        s.description.push(' ');
        s.description.push_str(&ctx.sandbox.describe_for_model());
    }
    Some(s)
}

/// Run one tool call. Never panics; every failure is an `is_error` output saying what went
/// wrong and where. Does not consult the policy: the caller runs `policy::guard` first.
pub(crate) fn run(name: &str, args: &Value, ctx: &ToolCtx) -> ToolOutput {
    // The tools are written not to panic; this is the backstop, because a panic here would
    // take the agent loop and the turn with it.
    match std::panic::catch_unwind(AssertUnwindSafe(|| dispatch(name, args, ctx))) {
        Ok(out) => out,
        Err(payload) => {
            let why = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_string());
            ToolOutput::error(format!("{name}: internal error: {why}"))
        }
    }
}

fn dispatch(name: &str, args: &Value, ctx: &ToolCtx) -> ToolOutput {
    let Some(map) = args.as_object() else {
        let shown = clip_chars(&args.to_string(), 200).into_owned();
        return ToolOutput::error(format!(
            "{name}: arguments must be a JSON object, got {shown}"
        ));
    };
    let args = Args(map);
    let result = match Tool::parse(name) {
        Some(Tool::Read) => read::run(&args, ctx),
        Some(Tool::Glob) => glob::run(&args, ctx),
        Some(Tool::Grep) => grep::run(&args, ctx),
        Some(Tool::Write) => write::run(&args, ctx),
        Some(Tool::Edit) => edit::run(&args, ctx),
        Some(Tool::Bash) => bash::run(&args, ctx),
        Some(
            Tool::Summon
            | Tool::Retrieve
            | Tool::PeerMessage
            | Tool::PeerInbox
            | Tool::PeerWho
            | Tool::PeerPeek
            | Tool::PeerClaim
            | Tool::PeerRelease
            | Tool::Recall,
        ) => Err(format!("{name} runs in the agent loop: nothing was run")),
        None => Err(format!("unknown tool {name:?}: nothing was run")),
    };
    result.unwrap_or_else(ToolOutput::error)
}

/// Typed access to a call's arguments. Lenient where models are sloppy in harmless ways (a
/// number sent as a string, `null` for an omitted option), strict where a guess could do the
/// wrong thing (a missing path).
pub(crate) struct Args<'a>(&'a Map<String, Value>);

impl Args<'_> {
    fn get(&self, key: &str) -> Option<&Value> {
        self.0.get(key).filter(|v| !v.is_null())
    }

    pub(crate) fn req_str(&self, key: &str) -> Result<&str, String> {
        match self.get(key) {
            Some(Value::String(s)) => Ok(s),
            Some(other) => Err(format!(
                "argument `{key}` must be a string, got {}",
                crate::log::json_kind(other)
            )),
            None => Err(format!("missing required argument `{key}`")),
        }
    }

    pub(crate) fn opt_str(&self, key: &str) -> Result<Option<&str>, String> {
        match self.get(key) {
            None => Ok(None),
            Some(_) => self.req_str(key).map(Some),
        }
    }

    pub(crate) fn opt_bool(&self, key: &str) -> Result<Option<bool>, String> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(Value::String(s)) if s == "true" => Ok(Some(true)),
            Some(Value::String(s)) if s == "false" => Ok(Some(false)),
            Some(other) => Err(format!(
                "argument `{key}` must be true or false, got {}",
                clip_chars(&other.to_string(), 100)
            )),
        }
    }

    pub(crate) fn opt_f64(&self, key: &str) -> Result<Option<f64>, String> {
        let bad = |v: &Value| {
            format!(
                "argument `{key}` must be a number, got {}",
                clip_chars(&v.to_string(), 100)
            )
        };
        match self.get(key) {
            None => Ok(None),
            Some(v @ Value::Number(n)) => n.as_f64().map(Some).ok_or_else(|| bad(v)),
            Some(v @ Value::String(s)) => s.trim().parse::<f64>().map(Some).map_err(|_| bad(v)),
            Some(v) => Err(bad(v)),
        }
    }

    /// A non-negative whole number.
    pub(crate) fn opt_u64(&self, key: &str) -> Result<Option<u64>, String> {
        let Some(x) = self.opt_f64(key)? else {
            return Ok(None);
        };
        if x.is_finite() && x >= 0.0 && x.fract() == 0.0 && x <= u64::MAX as f64 {
            Ok(Some(x as u64))
        } else {
            Err(format!(
                "argument `{key}` must be a whole number of at least 0, got {x}"
            ))
        }
    }
}

/// `text` cut to at most `cap` bytes (on a character boundary), with a note saying how much
/// was cut.
pub(crate) fn cap_text(mut text: String, cap: usize) -> String {
    if text.len() <= cap {
        return text;
    }
    let mut end = cap;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let cut = text.len() - end;
    text.truncate(end);
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&format!("[output cut: {cut} more bytes not shown]"));
    text
}

/// `s` limited to `max` characters, with a note when clipped.
pub(crate) fn clip_chars(s: &str, max: usize) -> Cow<'_, str> {
    match s.char_indices().nth(max) {
        None => Cow::Borrowed(s),
        Some((end, _)) => {
            let rest = s[end..].chars().count();
            Cow::Owned(format!("{}… [line clipped: {rest} more chars]", &s[..end]))
        }
    }
}

/// How a path is shown to the model: relative to the session's directory, so it can be passed
/// straight back to another tool.
pub(crate) fn shown(root: &Path, p: &Path) -> String {
    match p.strip_prefix(root) {
        Ok(rel) if rel.as_os_str().is_empty() => ".".to_string(),
        Ok(rel) => rel.display().to_string(),
        Err(_) => p.display().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_file_tool_has_a_spec_and_the_loops_tools_have_none_here() {
        use crate::policy::Effect;
        for tool in Tool::all() {
            // summon, retrieve and the peer_* tools get their schema from the agent (it knows
            // the session), not from here.
            let Some(s) = spec(tool) else {
                assert!(
                    matches!(tool.effect(), Effect::Spawn | Effect::Talk),
                    "{tool}"
                );
                continue;
            };
            assert_eq!(s.name, tool.name());
            assert_eq!(s.input_schema["type"], "object");
            assert!(s.input_schema["required"].is_array());
            assert!(!s.description.is_empty());
        }
    }

    #[test]
    fn bash_tells_the_model_what_its_sandbox_allows() {
        let dir = tempfile::tempdir().unwrap();
        let mut ctx = ToolCtx::new(dir.path().to_path_buf());
        let d = spec_in(Tool::Bash, &ctx).unwrap().description;
        assert!(
            d.contains("sandbox (workspace-write)") && d.contains("no network"),
            "{d}"
        );
        ctx.sandbox.mode = crate::sandbox::Mode::ReadOnly;
        ctx.sandbox.network = true;
        let d = spec_in(Tool::Bash, &ctx).unwrap().description;
        assert!(
            d.contains("write only in $TMPDIR") && d.contains("Network access is allowed"),
            "{d}"
        );
        assert_eq!(spec_in(Tool::Read, &ctx), spec(Tool::Read));
    }

    #[test]
    fn bad_arguments_are_errors_not_panics() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolCtx::new(dir.path().canonicalize().unwrap());
        let out = run("read", &json!("x"), &ctx);
        assert!(out.is_error);
        assert!(out.text.contains("JSON object"), "{}", out.text);
        let out = run("read", &json!({}), &ctx);
        assert!(out.is_error);
        assert!(out.text.contains("`path`"), "{}", out.text);
        let out = run("read", &json!({"path": 3}), &ctx);
        assert!(
            out.is_error && out.text.contains("must be a string"),
            "{}",
            out.text
        );
        let out = run("launch", &json!({}), &ctx);
        assert!(out.is_error && out.text.contains("unknown tool"));
    }

    #[test]
    fn cap_text_says_how_much_was_cut() {
        assert_eq!(cap_text("abc".into(), 10), "abc");
        let t = cap_text("é".repeat(10), 5); // 20 bytes; 5 falls inside a char
        assert!(t.starts_with("éé\n"), "{t}");
        assert!(t.contains("16 more bytes"), "{t}");
    }

    #[test]
    fn clip_chars_clips_long_lines() {
        assert_eq!(clip_chars("abc", 3), "abc");
        assert_eq!(clip_chars("abcdef", 3), "abc… [line clipped: 3 more chars]");
    }
}
