//! The governed pipeline: facts -> policy -> approval -> execution, with
//! hooks observing each stage and every step appended to the audit record.
//!
//! Order, fixed: `PreToolUse`; facts and decision; request and decision
//! written to the record together (write-ahead, before anyone is asked or
//! anything runs); approval (only for `ask`) and its record;
//! `PermissionDecision`; the handler, only when allowed; the result and its
//! record; `PostToolUse`. If the record cannot be written the call does not
//! run: gavel fails closed.

use std::cell::RefCell;
use std::time::Instant;

use serde::Serialize;
use serde_json::{Value, json};

use crate::approval::{self, ApprovalStatus, Approver, Resolution};
use crate::approvals::grants::GrantSource;
use crate::audit::{
    ApprovalRecord, AuditError, AuditSink, ClientCall, DEFAULT_MAX_ARGUMENT_BYTES, DecisionRecord,
    Event, EventBody, ExecutionStatus, JsonMeasure, RefusedRecord, RequestRecord, ResultRecord,
    ToolResult,
};
use crate::facts::{Facts, McpFacts, Workspace};
use crate::hooks::{HookEvent, Hooks};
use crate::policy::{Action, Decision, INVALID_ARGUMENTS, Policy, ShadowVerdict};
use crate::principal::Principal;
use crate::request::ToolRequest;
use crate::sandbox::observe::Observed;
use crate::tools::{Contained, Registry, ToolContext};

/// Everything that happened to one call.
#[derive(Debug, Clone, Serialize)]
pub struct CallOutcome {
    pub call_id: String,
    pub request: ToolRequest,
    pub facts: Facts,
    pub resolution: Resolution,
    pub result: ToolResult,
    /// Set when the tool ran (or was blocked) but its result could not be
    /// written: the record of this call is incomplete, and says why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record_error: Option<String>,
    /// Where the call's receipt is (docs/receipts.md), once its session is done with the log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receipt: Option<crate::receipt::Reference>,
}

impl CallOutcome {
    pub fn decision(&self) -> &Decision {
        &self.resolution.decision
    }

    /// The Anthropic `tool_result` block for this call; `is_error` unless it succeeded.
    pub fn to_protocol_block(&self) -> Value {
        json!({
            "type": "tool_result",
            "tool_use_id": self.request.tool_use_id,
            "content": self.result.content,
            "is_error": self.result.status != ExecutionStatus::Succeeded,
        })
    }
}

/// The content of a blocked result.
pub fn blocked_content(decision: &Decision, approval: ApprovalStatus) -> String {
    format!(
        "Permission blocked [{}]: {} (approval={approval})",
        decision.rule_id, decision.reason
    )
}

/// Runs tool calls through policy, approval and execution.
pub struct GovernedRunner {
    policy: Policy,
    workspace: Workspace,
    tools: Registry,
    context: ToolContext,
    hooks: Hooks,
    max_argument_bytes: u64,
    /// Who the calls are made for: recorded in each request and on every row.
    principal: Option<std::sync::Arc<Principal>>,
    /// Grants in force, consulted only when the policy asks.
    grants: Option<Box<dyn GrantSource>>,
    /// See [`GovernedRunner::set_sessions_named`].
    sessions_named: bool,
}

/// A decision with the facts it was made on, and, for arguments over the
/// size limit, their measure (the record keeps a summary, not the text).
struct Decided {
    facts: Facts,
    decision: Decision,
    oversized: Option<JsonMeasure>,
    /// The last seq the session's history was read through, when it was.
    history_through: Option<u64>,
}

/// What the earlier calls of a call's session did, as read for its decision.
#[derive(Default)]
struct Flow {
    through: Option<u64>,
    history: crate::policy::History,
}

impl GovernedRunner {
    pub fn new(policy: Policy, workspace: Workspace, tools: Registry) -> Self {
        Self {
            context: ToolContext::new(workspace.clone()),
            policy,
            workspace,
            tools,
            hooks: Hooks::new(),
            max_argument_bytes: DEFAULT_MAX_ARGUMENT_BYTES,
            principal: None,
            grants: None,
            sessions_named: false,
        }
    }

