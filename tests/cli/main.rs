//! Integration tests: the library's governed pipeline through its public API,
//! and the real `gavel` binary against temporary workspaces and real SQLite
//! files. One test binary, one module per area.

mod anomalies;
mod approvals;
mod approvals_page;
mod approvers;
mod architecture;
mod authoring;
#[cfg(feature = "postgres")]
mod central;
#[cfg(feature = "postgres")]
mod central_read;
#[cfg(feature = "postgres")]
mod central_truth;
mod check;
mod ci_formats;
mod clients;
mod completions;
mod conformance;
mod demo;
mod differential;
mod doctor;
mod flows;
mod format;
mod frontends;
mod hook;
mod hook_exec;
mod layers;
mod mcp;
mod mcp_http;
mod mcp_http_real;
mod mcp_queue;
mod mcp_real;
mod notify;
mod ocsf;
mod ocsf_schema;
#[cfg(feature = "postgres")]
mod otlp;
mod passkeys;
mod paths;
mod pipeline;
mod policy;
mod pre_commit;
mod preset;
mod principal;
mod programs;
mod query;
mod quickstart;
mod real_clients;
mod real_clients_exec;
mod real_clients_model;
mod receipt;
mod redact;
mod replay;
mod report;
mod resident;
mod reviewer;
mod run;
mod sandbox;
mod serve;
mod shadow;
mod shell;
mod snapshots_human;
mod store;
mod suggest;
mod support;
mod tables;
mod tamper;
mod usability;
