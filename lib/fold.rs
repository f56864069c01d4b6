//! Fold: the log as a provider request (DESIGN §3).
