//! What a room line is (its `type`): speech, a receipt, a claim or a release. Our writers
//! only write the known kinds; a kind another writer (a newer version, another tool) wrote
//! is kept as it was, shown as it is, and takes part in nothing.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LineKind {
    /// Speech to the room, or a direct message (`to` set).
    Say,
    /// The addressee's loop put the message into its model's context.
    Delivered,
    /// The addressee acknowledged the message.
    Ack,
    /// A claim on paths.
    Claim,
    /// Claims released.
    Release,
    /// A kind this build does not know, as it was written.
    Other(String),
}

impl LineKind {
    pub(crate) fn as_str(&self) -> &str {
        match self {
            LineKind::Say => "say",
            LineKind::Delivered => "delivered",
            LineKind::Ack => "ack",
            LineKind::Claim => "claim",
            LineKind::Release => "release",
            LineKind::Other(s) => s,
        }
    }

    pub(crate) fn parse(s: &str) -> LineKind {
        match s {
            "say" => LineKind::Say,
            "delivered" => LineKind::Delivered,
            "ack" => LineKind::Ack,
            "claim" => LineKind::Claim,
            "release" => LineKind::Release,
            other => LineKind::Other(other.to_string()),
        }
    }
}

impl fmt::Display for LineKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for LineKind {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for LineKind {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = std::borrow::Cow::<str>::deserialize(d)?;
        Ok(LineKind::parse(&s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_round_trip_and_a_foreign_kind_is_kept() {
        for k in ["say", "delivered", "ack", "claim", "release", "wave"] {
            let kind: LineKind = serde_json::from_str(&format!("{k:?}")).unwrap();
            assert_eq!(kind.as_str(), k);
            assert_eq!(serde_json::to_string(&kind).unwrap(), format!("{k:?}"));
        }
        assert_eq!(LineKind::parse("wave"), LineKind::Other("wave".into()));
        assert_eq!(LineKind::parse("say"), LineKind::Say);
    }
}
