//! gavel governs the tool calls of AI agents: policy, approval, execution,
//! and an audit record that no one can quietly rewrite.

pub mod shell;