    /// Consults `grants` for every call the policy asks about (and only
    /// then): a covering grant's decision (`allow` by `grant.<ID>`) is
    /// recorded instead of the ask.
    pub fn with_grants(mut self, grants: Box<dyn GrantSource>) -> Self {
        self.grants = Some(grants);
        self
    }

    /// Calls come from a client that names its sessions (an agent's hooks):
    /// one without a session has an unknown history, not an empty one.
    pub fn set_sessions_named(&mut self) {
        self.sessions_named = true;
    }

    /// Records `principal` with every call: in the request payload, and as
    /// the provenance columns of each of the call's rows.
    pub fn with_principal(mut self, principal: Principal) -> Self {
        self.principal = Some(std::sync::Arc::new(principal));
        self
    }

    /// Replaces the principal of the calls to come (an MCP client names
    /// itself only once the session has started).
    pub fn set_principal(&mut self, principal: Principal) {
        self.principal = Some(std::sync::Arc::new(principal));
    }

    pub fn principal(&self) -> Option<&Principal> {
        self.principal.as_deref()
    }

    /// Arguments larger than this (compact JSON bytes) are denied as
    /// `request.invalid_arguments` and recorded only as a size and a digest.
    pub fn with_max_argument_bytes(mut self, max: u64) -> Self {
        self.max_argument_bytes = max;
        self
    }

    pub fn max_argument_bytes(&self) -> u64 {
        self.max_argument_bytes
    }

    pub fn with_hooks(mut self, hooks: Hooks) -> Self {
        self.hooks = hooks;
        self
    }

    /// Resolves paths in `workspace` (the same root, another working
    /// directory) from now on; the tools' context follows.
    pub fn with_workspace(mut self, workspace: Workspace) -> Self {
        self.context.workspace = workspace.clone();
        self.workspace = workspace;
        self
    }

    pub fn with_context(mut self, context: ToolContext) -> Self {
        self.context = context;
        self
    }

    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    pub fn workspace(&self) -> &Workspace {
        &self.workspace
    }

    pub fn hooks(&self) -> &Hooks {
        &self.hooks
    }

    /// Decides a request without asking or running anything.
    pub fn decide(&self, request: &ToolRequest) -> (Facts, Decision) {
        let decided = self.decide_sized(request, None, None, Flow::default());
        (decided.facts, decided.decision)
    }

    /// Decides `request` after its session's history, read from `audit`,
    /// without asking, running or recording anything.
    pub fn decide_after(
        &self,
        request: &ToolRequest,
        audit: &mut dyn AuditSink,
    ) -> Result<(Facts, Decision), AuditError> {
        let flow = self.flow(audit)?;
        let decided = self.decide_sized(request, None, None, flow);
        Ok((decided.facts, decided.decision))
    }

