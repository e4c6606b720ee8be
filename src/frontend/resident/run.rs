//! `gavel run` answered by a resident gavel. The resident process decides,
//! writes ahead, waits in the pending queue, consults grants and records,
//! through the very code `run` uses in its own process
//! ([`govern`]); the tool runs in the caller's process, in its environment
//! and working directory, and an ask is prompted on the caller's terminal,
//! each when the pipeline comes to it.
//!
//! On the socket, one JSON line each way at a time: the caller's request;
//! then, as the pipeline needs them, `ask` (the caller prompts and says
//! `answered`) and `execute` (the caller runs the tool and says `output`
//! or `failed`); last `ran` with the outcome, or `error`. A caller that
//! goes away is a cancelled ask (fail closed) or a failed call that says
//! so in the record. A resident process that goes away leaves the caller
//! with an error, and the call is not tried again: it may be recorded.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Job, Reply, send};
use crate::approval::{Answer, ApprovalChannel, Approver, CancelCause, TerminalApprover};
use crate::facts::Workspace;
use crate::frontend::hook::one_line;
use crate::frontend::run::{govern, outcome_json};
use crate::session::{RunAsks, SessionError, Setup};
use crate::tools::{Registry, ToolContext, ToolError, ToolHandler, ToolOutput};
use crate::{ApprovalStatus, Decision, ToolRequest};

/// The call `run` hands over.
#[derive(Serialize, Deserialize)]
pub(super) struct Call {
    request: ToolRequest,
    call_id: String,
    asks: RunAsks,
}

/// What the caller says when it is asked.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Said {
    Answered {
        status: ApprovalStatus,
        answer: Answer,
    },
    Output {
        content: String,
        exit_code: Option<i32>,
    },
    Failed {
        message: String,
        exit_code: Option<i32>,
    },
}

const GONE: &str = "the resident gavel (serve --socket) stopped answering in the middle of the call; \
it may be recorded, so it is not tried again (see gavel log)";

/// Hands the call to the resident process of `global`'s database, if one
/// answers: its outcome as `run` prints it, or `None` when this process is
/// to run the call itself (nothing was recorded).
pub fn forward(
    setup: &Setup,
    request: &ToolRequest,
    call_id: &str,
    asks: RunAsks,
    context: &dyn Fn(&Workspace) -> ToolContext,
) -> Option<Result<Value, SessionError>> {
    let mut pinned = setup.clone();
    if pinned.workspace.is_none() {
        pinned.workspace = Some(std::env::current_dir().ok()?);
    }
    let call = Call {
        request: request.clone(),
        call_id: call_id.to_owned(),
        asks,
    };
    let stream = send(&pinned, Job::Run(call))?;
    let mut lines = BufReader::new(&stream);
    let mut started = false;
    let mut executed = false;
    loop {
        let mut line = String::new();
        let reply = match lines.read_line(&mut line) {
            Ok(1..) => serde_json::from_str::<Reply>(&line).ok(),
            _ => None,
        };
        let said = match reply {
            Some(Reply::Yourself { .. }) if !started => return None,
            Some(Reply::Ran { outcome }) => return Some(Ok(outcome)),
            Some(Reply::Error { message }) => return Some(Err(SessionError::Call(message))),
            Some(Reply::Ask { request, decision }) => prompt_here(&request, &decision),
            // Only this call's tool with this call's arguments, and once.
            Some(Reply::Execute { tool, arguments })
                if !executed && tool == request.name && arguments == request.arguments =>
            {
                executed = true;
                execute_here(&pinned, context, &tool, &arguments)
            }
            // Gone, or saying what is not this call: never tried again.
            _ => return Some(Err(SessionError::Call(GONE.to_owned()))),
        };
        started = true;
        let mut said = serde_json::to_vec(&said).unwrap_or_default();
        said.push(b'\n');
        if (&stream).write_all(&said).is_err() {
            return Some(Err(SessionError::Call(GONE.to_owned())));
        }
    }
}

/// Asks the person at this terminal, as `run` does in its own process.
fn prompt_here(request: &ToolRequest, decision: &Decision) -> Said {
    let mut terminal = TerminalApprover::new();
    let status = terminal.approve(request, decision);
    Said::Answered {
        status,
        answer: Answer {
            channel: terminal.channel(),
            approver: terminal.approver(),
            cause: terminal.cause(),
        },
    }
}

