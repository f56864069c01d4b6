//! Model providers: one streamed attempt at a step, for each wire protocol (Anthropic
//! Messages, OpenAI Chat Completions) and for the offline `echo` and `script:FILE` models.
//!
//! A provider makes exactly one attempt per call. Retrying, backoff and the bookkeeping of
//! abandoned attempts belong to the agent loop, which owns the log.

mod choose;
mod http;
mod offline;

use std::time::Duration;

use serde_json::Value;

use crate::config::Config;
use crate::fold::Dialect;
use crate::reduce::{ChunkOp, StepEnd};

pub(crate) use choose::{choose, ChooseError, Chosen, ModelSources, Origin};
pub(crate) use http::HttpProvider;
pub(crate) use offline::{EchoProvider, ScriptProvider};

/// One failed attempt.
#[derive(Debug, Clone, PartialEq)]
pub struct AttemptError {
    pub message: String,
    /// The HTTP status, when the server answered with one.
    pub status: Option<u16>,
    pub retryable: bool,
    /// The server's `Retry-After`, when it sent one.
    pub retry_after: Option<Duration>,
}

impl std::fmt::Display for AttemptError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.status {
            Some(s) => write!(f, "HTTP {s}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

pub trait Provider: Send + Sync {
    /// The model reference as the user wrote it (`anthropic/claude-…`, `echo`).
    fn name(&self) -> &str;
    /// Which request shape this provider takes.
    fn dialect(&self) -> Dialect;
    /// The model name sent in the request body.
    fn api_model(&self) -> &str;
    /// The window the model itself declares (a script's `context_window`); none for most.
    fn context_window(&self) -> Option<u64> {
        None
    }
    /// The host this provider sends conversations to; `None` for offline models.
    fn host(&self) -> Option<&str> {
        None
    }
    /// Whether the model can be sent images: the providers on the network take them (a
    /// model that cannot see says so in its error); the offline models only read text.
    fn takes_images(&self) -> bool {
        self.host().is_some()
    }
    /// Send `body` (a folded request with `"stream": true`) and feed each chunk op to `sink`
    /// as it arrives. Returns how the step ended, or why the attempt failed; a stream that
    /// breaks before its stop event is a failed attempt, never a finished step.
    fn attempt(&self, body: &Value, sink: &mut dyn FnMut(ChunkOp))
        -> Result<StepEnd, AttemptError>;
    /// [`Provider::attempt`] for a body whose messages the loop has measured already: a model
    /// that reads their sizes (the offline ones) takes them rather than walking the body, so a
    /// step costs the same on a long session as on a short one.
    fn attempt_sized(
        &self,
        body: &Value,
        sizes: &Sizes,
        sink: &mut dyn FnMut(ChunkOp),
    ) -> Result<StepEnd, AttemptError> {
        let _ = sizes;
        self.attempt(body, sink)
    }
}

/// What a request's `messages` array holds, known without walking it: the characters of its
/// compact JSON text and how many assistant messages it has.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct Sizes {
    pub(crate) message_chars: usize,
    pub(crate) assistant_messages: usize,
}

impl Sizes {
    /// The sizes of `body`'s messages, by walking them.
    pub(crate) fn of(body: &Value) -> Sizes {
        let messages = &body["messages"];
        Sizes {
            message_chars: messages.to_string().chars().count(),
            assistant_messages: messages.as_array().map_or(0, |ms| {
                ms.iter().filter(|m| m["role"] == "assistant").count()
            }),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("no model given")]
    NoModel,
    #[error("unknown provider {provider:?} in model {model:?}")]
    UnknownProvider { model: String, provider: String },
    #[error("model {0:?} needs a name after the provider, like anthropic/claude-sonnet-4-5")]
    MissingName(String),
    #[error("{var} is not set (the key for {model})")]
    MissingKey { model: String, var: String },
    #[error("cannot read the script {path}")]
    Script {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("the script {path} is malformed: {message}")]
    BadScript { path: String, message: String },
    #[error("cannot set up the network for {model}: {message}")]
    Network { model: String, message: String },
    #[error(
        "{var} is {url:?}, which is not a URL ({why}); write it like \"http://127.0.0.1:8080\""
    )]
    BadBaseUrl {
        var: String,
        url: String,
        why: String,
    },
}

/// How a provider looks up the variables it reads (keys, base URLs): the process environment
/// for the commands ([`process_vars`]), a closure for tests and embedders, so nothing has to
/// change the process environment to choose a key.
pub(crate) type Vars<'a> = dyn Fn(&str) -> Option<String> + 'a;

/// The process environment, as [`Vars`], with the keys [`crate::secrets::withdraw`] took out
/// of it.
pub(crate) fn process_vars(var: &str) -> Option<String> {
    crate::secrets::var(var)
}

