//! End-to-end tests: the real binaries against a real SQLite store in a temporary home.

mod support;

mod answers;
mod compaction;
mod compaction_peers;
mod export;
mod fake_provider;
mod faults;
mod faults_disk;
mod fork;
mod generated;
mod import;
mod keepalive;
mod log_append;
mod log_read;
mod mcp;
mod network;
mod prompt;
mod prompt_guard;
mod prompt_models;
mod prompt_queue;
mod prompt_retries;
mod provider;
mod recall;
mod refs;
mod room;
mod room_mcp;
mod sandbox;
mod sandbox_procs;
mod scale;
mod snapshots;
mod stop_reasons;
mod summon;
mod trust;
mod typed_config;
mod walkthrough;
