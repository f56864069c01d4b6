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
    /// The store's error, when that is what failed: its exit status and hint (a busy store
    /// is a temporary failure, a full disk names the file) are the store's, not "other".
    pub(crate) store: Option<std::sync::Arc<StoreError>>,
}

impl SummonError {
    fn with_message_from_store(mut self) -> SummonError {
        if let Some(e) = &self.store {
            self.message = e.to_string();
        }
        self
    }

    pub(crate) fn new(kind: SummonErrorKind, message: impl Into<String>) -> SummonError {
        SummonError {
            kind,
            message: message.into(),
            hint: None,
            store: None,
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
        SummonError {
            store: Some(std::sync::Arc::new(e)),
            ..SummonError::new(kind, String::new())
        }
        .with_message_from_store()
    }
}
