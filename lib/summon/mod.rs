//! Agent definitions and spawning (DESIGN §7): subagents (children of a session, retrievable)
//! and user agents (independent, fire-and-forget), run as detached `ag-prompt` processes.

pub mod defs;
pub mod spawn;

pub use defs::{AgentDef, Catalog};
