//! Integration tests: the library's governed pipeline through its public API,
//! and the real `gavel` binary against temporary workspaces. One test binary,
//! one module per area.

mod query;
mod store;
// Shared with the other areas' tests; not every helper is used by every area.
#[allow(dead_code)]
mod support;
mod tamper;
