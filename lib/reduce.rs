//! Reduce: provider stream events to chunk ops.