    /// Decides `request`, refusing arguments (or a client input) over the
    /// size limit before anything looks at their content.
    fn decide_sized(
        &self,
        request: &ToolRequest,
        client: Option<&ClientCall>,
        mcp: Option<McpFacts>,
        flow: Flow,
    ) -> Decided {
        let size = JsonMeasure::size(&request.arguments);
        let too_large = size > self.max_argument_bytes;
        let client_bytes = client
            .and_then(|c| c.input_bytes)
            .filter(|&b| b > self.max_argument_bytes);
        if too_large || client_bytes.is_some() {
            let bytes = if too_large {
                size
            } else {
                client_bytes.unwrap_or(size)
            };
            let mut decision = Decision::new(
                Action::Deny,
                INVALID_ARGUMENTS,
                format!(
                    "arguments of `{}` are {bytes} bytes, over the limit of {} bytes",
                    request.name, self.max_argument_bytes
                ),
                self.policy.reference().clone(),
            );
            decision.layers = self.policy.layer_refs();
            decision.shadow = self
                .policy
                .shadows()
                .iter()
                .map(|shadow| ShadowVerdict {
                    name: shadow.name.clone(),
                    action: Action::Deny,
                    rule_id: INVALID_ARGUMENTS.to_owned(),
                    digest: shadow.policy.reference().digest.clone(),
                })
                .collect();
            let facts = Facts {
                workspace: self.workspace.root().to_string_lossy().into_owned(),
                paths: Vec::new(),
                shell: None,
                shell_sha256: None,
                unprovable: Vec::new(),
                mcp,
            };
            return Decided {
                facts,
                decision,
                oversized: too_large.then(|| JsonMeasure::of(&request.arguments)),
                history_through: None,
            };
        }
        let declared = self.policy.path_arguments(&request.name);
        let mut facts = if declared.is_empty() {
            self.workspace.facts(request)
        } else {
            self.workspace.facts_with(request, &declared)
        };
        facts.mcp = mcp;
        let mut decision =
            self.policy
                .decide_in(request, &facts, self.principal.as_deref(), &flow.history);
        // The sandbox it runs in, and whether this kernel can hold it.
        crate::sandbox::admit(
            &mut decision,
            request,
            &facts,
            |record| crate::sandbox::enforcement_in(record, self.workspace.root()),
            self.policy.sandbox_unenforceable(),
        );
        // Shadow policies decide on the same facts; never enforced.
        decision.shadow = self.policy.shadow_verdicts(request, &facts);
        // A grant never answers for the approvers a rule names.
        if decision.action == Action::Ask
            && decision.approvers.is_none()
            && let Some(grants) = &self.grants
        {
            let session = self.principal.as_ref().and_then(|p| p.session.as_deref());
            if let Some(granted) = grants.cover(request, &facts, &decision, session) {
                decision = granted;
            }
        }
        Decided {
            facts,
            decision,
            oversized: None,
            history_through: flow.through,
        }
    }

    /// What the earlier calls of this runner's session did, read from
    /// `audit` when the policy reads it; a call without a session is the
    /// first of its own. A sink that cannot say gives an unknown history.
    fn flow(&self, audit: &mut dyn AuditSink) -> Result<Flow, AuditError> {
        let labels = self.policy.history_labels();
        if labels.is_empty() {
            return Ok(Flow::default());
        }
        let Some(session) = self.principal.as_ref().and_then(|p| p.session.as_deref()) else {
            // A client that names no session: its earlier calls cannot be
            // found, so the history is unknown (flow rules fail closed).
            return Ok(Flow {
                through: None,
                history: match self.sessions_named {
                    true => crate::policy::History::unknown(),
                    false => crate::policy::History::default(),
                },
            });
        };
        Ok(match audit.session_history(session, &labels)? {
            Some((through, history)) => Flow {
                through: Some(through),
                history,
            },
            None => Flow {
                through: None,
                history: crate::policy::History::unknown(),
            },
        })
    }

