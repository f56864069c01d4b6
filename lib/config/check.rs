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
    if config.agent.max_steps == 0 {
        return Err(bad(
            "agent.max_steps: 0 allows no model round trip; it must be at least 1".into(),
        ));
    }
    Ok(())
}

/// Whether `s` is an absolute http or https URL with a host.
pub fn http_url(s: &str) -> Result<(), String> {
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
