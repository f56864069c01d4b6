//! What can go wrong when summoning, sorted by what the caller does about it.

use crate::store::StoreError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SummonErrorKind {
    /// Bad input: an unknown agent, a wrong kind of definition, a cwd that does not exist.
    Usage,
    /// Not allowed: the user-agent permission, nesting, a cwd outside the parent's.
    Refused,
    NotFound,
    Other,
}

#[derive(Debug, Clone)]
pub(crate) struct SummonError {
    pub(crate) kind: SummonErrorKind,
    pub(crate) message: String,
    pub(crate) hint: Option<String>,
}

impl SummonError {
    pub(crate) fn new(kind: SummonErrorKind, message: impl Into<String>) -> SummonError {
        SummonError {
            kind,
            message: message.into(),
            hint: None,
        }
    }
    pub(crate) fn hint(mut self, h: impl Into<String>) -> SummonError {
        self.hint = Some(h.into());
        self
    }
}

impl std::fmt::Display for SummonError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)?;
        if let Some(h) = &self.hint {
            write!(f, " ({h})")?;
        }
        Ok(())
    }
}

impl From<StoreError> for SummonError {
    fn from(e: StoreError) -> Self {
        let kind = match e {
            StoreError::SessionNotFound(_) => SummonErrorKind::NotFound,
            _ => SummonErrorKind::Other,
        };
        SummonError::new(kind, e.to_string())
    }
}