    /// Runs one call through the whole pipeline under `call_id`.
    ///
    /// The only error is a record that cannot be written; the handler has
    /// then not run (or, if the result alone could not be written, its
    /// outcome is lost from the record but the call is complete).
    pub fn run(
        &self,
        call_id: &str,
        request: &ToolRequest,
        client: Option<ClientCall>,
        approver: &mut dyn Approver,
        audit: &mut dyn AuditSink,
    ) -> Result<CallOutcome, AuditError> {
        self.hooks.emit(HookEvent::PreToolUse(request));
        let flow = self.flow(audit)?;
        let decided = self.decide_sized(request, client.as_ref(), None, flow);
        let tool = Some(request.name.as_str());
        let who = self.principal.as_ref();
        let mut ahead = Vec::from(write_ahead(call_id, request, client, &decided, who));
        // An approver answered through the record (the pending queue) has
        // its `pending` row written ahead with the request, in one commit.
        if decided.decision.action == Action::Ask
            && let Some(pending) = approver.pending(call_id)
        {
            ahead.push(Event::now(call_id, tool, EventBody::Approval(pending)).by(who));
        }
        audit.append_owned(ahead)?;
        let Decided {
            facts, decision, ..
        } = decided;

        let resolution = approval::resolve_call(call_id, request, decision, approver);
        if resolution.approval != ApprovalStatus::NotRequired && !approver.recorded() {
            let answer = resolution.answer.clone();
            let mut record = ApprovalRecord::new(
                resolution.approval,
                answer
                    .as_ref()
                    .map_or(approval::ApprovalChannel::Api, |a| a.channel),
            );
            record.approver = answer.as_ref().and_then(|a| a.approver.clone());
            record.cause = answer.and_then(|a| a.cause);
            audit.append_owned(vec![
                Event::now(call_id, tool, EventBody::Approval(record)).by(who),
            ])?;
        }
        self.hooks
            .emit(HookEvent::PermissionDecision(request, &resolution));

        let observed = RefCell::new(Observed::default());
        let (result, contained) = self.execute(call_id, request, &resolution, &observed);
        // The call is over: a result that cannot be written is reported
        // with the outcome, never in its place (the caller must not take a
        // call that ran for one that did not, and run it again).
        let mut events = Vec::with_capacity(2);
        let observed = observed.into_inner();
        if let Some(profile) = &contained
            && !observed.attempts.is_empty()
        {
            let refused = RefusedRecord {
                profile: profile.clone(),
                attempts: observed.attempts,
                more: observed.more,
            };
            events.push(Event::now(call_id, tool, EventBody::Refused(refused)).by(who));
        }
        let mut record = ResultRecord::from_result(&result);
        record.contained = contained;
        events.push(Event::now(call_id, tool, EventBody::Result(record)).by(who));
        let record_error = audit.append_owned(events).err().map(|err| err.to_string());
        self.hooks.emit(HookEvent::PostToolUse(request, &result));

        Ok(CallOutcome {
            call_id: call_id.to_owned(),
            request: request.clone(),
            facts,
            resolution,
            result,
            record_error,
            receipt: None,
        })
    }

    /// Calls the handler when the resolution allows it; always a result,
    /// and the profile it ran contained in.
    fn execute(
        &self,
        call_id: &str,
        request: &ToolRequest,
        resolution: &Resolution,
        observed: &RefCell<Observed>,
    ) -> (ToolResult, Option<String>) {
        let contained = crate::sandbox::contained(&resolution.decision)
            .filter(|_| request.name == "bash" && resolution.allowed)
            .map(|sandbox| Contained {
                call_id,
                sandbox,
                observed,
            });
        let result = self.execute_in(request, resolution, contained.as_ref());
        (result, contained.map(|c| c.sandbox.profile.clone()))
    }

    fn execute_in(
        &self,
        request: &ToolRequest,
        resolution: &Resolution,
        contained: Option<&Contained>,
    ) -> ToolResult {
        if !resolution.allowed {
            return ToolResult {
                status: ExecutionStatus::Blocked,
                content: blocked_content(&resolution.decision, resolution.approval),
                exit_code: None,
                duration_ms: 0,
            };
        }
        let started = Instant::now();
        let Some(handler) = self.tools.get(&request.name) else {
            return ToolResult {
                status: ExecutionStatus::Failed,
                content: format!("no handler is registered for tool `{}`", request.name),
                exit_code: None,
                duration_ms: 0,
            };
        };
        // A `bash` command allowed under a sandbox runs inside it (gavel's
        // own file tools check their paths themselves).
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match contained {
            Some(contained) => handler.call_contained(&request.arguments, &self.context, contained),
            None => handler.call(&request.arguments, &self.context),
        }));
        let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        match outcome {
            Ok(Ok(output)) => ToolResult {
                status: ExecutionStatus::Succeeded,
                content: output.content,
                exit_code: output.exit_code,
                duration_ms,
            },
            Ok(Err(err)) => ToolResult {
                status: ExecutionStatus::Failed,
                exit_code: err.exit_code(),
                content: err.to_string(),
                duration_ms,
            },
            Err(_) => ToolResult {
                status: ExecutionStatus::Failed,
                content: format!("handler for `{}` panicked", request.name),
                exit_code: None,
                duration_ms,
            },
        }
    }
}

