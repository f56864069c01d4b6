//! `ag`: the library behind the `ag-*` commands.
//!
//! Lower modules never import higher ones: `ids clock paths proc sandbox config` → `log fold
//! reduce policy settings` (pure) → `store` → `net` → `provider tools room` → `context` →
//! `fork agent summon` → `cli`.

pub(crate) mod clock;
pub mod config;
pub(crate) mod follow;
pub(crate) mod ids;
pub(crate) mod live;
pub mod paths;
pub(crate) mod proc;
pub(crate) mod sandbox;
pub(crate) mod secrets;
pub(crate) mod settings;
pub(crate) mod text;

pub mod fold;
pub(crate) mod import;
pub mod log;
pub mod policy;
pub mod reduce;
pub(crate) mod structured;

pub(crate) mod mcp;
pub(crate) mod net;
pub mod provider;
pub mod room;
pub mod store;
pub mod tools;

pub(crate) mod context;
pub(crate) mod export;

pub(crate) mod agent;
pub mod fork;
pub(crate) mod summon;

pub mod cli;
