//! [`Service`]: one front-end's governed calls, from the policy it loaded
//! to the record it keeps. [`Service::call`] is the one entry point every
//! call of every front-end goes through: decided, recorded write-ahead,
//! asked (now, or routed to whoever will answer), executed when the
//! front-end executes here, and recorded.

use std::path::Path;
use std::sync::Arc;

use super::{SessionError, Setup};
use crate::approval::Approver;
use crate::approvals::StoreGrants;
use crate::audit::{AuditError, ClientCall, DeferredResults};
use crate::facts::{McpFacts, Workspace};
use crate::policy::{Decision, Policy};
use crate::principal::Principal;
use crate::request::ToolRequest;
use crate::runner::{AskRoute, CallOutcome, GovernedRunner};
use crate::store::Store;
use crate::tools::{Registry, ToolContext};

/// One call as a front-end hands it over.
pub struct Call<'a> {
    pub call_id: &'a str,
    pub request: &'a ToolRequest,
    /// What the client sent, as it sent it (hooks, MCP): recorded with the request.
    pub client: Option<ClientCall>,
    /// What the MCP proxy knows of the call's tool.
    pub mcp: Option<McpFacts>,
}

impl<'a> Call<'a> {
    pub fn new(call_id: &'a str, request: &'a ToolRequest) -> Self {
        Self {
            call_id,
            request,
            client: None,
            mcp: None,
        }
    }
}

/// Who answers the call's ask.
pub enum Ask<'a> {
    /// This approver, now; the tool then runs here (`run`, `serve`).
    Now(&'a mut dyn Approver),
    /// Nobody here: the client (or the relay) asks and runs the call
    /// itself, and the record says where the ask went (hooks, `mcp`).
    Route(AskRoute),
}

/// What became of a call.
#[derive(Debug)]
pub enum Governed {
    /// It went through the whole pipeline here.
    Ran(Box<CallOutcome>),
    /// It was decided and recorded write-ahead; the client runs it.
    Recorded { decision: Box<Decision> },
}

/// A front-end's governed calls: the pipeline and the record it writes to.
pub struct Service {
    setup: Setup,
    runner: GovernedRunner,
    record: DeferredResults<Store>,
    /// Results are held back and written with the next call's write-ahead
    /// batch, or at [`Service::flush`] (`serve`).
    stream: bool,
    /// The log held nothing when the service opened it.
    fresh: bool,
}

impl Service {
    /// Opens the service for calls that come through `client` (the name
    /// recorded in the principal): the workspace, the policy under its
    /// layers and shadows, the store; `tools` runs the calls executed here.
    pub fn open(setup: &Setup, client: &str, tools: Registry) -> Result<Self, SessionError> {
        let workspace = setup.workspace()?;
        let policy = setup.calls_policy(&workspace)?;
        let store = setup.open_store()?;
        Self::with(setup, client, tools, workspace, policy, store)
    }

    /// [`Service::open`] with a workspace, policy and store already at
    /// hand (a listener that opens one session per connection).
    pub fn with(
        setup: &Setup,
        client: &str,
        tools: Registry,
        workspace: Workspace,
        policy: Policy,
        mut store: Store,
    ) -> Result<Self, SessionError> {
        let fresh = store.last_seq()? == 0;
        Setup::vouch_policy(&policy, &store)?;
        store.remember_policy(&policy)?;
        store.set_redaction(policy.redaction());
        let principal = setup.principal(client, &workspace, &policy, &store);
        let grants = StoreGrants::new(store.path());
        let context = ToolContext::new(workspace.clone()).recording_to(store.path().to_path_buf());
        let runner = GovernedRunner::new(policy, workspace, tools)
            .with_context(context)
            .with_max_argument_bytes(setup.max_argument_bytes)
            .with_principal(principal)
            .with_grants(Box::new(grants));
        Ok(Self::from_parts(setup.clone(), runner, store).fresh(fresh))
    }

    /// A service over a runner and store made elsewhere (tests, embedding).
    pub fn from_parts(setup: Setup, runner: GovernedRunner, store: Store) -> Self {
        Self {
            setup,
            runner,
            record: DeferredResults::new(store),
            stream: false,
            fresh: false,
        }
    }

    fn fresh(mut self, fresh: bool) -> Self {
        self.fresh = fresh;
        self
    }

    /// The built-in tools' context (limits) for calls executed here.
    pub fn with_context(mut self, context: impl FnOnce(&Workspace) -> ToolContext) -> Self {
        let db = self.store().path().to_path_buf();
        let context = context(self.runner.workspace()).recording_to(db);
        self.runner = self.runner.with_context(context);
        self
    }

