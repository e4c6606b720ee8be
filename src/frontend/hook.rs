//! A client's hook event (`gavel hook <client>`; the process around it is
//! `super::hook_process`): one event, answered
//! in the client's own format on stdout (`crate::clients` knows each
//! client's events, tools and answers). A tool call goes to the session
//! service ([`Service::call`]) with its ask routed to where the client or
//! the pending queue answers it; a completion completes the call it
//! matches; anything else is a lifecycle event.
//!
//! Exit codes follow the client, not gavel's table: 0 when the event was
//! recorded (a `deny` is an answer, not an error). Anything that goes wrong
//! (bad input, a bad policy, an unwritable record, a panic, a fatal signal)
//! ends in the client's fail-closed answer (`Client::fail_closed`): exit 2
//! (and, for clients that read it, a deny on stdout) wherever the client
//! would otherwise let the call run; exit 1 on events where 2 would mean
//! something else (Claude Code's `Stop`: keep working).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};

use crate::approval::ApprovalStatus;
use crate::approvals;
use crate::audit::{
    AnomalyKind, AnomalyRecord, ClientCall, Event, EventBody, ExecutionStatus, INLINE_CLIENT_INPUT,
    LifecycleRecord, ResultRecord, ToolResult,
};
use crate::clients::completion::{Completion, by, client_approval, close_declined};
use crate::clients::{
    self, Answer, AskMode, Client, Context, HookError, HookEvent, Kind, LOG_STARTED_MID_SESSION,
    Reply, ToolCall,
};
use crate::policy::{Action, Decision};
use crate::principal::Principal;
use crate::runner::{AskRoute, blocked_content, new_call_id};
use crate::sandbox::line::ExecLine;
use crate::session::{
    Ask, Call, Governed, HookAsk, Service, SessionError, Setup, chain, hook_wait_for,
};
use crate::store::{Store, StoreError};
use crate::tools::Registry;

/// A hook's options beside its client.
#[derive(Debug, Clone, Default)]
pub struct HookOptions {
    /// What an `ask` becomes; `None`: the policy's `[approval] wait`, else `auto`.
    pub ask: Option<HookAsk>,
    /// The event name, for payloads that do not carry it (Copilot's camelCase hooks).
    pub event: Option<String>,
}

/// An error and its causes on one line.
pub(crate) fn one_line(err: &SessionError) -> String {
    chain(err).replace('\n', " ")
}

/// The client's fail-closed answer for the event `text` names, if it names one.
pub fn fail(client: &dyn Client, options: &HookOptions, text: &str, message: &str) -> Answer {
    let named = serde_json::from_str::<Value>(text).ok().and_then(|v| {
        ["hook_event_name", "hookEventName"]
            .iter()
            .find_map(|field| v.get(*field)?.as_str().map(str::to_owned))
    });
    client.fail_closed(named.or_else(|| options.event.clone()).as_deref(), message)
}

/// The client's event in `text` (named by `--event` when it does not say).
pub(crate) fn parse_event(
    client: &dyn Client,
    options: &HookOptions,
    text: &str,
) -> Result<HookEvent, SessionError> {
    let mut value: Value =
        serde_json::from_str(text).map_err(|source| HookError::NotJson { source })?;
    if let (Some(event), Some(object)) = (&options.event, value.as_object_mut())
        && !object.contains_key("hook_event_name")
        && !object.contains_key("hookEventName")
    {
        object.insert("hook_event_name".into(), Value::String(event.clone()));
    }
    Ok(client.parse(value)?)
}

/// `setup` with the workspace pinned for the whole session: --workspace,
/// else the project the client was started in (its environment variable,
/// or the project it reports), and only then the hook's cwd, which follows
/// the agent's `cd`.
pub(crate) fn pin_workspace(client: &dyn Client, setup: &Setup, context: &Context) -> Setup {
    let mut setup = setup.clone();
    if setup.workspace.is_none() {
        let project = client
            .project_dir_var()
            .and_then(std::env::var_os)
            .filter(|d| !d.is_empty())
            .map(PathBuf::from)
            .or_else(|| context.project_dir.as_ref().map(PathBuf::from));
        setup.workspace = Some(project.unwrap_or_else(|| PathBuf::from(&context.cwd)));
    }
    setup
}

