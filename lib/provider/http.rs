//! The HTTP providers: Anthropic Messages and OpenAI Chat Completions (and the servers that
//! speak them) over one streamed POST per attempt, read as SSE into the dialect's reducer.
//!
//! Keys come from the environment and live only in the request header; every message this
//! module produces is scrubbed of the key anyway, because a proxy may echo headers back.

use std::io::Read;
use std::time::Duration;

use serde_json::Value;

use super::{retryable_status, AttemptError, ModelError, Provider};
use crate::config::Config;
use crate::fold::Dialect;
use crate::reduce::{self, ChunkOp, StepEnd, StreamError};

const ANTHROPIC_DEFAULT_URL: &str = "https://api.anthropic.com";
const OPENAI_DEFAULT_URL: &str = "https://api.openai.com/v1";
const ANTHROPIC_VERSION: &str = "2023-06-01";
/// How much of an error body is read: enough for any JSON error, bounded against a proxy
/// that answers with a page of HTML.
const ERROR_BODY_CAP: u64 = 64 * 1024;
const MESSAGE_CAP: usize = 300;
const READ_PIECE: usize = 8 * 1024;

/// A provider reached over HTTP.
pub struct HttpProvider {
    model: String,
    api_model: String,
    dialect: Dialect,
    /// The endpoint the attempt posts to.
    url: String,
    /// `host:port`, for messages (never the whole URL, which could carry credentials).
    host: String,
    /// The key, sent as `x-api-key` (Anthropic) or `Authorization: Bearer` (OpenAI).
    key: Option<String>,
    idle: Duration,
    agent: ureq::Agent,
}

impl std::fmt::Debug for HttpProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpProvider")
            .field("model", &self.model)
            .field("dialect", &self.dialect)
            .field("url", &self.url)
            .field("key", &self.key.as_ref().map(|_| "[set]"))
            .finish()
    }
}

impl HttpProvider {
    /// `anthropic/NAME`, `openai/NAME`, or `NAMED/NAME` for a `[providers.NAMED]` entry.
    pub fn from_config(
        model: &str,
        provider: &str,
        name: &str,
        config: &Config,
    ) -> Result<HttpProvider, ModelError> {
        let missing = |var: &str| ModelError::MissingKey {
            model: model.into(),
            var: var.into(),
        };
        let (dialect, base, key) = match provider {
            "anthropic" => {
                let base =
                    env("ANTHROPIC_BASE_URL").unwrap_or_else(|| ANTHROPIC_DEFAULT_URL.into());
                let key = env("ANTHROPIC_API_KEY").ok_or_else(|| missing("ANTHROPIC_API_KEY"))?;
                (Dialect::Anthropic, base, Some(key))
            }
            "openai" => {
                let base = env("OPENAI_BASE_URL").unwrap_or_else(|| OPENAI_DEFAULT_URL.into());
                let key = env("OPENAI_API_KEY").ok_or_else(|| missing("OPENAI_API_KEY"))?;
                (Dialect::OpenAi, base, Some(key))
            }
            named => {
                let Some(pc) = config.providers.get(named) else {
                    return Err(ModelError::UnknownProvider {
                        model: model.into(),
                        provider: named.into(),
                    });
                };
                let dialect = match pc.kind.as_str() {
                    "anthropic" => Dialect::Anthropic,
                    "openai" => Dialect::OpenAi,
                    other => {
                        return Err(ModelError::BadKind {
                            provider: named.into(),
                            kind: other.into(),
                        })
                    }
                };
                // No variable named means a local server that wants no key.
                let key = match &pc.api_key_env {
                    Some(var) => Some(env(var).ok_or_else(|| missing(var))?),
                    None => None,
                };
                (dialect, pc.base_url.clone(), key)
            }
        };
        let base = base.trim().trim_end_matches('/');
        let url = match dialect {
            Dialect::Anthropic => format!("{base}/v1/messages"),
            Dialect::OpenAi => format!("{base}/chat/completions"),
        };
        let idle = config.network.idle_timeout();
        let agent = ureq::AgentBuilder::new()
            .timeout_connect(config.network.connect_timeout())
            .timeout_read(idle)
            .timeout_write(idle)
            // A redirect would resend the key to wherever it points.
            .redirects(0)
            // A fresh connection per attempt: ureq never retries a POST on a pooled
            // connection the server has quietly closed, which would fail steps for nothing.
            .max_idle_connections(0)
            .user_agent(concat!("agkit/", env!("CARGO_PKG_VERSION")))
            .build();
        Ok(HttpProvider {
            model: model.into(),
            api_model: name.into(),
            dialect,
            host: host_of(&url),
            url,
            key,
            idle,
            agent,
        })
    }

