//! `ag`: the library behind the `ag-*` commands.
//!
//! Lower modules never import higher ones: `ids clock text follow paths live proc policy` →
//! `sandbox settings config secrets` (config names the keys that secrets withdraws) → `log
//! fold reduce structured import usage` (pure) → `store` → `net` → `provider tools room mcp` →
//! `context export record` → `fork agent summon` → `acp` → `cli`. Only what the commands,
//! benches, xtask and tests name is `pub`; the lint below keeps a `pub` from standing where
//! nothing outside the crate can reach it.

#![warn(unreachable_pub)]

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
pub(crate) mod usage;

pub(crate) mod mcp;
pub(crate) mod net;
pub mod provider;
pub mod room;
pub mod store;
pub mod tools;

pub(crate) mod context;
pub(crate) mod export;
pub(crate) mod record;

pub(crate) mod agent;
pub(crate) mod commands;
pub mod fork;
pub(crate) mod summon;

pub(crate) mod acp;

pub mod cli;