/// What a model reference that names no provider probably meant: `gpt-4o` is
/// `openai/gpt-4o`, `claude-…` is `anthropic/claude-…`, `sonet` the alias `sonnet`,
/// `antropic/NAME` is `anthropic/NAME`.
pub(crate) fn suggest(model: &str, config: &Config) -> Option<String> {
    let model = model.trim();
    let aliases = crate::config::aliases::all(&config.aliases);
    let providers: Vec<&str> = ["anthropic", "openai"]
        .into_iter()
        .chain(config.providers.keys().map(String::as_str))
        .collect();
    match model.split_once('/') {
        None => {
            let lower = model.to_lowercase();
            if lower.starts_with("claude") {
                return Some(format!("anthropic/{model}"));
            }
            if ["gpt", "o1", "o3", "o4", "chatgpt", "codex"]
                .iter()
                .any(|p| lower.starts_with(p))
            {
                return Some(format!("openai/{model}"));
            }
            crate::text::closest(model, aliases.keys().map(String::as_str))
                .or_else(|| crate::text::closest(model, ["echo"]))
                .map(str::to_string)
        }
        Some((provider, name)) => crate::text::closest(provider, providers.iter().copied())
            .filter(|p| *p != provider)
            .map(|p| format!("{p}/{name}")),
    }
}

/// Resolve a model reference to a provider: `echo`, `script:FILE`, `anthropic/NAME`,
/// `openai/NAME`, or `NAMED/NAME` for a `[providers.NAMED]` entry in the config. Keys and
/// base URLs come from the process environment.
pub fn resolve(model: &str, config: &Config) -> Result<Box<dyn Provider>, ModelError> {
    resolve_with(model, config, &process_vars)
}

/// [`resolve`] with the variables looked up in `vars`.
pub fn resolve_with(
    model: &str,
    config: &Config,
    vars: &Vars<'_>,
) -> Result<Box<dyn Provider>, ModelError> {
    let model = model.trim();
    if model.is_empty() {
        return Err(ModelError::NoModel);
    }
    if model == "echo" {
        return Ok(Box::new(EchoProvider::new()));
    }
    if let Some(path) = model.strip_prefix("script:") {
        return Ok(Box::new(ScriptProvider::load(path)?));
    }
    let Some((provider, name)) = model.split_once('/') else {
        return Err(ModelError::UnknownProvider {
            model: model.into(),
            provider: model.into(),
        });
    };
    if name.is_empty() {
        return Err(ModelError::MissingName(model.into()));
    }
    HttpProvider::from_config(model, provider, name, config, vars)
        .map(|p| Box::new(p) as Box<dyn Provider>)
}

/// Exponential backoff with jitter for attempt `n` (1-based count of failures so far),
/// never shorter than the server's `Retry-After`.
pub(crate) fn backoff(
    n: u32,
    retry_after: Option<Duration>,
    base: Duration,
    max: Duration,
    seed: u64,
) -> Duration {
    let exp = base.saturating_mul(1u32 << n.saturating_sub(1).min(16));
    let capped = exp.min(max);
    // Full jitter in [capped/2, capped]: spreads retries from several clients apart.
    let half = capped / 2;
    let jitter_ns = if half.is_zero() {
        0
    } else {
        splitmix(seed ^ n as u64) % (half.as_nanos() as u64 + 1)
    };
    let d = half + Duration::from_nanos(jitter_ns);
    match retry_after {
        Some(ra) => d.max(ra.min(max.max(ra))),
        None => d,
    }
}

fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Whether an HTTP status is worth another attempt (DESIGN §4).
pub(crate) fn retryable_status(status: u16) -> bool {
    matches!(status, 408 | 409 | 429 | 529) || (500..600).contains(&status)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_and_honours_retry_after() {
        let base = Duration::from_millis(100);
        let max = Duration::from_secs(10);
        let d1 = backoff(1, None, base, max, 7);
        let d4 = backoff(4, None, base, max, 7);
        assert!(
            d1 >= Duration::from_millis(50) && d1 <= Duration::from_millis(100),
            "{d1:?}"
        );
        assert!(
            d4 >= Duration::from_millis(400) && d4 <= Duration::from_millis(800),
            "{d4:?}"
        );
        let d = backoff(1, Some(Duration::from_secs(3)), base, max, 7);
        assert!(d >= Duration::from_secs(3), "{d:?}");
        assert!(backoff(30, None, base, max, 1) <= max);
    }

    #[test]
    fn which_statuses_retry() {
        for s in [408, 409, 429, 500, 502, 503, 529] {
            assert!(retryable_status(s), "{s}");
        }
        for s in [400, 401, 403, 404, 422] {
            assert!(!retryable_status(s), "{s}");
        }
    }
}