    /// The endpoint this provider posts to.
    pub fn url(&self) -> &str {
        &self.url
    }

    fn fail(&self, message: String, status: Option<u16>, retryable: bool) -> AttemptError {
        AttemptError {
            message: clip(&self.scrub(message)),
            status,
            retryable,
            retry_after: None,
        }
    }

    /// Removes the key from text that may have echoed it.
    fn scrub(&self, text: String) -> String {
        match &self.key {
            Some(k) if !k.is_empty() && text.contains(k.as_str()) => {
                text.replace(k.as_str(), "[key]")
            }
            _ => text,
        }
    }

    fn http_error(&self, code: u16, resp: ureq::Response) -> AttemptError {
        let retry_after = retry_after(&resp);
        let status_text = resp.status_text().to_owned();
        let mut raw = Vec::new();
        // An unreadable error body still leaves the status to report.
        let _ = resp
            .into_reader()
            .take(ERROR_BODY_CAP)
            .read_to_end(&mut raw);
        let message = error_message(&String::from_utf8_lossy(&raw)).unwrap_or_else(|| {
            if status_text.is_empty() {
                "no message".into()
            } else {
                status_text
            }
        });
        AttemptError {
            message: clip(&self.scrub(message)),
            status: Some(code),
            retryable: retryable_status(code),
            retry_after,
        }
    }

    fn transport_error(&self, t: &ureq::Transport) -> AttemptError {
        use ureq::ErrorKind as K;
        let host = &self.host;
        let io = std::error::Error::source(t).and_then(|s| s.downcast_ref::<std::io::Error>());
        let timed_out = io.is_some_and(is_timeout);
        let detail = match (t.message(), io) {
            (Some(m), Some(e)) => format!("{m}: {e}"),
            (Some(m), None) => m.to_owned(),
            (None, Some(e)) => e.to_string(),
            (None, None) => t.kind().to_string(),
        };
        let (message, retryable) = match t.kind() {
            K::ConnectionFailed if timed_out => {
                (format!("cannot connect to {host}: timed out"), true)
            }
            K::ConnectionFailed => (format!("cannot connect to {host}: {detail}"), true),
            K::Dns => (format!("cannot resolve {host}: {detail}"), true),
            K::Io if timed_out => (
                format!("no answer from {host} for {} s", secs(self.idle)),
                true,
            ),
            K::Io => (format!("the connection to {host} broke: {detail}"), true),
            K::BadStatus | K::BadHeader => {
                (format!("{host} sent a malformed response: {detail}"), true)
            }
            K::InvalidUrl | K::UnknownScheme => (
                format!("the provider URL {:?} is not usable: {detail}", self.url),
                false,
            ),
            kind => (
                format!("the request to {host} failed: {kind}: {detail}"),
                true,
            ),
        };
        self.fail(message, None, retryable)
    }

    fn stream(
        &self,
        resp: ureq::Response,
        sink: &mut dyn FnMut(ChunkOp),
    ) -> Result<StepEnd, AttemptError> {
        let status = resp.status();
        if !(200..300).contains(&status) {
            let to = resp
                .header("location")
                .map(|l| format!(" to {l}"))
                .unwrap_or_default();
            let msg = format!(
                "unexpected answer from {}{to}; check the provider's base URL",
                self.host
            );
            return Err(self.fail(msg, Some(status), false));
        }
        let content_type = resp.content_type().to_ascii_lowercase();
        if content_type.contains("json") {
            // The server ignored `"stream": true` or put an error in a 200: retrying the same
            // request would get the same answer.
            let mut raw = Vec::new();
            let _ = resp
                .into_reader()
                .take(ERROR_BODY_CAP)
                .read_to_end(&mut raw);
            let said = error_message(&String::from_utf8_lossy(&raw))
                .map(|m| format!(": {m}"))
                .unwrap_or_default();
            let msg = format!(
                "{} answered with JSON, not an event stream{said}",
                self.host
            );
            return Err(self.fail(msg, Some(status), false));
        }
        let stream_err = |e: StreamError| self.fail(e.to_string(), None, e.retryable());
        let mut reader = resp.into_reader();
        let mut parser = reduce::SseParser::new();
        let mut reducer = reduce::reducer(self.dialect);
        let mut buf = vec![0u8; READ_PIECE];
        loop {
            let n = match reader.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) if is_timeout(&e) => {
                    let msg = format!(
                        "the stream broke: no data for {} s from {}",
                        secs(self.idle),
                        self.host
                    );
                    return Err(self.fail(msg, None, true));
                }
                Err(e) => return Err(self.fail(format!("the stream broke: {e}"), None, true)),
            };
            for ev in parser.push(&buf[..n]) {
                for op in reducer.event(&ev).map_err(stream_err)? {
                    sink(op);
                }
                // The stop event ends the step; a server that keeps the connection open
                // afterwards must not hold it up.
                if reducer.is_done() {
                    return reducer.finish().map_err(stream_err);
                }
            }
        }
        if let Some(ev) = parser.flush() {
            for op in reducer.event(&ev).map_err(stream_err)? {
                sink(op);
            }
        }
        reducer.finish().map_err(stream_err)
    }
}

