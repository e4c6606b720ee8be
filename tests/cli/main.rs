//! Integration tests: the real `gavel` binary against temporary workspaces
//! and real SQLite files. One module per area.

mod hook;
mod serve;
