//! Which folders the user trusts: the trusted-folders list in the user config directory, the
//! one question every reader of a project's files asks ([`is_trusted`]), and `--trust`'s
//! append to it.

use std::path::{Path, PathBuf};

use super::{user_config_dir, ConfigError};

/// The folder a project file belongs to: the one holding its `.ag/` (or `.mcp.json`).
pub(crate) fn project_root(file: &Path) -> Option<PathBuf> {
    let dir = file.parent()?;
    let root = if dir.file_name().is_some_and(|n| n == ".ag") {
        dir.parent()?
    } else {
        dir
    };
    Some(std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf()))
}

/// The list of trusted folders: `trusted-folders` in the user config directory, one
/// absolute path a line (`#` starts a comment). It sits outside every workspace, so an agent
/// confined to its folder cannot trust that folder for itself.
pub(crate) fn trusted_folders_file() -> Option<PathBuf> {
    user_config_dir().map(|d| d.join("trusted-folders"))
}

/// Whether the user trusts `dir`: it, or a folder above it, is in the trusted-folders list.
/// Project settings that choose where conversations go (model, providers, MCP servers,
/// `.mcp.json`) apply only in a trusted folder.
pub(crate) fn is_trusted(dir: &Path) -> bool {
    let Some(list) = trusted_folders_file() else {
        return false;
    };
    let Ok(text) = std::fs::read_to_string(list) else {
        return false;
    };
    let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let trusted = trusted_lines(&text).any(|t| dir.starts_with(t));
    trusted
}

fn trusted_lines(text: &str) -> impl Iterator<Item = &Path> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#') && l.starts_with('/'))
        .map(Path::new)
}

/// Add `dir` (made absolute) to the trusted-folders list; returns the folder recorded and the
/// list's path. Trusting an already trusted folder changes nothing.
pub(crate) fn trust(dir: &Path) -> Result<(PathBuf, PathBuf), ConfigError> {
    use std::io::Write;
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let dir = std::fs::canonicalize(dir).map_err(|source| ConfigError::Read {
        path: dir.to_path_buf(),
        source,
    })?;
    let list = trusted_folders_file().ok_or_else(|| ConfigError::Parse {
        path: PathBuf::from("trusted-folders"),
        message: "neither XDG_CONFIG_HOME nor HOME is set".into(),
    })?;
    let write_err = |source| ConfigError::Write {
        path: list.clone(),
        source,
    };
    if dir.to_str().is_none_or(|d| d.contains('\n')) {
        return Err(ConfigError::Parse {
            path: dir,
            message: "a folder whose name is not one line of UTF-8 cannot be trusted".into(),
        });
    }
    let existing = std::fs::read_to_string(&list).unwrap_or_default();
    if !trusted_lines(&existing).any(|t| t == dir) {
        if let Some(parent) = list.parent() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(parent)
                .map_err(write_err)?;
        }
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(&list)
            .map_err(write_err)?;
        writeln!(f, "{}", dir.display()).map_err(write_err)?;
    }
    Ok((dir, list))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trusted_folder_covers_the_folders_inside_it() {
        let list = "# mine\n/home/u/src\nrelative/ignored\n\n";
        let trusted = |d: &str| trusted_lines(list).any(|t| Path::new(d).starts_with(t));
        assert!(trusted("/home/u/src"));
        assert!(trusted("/home/u/src/repo"));
        assert!(!trusted("/home/u/srcx"));
        assert!(!trusted("/home/u"));
        assert!(!trusted("relative/ignored"));
        assert_eq!(
            project_root(Path::new("/nonexistent/p/.ag/config.toml")),
            Some(PathBuf::from("/nonexistent/p"))
        );
    }
}
