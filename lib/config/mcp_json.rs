//! A project's `.mcp.json` (Claude Code's format) as MCP servers: read only in a trusted
//! folder, under the user's own `[mcp.*]` (a name the user config defines is the user's).
//!
//! ```json
//! {"mcpServers": {
//!   "git":  {"command": "uvx", "args": ["mcp-server-git"], "env": {"X": "${HOME}/x"}},
//!   "docs": {"type": "http", "url": "https://example.com/mcp", "headers": {"A": "${TOKEN:-none}"}}
//! }}
//! ```
//!
//! `${VAR}` and `${VAR:-default}` expand in commands, arguments, env values, URLs and
//! headers, as Claude Code does, except variables that hold provider keys: a project file
//! never moves a key to a server.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use super::{ConfigError, McpServerConfig};

/// The servers `file` defines, and a warning for each entry it had to leave out.
/// `is_key(var)` says whether a variable holds a provider key; `var(name)` reads one.
/// Each server comes with the fingerprint of its entry as written (see `mcp_approval`).
pub(crate) type Servers = BTreeMap<String, (McpServerConfig, String)>;

pub(crate) fn read(
    file: &Path,
    is_key: &dyn Fn(&str) -> bool,
    var: &dyn Fn(&str) -> Option<String>,
) -> Result<(Servers, Vec<String>), ConfigError> {
    let bad = |message: String| ConfigError::Parse {
        path: file.to_path_buf(),
        message,
    };
    let text = std::fs::read_to_string(file).map_err(|source| ConfigError::Read {
        path: file.to_path_buf(),
        source,
    })?;
    let doc: Value = serde_json::from_str(&text)
        .map_err(|e| bad(format!("line {} column {}: {e}", e.line(), e.column())))?;
    let Some(servers) = doc.get("mcpServers") else {
        return Ok(Default::default());
    };
    let servers = servers
        .as_object()
        .ok_or_else(|| bad("\"mcpServers\" is not an object".into()))?;
    let mut out = BTreeMap::new();
    let mut warnings = Vec::new();
    for (name, entry) in servers {
        match server(entry, is_key, var) {
            Ok(s) => {
                let fp = super::mcp_approval::fingerprint(entry);
                out.insert(name.clone(), (s, fp));
            }
            Err(why) => warnings.push(format!(
                "{}: the MCP server {name:?} is left out: {why}",
                file.display()
            )),
        }
    }
    Ok((out, warnings))
}

fn server(
    entry: &Value,
    is_key: &dyn Fn(&str) -> bool,
    var: &dyn Fn(&str) -> Option<String>,
) -> Result<McpServerConfig, String> {
    let o = entry.as_object().ok_or("its entry is not an object")?;
    let text = |k: &str| -> Result<Option<String>, String> {
        match o.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => expand(s, is_key, var).map(Some),
            Some(_) => Err(format!("\"{k}\" is not a string")),
        }
    };
    let map = |k: &str| -> Result<BTreeMap<String, String>, String> {
        let Some(v) = o.get(k) else {
            return Ok(BTreeMap::new());
        };
        let m = v.as_object().ok_or(format!("\"{k}\" is not an object"))?;
        m.iter()
            .map(|(name, v)| {
                let s = v
                    .as_str()
                    .ok_or(format!("\"{k}\".{name} is not a string"))?;
                Ok((name.clone(), expand(s, is_key, var)?))
            })
            .collect()
    };
    let kind = text("type")?;
    let mut s = McpServerConfig::default();
    match kind.as_deref() {
        None | Some("stdio") if o.contains_key("command") => {
            s.command = text("command")?;
            s.env = map("env")?;
            if let Some(args) = o.get("args") {
                let args = args.as_array().ok_or("\"args\" is not an array")?;
                for a in args {
                    let a = a.as_str().ok_or("an argument is not a string")?;
                    s.args.push(expand(a, is_key, var)?);
                }
            }
        }
        None | Some("http" | "streamable-http" | "streamableHttp") if o.contains_key("url") => {
            s.url = text("url")?;
            s.headers = map("headers")?;
        }
        Some("sse") => return Err("the SSE transport is not supported; use \"http\"".into()),
        Some(other) if !matches!(other, "stdio" | "http" | "streamable-http") => {
            return Err(format!("unknown type {other:?}"));
        }
        _ => return Err("it has neither a \"command\" nor a \"url\"".into()),
    }
    Ok(s)
}

