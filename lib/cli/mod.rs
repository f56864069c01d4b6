//! The command-line front ends.
