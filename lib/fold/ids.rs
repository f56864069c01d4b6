//! Tool-call ids as providers accept them. A log may hold any id (imported transcripts,
//! hand-written NDJSON): Anthropic takes `^[a-zA-Z0-9_-]+$`, OpenAI at most 40 characters.
//! An id that fits both is sent as it is, so existing logs fold to the same bytes; any other
//! becomes a deterministic replacement (its safe characters, cut, plus a digest of the
//! original), the same for a call and its result, and different for different originals.

use std::borrow::Cow;

use crate::log::{Chunk, ChunkData};

/// The longest id sent: OpenAI's limit.
pub(crate) const MAX_ID_LEN: usize = 40;

/// Whether an id goes to every provider as it is.
pub(crate) fn id_ok(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_ID_LEN
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The id a provider is sent for `id`.
pub(crate) fn wire_id(id: &str) -> Cow<'_, str> {
    if id_ok(id) {
        return Cow::Borrowed(id);
    }
    let mut h: u64 = 0xcbf29ce484222325;
    for b in id.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x100000001b3);
    }
    let safe: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(MAX_ID_LEN - 9)
        .collect();
    Cow::Owned(format!("{safe}_{:08x}", (h ^ (h >> 32)) as u32))
}

/// The log with every call id in the form providers accept; the log itself when all are.
pub(super) fn sanitized(chunks: &[Chunk]) -> Cow<'_, [Chunk]> {
    let bad = |c: &Chunk| match &c.data {
        ChunkData::ToolCall { call_id, .. } | ChunkData::ToolResult { call_id, .. } => {
            !id_ok(call_id)
        }
        _ => false,
    };
    if !chunks.iter().any(bad) {
        return Cow::Borrowed(chunks);
    }
    let mut owned = chunks.to_vec();
    owned.iter_mut().for_each(sanitize);
    Cow::Owned(owned)
}

/// The chunk with its call id in the form providers accept.
pub(super) fn sanitize(c: &mut Chunk) {
    if let ChunkData::ToolCall { call_id, .. } | ChunkData::ToolResult { call_id, .. } = &mut c.data
    {
        if let Cow::Owned(new) = wire_id(call_id) {
            *call_id = new;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn good_ids_stay_and_bad_ones_are_replaced() {
        assert_eq!(
            wire_id("toolu_01FdQ8qTyVyZjE3Kw4dguQGx"),
            "toolu_01FdQ8qTyVyZjE3Kw4dguQGx"
        );
        assert_eq!(wire_id("call-structured-001"), "call-structured-001");
        let w = wire_id("call:1/bad id");
        assert!(w.starts_with("call_1_bad_id_"), "{w}");
        assert!(id_ok(&w));
        assert_ne!(wire_id("call:1"), wire_id("call/1"));
    }

    proptest! {
        #[test]
        fn every_id_becomes_one_both_providers_take_the_same_way_every_time(
            a in ".{0,80}",
            b in ".{0,80}",
        ) {
            let wa = wire_id(&a).into_owned();
            prop_assert_eq!(&wa, &wire_id(&a).into_owned());
            prop_assert!(id_ok(&wa), "{:?} -> {:?}", a, wa);
            if a != b {
                prop_assert_ne!(wa, wire_id(&b).into_owned());
            }
        }
    }
}
