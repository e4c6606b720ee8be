//! Where a session finds what it governs with: the workspace, the policy
//! (`--policy`, `$GAVEL_POLICY`, `gavel.toml`, built in) under the layers
//! above it and with its shadows, the audit database, and the principal
//! that records where the policy came from.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{SessionError, StorePool};
use crate::facts::Workspace;
use crate::policy::{Policy, PolicyError};
use crate::principal::{PolicySource, Principal};
use crate::store::{Durability, Store};

/// The options a session is opened with, as a front-end resolved them.
#[derive(Debug, Clone)]
pub struct Setup {
    /// The workspace the agent may touch; `None`: the current directory.
    pub workspace: Option<PathBuf>,
    /// The project's policy file; `None`: `gavel.toml` in the workspace, else built in.
    pub policy: Option<PathBuf>,
    /// Policies decided beside the enforced one, never enforced.
    pub shadow_policy: Vec<PathBuf>,
    /// The audit database (or a central store's URL); `None`: `.gavel/audit.db` in the workspace.
    pub db: Option<PathBuf>,
    pub durability: Durability,
    /// A request whose arguments are larger than this, in JSON, is denied.
    pub max_argument_bytes: u64,
    /// Stores kept open between calls by a resident gavel.
    pub kept: Option<Arc<StorePool>>,
    /// The session the calls belong to (`$GAVEL_SESSION`), for flow rules
    /// (docs/flows.md); a hook takes its client's, `serve` makes one per
    /// stream when none is given.
    pub session: Option<String>,
}

impl Default for Setup {
    /// The current directory, its policy and its `.gavel/audit.db`, synced on every commit.
    fn default() -> Self {
        Self {
            workspace: None,
            policy: None,
            shadow_policy: Vec::new(),
            db: None,
            durability: Durability::Full,
            max_argument_bytes: crate::audit::DEFAULT_MAX_ARGUMENT_BYTES,
            kept: None,
            session: None,
        }
    }
}

impl Setup {
    /// The workspace, canonicalized.
    pub fn workspace(&self) -> Result<Workspace, SessionError> {
        let dir = match &self.workspace {
            Some(dir) => dir.clone(),
            None => std::env::current_dir().map_err(SessionError::CurrentDir)?,
        };
        Workspace::open(&dir).map_err(|source| SessionError::Workspace { path: dir, source })
    }

    /// The central store's URL when the database is one (`postgres://…`
    /// or `postgresql://…`) rather than a SQLite file.
    pub fn central_url(&self) -> Option<String> {
        let db = self.db.as_ref()?.to_str()?;
        (db.starts_with("postgres://") || db.starts_with("postgresql://")).then(|| db.to_owned())
    }

    /// The audit database path: the one given, else `.gavel/audit.db` in the workspace.
    pub fn db_path(&self) -> Result<PathBuf, SessionError> {
        if self.central_url().is_some() {
            return Err(if cfg!(feature = "postgres") {
                SessionError::CentralNotLocal
            } else {
                SessionError::NoCentral
            });
        }
        match &self.db {
            Some(db) => Ok(db.clone()),
            None => Ok(self.workspace()?.root().join(".gavel").join("audit.db")),
        }
    }

    /// Opens the audit database for appending, creating it on first use
    /// (or takes the one a resident gavel kept open).
    pub fn open_store(&self) -> Result<Store, SessionError> {
        let path = self.db_path()?;
        if let Some(store) = self.kept.as_ref().and_then(|pool| pool.take(&path)) {
            return Ok(store);
        }
        let store = Store::open(&path, self.durability)?;
        if !store.tightened().is_empty() {
            let _ = writeln!(
                std::io::stderr(),
                "gavel: tightened modes others could use: {}",
                store.tightened().join(", ")
            );
        }
        Ok(store)
    }

    /// Keeps `store` open for the next call, in a resident gavel; else closes it.
    pub fn keep_store(&self, store: Store) {
        if let Some(pool) = &self.kept {
            pool.keep(store);
        }
    }

    /// The end of a front-end's work on `store`: a signed checkpoint over
    /// what it recorded, then the store kept for the next call or closed.
    pub fn close_store(&self, store: Store) {
        self.close_store_then(store, |_| ());
    }

    /// [`Setup::close_store`], reading `then` from the store between the
    /// checkpoint and closing it (a call's receipt reference).
    pub fn close_store_then<T>(&self, mut store: Store, then: impl FnOnce(&Store) -> T) -> T {
        super::auto_checkpoint(&mut store, 1);
        let out = then(&store);
        self.keep_store(store);
        out
    }