/// Runs the built-in tool here, with this process's limits.
fn execute_here(
    setup: &Setup,
    context: &dyn Fn(&Workspace) -> ToolContext,
    tool: &str,
    arguments: &Value,
) -> Said {
    let failed = |message: String| Said::Failed {
        message,
        exit_code: None,
    };
    let workspace = match setup.workspace() {
        Ok(workspace) => workspace,
        Err(err) => return failed(one_line(&err)),
    };
    let tools = Registry::builtin();
    let Some(handler) = tools.get(tool) else {
        return failed(format!("no handler is registered for tool `{tool}`"));
    };
    let context = context(&workspace);
    match catch_unwind(AssertUnwindSafe(|| handler.call(arguments, &context))) {
        Ok(Ok(output)) => Said::Output {
            content: output.content,
            exit_code: output.exit_code,
        },
        Ok(Err(err)) => Said::Failed {
            message: err.to_string(),
            exit_code: err.exit_code(),
        },
        Err(_) => failed(format!("handler for `{tool}` panicked")),
    }
}

/// The caller's end of the socket, shared by its tools and its prompt.
struct Caller {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
}

impl Caller {
    /// Says `reply` and reads what the caller says to it; `None` when the
    /// caller went away or said something else.
    fn exchange(&mut self, reply: &Reply) -> Option<Said> {
        let mut line = serde_json::to_vec(reply).ok()?;
        line.push(b'\n');
        self.writer.write_all(&line).ok()?;
        let mut said = String::new();
        match self.reader.read_line(&mut said) {
            Ok(1..) => serde_json::from_str(&said).ok(),
            _ => None,
        }
    }
}

type Shared = Arc<Mutex<Caller>>;

fn exchange(caller: &Shared, reply: &Reply) -> Option<Said> {
    caller.lock().ok()?.exchange(reply)
}

/// A built-in tool, run in the caller's process.
struct There {
    tool: String,
    caller: Shared,
}

impl ToolHandler for There {
    fn call(&self, arguments: &Value, _: &ToolContext) -> Result<ToolOutput, ToolError> {
        let execute = Reply::Execute {
            tool: self.tool.clone(),
            arguments: arguments.clone(),
        };
        match exchange(&self.caller, &execute) {
            Some(Said::Output { content, exit_code }) => Ok(ToolOutput { content, exit_code }),
            Some(Said::Failed { message, exit_code }) => {
                Err(ToolError::Elsewhere { message, exit_code })
            }
            _ => Err(ToolError::Elsewhere {
                message: "gavel run went away before it said what the tool did \
                          (whether it ran is not known)"
                    .to_owned(),
                exit_code: None,
            }),
        }
    }
}

/// The ask, prompted on the caller's terminal; a caller that went away
/// is a cancelled ask.
struct PromptThere {
    caller: Shared,
    answer: Option<Answer>,
}

impl Approver for PromptThere {
    fn approve(&mut self, request: &ToolRequest, decision: &Decision) -> ApprovalStatus {
        let ask = Reply::Ask {
            request: Box::new(request.clone()),
            decision: Box::new(decision.clone()),
        };
        match exchange(&self.caller, &ask) {
            Some(Said::Answered { status, answer }) => {
                self.answer = Some(answer);
                status
            }
            _ => {
                self.answer = None;
                ApprovalStatus::Cancelled
            }
        }
    }

    fn channel(&self) -> ApprovalChannel {
        self.answer
            .as_ref()
            .map_or(ApprovalChannel::Tty, |a| a.channel)
    }

    fn approver(&self) -> Option<String> {
        self.answer.as_ref().and_then(|a| a.approver.clone())
    }

    fn cause(&self) -> Option<CancelCause> {
        match &self.answer {
            Some(answer) => answer.cause,
            None => Some(CancelCause::Eof),
        }
    }
}

/// Runs the call handed over on `stream`: the reply that ends it.
pub(super) fn answer(setup: &Setup, call: Call, stream: &UnixStream) -> Reply {
    let (Ok(reader), Ok(writer)) = (stream.try_clone(), stream.try_clone()) else {
        return Reply::Yourself {
            why: "cannot share the connection".to_owned(),
        };
    };
    let caller = Arc::new(Mutex::new(Caller {
        reader: BufReader::new(reader),
        writer,
    }));
    let mut tools = Registry::empty();
    for tool in Registry::builtin().names() {
        let there = There {
            tool: tool.to_owned(),
            caller: Arc::clone(&caller),
        };
        tools.insert(tool, there);
    }
    let governed = catch_unwind(AssertUnwindSafe(|| {
        govern(
            setup,
            &call.request,
            &call.call_id,
            call.asks,
            tools,
            |workspace| ToolContext::new(workspace.clone()),
            || {
                Box::new(PromptThere {
                    caller: Arc::clone(&caller),
                    answer: None,
                })
            },
        )
    }));
    match governed {
        Ok(Ok(outcome)) => Reply::Ran {
            outcome: outcome_json(&outcome),
        },
        Ok(Err(err)) => Reply::Error {
            message: one_line(&err),
        },
        Err(_) => Reply::Error {
            message: "internal error in the resident gavel".to_owned(),
        },
    }
}
