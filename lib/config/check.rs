//! Values that parse but cannot work, refused when the configuration is loaded, before any
//! session is created: a provider `base_url` that is not an http(s) URL, `agent.max_steps = 0`.

use std::path::PathBuf;

use super::{Config, ConfigError};

/// The first value of `config` that cannot work, as an error naming `file` (the file that was
/// read last, whose keys won).
pub(super) fn check(config: &Config, file: PathBuf) -> Result<(), ConfigError> {
    let bad = |message: String| ConfigError::Parse {
        path: file.clone(),
        message,
    };
    for (name, p) in &config.providers {
        if let Err(why) = http_url(&p.base_url) {
            return Err(bad(format!(
                "providers.{name}.base_url: {:?} is not a URL ({why}); write it like \"http://127.0.0.1:11434/v1\"",
                p.base_url
            )));
        }
    }
    ranges(config).map_err(|message| ConfigError::OutOfRange {
        path: file.clone(),
        message,
    })?;
    if config.agent.max_steps == 0 {
        return Err(bad(
            "agent.max_steps: 0 allows no model round trip; it must be at least 1".into(),
        ));
    }
    Ok(())
}

/// The most seconds a duration setting takes (`clock::MAX_DURATION`, about 31 years).
const MAX_SECS: f64 = 1e9;

/// Every duration and size setting is a finite, positive number a clock or a counter can hold.
fn ranges(c: &Config) -> Result<(), String> {
    let secs = |key: &str, v: f64| {
        if v.is_finite() && v > 0.0 && v <= MAX_SECS {
            Ok(())
        } else {
            Err(format!(
                "{key} = {v}: must be more than 0 and at most {MAX_SECS:.0} seconds (about 31 years)"
            ))
        }
    };
    let n = &c.network;
    secs("network.connect_timeout_s", n.connect_timeout_s)?;
    secs("network.idle_timeout_s", n.idle_timeout_s)?;
    secs("network.attempt_timeout_s", n.attempt_timeout_s)?;
    for (key, ms) in [
        ("network.retry_base_ms", n.retry_base_ms),
        ("network.retry_max_ms", n.retry_max_ms),
    ] {
        if ms as f64 > MAX_SECS * 1000.0 {
            return Err(format!(
                "{key} = {ms}: must be at most {:.0} ms",
                MAX_SECS * 1000.0
            ));
        }
    }
    secs("agent.bash_timeout_s", c.agent.bash_timeout_s as f64)?;
    for (name, m) in &c.mcp {
        if let Some(v) = m.startup_timeout_s {
            secs(&format!("mcp.{name}.startup_timeout_s"), v)?;
        }
        if let Some(v) = m.call_timeout_s {
            secs(&format!("mcp.{name}.call_timeout_s"), v)?;
        }
    }
    let tokens = |key: &str, v: u64| {
        if (1..=u64::from(u32::MAX)).contains(&v) {
            Ok(())
        } else {
            Err(format!("{key} = {v}: must be from 1 to {}", u32::MAX))
        }
    };
    tokens("agent.max_tokens", c.agent.max_tokens)?;
    if let Some(b) = c.agent.thinking_budget {
        tokens("agent.thinking_budget", b)?;
    }
    if !c.context.compact_at.is_finite() || c.context.compact_at <= 0.0 {
        return Err(format!(
            "context.compact_at = {}: must be a share of the window above 0 (0.8 is 80%)",
            c.context.compact_at
        ));
    }
    Ok(())
}

/// Whether `s` is an absolute http or https URL with a host.
pub(crate) fn http_url(s: &str) -> Result<(), String> {
    let url = reqwest::Url::parse(s).map_err(|e| e.to_string())?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!(
            "the scheme is {:?}, not http or https",
            url.scheme()
        ));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err("it names no host".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::http_url;

    #[test]
    fn only_http_urls_with_a_host_pass() {
        assert!(http_url("http://127.0.0.1:11434/v1").is_ok());
        assert!(http_url("https://openrouter.ai/api/v1").is_ok());
        for bad in [
            "localhost:11434",
            "127.0.0.1",
            "ftp://x",
            "",
            "http://",
            "not a url",
        ] {
            assert!(http_url(bad).is_err(), "{bad:?}");
        }
    }
}
