//! The two buckets. Claims: one key a room, whose value is the room's claim lines that still
//! matter (a JSON array), replaced with compare-and-set on its revision, so of two claimers
//! that read the same revision exactly one writes. Presence: one key a session, `TOKEN.KEY`,
//! which the bucket's max age removes when the session stops refreshing it.

use super::conn::Connected;
use crate::room::backend::Present;
use crate::room::{Line, LineKind};
use async_nats::jetstream::kv::{CreateErrorKind, UpdateErrorKind};

/// A session id as a key component: letters, digits, `-` and `_` kept, the rest `_`.
pub(crate) fn key_part(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The room's claim lines and the revision they were read at.
pub(crate) async fn claims_entry(
    c: &Connected,
    token: &str,
) -> Result<Option<(Vec<Line>, u64)>, String> {
    let Some(e) = c
        .claims()
        .await?
        .entry(token)
        .await
        .map_err(|e| e.to_string())?
    else {
        return Ok(None);
    };
    if e.value.is_empty() {
        return Ok(Some((Vec::new(), e.revision)));
    }
    let lines: Vec<Line> = serde_json::from_slice(&e.value)
        .map_err(|e| format!("the claims of this room are damaged: {e}"))?;
    Ok(Some((lines, e.revision)))
}

/// Write the claim lines if the key is still at `revision` (0: the key must not exist yet).
/// `false` when someone else wrote first.
pub(crate) async fn claims_write(
    c: &Connected,
    token: &str,
    lines: &[Line],
    revision: u64,
) -> Result<bool, String> {
    let bytes = serde_json::to_vec(lines).map_err(|e| e.to_string())?;
    let claims = c.claims().await?;
    if revision == 0 {
        return match claims.create(token, bytes.into()).await {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == CreateErrorKind::AlreadyExists => Ok(false),
            Err(e) => Err(e.to_string()),
        };
    }
    match claims.update(token, bytes.into(), revision).await {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == UpdateErrorKind::WrongLastRevision => Ok(false),
        Err(e) => Err(e.to_string()),
    }
}

/// The claim lines after `new`: claims released or expired are dropped, and so are the
/// release lines that ended them (what is left folds to the same active claims).
pub(crate) fn prune(mut lines: Vec<Line>, new: &Line) -> Vec<Line> {
    lines.push(new.clone());
    let now = crate::clock::now_ms();
    let released: std::collections::HashSet<String> = lines
        .iter()
        .filter(|l| l.ty == LineKind::Release)
        .flat_map(|l| l.claims.clone().unwrap_or_default())
        .collect();
    lines
        .into_iter()
        .filter(|l| match l.ty {
            LineKind::Claim => {
                let ttl = l.ttl_s.unwrap_or(crate::room::claim_index::DEFAULT_TTL_S);
                let ms = i64::try_from(ttl).unwrap_or(i64::MAX).saturating_mul(1000);
                !released.contains(&l.id) && l.ts_ms().saturating_add(ms) > now
            }
            _ => false,
        })
        .collect()
}

/// The fresh presence entries under `prefix` (`TOKEN.`). Staleness is the server's (the
/// bucket's max age removes an entry not refreshed): machines' clocks may differ.
///
/// The keys come from the stream's subjects and each value from a direct read of its latest
/// message, all of them requests the server answers at once. (The client's key listing is a
/// consumer that decides it is done from a pending count taken when it starts: an entry that
/// left meanwhile kept it waiting for ever, and a running agent at its step boundary with it.)
pub(crate) async fn present(c: &Connected, prefix: &str) -> Result<Vec<Present>, String> {
    let presence = c.presence().await?;
    let filter = format!("{}{prefix}>", presence.prefix);
    let mut subjects = presence
        .stream
        .info_with_subjects(&filter)
        .await
        .map_err(|e| e.to_string())?;
    let mut keys = Vec::new();
    while let Some(s) = super::next_within(&mut subjects).await? {
        let (subject, _) = s.map_err(|e| e.to_string())?;
        if let Some(key) = subject.strip_prefix(presence.prefix.as_str()) {
            keys.push(key.to_string());
        }
    }
    keys.sort();
    let mut out = Vec::new();
    for k in keys {
        // A key deleted (its session left) or removed by age since the listing reads as none.
        let Some(v) = presence.get(&k).await.map_err(|e| e.to_string())? else {
            continue;
        };
        if let Ok(p) = serde_json::from_slice::<Present>(&v) {
            out.push(p);
        }
    }
    Ok(out)
}