/// The request and decision events a call writes before anything else
/// happens. Over-large arguments are kept as their first bytes, size and digest.
fn write_ahead(
    call_id: &str,
    request: &ToolRequest,
    client: Option<ClientCall>,
    decided: &Decided,
    who: Option<&std::sync::Arc<Principal>>,
) -> [Event; 2] {
    let tool = Some(request.name.as_str());
    let (arguments, arguments_bytes, arguments_sha256) = match &decided.oversized {
        Some(measure) => (
            measure.summary(),
            Some(measure.bytes),
            Some(measure.sha256.clone()),
        ),
        None => (request.arguments.clone(), None, None),
    };
    [
        Event::now(
            call_id,
            tool,
            EventBody::Request(RequestRecord {
                tool_use_id: request.tool_use_id.clone(),
                arguments,
                client,
                arguments_bytes,
                arguments_sha256,
                principal: who.map(|p| Principal::clone(p)),
            }),
        )
        .by(who),
        Event::now(
            call_id,
            tool,
            decision_body(
                &decided.decision,
                &decided.facts.for_record(request),
                decided.history_through,
            ),
        )
        .by(who),
    ]
}

/// The decision event for `decision` made on `facts`.
pub fn decision_body(
    decision: &Decision,
    facts: &Facts,
    history_through: Option<u64>,
) -> EventBody {
    EventBody::Decision(DecisionRecord {
        action: decision.action,
        rule_id: decision.rule_id.clone(),
        reason: decision.reason.clone(),
        policy: decision.policy.clone(),
        layer: decision.layer.clone(),
        layers: decision.layers.clone(),
        shadow: decision.shadow.clone(),
        sandbox: decision.sandbox.clone(),
        labels: decision.labels.clone(),
        after: decision.after.clone(),
        approvers: decision.approvers.clone(),
        history_through,
        facts: facts.clone(),
    })
}

/// Why an ask whose rule names approvers is refused where only a client
/// could answer it.
pub fn needs_approvers(decision: &Decision) -> String {
    let need = decision
        .approvers
        .as_ref()
        .map(crate::approvals::describe_approvers)
        .unwrap_or_default();
    format!(
        "needs approval by {need}, each with their second factor, through gavel's pending queue (`--ask wait`, then `gavel approve CALL --as NAME --code CODE`)"
    )
}

/// A fresh call id: time-ordered, unique across processes.
pub fn new_call_id() -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let micros = chrono::Utc::now().timestamp_micros();
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("call_{micros:x}_{:x}_{n}", std::process::id())
}

/// Where an `ask` goes when the client asks and executes itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AskRoute {
    /// The client's own prompt will answer: recorded `pending` (channel
    /// `client_prompt`), with the person the client names, when it does.
    ClientPrompt { approver: Option<String> },
    /// The client cannot ask anybody here: nobody is asked, the call is
    /// refused (`cancelled` with cause `no_tty`, `blocked`), and `why` is
    /// the result's content.
    Refuse { why: String },
    /// The pending queue will answer (`--ask wait`): recorded `pending`
    /// (channel `queue`) until `until_us`, for `gavel approve`, `gavel
    /// reject` or the approval page to answer while the hook waits.
    Queue { until_us: i64 },
    /// The caller asks through a channel of its own (an MCP client's
    /// elicitation) and records the answer itself: nothing beyond the
    /// request and the decision is written now.
    Elsewhere,
}

