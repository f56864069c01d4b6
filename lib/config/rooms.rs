//! `[rooms]`: where rooms live. Only the user config (or `AG_ROOM_URL`) may say: a project
//! file that could move rooms onto a server it names would carry every room line — and the
//! claims — of whoever clones it there. Credentials are files the config names (a `.creds`
//! file, an nkey seed, or a user and a password file), never values on a command line or in
//! the environment, and never printed.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

/// The `[rooms]` table.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct RoomsConfig {
    /// `nats://host:4222` or `tls://host:4222`: rooms live on this NATS JetStream server.
    pub(crate) url: Option<String>,
    /// A NATS `.creds` file (user JWT and nkey seed).
    pub(crate) creds: Option<PathBuf>,
    /// A file holding an nkey seed (`SU…`).
    pub(crate) nkey_seed_file: Option<PathBuf>,
    /// A user name, with `password_file`.
    pub(crate) user: Option<String>,
    /// A file holding the password of `user`.
    pub(crate) password_file: Option<PathBuf>,
    /// Seconds a connection attempt may take [default: 2].
    pub(crate) connect_timeout_s: Option<f64>,
}

/// How a room server is reached.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Credential {
    None,
    Creds(PathBuf),
    NkeySeed(PathBuf),
    UserPassword {
        user: String,
        password_file: PathBuf,
    },
}

/// A usable room server configuration.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RoomServer {
    pub(crate) url: String,
    pub(crate) credential: Credential,
    pub(crate) connect_timeout: Duration,
    /// Where the URL came from, for `ag-room doctor`.
    pub(crate) url_from: String,
}

/// The room server `config` names: `AG_ROOM_URL` over the user config's `[rooms] url`; `None`
/// when neither names one (rooms are files).
pub(crate) fn server(config: &super::Config) -> Result<Option<RoomServer>, String> {
    let file = config.user_file.as_ref();
    let (url, url_from) = match (&config.room_url, &config.rooms.url) {
        (Some(u), _) => (u.clone(), "AG_ROOM_URL".to_string()),
        (None, Some(u)) => (
            u.clone(),
            file.map_or("the user config".into(), |f| f.display().to_string()),
        ),
        (None, None) => return Ok(None),
    };
    let base = file.and_then(|f| f.parent());
    resolve(&config.rooms, url.trim(), url_from, base).map(Some)
}

/// The file holding the room server's credential (a `.creds` file, an nkey seed, a password
/// file), which commands the agent runs must not read.
pub(crate) fn credential_file(config: &super::Config) -> Option<PathBuf> {
    match server(config).ok()??.credential {
        Credential::Creds(f) | Credential::NkeySeed(f) => Some(f),
        Credential::UserPassword { password_file, .. } => Some(password_file),
        Credential::None => None,
    }
}

/// Check a configuration and make its file names absolute (relative to the config file).
pub(crate) fn resolve(
    cfg: &RoomsConfig,
    url: &str,
    url_from: String,
    base: Option<&Path>,
) -> Result<RoomServer, String> {
    let scheme_ok = ["nats://", "tls://"].iter().any(|s| url.starts_with(s));
    if !scheme_ok || url.len() <= "tls://".len() {
        return Err(format!(
            "{url_from}: the room URL {url:?} is not nats://HOST:PORT or tls://HOST:PORT"
        ));
    }
    if url.contains('@') {
        return Err(format!(
            "{url_from}: the room URL carries a credential; name a creds file, an nkey seed file \
             or a user and password file in [rooms] instead"
        ));
    }
    let abs = |p: &PathBuf| match base {
        Some(b) if p.is_relative() => b.join(p),
        _ => p.clone(),
    };
    let credential = match (
        &cfg.creds,
        &cfg.nkey_seed_file,
        &cfg.user,
        &cfg.password_file,
    ) {
        (None, None, None, None) => Credential::None,
        (Some(c), None, None, None) => Credential::Creds(abs(c)),
        (None, Some(n), None, None) => Credential::NkeySeed(abs(n)),
        (None, None, Some(u), Some(p)) => Credential::UserPassword {
            user: u.clone(),
            password_file: abs(p),
        },
        (None, None, Some(_), None) | (None, None, None, Some(_)) => {
            return Err(format!(
                "{url_from}: [rooms] user and password_file go together"
            ))
        }
        _ => {
            return Err(format!(
                "{url_from}: [rooms] names more than one credential; use one of creds, \
                 nkey_seed_file, or user with password_file"
            ))
        }
    };
    let secs = cfg.connect_timeout_s.unwrap_or(2.0);
    if !(secs.is_finite() && secs > 0.0 && secs <= 600.0) {
        return Err(format!(
            "{url_from}: [rooms] connect_timeout_s must be between 0 and 600 seconds"
        ));
    }
    Ok(RoomServer {
        url: url.to_string(),
        credential,
        connect_timeout: Duration::from_secs_f64(secs),
        url_from,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_and_credentials_are_checked() {
        let cfg = RoomsConfig::default();
        assert!(resolve(&cfg, "nats://127.0.0.1:4222", "x".into(), None).is_ok());
        assert!(resolve(&cfg, "tls://h:4222", "x".into(), None).is_ok());
        assert!(resolve(&cfg, "http://h", "x".into(), None).is_err());
        let e = resolve(&cfg, "nats://me:secret@h:4222", "x".into(), None).unwrap_err();
        assert!(!e.contains("secret"), "{e}");
        let two = RoomsConfig {
            creds: Some("a.creds".into()),
            nkey_seed_file: Some("seed".into()),
            ..cfg.clone()
        };
        assert!(resolve(&two, "nats://h:1", "x".into(), None).is_err());
        let rel = RoomsConfig {
            creds: Some("a.creds".into()),
            ..cfg
        };
        let s = resolve(&rel, "nats://h:1", "x".into(), Some(Path::new("/cfg"))).unwrap();
        assert_eq!(s.credential, Credential::Creds("/cfg/a.creds".into()));
    }

    #[test]
    fn the_server_comes_from_the_resolved_config_and_the_variable_wins() {
        let mut config = crate::config::Config::default();
        assert_eq!(server(&config), Ok(None));
        assert_eq!(credential_file(&config), None);
        config.user_file = Some("/home/me/.config/ag/config.toml".into());
        config.rooms = RoomsConfig {
            url: Some("nats://team:4222".into()),
            creds: Some("team.creds".into()),
            ..RoomsConfig::default()
        };
        let s = server(&config).unwrap().unwrap();
        assert_eq!(s.url, "nats://team:4222");
        assert_eq!(s.url_from, "/home/me/.config/ag/config.toml");
        assert_eq!(
            credential_file(&config),
            Some("/home/me/.config/ag/team.creds".into())
        );
        config.room_url = Some("tls://other:4222".into());
        let s = server(&config).unwrap().unwrap();
        assert_eq!(
            (s.url.as_str(), s.url_from.as_str()),
            ("tls://other:4222", "AG_ROOM_URL")
        );
        config.rooms.nkey_seed_file = Some("seed".into());
        assert!(server(&config).is_err());
        assert_eq!(credential_file(&config), None);
    }
}