/// Handles one event given as text: the answer for the client.
pub fn handle(
    client: &dyn Client,
    setup: &Setup,
    options: &HookOptions,
    text: &str,
) -> Result<Answer, SessionError> {
    let event = parse_event(client, options, text)?;
    let setup = pin_workspace(client, setup, &event.context);
    handle_event(client, &setup, options, event)
}

/// Waits in the pending queue for the answer to `call_id` and says what the
/// client is to do: run it (approved), or not (rejected, or no answer in
/// time), with its `blocked` result recorded.
fn waited_reply(
    store: &mut Store,
    call_id: &str,
    decision: &Decision,
    who: &Arc<Principal>,
) -> Result<Reply, SessionError> {
    let blocked = |tool: &str, status: ApprovalStatus| {
        Event::now(
            call_id,
            Some(tool),
            EventBody::Result(ResultRecord::from_result(&ToolResult {
                status: ExecutionStatus::Blocked,
                content: blocked_content(decision, status),
                exit_code: None,
                duration_ms: 0,
            })),
        )
        .by(Some(who))
    };
    let waited = approvals::wait(store, call_id, approvals::POLL, Some(who), &|tool| {
        vec![blocked(tool, ApprovalStatus::Cancelled)]
    })?;
    let by = waited
        .approver
        .as_deref()
        .map(|a| format!(" by {a}"))
        .unwrap_or_default();
    Ok(match waited.status {
        // An approved ask has no sandbox to run in: not rewritten.
        ApprovalStatus::Approved => Reply::Allow {
            reason: format!(
                "{} (approved{by} via {})",
                clients::decision_reason(decision),
                waited.channel.as_str()
            ),
            rewrite: None,
        },
        ApprovalStatus::Rejected => {
            let tool = store
                .call_events(call_id)?
                .first()
                .and_then(|e| e.tool.clone())
                .unwrap_or_default();
            store.append(&[blocked(&tool, ApprovalStatus::Rejected)])?;
            Reply::Deny {
                reason: format!(
                    "{} (rejected{by} via {}{})",
                    clients::decision_reason(decision),
                    waited.channel.as_str(),
                    waited
                        .reason
                        .as_deref()
                        .map(|r| format!(": {r}"))
                        .unwrap_or_default()
                ),
            }
        }
        _ => Reply::Deny {
            reason: format!(
                "{} (needs approval: nobody answered in time; cancelled)",
                clients::decision_reason(decision)
            ),
        },
    })
}

/// Handles a parsed event, `setup` with its workspace pinned.
pub(crate) fn handle_event(
    client: &dyn Client,
    setup: &Setup,
    options: &HookOptions,
    event: HookEvent,
) -> Result<Answer, SessionError> {
    let HookEvent { context, kind } = &event;
    let handling = Handling {
        client,
        options,
        context,
    };
    match kind {
        Kind::Pre(call) => handling.pre(setup, call),
        Kind::Permission(call) => handling.permission(setup, call),
        _ => handling.record(setup, kind),
    }
}

/// One event being handled: from which client, under which options.
struct Handling<'a> {
    client: &'a dyn Client,
    options: &'a HookOptions,
    context: &'a Context,
}

