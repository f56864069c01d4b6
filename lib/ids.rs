//! Identifiers: uuid v7 for sessions, chunks, turns and messages, and the short handles
//! people type (`kqzvxm`). Ids are never shortened for display: people see a session's handle
//! (`Store::shown`), and an id without one whole.
//!
//! Ids are made in bulk (one per chunk), so the random part comes from a per-thread generator
//! seeded once from the OS rather than a system call per id. Within one millisecond a counter
//! keeps ids increasing, so ids sort in creation order within a process.

use std::cell::Cell;
use std::time::{SystemTime, UNIX_EPOCH};

thread_local! {
    /// (last millisecond used, counter within it, generator state)
    static STATE: Cell<(u64, u16, u64)> = Cell::new((0, 0, seed()));
}

fn seed() -> u64 {
    // The last eight bytes of a v7 id from the uuid crate are OS randomness.
    let b = *uuid::Uuid::now_v7().as_bytes();
    u64::from_le_bytes([b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]]) | 1
}

fn next(state: &mut u64) -> u64 {
    // xorshift64*: fast, and only uniqueness (not secrecy) is asked of these bits.
    let mut x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    x.wrapping_mul(0x2545_F491_4F6C_DD1D)
}

/// A new time-ordered id (uuid v7, hyphenated lower-case).
pub(crate) fn new_id() -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    let (ms, counter, random) = STATE.with(|s| {
        let (last, counter, mut rng) = s.get();
        let r = next(&mut rng);
        let (ms, counter) = if now > last {
            // A fresh millisecond starts the counter low but random, leaving room to count.
            (now, (r >> 52) as u16 & 0x3ff)
        } else if counter < 0xfff {
            (last, counter + 1)
        } else {
            (last + 1, 0)
        };
        s.set((ms, counter, rng));
        (ms, counter, next(&mut rng) ^ r.rotate_left(17))
    });
    let mut bytes = [0u8; 10];
    bytes[..2].copy_from_slice(&counter.to_be_bytes());
    bytes[2..].copy_from_slice(&random.to_le_bytes());
    let id = uuid::Builder::from_unix_timestamp_millis(ms, &bytes).into_uuid();
    // Encoded into a buffer rather than through `Display`: one per chunk written.
    let mut buf = [0u8; uuid::fmt::Hyphenated::LENGTH];
    id.hyphenated().encode_lower(&mut buf).to_string()
}

/// Letters of a handle: `k`..`z`, none a hex digit, so a handle never reads as an id prefix
/// (the way jj keeps change ids apart from commit ids).
const HANDLE_LETTERS: &[u8; 16] = b"klmnopqrstuvwxyz";

/// Characters in a session or turn handle.
pub(crate) const HANDLE_LEN: usize = 6;

fn letters(mut bits: u64) -> String {
    (0..HANDLE_LEN)
        .map(|_| {
            let c = HANDLE_LETTERS[(bits & 0xf) as usize] as char;
            bits >>= 4;
            c
        })
        .collect()
}

/// A new random session handle (OS randomness; the store keeps it unique).
pub(crate) fn new_handle() -> String {
    let b = *uuid::Uuid::new_v4().as_bytes();
    letters(u64::from_le_bytes([
        b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7],
    ]))
}

/// A turn's handle, derived from its id: stable in every fork that shares the turn, and
/// random because the id's tail is.
pub(crate) fn turn_handle(turn_id: &str) -> String {
    // FNV-1a: a fixed, dependency-free hash whose output never changes between builds.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in turn_id.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    letters(h ^ (h >> 29))
}

/// Whether `s` could be (a prefix of) a handle.
pub(crate) fn looks_like_handle(s: &str) -> bool {
    !s.is_empty() && s.len() <= HANDLE_LEN && s.bytes().all(|b| HANDLE_LETTERS.contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_are_letters_k_to_z_and_turn_handles_are_stable() {
        let h = new_handle();
        assert_eq!(h.len(), HANDLE_LEN);
        assert!(looks_like_handle(&h), "{h}");
        assert!(!looks_like_handle("abc123"));
        let id = new_id();
        assert_eq!(turn_handle(&id), turn_handle(&id));
        assert_ne!(turn_handle(&id), turn_handle(&new_id()));
    }

    #[test]
    fn ids_are_v7_unique_and_increasing() {
        let ids: Vec<String> = (0..20_000).map(|_| new_id()).collect();
        for w in ids.windows(2) {
            assert!(w[0] < w[1], "{} !< {}", w[0], w[1]);
        }
        let parsed = uuid::Uuid::parse_str(&ids[0]).unwrap();
        assert_eq!(parsed.get_version_num(), 7);
        let mut set = std::collections::HashSet::new();
        assert!(ids.iter().all(|i| set.insert(i.clone())));
    }
}
