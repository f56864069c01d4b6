//! Identifiers: uuid v7 for sessions, chunks, turns and messages; short display prefixes.
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
pub fn new_id() -> String {
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
    uuid::Builder::from_unix_timestamp_millis(ms, &bytes)
        .into_uuid()
        .to_string()
}

/// The shortest display prefix we show for an id: 8 characters (the caller widens it when
/// two ids on screen would collide).
pub fn short(id: &str) -> &str {
    let end = id.char_indices().nth(8).map_or(id.len(), |(i, _)| i);
    &id[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

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
