//! Lifecycle hooks: observers of the pipeline. They see each stage through
//! shared references and return nothing, so they cannot change a request,
//! a decision or a result; a hook that panics is contained and ignored.

use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::approval::Resolution;
use crate::audit::ToolResult;
use crate::request::ToolRequest;

/// A moment in a call's (or a session's) life.
#[derive(Debug, Clone, Copy)]
pub enum HookEvent<'a> {
    PreToolUse(&'a ToolRequest),
    PermissionDecision(&'a ToolRequest, &'a Resolution),
    PostToolUse(&'a ToolRequest, &'a ToolResult),
    UserPromptSubmit(&'a str),
    Stop,
}

impl HookEvent<'_> {
    /// The event's name as agents spell it (`PreToolUse`, ...).
    pub fn name(&self) -> &'static str {
        match self {
            HookEvent::PreToolUse(_) => "PreToolUse",
            HookEvent::PermissionDecision(..) => "PermissionDecision",
            HookEvent::PostToolUse(..) => "PostToolUse",
            HookEvent::UserPromptSubmit(_) => "UserPromptSubmit",
            HookEvent::Stop => "Stop",
        }
    }
}

type Observer = Box<dyn Fn(&HookEvent<'_>) + Send + Sync>;

/// Registered observers, called in registration order.
#[derive(Default)]
pub struct Hooks {
    observers: Vec<Observer>,
}

impl Hooks {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn observe(&mut self, observer: impl Fn(&HookEvent<'_>) + Send + Sync + 'static) {
        self.observers.push(Box::new(observer));
    }

    pub fn emit(&self, event: HookEvent<'_>) {
        for observer in &self.observers {
            let _ = catch_unwind(AssertUnwindSafe(|| observer(&event)));
        }
    }
}
