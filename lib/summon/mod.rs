//! Agent definitions and spawning (DESIGN §7): subagents (children of a session, retrievable)
//! and user agents (independent, fire-and-forget), run as detached `ag-prompt` processes.

mod checks;
pub(crate) mod claude;
pub(crate) mod defs;
mod error;
pub(crate) mod remove;
pub(crate) mod spawn;

pub(crate) use defs::{AgentDef, Catalog, Origin};