impl GovernedRunner {
    /// Decides `request` and records it write-ahead, without asking anybody
    /// or running anything: for clients that ask and execute themselves
    /// (agent hooks). One append holds the request, the decision and, for
    /// `ask`, a `pending` approval (the client's own prompt will answer it,
    /// `AskRoute::ClientPrompt`) or a `cancelled` approval and a `blocked`
    /// result (`AskRoute::Refuse`), or, for `deny`, the `blocked` result
    /// (the client will not run it). Otherwise the result is appended when
    /// the client reports it.
    pub fn decide_and_record(
        &self,
        call_id: &str,
        request: &ToolRequest,
        client: Option<ClientCall>,
        ask: AskRoute,
        audit: &mut dyn AuditSink,
    ) -> Result<(Facts, Decision), AuditError> {
        self.decide_and_record_with(call_id, request, client, None, ask, audit)
    }

    /// [`GovernedRunner::decide_and_record`] with what the MCP proxy knows
    /// of the call's tool (`mcp`, recorded in the decision's facts).
    pub fn decide_and_record_with(
        &self,
        call_id: &str,
        request: &ToolRequest,
        client: Option<ClientCall>,
        mcp: Option<McpFacts>,
        ask: AskRoute,
        audit: &mut dyn AuditSink,
    ) -> Result<(Facts, Decision), AuditError> {
        self.hooks.emit(HookEvent::PreToolUse(request));
        let flow = self.flow(audit)?;
        let decided = self.decide_sized(request, client.as_ref(), mcp, flow);
        let tool = Some(request.name.as_str());
        let who = self.principal.as_ref();
        let mut events = Vec::from(write_ahead(call_id, request, client, &decided, who));
        let Decided {
            facts, decision, ..
        } = decided;
        let approval =
            |record: ApprovalRecord| Event::now(call_id, tool, EventBody::Approval(record)).by(who);
        let blocked = |content: String| {
            Event::now(
                call_id,
                tool,
                EventBody::Result(ResultRecord::from_result(&ToolResult {
                    status: ExecutionStatus::Blocked,
                    content,
                    exit_code: None,
                    duration_ms: 0,
                })),
            )
            .by(who)
        };
        // Only the pending queue checks the approvers a rule names: the
        // client's own prompt or elicitation would let anybody answer.
        let ask = match ask {
            AskRoute::ClientPrompt { .. } | AskRoute::Elsewhere if decision.approvers.is_some() => {
                AskRoute::Refuse {
                    why: needs_approvers(&decision),
                }
            }
            ask => ask,
        };
        match (decision.action, ask) {
            (Action::Allow, _) => {}
            (Action::Ask, AskRoute::ClientPrompt { approver }) => {
                let mut record = ApprovalRecord::new(
                    ApprovalStatus::Pending,
                    approval::ApprovalChannel::ClientPrompt,
                );
                record.approver = approver;
                events.push(approval(record));
            }
            (Action::Ask, AskRoute::Queue { until_us }) => {
                let mut record =
                    ApprovalRecord::new(ApprovalStatus::Pending, approval::ApprovalChannel::Queue);
                record.until_us = Some(until_us);
                events.push(approval(record));
            }
            (Action::Ask, AskRoute::Refuse { why }) => {
                let mut record = ApprovalRecord::new(
                    ApprovalStatus::Cancelled,
                    approval::ApprovalChannel::ClientPrompt,
                );
                record.cause = Some(match decision.approvers {
                    Some(_) => approval::CancelCause::FactorRequired,
                    None => approval::CancelCause::NoTty,
                });
                events.push(approval(record));
                events.push(blocked(why));
            }
            (Action::Ask, AskRoute::Elsewhere) => {}
            // A deny is final: the client will not run the call.
            (Action::Deny, _) => events.push(blocked(blocked_content(
                &decision,
                ApprovalStatus::NotRequired,
            ))),
        }
        audit.append_owned(events)?;
        Ok((facts, decision))
    }
}
