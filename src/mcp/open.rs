//! Opening MCP sessions through the session service: one policy loaded and
//! vouched for once, then one [`Service`] per session (stdio: one; HTTP:
//! one per client `initialize`), its principal carrying the session's id.

use std::time::Duration;

use super::session::CLIENT;
use super::{Config, Session};
use crate::facts::Workspace;
use crate::policy::Policy;
use crate::runner::new_call_id;
use crate::session::{AskWait, DEFAULT_WAIT, Service, SessionError, Setup, chain};
use crate::tools::Registry;

/// Opens the sessions of one proxied server.
pub struct Opener {
    setup: Setup,
    workspace: Workspace,
    policy: Policy,
    server: String,
    timeout: Duration,
    /// How long an asked call waits in the pending queue, if asks go there.
    wait: Option<Duration>,
}

impl Opener {
    /// Loads the policy (a bad one, or a bad database, stops here, before
    /// any session) for the server named `server` in tool names.
    pub fn new(
        setup: &Setup,
        server: String,
        timeout: Duration,
        ask: Option<AskWait>,
    ) -> Result<Self, SessionError> {
        let workspace = setup.workspace()?;
        let policy = setup.calls_policy(&workspace)?;
        {
            let store = setup.open_store()?;
            Setup::vouch_policy(&policy, &store)?;
        }
        let wait = ask
            .or(policy.approval_wait().map(|wait| AskWait(Some(wait))))
            .map(|wait| wait.or(DEFAULT_WAIT));
        Ok(Self {
            setup: setup.clone(),
            workspace,
            policy,
            server,
            timeout,
            wait,
        })
    }

    /// A new session with a store of its own.
    pub fn open(&self) -> Result<Session, SessionError> {
        let store = self.setup.open_store()?;
        let session_id = new_call_id().replacen("call_", "mcp_", 1);
        let service = Service::with(
            &self.setup,
            CLIENT,
            Registry::empty(),
            self.workspace.clone(),
            self.policy.clone(),
            store,
        )?
        .with_principal(|who| who.with_session(Some(&session_id)))
        .long_lived(false)?;
        let config = Config {
            server: self.server.clone(),
            timeout: self.timeout,
            session_id,
        };
        let session = Session::new(service, config);
        Ok(match self.wait {
            Some(wait) => session.with_queue(wait),
            None => session,
        })
    }
}

impl super::hub::Sessions for Opener {
    fn open(&mut self) -> Result<Session, String> {
        Opener::open(self).map_err(|err| chain(&err))
    }

    fn close(&mut self, session: Session) {
        session.close();
    }
}
