//! Trust covers a folder as the user saw it, not what its files say later. A trusted folder's
//! `.mcp.json` names commands to run outside the sandbox; a command (or a tool) that rewrites
//! the file must not get a new one run. So each project server is pinned to the entry the
//! user approved: `ag-prompt --trust` approves the servers the file names then, and a server
//! that is new or whose entry changed since is not started until the user approves it (asked
//! on a terminal, a warning in a pipe).
//!
//! Approvals live beside `trusted-folders` in the user config, one per line:
//! `SHA-256 of the entry <TAB> server name <TAB> folder`.

use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::{user_config_dir, ConfigError, McpServerConfig};

/// A project server that is not (or no longer) approved.
#[derive(Debug, Clone)]
pub(crate) struct Unapproved {
    pub(crate) name: String,
    pub(crate) server: McpServerConfig,
    pub(crate) fingerprint: String,
    /// The `.mcp.json` and the trusted folder it belongs to.
    pub(crate) file: PathBuf,
    pub(crate) folder: PathBuf,
}

impl Unapproved {
    /// What the server runs, for a question or a warning.
    pub(crate) fn what(&self) -> String {
        match (&self.server.command, &self.server.url) {
            (Some(c), _) => std::iter::once(c.as_str())
                .chain(self.server.args.iter().map(String::as_str))
                .collect::<Vec<_>>()
                .join(" "),
            (None, Some(u)) => u.clone(),
            (None, None) => "(nothing)".into(),
        }
    }
}

/// The fingerprint of a server's entry as the file writes it (before `${VAR}` expansion, so
/// the environment changing does not ask again).
pub(crate) fn fingerprint(entry: &serde_json::Value) -> String {
    let digest = Sha256::digest(entry.to_string().as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

fn approvals_file() -> Option<PathBuf> {
    user_config_dir().map(|d| d.join("approved-mcp-servers"))
}

/// Whether the user approved this entry of `name` for `folder`.
pub(crate) fn is_approved(folder: &Path, name: &str, fingerprint: &str) -> bool {
    let Some(file) = approvals_file() else {
        return false;
    };
    let text = std::fs::read_to_string(file).unwrap_or_default();
    let folder = folder.to_string_lossy();
    text.lines().any(|l| {
        let mut parts = l.splitn(3, '\t');
        parts.next() == Some(fingerprint)
            && parts.next() == Some(name)
            && parts.next() == Some(folder.as_ref())
    })
}

/// Approve every server of `config` that is not approved yet (what `ag-prompt --trust` does
/// after trusting the folder); the ones approved now.
pub(crate) fn approve_pending(config: &super::Config) -> Result<Vec<&Unapproved>, ConfigError> {
    for u in &config.mcp_unapproved {
        approve(&u.folder, &[(&u.name, &u.fingerprint)])?;
    }
    Ok(config.mcp_unapproved.iter().collect())
}

/// Record approvals of `servers` (name and fingerprint) for `folder`; the file's path.
pub(crate) fn approve(folder: &Path, servers: &[(&str, &str)]) -> Result<PathBuf, ConfigError> {
    let file = approvals_file().ok_or_else(|| ConfigError::Parse {
        path: PathBuf::from("approved-mcp-servers"),
        message: "neither XDG_CONFIG_HOME nor HOME is set".into(),
    })?;
    let write_err = |source| ConfigError::Write {
        path: file.clone(),
        source,
    };
    let folder_text = folder.to_string_lossy();
    if folder_text.contains(['\n', '\t']) {
        return Err(ConfigError::Parse {
            path: folder.to_path_buf(),
            message: "a folder whose name holds a tab or a newline cannot be approved".into(),
        });
    }
    if let Some(parent) = file.parent() {
        crate::paths::create_private_dir(parent).map_err(write_err)?;
    }
    let mut f = crate::paths::open_private_append(&file).map_err(write_err)?;
    for (name, fp) in servers {
        if name.contains(['\n', '\t']) || is_approved(folder, name, fp) {
            continue;
        }
        writeln!(f, "{fp}\t{name}\t{folder_text}").map_err(write_err)?;
    }
    Ok(file)
}
