//! Agent definitions and spawning (DESIGN §7): subagents (children of a session, retrievable)
//! and user agents (independent, fire-and-forget), run as detached `ag-prompt` processes.

mod checks;
mod claude;
pub mod defs;
mod error;
pub mod spawn;

pub use defs::{AgentDef, Catalog, Origin};
