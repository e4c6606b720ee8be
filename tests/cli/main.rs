//! Integration tests: the library's governed pipeline through its public API,
//! and the real `gavel` binary against temporary workspaces. One test binary,
//! one module per area.

mod check;
mod demo;
mod hook;
mod pipeline;
mod policy;
mod replay;
mod run;
mod serve;
mod support;