    /// Who the calls are made for, as the front-end knows more of it (a
    /// client's session and subagent, an MCP session).
    pub fn with_principal(mut self, who: impl FnOnce(Principal) -> Principal) -> Self {
        if let Some(principal) = self.runner.principal().cloned() {
            self.runner.set_principal(who(principal));
        }
        self
    }

    /// Paths are resolved from `cwd` (a client's shell runs there), when it
    /// is inside the workspace.
    pub fn in_cwd(mut self, cwd: &Path) -> Self {
        if let Ok(inside) = self.runner.workspace().clone().with_cwd(cwd) {
            self.runner = self.runner.with_workspace(inside);
        }
        self
    }

    /// For a long-lived front-end (`serve`, an MCP session): results are
    /// held back while calls keep coming (when `stream`), and SQLite's WAL
    /// checkpoints run on a thread of their own.
    pub fn long_lived(mut self, stream: bool) -> Result<Self, SessionError> {
        self.record.inner_mut().checkpoint_in_background()?;
        self.stream = stream;
        Ok(self)
    }

    /// Governs one call: the one entry point of every front-end.
    ///
    /// Decided and recorded write-ahead; with [`Ask::Now`], asked, run
    /// here and recorded to its result; with [`Ask::Route`], left to the
    /// client with the record saying where its ask went. The only error
    /// is a record that cannot be written (nothing ran).
    pub fn call(&mut self, call: Call<'_>, ask: Ask<'_>) -> Result<Governed, AuditError> {
        match ask {
            Ask::Now(approver) => {
                let outcome = if self.stream {
                    self.runner.run(
                        call.call_id,
                        call.request,
                        call.client,
                        approver,
                        &mut self.record,
                    )
                } else {
                    let store = self.record.inner_mut();
                    self.runner
                        .run(call.call_id, call.request, call.client, approver, store)
                }?;
                Ok(Governed::Ran(Box::new(outcome)))
            }
            Ask::Route(route) => {
                let (_, decision) = self.runner.decide_and_record_with(
                    call.call_id,
                    call.request,
                    call.client,
                    call.mcp,
                    route,
                    self.record.inner_mut(),
                )?;
                Ok(Governed::Recorded {
                    decision: Box::new(decision),
                })
            }
        }
    }

    /// Writes the results held back while calls kept coming.
    pub fn flush(&mut self) -> Result<(), AuditError> {
        self.record.flush()
    }

    /// The pipeline: its policy, workspace, principal.
    /// Decides `request` as a call of this service would be, its
    /// session's history read from the record; nothing is asked, run or recorded.
    pub fn decide(&mut self, request: &ToolRequest) -> Result<Decision, SessionError> {
        Ok(self.runner.decide_after(request, &mut self.record)?.1)
    }

    pub fn runner(&self) -> &GovernedRunner {
        &self.runner
    }

    pub fn runner_mut(&mut self) -> &mut GovernedRunner {
        &mut self.runner
    }

    pub fn policy(&self) -> &Policy {
        self.runner.policy()
    }

    pub fn workspace(&self) -> &Workspace {
        self.runner.workspace()
    }

    /// Who the calls are made for.
    pub fn principal(&self) -> Option<Arc<Principal>> {
        self.runner.principal().cloned().map(Arc::new)
    }

    /// The options the service was opened with.
    pub fn setup(&self) -> &Setup {
        &self.setup
    }

    /// Whether the log held nothing when the service opened it.
    pub fn opened_fresh(&self) -> bool {
        self.fresh
    }

    /// The store, for what a front-end records beside its calls (a
    /// client's lifecycle events, an MCP server's tool definitions).
    pub fn store(&mut self) -> &mut Store {
        self.record.inner_mut()
    }

    /// The end of a front-end's work: held results written, a signed
    /// checkpoint over what it recorded, the store kept open for the next
    /// call in a resident gavel.
    pub fn close(self) {
        self.close_then(|_| ());
    }

    /// [`Service::close`], reading `then` from the store after the checkpoint.
    pub fn close_then<T>(mut self, then: impl FnOnce(&crate::store::Store) -> T) -> T {
        let _ = self.record.flush();
        let Self {
            setup,
            record,
            runner,
            ..
        } = self;
        // The store closes last: the last connection to close folds the
        // write-ahead log back into the database and removes it.
        drop(runner);
        setup.close_store_then(record.into_inner(), then)
    }
}
