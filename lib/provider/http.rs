//! The HTTP providers: Anthropic Messages and OpenAI Chat Completions (and the servers that
//! speak them) over one streamed POST per attempt, read as SSE into the dialect's reducer.
//!
//! Keys come from the environment and live only in the request header; every message this
//! module produces is scrubbed of the key anyway, because a proxy may echo headers back.

use std::time::Duration;

use serde_json::Value;
use tokio::time::{timeout_at, Instant};

use super::{retryable_status, AttemptError, ModelError, Provider};
use crate::config::{Config, ProviderKind};
use crate::fold::Dialect;
use crate::net::chain;
use crate::reduce::{ChunkOp, StepEnd, StreamError, StreamReader};

const ANTHROPIC_DEFAULT_URL: &str = "https://api.anthropic.com";
const OPENAI_DEFAULT_URL: &str = "https://api.openai.com/v1";
const ANTHROPIC_VERSION: &str = "2023-06-01";
/// How much of an error body is read: enough for any JSON error, bounded against a proxy
/// that answers with a page of HTML.
const ERROR_BODY_CAP: usize = 64 * 1024;
const MESSAGE_CAP: usize = 300;

/// A provider reached over HTTP.
pub(crate) struct HttpProvider {
    model: String,
    api_model: String,
    dialect: Dialect,
    /// The endpoint the attempt posts to.
    url: String,
    /// `host:port`, for messages (never the whole URL, which could carry credentials).
    host: String,
    /// The key, sent as `x-api-key` (Anthropic) or `Authorization: Bearer` (OpenAI).
    key: Option<String>,
    /// No progress (content, a tool-call fragment, usage) for this long fails the attempt.
    idle: Duration,
    /// The most one attempt may take, however steadily it streams.
    deadline: Duration,
    client: reqwest::Client,
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
    /// Keys and base URLs that live in variables are looked up with `vars`.
    pub(crate) fn from_config(
        model: &str,
        provider: &str,
        name: &str,
        config: &Config,
        vars: &super::Vars<'_>,
    ) -> Result<HttpProvider, ModelError> {
        let env = |var: &str| vars(var).filter(|v| !v.trim().is_empty());
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
                let dialect = match pc.kind {
                    ProviderKind::Anthropic => Dialect::Anthropic,
                    ProviderKind::OpenAi => Dialect::OpenAi,
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
        // A `[providers.*] base_url` is checked when the config loads; a variable here.
        if let Err(why) = crate::config::http_url(base) {
            return Err(ModelError::BadBaseUrl {
                var: format!("{}_BASE_URL", provider.to_ascii_uppercase()),
                url: base.into(),
                why,
            });
        }
        let url = match dialect {
            Dialect::Anthropic => format!("{base}/v1/messages"),
            Dialect::OpenAi => format!("{base}/chat/completions"),
        };
        let client = crate::net::client(&config.network).map_err(|e| ModelError::Network {
            model: model.into(),
            message: e.to_string(),
        })?;
        Ok(HttpProvider {
            model: model.into(),
            api_model: name.into(),
            dialect,
            host: host_of(&url),
            url,
            key,
            idle: config.network.idle_timeout(),
            deadline: config.network.attempt_timeout(),
            client,
        })
    }

    /// The endpoint this provider posts to.
    #[cfg(test)]
    pub(crate) fn url(&self) -> &str {
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

    /// Removes the key from text that may have echoed it. A key too short to be a secret (a
    /// local server's `x`) is left alone, as the store's scrubbing leaves it: replacing every
    /// `x` would garble the provider's message.
    fn scrub(&self, text: String) -> String {
        match &self.key {
            Some(k) if k.len() >= crate::secrets::MIN_SCRUBBED_LEN && text.contains(k.as_str()) => {
                text.replace(k.as_str(), "[key]")
            }
            _ => text,
        }
    }

    async fn http_error(&self, code: u16, resp: reqwest::Response, until: Instant) -> AttemptError {
        let retry_after = retry_after(resp.headers());
        let status_text = resp
            .status()
            .canonical_reason()
            .unwrap_or_default()
            .to_owned();
        // An unreadable error body still leaves the status to report.
        let raw = read_capped(resp, until).await;
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

    fn transport_error(&self, e: &reqwest::Error) -> AttemptError {
        let host = &self.host;
        let detail = chain(e);
        let lower = detail.to_ascii_lowercase();
        let (message, retryable) = if e.is_builder() {
            (
                format!("the provider URL {:?} is not usable: {detail}", self.url),
                false,
            )
        } else if e.is_connect() && e.is_timeout() {
            (format!("cannot connect to {host}: timed out"), true)
        } else if e.is_connect() && lower.contains("dns error") {
            (format!("cannot resolve {host}: {detail}"), true)
        } else if e.is_connect() && lower.contains("certificate") {
            // Trying again will meet the same certificate.
            let hint = "trust its CA with network.ca_file or SSL_CERT_FILE";
            (
                format!("cannot connect to {host}: {detail} ({hint})"),
                false,
            )
        } else if e.is_connect() {
            (format!("cannot connect to {host}: {detail}"), true)
        } else if e.is_body() || e.is_decode() {
            (format!("the stream broke: {detail}"), true)
        } else {
            (format!("the request to {host} failed: {detail}"), true)
        };
        self.fail(message, None, retryable)
    }

    async fn stream(
        &self,
        resp: reqwest::Response,
        sink: &mut dyn FnMut(ChunkOp),
        until: Instant,
    ) -> Result<StepEnd, AttemptError> {
        let status = resp.status().as_u16();
        if !(200..300).contains(&status) {
            let to = resp
                .headers()
                .get("location")
                .and_then(|l| l.to_str().ok())
                .map(|l| format!(" to {l}"))
                .unwrap_or_default();
            let msg = format!(
                "unexpected answer from {}{to}; check the provider's base URL",
                self.host
            );
            return Err(self.fail(msg, Some(status), false));
        }
        let content_type = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_ascii_lowercase();
        if content_type.contains("json") {
            // The server ignored `"stream": true` or put an error in a 200: retrying the same
            // request would get the same answer.
            let raw = read_capped(resp, until).await;
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
        let mut reader = StreamReader::new(self.dialect);
        let mut resp = resp;
        let mut idle_until = Instant::now() + self.idle;
        while !reader.is_done() {
            let piece = match timeout_at(idle_until.min(until), resp.chunk()).await {
                Ok(Ok(Some(piece))) => piece,
                Ok(Ok(None)) => break,
                Ok(Err(e)) => {
                    let msg = format!("the stream broke: {}", chain(&e));
                    return Err(self.fail(msg, None, true));
                }
                Err(_) if idle_until <= until => {
                    let msg = format!(
                        "the stream broke: no progress for {} s from {}",
                        secs(self.idle),
                        self.host
                    );
                    return Err(self.fail(msg, None, true));
                }
                Err(_) => return Err(self.over_deadline()),
            };
            if reader.push(&piece, sink).map_err(stream_err)? {
                idle_until = Instant::now() + self.idle;
            }
        }
        reader.finish(sink).map_err(stream_err)
    }

    fn over_deadline(&self) -> AttemptError {
        let msg = format!(
            "the attempt took longer than {} s (network.attempt_timeout_s) at {}",
            secs(self.deadline),
            self.host
        );
        self.fail(msg, None, true)
    }

    async fn post(
        &self,
        bytes: Vec<u8>,
        sink: &mut dyn FnMut(ChunkOp),
    ) -> Result<StepEnd, AttemptError> {
        let until = Instant::now() + self.deadline;
        let mut req = self
            .client
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "text/event-stream")
            .body(bytes);
        match self.dialect {
            Dialect::Anthropic => {
                req = req.header("anthropic-version", ANTHROPIC_VERSION);
                if let Some(k) = &self.key {
                    req = req.header("x-api-key", k);
                }
            }
            Dialect::OpenAi => {
                if let Some(k) = &self.key {
                    req = req.header("authorization", format!("Bearer {k}"));
                }
            }
        }
        // The answer's headers must come within the idle timeout too.
        let headers_until = (Instant::now() + self.idle).min(until);
        let resp = match timeout_at(headers_until, req.send()).await {
            Ok(Ok(resp)) => resp,
            Ok(Err(e)) => return Err(self.transport_error(&e)),
            Err(_) if headers_until < until => {
                let msg = format!("no answer from {} for {} s", self.host, secs(self.idle));
                return Err(self.fail(msg, None, true));
            }
            Err(_) => return Err(self.over_deadline()),
        };
        let status = resp.status().as_u16();
        if status >= 400 {
            return Err(self.http_error(status, resp, until).await);
        }
        self.stream(resp, sink, until).await
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
        crate::net::block_on(self.post(bytes, sink))
    }
}

/// Up to [`ERROR_BODY_CAP`] bytes of a body, whatever arrives before `until`.
async fn read_capped(mut resp: reqwest::Response, until: Instant) -> Vec<u8> {
    let mut raw = Vec::new();
    while raw.len() < ERROR_BODY_CAP {
        match timeout_at(until, resp.chunk()).await {
            Ok(Ok(Some(piece))) => raw.extend_from_slice(&piece),
            _ => break,
        }
    }
    raw.truncate(ERROR_BODY_CAP);
    raw
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

/// Seconds as people write them: `1`, `0.5`, `120`.
fn secs(d: Duration) -> String {
    let s = format!("{:.3}", d.as_secs_f64());
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// `Retry-After` in seconds (an HTTP date is ignored: clocks disagree and backoff covers it),
/// or the `retry-after-ms` some OpenAI-compatible servers send.
fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let parse = |v: &str, scale: f64| {
        v.trim()
            .parse::<f64>()
            .ok()
            .filter(|n| n.is_finite() && *n >= 0.0)
            .map(|n| Duration::from_secs_f64(n / scale))
    };
    header("retry-after")
        .and_then(|v| parse(v, 1.0))
        .or_else(|| header("retry-after-ms").and_then(|v| parse(v, 1000.0)))
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
    crate::text::clip_chars(&flat, MESSAGE_CAP)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ProviderConfig;

    fn no_vars(_: &str) -> Option<String> {
        None
    }

    fn config_with(name: &str, kind: ProviderKind, key_env: Option<&str>) -> Config {
        let mut c = Config::default();
        c.providers.insert(
            name.into(),
            ProviderConfig {
                kind,
                base_url: "http://localhost:11434/v1/".into(),
                api_key_env: key_env.map(str::to_owned),
            },
        );
        c
    }

    #[test]
    fn named_provider_without_key_env_sends_no_key() {
        let c = config_with("ollama", ProviderKind::OpenAi, None);
        let p =
            HttpProvider::from_config("ollama/llama3", "ollama", "llama3", &c, &no_vars).unwrap();
        assert_eq!(p.url(), "http://localhost:11434/v1/chat/completions");
        assert_eq!(p.dialect(), Dialect::OpenAi);
        assert_eq!(p.api_model(), "llama3");
        assert_eq!(p.name(), "ollama/llama3");
        assert!(p.key.is_none());
        assert_eq!(p.host, "localhost:11434");
    }

    #[test]
    fn named_provider_errors() {
        let c = config_with("x", ProviderKind::OpenAi, Some("AG_TEST_HTTP_UNSET_KEY"));
        let e = HttpProvider::from_config("x/m", "x", "m", &c, &no_vars).unwrap_err();
        assert!(
            matches!(&e, ModelError::MissingKey { var, .. } if var == "AG_TEST_HTTP_UNSET_KEY"),
            "{e}"
        );
        let e = HttpProvider::from_config("y/m", "y", "m", &c, &no_vars).unwrap_err();
        assert!(matches!(e, ModelError::UnknownProvider { .. }), "{e}");
    }

    #[test]
    fn named_anthropic_provider_uses_messages_endpoint_and_hides_key_in_debug() {
        let vars = |v: &str| (v == "AG_TEST_HTTP_KEY").then(|| "sk-very-secret-4410".to_string());
        let c = config_with("proxy", ProviderKind::Anthropic, Some("AG_TEST_HTTP_KEY"));
        let p = HttpProvider::from_config("proxy/claude", "proxy", "claude", &c, &vars).unwrap();
        assert_eq!(p.url(), "http://localhost:11434/v1/v1/messages");
        assert!(!format!("{p:?}").contains("sk-very-secret-4410"));
        assert_eq!(
            p.scrub("echo sk-very-secret-4410 back".into()),
            "echo [key] back"
        );
        let short = |v: &str| (v == "AG_TEST_HTTP_KEY").then(|| "x".to_string());
        let p = HttpProvider::from_config("proxy/claude", "proxy", "claude", &c, &short).unwrap();
        assert_eq!(
            p.scrub("maximum context length".into()),
            "maximum context length"
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
