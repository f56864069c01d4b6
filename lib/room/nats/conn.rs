//! The connection to the room server: credentials read from the files the config names,
//! the rooms stream and the two buckets made on first use, and `ag-room doctor`'s checks.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::OnceCell;

use async_nats::jetstream::{self, kv, stream};
use async_nats::{ConnectErrorKind, ConnectOptions};

use super::{CLAIMS, OP_TIMEOUT, PRESENCE, STALE_AFTER, STREAM, SUBJECT_PREFIX};
use crate::config::rooms::{Credential, RoomServer};
use crate::room::{RoomError, MAX_LINE};

/// A live connection and what rooms use of it.
#[derive(Clone)]
pub(crate) struct Connected {
    pub(crate) client: async_nats::Client,
    pub(crate) js: jetstream::Context,
    pub(crate) stream: stream::Stream,
    claims: Arc<OnceCell<kv::Store>>,
    presence: Arc<OnceCell<kv::Store>>,
}

impl Connected {
    /// The claims bucket, opened (or made) on first use: a `tell` never needs it.
    pub(crate) async fn claims(&self) -> Result<kv::Store, String> {
        let b = self
            .claims
            .get_or_try_init(|| bucket(&self.js, CLAIMS, Duration::ZERO));
        b.await.cloned()
    }

    /// The presence bucket, opened (or made) on first use.
    pub(crate) async fn presence(&self) -> Result<kv::Store, String> {
        let b = self
            .presence
            .get_or_try_init(|| bucket(&self.js, PRESENCE, STALE_AFTER));
        b.await.cloned()
    }
}

/// How the config reaches the server, without the secret.
pub(crate) fn describe_credential(c: &Credential) -> String {
    match c {
        Credential::None => "no credential".into(),
        Credential::Creds(p) => format!("creds file {}", p.display()),
        Credential::NkeySeed(p) => format!("nkey seed file {}", p.display()),
        Credential::UserPassword {
            user,
            password_file,
        } => format!("user {user} with password file {}", password_file.display()),
    }
}

/// A secret from a file: its first line, trimmed. The value is never put in an error.
fn secret(path: &std::path::Path, what: &str) -> Result<String, RoomError> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        RoomError::Config(format!("cannot read the {what} {}: {e}", path.display()))
    })?;
    let s = text.lines().next().unwrap_or("").trim().to_string();
    if s.is_empty() {
        return Err(RoomError::Config(format!(
            "the {what} {} is empty",
            path.display()
        )));
    }
    Ok(s)
}

async fn options(s: &RoomServer) -> Result<ConnectOptions, RoomError> {
    let mut o = ConnectOptions::new()
        .name("ag")
        .connection_timeout(s.connect_timeout)
        .request_timeout(Some(OP_TIMEOUT));
    o = match &s.credential {
        Credential::None => o,
        Credential::Creds(p) => o.credentials_file(p).await.map_err(|e| {
            RoomError::Config(format!("cannot read the creds file {}: {e}", p.display()))
        })?,
        Credential::NkeySeed(p) => o.nkey(secret(p, "nkey seed file")?),
        Credential::UserPassword {
            user,
            password_file,
        } => o.user_and_password(user.clone(), secret(password_file, "password file")?),
    };
    if s.url.starts_with("tls://") {
        o = o.require_tls(true);
    }
    Ok(o)
}

/// Connect, and make the stream and buckets when they are missing.
pub(crate) async fn connect(s: RoomServer) -> Result<Connected, RoomError> {
    let client = options(&s)
        .await?
        .connect(s.url.as_str())
        .await
        .map_err(|e| {
            let why = e.to_string();
            match e.kind() {
                ConnectErrorKind::AuthorizationViolation | ConnectErrorKind::Authentication => {
                    RoomError::Config(format!(
                        "the room server {} refused the credential ({}): {why}",
                        s.url,
                        describe_credential(&s.credential)
                    ))
                }
                ConnectErrorKind::ServerParse | ConnectErrorKind::Tls => {
                    RoomError::Config(format!("cannot use the room server {}: {why}", s.url))
                }
                _ => RoomError::Unavailable(format!(
                    "cannot reach the room server {} ({}): {why}",
                    s.url, s.url_from
                )),
            }
        })?;
    let mut js = jetstream::new(client.clone());
    js.set_timeout(OP_TIMEOUT);
    let fail = |what: &str, e: String| {
        RoomError::Unavailable(format!(
            "the room server {} cannot give {what} (is JetStream on? `nats-server -js`): {e}",
            s.url
        ))
    };
    let stream = made_or_found(&js, stream_config())
        .await
        .map_err(|e| fail(&format!("the stream {STREAM}"), e))?;
    Ok(Connected {
        client,
        js,
        stream,
        claims: Arc::default(),
        presence: Arc::default(),
    })
}

fn stream_config() -> stream::Config {
    stream::Config {
        name: STREAM.into(),
        subjects: vec![format!("{SUBJECT_PREFIX}>")],
        storage: stream::StorageType::File,
        duplicate_window: Duration::from_secs(120),
        max_message_size: MAX_LINE as i32,
        allow_direct: true,
        ..Default::default()
    }
}

async fn bucket(
    js: &jetstream::Context,
    name: &str,
    max_age: Duration,
) -> Result<kv::Store, String> {
    if let Ok(b) = js.get_key_value(name).await {
        return Ok(b);
    }
    // The bucket's stream, made as the KV API makes it (`create_key_value` first asks for
    // account details that a 2.9 server answers in a shape this client does not read).
    made_or_found(
        js,
        stream::Config {
            name: format!("KV_{name}"),
            subjects: vec![format!("$KV.{name}.>")],
            max_messages_per_subject: 1,
            max_age,
            storage: stream::StorageType::File,
            allow_rollup: true,
            deny_delete: true,
            allow_direct: true,
            discard: stream::DiscardPolicy::New,
            num_replicas: 1,
            ..Default::default()
        },
    )
    .await?;
    js.get_key_value(name).await.map_err(|e| e.to_string())
}

/// The stream `config` names, made when it is missing. Several first users race to make it:
/// a server can refuse the losers ("subjects overlap with an existing stream") while the
/// winner's stream is being made, so a refused creation looks for the stream once more.
async fn made_or_found(
    js: &jetstream::Context,
    config: stream::Config,
) -> Result<stream::Stream, String> {
    let name = config.name.clone();
    match js.get_or_create_stream(config).await {
        Ok(s) => Ok(s),
        Err(made) => js.get_stream(&name).await.map_err(|_| made.to_string()),
    }
}

/// The stream and buckets, one line each.
pub(crate) async fn check(c: Connected) -> Vec<(bool, String)> {
    let mut out = Vec::new();
    match c.stream.get_info().await {
        Ok(i) => out.push((
            true,
            format!(
                "stream: {STREAM} holds {} messages in {} rooms",
                i.state.messages, i.state.subjects_count
            ),
        )),
        Err(e) => out.push((false, format!("stream: {STREAM}: {e}"))),
    }
    for (name, b) in [(CLAIMS, c.claims().await), (PRESENCE, c.presence().await)] {
        let b = match b {
            Ok(b) => b,
            Err(e) => {
                out.push((false, format!("bucket: {name}: {e}")));
                continue;
            }
        };
        match b.status().await {
            Ok(s) => out.push((true, format!("bucket: {name} holds {} keys", s.values()))),
            Err(e) => out.push((false, format!("bucket: {name}: {e}"))),
        }
    }
    out
}