impl Provider for HttpProvider {
    fn name(&self) -> &str {
        &self.model
    }

    fn dialect(&self) -> Dialect {
        self.dialect
    }

    fn api_model(&self) -> &str {
        &self.api_model
    }

    fn host(&self) -> Option<&str> {
        Some(&self.host)
    }

    fn attempt(
        &self,
        body: &Value,
        sink: &mut dyn FnMut(ChunkOp),
    ) -> Result<StepEnd, AttemptError> {
        let bytes = serde_json::to_vec(body)
            .map_err(|e| self.fail(format!("cannot encode the request: {e}"), None, false))?;
        let mut req = self
            .agent
            .post(&self.url)
            .set("content-type", "application/json")
            .set("accept", "text/event-stream");
        match self.dialect {
            Dialect::Anthropic => {
                req = req.set("anthropic-version", ANTHROPIC_VERSION);
                if let Some(k) = &self.key {
                    req = req.set("x-api-key", k);
                }
            }
            Dialect::OpenAi => {
                if let Some(k) = &self.key {
                    req = req.set("authorization", &format!("Bearer {k}"));
                }
            }
        }
        match req.send_bytes(&bytes) {
            Ok(resp) => self.stream(resp, sink),
            Err(ureq::Error::Status(code, resp)) => Err(self.http_error(code, resp)),
            Err(ureq::Error::Transport(t)) => Err(self.transport_error(&t)),
        }
    }
}

/// A non-empty environment variable.
fn env(var: &str) -> Option<String> {
    std::env::var(var).ok().filter(|v| !v.trim().is_empty())
}

/// `host:port` of a URL, without any user info, for messages.
fn host_of(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("https", url));
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let authority = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let has_port = match authority.rfind(']') {
        Some(end) => authority[end..].contains(':'),
        None => authority.contains(':'),
    };
    if has_port {
        authority.to_owned()
    } else {
        let port = if scheme.eq_ignore_ascii_case("http") {
            80
        } else {
            443
        };
        format!("{authority}:{port}")
    }
}

fn is_timeout(e: &std::io::Error) -> bool {
    // A socket read timeout shows as WouldBlock on Unix and TimedOut elsewhere.
    matches!(
        e.kind(),
        std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock
    )
}

