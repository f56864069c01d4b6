//! Identifiers: uuid v7 for sessions, chunks, turns and messages; short display prefixes.

/// A new time-ordered id (uuid v7, hyphenated lower-case).
pub fn new_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// The shortest display prefix we show for an id: 8 characters (the caller widens it when
/// two ids on screen would collide).
pub fn short(id: &str) -> &str {
    let end = id.char_indices().nth(8).map_or(id.len(), |(i, _)| i);
    &id[..end]
}