impl Handling<'_> {
    /// The session service for a call this event decides: who made the
    /// call is this process's user and host, what the client tells of its
    /// session, subagent and version, and where the policy came from. A
    /// log that held nothing yet says it started mid-session.
    fn service(&self, setup: &Setup) -> Result<Service, SessionError> {
        let context = self.context;
        let mut service = Service::open(setup, self.client.name(), Registry::empty())?
            .with_principal(|base| from_context(base, context));
        service.runner_mut().set_sessions_named();
        if service.opened_fresh() {
            let who = service.principal();
            let note = mid_session(self.client, context).by(who.as_ref());
            service.store().append(&[note])?;
        }
        Ok(service)
    }

    /// A call about to run: decided, recorded write-ahead, and answered
    /// (after a wait in the pending queue, under `--ask wait`).
    fn pre(&self, setup: &Setup, call: &ToolCall) -> Result<Answer, SessionError> {
        let (client, context) = (self.client, self.context);
        let service = self.service(setup)?;
        let who = service
            .principal()
            .unwrap_or_else(|| Arc::new(Principal::current(client.name())));
        let call_id = call.id.clone().unwrap_or_else(new_call_id);
        let request = clients::to_request(client, call, &context.cwd, &call_id);
        // The mapped arguments carry the input's content: a large input
        // is not kept twice, only bound by its digest.
        let recorded = context.client_call(
            client.name(),
            call,
            setup.max_argument_bytes.min(INLINE_CLIENT_INPUT),
        );
        // The client's shell runs in the session's cwd: a relative
        // redirect lands there, whatever the pinned workspace root.
        let mut service = service.in_cwd(Path::new(&context.cwd));
        let (route, prompt, wait) = self.route(service.policy());
        let governed = service.call(
            Call {
                client: Some(recorded.clone()),
                ..Call::new(&call_id, &request)
            },
            Ask::Route(route),
        );
        let decision = match governed {
            Ok(Governed::Recorded { decision, .. }) => *decision,
            Ok(Governed::Ran(outcome)) => outcome.decision().clone(),
            Err(err) => {
                let reused = err
                    .0
                    .downcast_ref::<StoreError>()
                    .is_some_and(|e| matches!(e, StoreError::DuplicateCall { .. }));
                if reused {
                    let note = reused_id(context, &call_id, &request.name, recorded).by(Some(&who));
                    service.store().append(&[note])?;
                }
                return Err(err.into());
            }
        };
        let reason = clients::decision_reason(&decision);
        let reply = match decision.action {
            Action::Allow => Reply::Allow {
                reason,
                rewrite: self.contain(&decision, call, &call_id, service.store())?,
            },
            Action::Deny => Reply::Deny { reason },
            Action::Ask if wait.is_some() => {
                waited_reply(service.store(), &call_id, &decision, &who)?
            }
            Action::Ask if decision.approvers.is_some() => Reply::Deny {
                reason: crate::runner::needs_approvers(&decision),
            },
            Action::Ask if prompt => Reply::Ask { reason },
            Action::Ask => Reply::Deny {
                reason: clients::needs_approval_reason(&decision, client.name()),
            },
        };
        service.close();
        Ok(client.render(context, &reply))
    }

    /// The client's input for an allowed call that runs contained: its
    /// command rewritten to `'<this gavel>' exec --db '<db>' --call-id
    /// '<id>' -- '<command>'`, which runs it in the sandbox its decision
    /// records (and only the command decided), and the launcher's ticket
    /// written (`sandbox::ticket`). `None` when the call does not run
    /// contained, or the client's answer cannot carry the input.
    fn contain(
        &self,
        decision: &Decision,
        call: &ToolCall,
        call_id: &str,
        store: &crate::store::Store,
    ) -> Result<Option<Value>, SessionError> {
        let db = store.path();
        let command = self
            .client
            .command_field(call)
            .and_then(|field| call.input.get(field)?.as_str());
        let (Some(command), Some(_)) = (command, crate::sandbox::contained(decision)) else {
            return Ok(None);
        };
        let gavel = std::env::current_exe().map_err(|source| SessionError::Io {
            what: "cannot find this gavel's own path for `gavel exec`".to_owned(),
            source,
        })?;
        // The small launcher installed beside this gavel, where it is: its
        // start is paid once per command (src/exec_main.rs).
        let launcher = gavel.with_file_name("gavel-exec");
        let gavel = if is_executable(&launcher) {
            launcher
        } else {
            gavel
        };
        let db = std::fs::canonicalize(db).map_err(|source| SessionError::Io {
            what: format!("cannot resolve the database `{}`", db.display()),
            source,
        })?;
        let (Some(gavel), Some(db)) = (gavel.to_str(), db.to_str()) else {
            return Err(SessionError::Call(format!(
                "cannot rewrite the call to run contained: `{}` or `{}` is not UTF-8",
                gavel.display(),
                db.display()
            )));
        };
        let line = ExecLine {
            gavel: gavel.to_owned(),
            db: db.to_owned(),
            call_id: call_id.to_owned(),
            command: command.to_owned(),
        };
        let Some(input) = clients::rewritten_input(self.client, call, &line.render()) else {
            return Ok(None);
        };
        // The launcher's ticket: the recorded call authorized as the
        // launcher would, so that it need not open the record. Without
        // one (it could not be written) the launcher reads the record.
        let events = store.call_events(call_id)?;
        if let Ok(authorized) = crate::sandbox::bind::authorize(call_id, &events, Some(command)) {
            let _ = crate::sandbox::ticket::write(Path::new(db), call_id, &authorized);
        }
        Ok(Some(input))
    }

    /// The client is about to ask its person: recorded, and denied only
    /// where the policy denies.
    fn permission(&self, setup: &Setup, call: &ToolCall) -> Result<Answer, SessionError> {
        let (client, context) = (self.client, self.context);
        let mut service = self.service(setup)?;
        let who = service.principal();
        let request = clients::to_request(client, call, &context.cwd, "permission");
        let decision = service.decide(&request)?;
        // The client is about to ask a person: gavel answers in the
        // person's place only to deny what its policy denies.
        let reply = match decision.action {
            Action::Deny => Reply::Deny {
                reason: clients::decision_reason(&decision),
            },
            Action::Allow | Action::Ask => Reply::Pass,
        };
        let answered = match reply {
            Reply::Deny { .. } => "denied by gavel",
            _ => "left to the client's own prompt",
        };
        service.store().append(&[Event::now(
            &context.session_id,
            None,
            EventBody::Lifecycle(LifecycleRecord {
                event: context.event.clone(),
                data: json!({
                    "session_id": context.session_id,
                    "cwd": context.cwd,
                    "turn_id": context.prompt_id,
                    "tool_name": call.tool,
                    "tool_input": call.input,
                    "gavel": {
                        "action": decision.action.as_str(),
                        "rule_id": decision.rule_id,
                        "reason": decision.reason,
                        "answer": answered,
                    },
                }),
            }),
        )
        .by(who.as_ref())])?;
        service.close();
        Ok(client.render(context, &reply))
    }

    /// An event that decides nothing (a completion, a batch the client
    /// declined, a lifecycle event): recorded under the policy's redaction,
    /// without loading the policy for deciding.
    fn record(&self, setup: &Setup, kind: &Kind) -> Result<Answer, SessionError> {
        let (client, context) = (self.client, self.context);
        let workspace = setup.workspace()?;
        let mut store = setup.open_store()?;
        let fresh = store.last_seq()? == 0;
        let base = Principal::current(client.name()).with_host_id_beside(store.path());
        let who = Arc::new(from_context(base, context));
        let starts_session = matches!(
            kind,
            Kind::Lifecycle {
                starts_session: true,
                ..
            }
        );
        if fresh && !starts_session {
            store.append(&[mid_session(client, context).by(Some(&who))])?;
        }
        // A policy that does not load leaves the built-in redaction on (the
        // safe side), and is reported by the next pre-event.
        if let Ok(policy) = setup.policy(&workspace) {
            store.set_redaction(policy.redaction());
        }
        match kind {
            Kind::Post { call, result } => {
                // A call that ran under `gavel exec` is reported with the
                // input its answer rewrote: completed as the call decided.
                let call = &clients::as_decided(client, call);
                let completion = Completion {
                    client,
                    context,
                    call,
                    result,
                    max_input_bytes: setup.max_argument_bytes,
                    who: &who,
                };
                match &call.id {
                    Some(id) => completion.complete_by_id(&mut store, id)?,
                    None => completion.complete_by_match(&mut store)?,
                }
            }
            Kind::Batch(calls) => {
                for batch in calls {
                    if let Some(id) = &batch.call.id {
                        let rejected = client_approval(client, context, ApprovalStatus::Rejected);
                        store.append_for_call(id, |events| {
                            by(close_declined(id, events, &batch.told, rejected), &who)
                        })?;
                    }
                }
            }
            Kind::Lifecycle { data, .. } => {
                store.append(&[Event::now(
                    &context.session_id,
                    None,
                    EventBody::Lifecycle(LifecycleRecord {
                        event: context.event.clone(),
                        data: data.clone(),
                    }),
                )
                .by(Some(&who))])?;
            }
            Kind::Pre(_) | Kind::Permission(_) => {}
        }
        setup.close_store(store);
        Ok(Answer::ok(None))
    }

    /// Where an ask goes (the pending queue, the client's prompt, or a
    /// refusal), whether the client prompts, and how long a queued call waits.
    fn route(
        &self,
        policy: &crate::policy::Policy,
    ) -> (AskRoute, bool, Option<std::time::Duration>) {
        let ask = self.options.ask.unwrap_or(match policy.approval_wait() {
            Some(wait) => HookAsk::Wait(crate::session::AskWait(Some(wait))),
            None => HookAsk::Auto,
        });
        let prompt = match ask {
            HookAsk::Deny | HookAsk::Wait(_) => false,
            HookAsk::Prompt => self.client.can_prompt(self.context, AskMode::Prompt),
            HookAsk::Auto => self.client.can_prompt(self.context, AskMode::Deny),
        };
        let wait = match ask {
            HookAsk::Wait(wait) => Some(hook_wait_for(self.client.name(), wait)),
            _ => None,
        };
        let route = match (prompt, wait) {
            (_, Some(wait)) => AskRoute::Queue {
                until_us: approvals::until_us(wait),
            },
            (true, None) => AskRoute::ClientPrompt {
                approver: self.context.user.clone(),
            },
            (false, None) => AskRoute::Refuse {
                why: format!(
                    "needs approval: {} cannot ask a person from this hook, so gavel refused the call",
                    self.client.name()
                ),
            },
        };
        (route, prompt, wait)
    }
}

