//! The front-ends that drive the session service (`crate::session`): each
//! reads its input, hands each call to [`crate::session::Service::call`],
//! and writes its answer in its own format. `hook` answers an agent
//! client's hook event (`hook_process` is the hook as a process), `run` one call from the command line, `serve` JSON
//! lines on stdin and stdout, `resident` hooks and runs handed over a Unix
//! socket to a resident gavel. The MCP proxy, the fifth, is `crate::mcp`.

pub mod hook;
pub mod hook_process;
pub mod resident;
pub mod run;
pub mod serve;