/// Seconds as people write them: `1`, `0.5`, `120`.
fn secs(d: Duration) -> String {
    let s = format!("{:.3}", d.as_secs_f64());
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// `Retry-After` in seconds (an HTTP date is ignored: clocks disagree and backoff covers it),
/// or the `retry-after-ms` some OpenAI-compatible servers send.
fn retry_after(resp: &ureq::Response) -> Option<Duration> {
    let parse = |v: &str, scale: f64| {
        v.trim()
            .parse::<f64>()
            .ok()
            .filter(|n| n.is_finite() && *n >= 0.0)
            .map(|n| Duration::from_secs_f64(n / scale))
    };
    resp.header("retry-after")
        .and_then(|v| parse(v, 1.0))
        .or_else(|| resp.header("retry-after-ms").and_then(|v| parse(v, 1000.0)))
}

/// The provider's own words from an error body: `error.message` (both dialects), a bare
/// `message` or `error` string, else the body's text when it is short prose.
fn error_message(body: &str) -> Option<String> {
    let body = body.trim();
    if body.is_empty() {
        return None;
    }
    if let Ok(v) = serde_json::from_str::<Value>(body) {
        let said = v["error"]["message"]
            .as_str()
            .or_else(|| v["message"].as_str())
            .or_else(|| v["error"].as_str())
            .or_else(|| v["detail"].as_str());
        return Some(match said {
            Some(s) => s.to_owned(),
            None => v.to_string(),
        });
    }
    Some(body.to_owned())
}

/// One line of at most [`MESSAGE_CAP`] characters.
fn clip(text: &str) -> String {
    let flat: String = text
        .trim()
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if flat.chars().count() <= MESSAGE_CAP {
        return flat;
    }
    let mut out: String = flat.chars().take(MESSAGE_CAP - 1).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ProviderConfig;

    fn config_with(name: &str, kind: &str, key_env: Option<&str>) -> Config {
        let mut c = Config::default();
        c.providers.insert(
            name.into(),
            ProviderConfig {
                kind: kind.into(),
                base_url: "http://localhost:11434/v1/".into(),
                api_key_env: key_env.map(str::to_owned),
            },
        );
        c
    }

    #[test]
    fn named_provider_without_key_env_sends_no_key() {
        let c = config_with("ollama", "openai", None);
        let p = HttpProvider::from_config("ollama/llama3", "ollama", "llama3", &c).unwrap();
        assert_eq!(p.url(), "http://localhost:11434/v1/chat/completions");
        assert_eq!(p.dialect(), Dialect::OpenAi);
        assert_eq!(p.api_model(), "llama3");
        assert_eq!(p.name(), "ollama/llama3");
        assert!(p.key.is_none());
        assert_eq!(p.host, "localhost:11434");
    }

    #[test]
    fn named_provider_errors() {
        let c = config_with("x", "openai", Some("AG_TEST_HTTP_UNSET_KEY_7781"));
        let e = HttpProvider::from_config("x/m", "x", "m", &c).unwrap_err();
        assert!(
            matches!(&e, ModelError::MissingKey { var, .. } if var == "AG_TEST_HTTP_UNSET_KEY_7781"),
            "{e}"
        );
        let e = HttpProvider::from_config("y/m", "y", "m", &c).unwrap_err();
        assert!(matches!(e, ModelError::UnknownProvider { .. }), "{e}");
        let c = config_with("z", "gemini", None);
        let e = HttpProvider::from_config("z/m", "z", "m", &c).unwrap_err();
        assert!(matches!(e, ModelError::BadKind { .. }), "{e}");
    }

    #[test]
    fn named_anthropic_provider_uses_messages_endpoint_and_hides_key_in_debug() {
        std::env::set_var("AG_TEST_HTTP_KEY_4410", "sk-very-secret-4410");
        let c = config_with("proxy", "anthropic", Some("AG_TEST_HTTP_KEY_4410"));
        let p = HttpProvider::from_config("proxy/claude", "proxy", "claude", &c).unwrap();
        assert_eq!(p.url(), "http://localhost:11434/v1/v1/messages");
        assert!(!format!("{p:?}").contains("sk-very-secret-4410"));
        assert_eq!(
            p.scrub("echo sk-very-secret-4410 back".into()),
            "echo [key] back"
        );
    }

    #[test]
    fn hosts() {
        assert_eq!(
            host_of("https://api.anthropic.com/v1/messages"),
            "api.anthropic.com:443"
        );
        assert_eq!(
            host_of("http://127.0.0.1:8080/v1/chat/completions"),
            "127.0.0.1:8080"
        );
        assert_eq!(host_of("http://user:pw@example.com/x"), "example.com:80");
        assert_eq!(host_of("http://[::1]:9/x"), "[::1]:9");
        assert_eq!(host_of("https://[::1]/x"), "[::1]:443");
    }

    #[test]
    fn error_messages() {
        let anthropic =
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
        assert_eq!(error_message(anthropic).as_deref(), Some("Overloaded"));
        let openai = r#"{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}"#;
        assert_eq!(error_message(openai).as_deref(), Some("Rate limit reached"));
        assert_eq!(
            error_message(r#"{"error":"model not found"}"#).as_deref(),
            Some("model not found")
        );
        assert_eq!(
            error_message("  <html>bad gateway</html>\n").as_deref(),
            Some("<html>bad gateway</html>")
        );
        assert_eq!(error_message(" "), None);
        let long = "x".repeat(1000);
        assert_eq!(clip(&long).chars().count(), MESSAGE_CAP);
        assert_eq!(clip("a\nb"), "a b");
    }

    #[test]
    fn seconds() {
        assert_eq!(secs(Duration::from_secs(1)), "1");
        assert_eq!(secs(Duration::from_millis(500)), "0.5");
        assert_eq!(secs(Duration::from_secs(120)), "120");
    }
}
