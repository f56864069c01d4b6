//! `ag`: the library behind the `ag-*` commands.
//!
//! Lower modules never import higher ones: `ids clock paths proc sandbox config` → `log fold
//! reduce policy settings` (pure) → `store` → `net` → `provider tools room` → `context` →
//! `fork agent summon` → `cli`.

pub mod clock;
pub mod config;
pub mod follow;
pub mod ids;
pub mod live;
pub mod paths;
pub mod proc;
pub mod sandbox;
pub mod secrets;
pub mod settings;
pub mod text;

pub mod fold;
pub mod import;
pub mod log;
pub mod policy;
pub mod reduce;
pub mod structured;

pub mod mcp;
pub mod net;
pub mod provider;
pub mod room;
pub mod store;
pub mod tools;

pub mod context;
pub mod export;

pub mod agent;
pub mod fork;
pub mod summon;

pub mod cli;