/// The note a hook records when it starts a new log mid-session.
fn mid_session(client: &dyn Client, context: &Context) -> Event {
    Event::now(
        &context.session_id,
        None,
        EventBody::Lifecycle(LifecycleRecord {
            event: LOG_STARTED_MID_SESSION.to_owned(),
            data: json!({
                "session_id": context.session_id,
                "client": client.name(),
                "first_event": context.event,
                "detail": "no audit database existed when this hook ran, and the session had already started: what the session did before is not in this log",
            }),
        }),
    )
}

/// The anomaly of a call refused because its id was already used.
fn reused_id(context: &Context, call_id: &str, tool: &str, client: ClientCall) -> Event {
    Event::now(
        call_id,
        Some(tool),
        EventBody::Anomaly(AnomalyRecord {
            anomaly: AnomalyKind::ReusedCallId,
            detail: format!(
                "a new `{}` call came with the id of a call already recorded; gavel refused it",
                client.tool
            ),
            event: context.event.clone(),
            tool_use_id: call_id.to_owned(),
            client,
            mismatched: Vec::new(),
            result: ResultRecord::from_result(&ToolResult {
                status: ExecutionStatus::Blocked,
                content: "refused: reused call id".to_owned(),
                exit_code: None,
                duration_ms: 0,
            }),
        }),
    )
}

/// Who made the call, as far as the client tells: its session, a
/// subagent's id and type, the client's version.
fn from_context(principal: Principal, context: &Context) -> Principal {
    principal
        .with_session(Some(&context.session_id))
        .with_agent(context.agent_id.as_deref(), context.agent_type.as_deref())
        .with_client_version(context.client_version.as_deref())
}

/// Whether `path` is a file this user may execute.
fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}
