//! The MCP proxy (`gavel mcp`): gavel sits between an MCP client and a
//! stdio MCP server, relays their newline-delimited JSON-RPC untouched, and
//! puts every `tools/call` through the same pipeline as every other client
//! (policy, approval, the chained record) before the server sees it.
//!
//! - [`jsonrpc`]: reading and writing JSON-RPC messages.
//! - [`names`]: the server's name and the tool names (`mcp__NAME__TOOL`).
//! - [`session`]: what each message means, without I/O; [`results`]: a
//!   call's result from the server's answer, and gavel's elicitation.
//! - [`definitions`]: tool definitions, digested and recorded once per change.
//! - [`relay`]: the pipes, the threads and the clock.
//! - Streamable HTTP (`--listen`, `--upstream`): [`http`], the HTTP/1.1
//!   server the client talks to; [`upstream`], the client of the remote
//!   server; [`sse`], event streams; [`hub`], which runs one [`Session`]
//!   per client session between them; [`bridge`], stdio to the client and
//!   HTTP to the server (`--upstream` without `--listen`).
//! - [`wrap`], [`wrap_json`], [`wrap_toml`], [`wrap_file`]: putting a
//!   client's configured servers behind `gavel mcp` and back, editing its
//!   file in place (JSON and JSON with comments; Codex's TOML), and giving
//!   back the very bytes `wrap` found when nothing changed since.
//!
//! It builds `ToolRequest`s and hands them to `GovernedRunner`; it knows
//! nothing of the command line.

pub mod bridge;
pub mod definitions;
pub mod http;
pub mod hub;
pub mod jsonrpc;
pub mod names;
pub mod open;
pub mod relay;
pub mod results;
pub mod session;
pub mod sse;
pub mod upstream;
pub mod wrap;
pub mod wrap_file;
pub mod wrap_json;
pub mod wrap_toml;

#[cfg(test)]
mod tests;

pub use session::{Config, End, Out, Session};