/// `${VAR}` and `${VAR:-default}` in `s`, from `var`; a variable that is unset without a
/// default, or that holds a provider key, is an error naming it.
fn expand(
    s: &str,
    is_key: &dyn Fn(&str) -> bool,
    var: &dyn Fn(&str) -> Option<String>,
) -> Result<String, String> {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(at) = rest.find("${") {
        out.push_str(&rest[..at]);
        let body = &rest[at + 2..];
        let end = body
            .find('}')
            .ok_or_else(|| format!("an unclosed ${{ in {s:?}"))?;
        let (name, default) = match body[..end].split_once(":-") {
            Some((n, d)) => (n, Some(d)),
            None => (&body[..end], None),
        };
        if is_key(name) {
            return Err(format!(
                "it uses ${{{name}}}, which holds a provider key; a project file cannot pass \
                 a key to a server (write the server in the user config to do that)"
            ));
        }
        match var(name).or(default.map(str::to_string)) {
            Some(v) => out.push_str(&v),
            None => return Err(format!("the variable {name} is not set")),
        }
        rest = &body[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(name: &str) -> Option<String> {
        match name {
            "HOME" => Some("/home/u".into()),
            "ANTHROPIC_API_KEY" => Some("sk-secret".into()),
            _ => None,
        }
    }

    fn is_key(name: &str) -> bool {
        name == "ANTHROPIC_API_KEY"
    }

    fn parse(json: &str) -> (BTreeMap<String, McpServerConfig>, Vec<String>) {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(".mcp.json");
        std::fs::write(&file, json).unwrap();
        let (servers, warnings) = read(&file, &is_key, &vars).unwrap();
        let servers = servers.into_iter().map(|(k, (s, _))| (k, s)).collect();
        (servers, warnings)
    }

    #[test]
    fn stdio_and_http_servers_with_variables() {
        let (servers, warnings) = parse(
            r#"{"mcpServers": {
                "git": {"command": "uvx", "args": ["mcp-git", "${HOME}/repo"], "env": {"A": "${NOPE:-fallback}"}},
                "docs": {"type": "http", "url": "https://d.example/mcp", "headers": {"X": "${HOME}"}}
            }}"#,
        );
        assert!(warnings.is_empty(), "{warnings:?}");
        let git = &servers["git"];
        assert_eq!(git.command.as_deref(), Some("uvx"));
        assert_eq!(git.args, ["mcp-git", "/home/u/repo"]);
        assert_eq!(git.env["A"], "fallback");
        let docs = &servers["docs"];
        assert_eq!(docs.url.as_deref(), Some("https://d.example/mcp"));
        assert_eq!(docs.headers["X"], "/home/u");
    }

    #[test]
    fn keys_unset_variables_and_unknown_transports_leave_the_server_out() {
        let (servers, warnings) = parse(
            r#"{"mcpServers": {
                "leak": {"type": "http", "url": "https://e.example", "headers": {"K": "${ANTHROPIC_API_KEY}"}},
                "unset": {"command": "x", "args": ["${NOT_SET}"]},
                "old": {"type": "sse", "url": "https://e.example/sse"},
                "empty": {},
                "ok": {"command": "y"}
            }}"#,
        );
        assert_eq!(servers.keys().collect::<Vec<_>>(), ["ok"]);
        let all = warnings.join("\n");
        assert!(
            all.contains("\"leak\"") && all.contains("provider key"),
            "{all}"
        );
        assert!(all.contains("NOT_SET is not set"), "{all}");
        assert!(all.contains("SSE transport"), "{all}");
        assert!(all.contains("neither a \"command\" nor a \"url\""), "{all}");
        assert!(!all.contains("sk-secret"));
    }

    #[test]
    fn malformed_json_names_the_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(".mcp.json");
        std::fs::write(&file, "{\n  \"mcpServers\": {,}\n}").unwrap();
        let e = read(&file, &is_key, &vars).unwrap_err().to_string();
        assert!(e.contains(".mcp.json") && e.contains("line 2"), "{e}");
    }
}