    /// The policy for governed calls, as [`Setup::policy`] finds it, with
    /// its globs and inline examples left for [`Setup::vouch_policy`]:
    /// checking them on every call would cost more than deciding it.
    pub fn calls_policy(&self, workspace: &Workspace) -> Result<Policy, SessionError> {
        let policy = self.project_policy(workspace, Policy::load_unchecked)?;
        self.with_layers(policy, workspace)
    }

    /// Checks the globs and inline examples of a policy (and of each layer
    /// above it) that `store` has not recorded yet; one it recorded passed
    /// them when it was first used.
    pub fn vouch_policy(policy: &Policy, store: &Store) -> Result<(), SessionError> {
        for layer in policy.layers() {
            Self::vouch_policy(&layer.policy, store)?;
        }
        for shadow in policy.shadows() {
            Self::vouch_policy(&shadow.policy, store)?;
        }
        if !store.knows_policy(&policy.reference().digest)? {
            policy.check_deferred()?;
        }
        Ok(())
    }

    /// The policy gavel would use now, under the layers above it, every
    /// part of it checked.
    pub fn policy(&self, workspace: &Workspace) -> Result<Policy, SessionError> {
        let policy = self.project_policy(workspace, Policy::load)?;
        let layered = self.with_layers(policy, workspace)?;
        for layer in layered.layers() {
            layer.policy.check_deferred()?;
        }
        for shadow in layered.shadows() {
            shadow.policy.check_deferred()?;
        }
        Ok(layered)
    }

    /// The project's own policy, read by `load`: the file given, else
    /// `gavel.toml` in the workspace, else built in.
    fn project_policy(
        &self,
        workspace: &Workspace,
        load: fn(&Path) -> Result<Policy, PolicyError>,
    ) -> Result<Policy, SessionError> {
        if let Some(path) = &self.policy {
            return Ok(load(path)?);
        }
        let local = workspace.root().join("gavel.toml");
        if local.exists() {
            return Ok(load(&local)?);
        }
        Ok(Policy::builtin())
    }

    /// `policy` under the layers above it (`crate::layers`), with its
    /// shadows: a layer or shadow that exists but cannot be used stops gavel.
    fn with_layers(&self, policy: Policy, workspace: &Workspace) -> Result<Policy, SessionError> {
        let layers = crate::layers::discover(workspace.root())?;
        let policy = policy.with_layers(layers);
        let shadows = crate::layers::shadows(&policy, &self.shadow_policy)?;
        Ok(policy.with_shadows(shadows))
    }

    /// Where the project's policy comes from: its layer name (`flag`,
    /// `env`, `workspace`, `builtin`) and file.
    fn policy_source(&self, workspace: &Workspace) -> (&'static str, Option<PathBuf>) {
        let local = workspace.root().join("gavel.toml");
        match &self.policy {
            Some(path) => {
                let from_env = std::env::var_os("GAVEL_POLICY").is_some_and(|v| *path == v);
                (if from_env { "env" } else { "flag" }, Some(path.clone()))
            }
            None if local.exists() => ("workspace", Some(local)),
            None => ("builtin", None),
        }
    }

    /// The principal of calls made through `client` in this process, with
    /// the policy's source; the host id falls back to one kept beside `store`.
    pub fn principal(
        &self,
        client: &str,
        workspace: &Workspace,
        policy: &Policy,
        store: &Store,
    ) -> Principal {
        let (layer, path) = self.policy_source(workspace);
        let path = path.map(|p| p.canonicalize().unwrap_or(p).display().to_string());
        Principal::current(client)
            .with_session(self.session.as_deref())
            .with_host_id_beside(store.path())
            .with_policy(PolicySource {
                layer: layer.to_owned(),
                path,
                digest: policy.reference().digest.clone(),
            })
    }

    /// The policy in force and where it comes from, in words.
    pub fn policy_in_force(&self, workspace: &Workspace) -> Result<(Policy, String), SessionError> {
        let policy = self.policy(workspace)?;
        let origin = match self.policy_source(workspace) {
            ("builtin", _) => {
                "the built-in default (no --policy, $GAVEL_POLICY or gavel.toml in the workspace)"
                    .to_owned()
            }
            ("workspace", Some(path)) => {
                format!("`{}` (gavel.toml in the workspace)", path.display())
            }
            (layer, path) => {
                let flag = if layer == "env" {
                    "$GAVEL_POLICY"
                } else {
                    "--policy"
                };
                format!("`{}` ({flag})", path.unwrap_or_default().display())
            }
        };
        Ok((policy, origin))
    }
}
