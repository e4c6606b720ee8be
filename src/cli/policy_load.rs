//! Which policy governs: the project's (`--policy`, `$GAVEL_POLICY`,
//! `gavel.toml`, built in), the layers above it and its shadows, and the
//! principal that records where it came from.

use std::path::Path;

use gavel::Workspace;
use gavel::policy::Policy;
use gavel::store::Store;

use super::Global;

impl Global {
    /// The policy for governed calls, as [`Global::policy`] finds it, with
    /// its globs and inline examples left for [`Global::vouch_policy`]:
    /// checking them on every call would cost more than deciding it.
    pub fn calls_policy(&self, workspace: &Workspace) -> anyhow::Result<Policy> {
        let policy = self.project_policy(workspace, Policy::load_unchecked)?;
        self.with_layers(policy, workspace)
    }

    /// Checks the globs and inline examples of a policy (and of each layer
    /// above it) that `store` has not recorded yet; one it recorded passed
    /// them when it was first used.
    pub fn vouch_policy(policy: &Policy, store: &Store) -> anyhow::Result<()> {
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

    /// The policy gavel would use now: `--policy`, `$GAVEL_POLICY`,
    /// `gavel.toml`, built-in; under the layers above it.
    pub fn policy(&self, workspace: &Workspace) -> anyhow::Result<Policy> {
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

    /// The project's own policy, read by `load`: `--policy` (or
    /// `$GAVEL_POLICY`), else `gavel.toml` in the workspace, else built in.
    fn project_policy(
        &self,
        workspace: &Workspace,
        load: fn(&Path) -> Result<Policy, gavel::policy::PolicyError>,
    ) -> anyhow::Result<Policy> {
        if let Some(path) = &self.policy {
            return Ok(load(path)?);
        }
        let local = workspace.root().join("gavel.toml");
        if local.exists() {
            return Ok(load(&local)?);
        }
        Ok(Policy::builtin())
    }

    /// `policy` under the layers above it (`gavel::layers`), with its
    /// shadows: a layer or shadow that exists but cannot be used stops gavel.
    fn with_layers(&self, policy: Policy, workspace: &Workspace) -> anyhow::Result<Policy> {
        let layers = gavel::layers::discover(workspace.root())?;
        let policy = policy.with_layers(layers);
        let shadows = gavel::layers::shadows(&policy, &self.shadow_policy)?;
        Ok(policy.with_shadows(shadows))
    }

    /// The principal of calls made through `client` in this process, with
    /// the policy's source; the host id falls back to one kept beside `store`.
    pub fn principal(
        &self,
        client: &str,
        workspace: &Workspace,
        policy: &Policy,
        store: &gavel::store::Store,
    ) -> gavel::principal::Principal {
        let local = workspace.root().join("gavel.toml");
        let (layer, path) = match &self.policy {
            Some(path) => {
                let from_env = std::env::var_os("GAVEL_POLICY").is_some_and(|v| *path == v);
                (if from_env { "env" } else { "flag" }, Some(path.clone()))
            }
            None if local.exists() => ("workspace", Some(local)),
            None => ("builtin", None),
        };
        let path = path.map(|p| p.canonicalize().unwrap_or(p).display().to_string());
        gavel::principal::Principal::current(client)
            .with_host_id_beside(store.path())
            .with_policy(gavel::principal::PolicySource {
                layer: layer.to_owned(),
                path,
                digest: policy.reference().digest.clone(),
            })
    }

    /// The policy in force and where it comes from, in words.
    pub fn policy_in_force(&self, workspace: &Workspace) -> anyhow::Result<(Policy, String)> {
        let policy = self.policy(workspace)?;
        let origin = match &self.policy {
            Some(path) => {
                let from_env = std::env::var_os("GAVEL_POLICY").is_some_and(|v| *path == v);
                let flag = if from_env {
                    "$GAVEL_POLICY"
                } else {
                    "--policy"
                };
                format!("`{}` ({flag})", path.display())
            }
            None if workspace.root().join("gavel.toml").exists() => format!(
                "`{}` (gavel.toml in the workspace)",
                workspace.root().join("gavel.toml").display()
            ),
            None => {
                "the built-in default (no --policy, $GAVEL_POLICY or gavel.toml in the workspace)"
                    .to_owned()
            }
        };
        Ok((policy, origin))
    }
}
