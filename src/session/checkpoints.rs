//! The automatic checkpoints a session signs after its calls: a log left
//! by a hook, a `run` or a streamed session is vouched for by a signed
//! checkpoint, so a cut tail is caught (docs/checkpoints.md).

use std::io::Write;

use super::SessionError;
use crate::store::Store;
use crate::text::escape;

/// The environment variable that sets how many new rows make an automatic
/// checkpoint (`0` turns them off).
pub const CHECKPOINT_EVERY_VAR: &str = "GAVEL_CHECKPOINT_EVERY";

/// After governed calls: when at least `every` rows (or what
/// `GAVEL_CHECKPOINT_EVERY` says) were appended since the newest
/// checkpoint, signs one with the log's key in the user's data folder
/// ([`crate::store::checkpoint_key_path`], made on first use), reading only
/// the new rows. Never fails the call it follows:
/// a problem is one warning line on stderr.
pub fn auto_checkpoint(store: &mut Store, every: u64) {
    let every = match std::env::var(CHECKPOINT_EVERY_VAR) {
        Ok(value) => match value.trim().parse::<u64>() {
            Ok(n) => n,
            Err(_) => {
                warn(&format!(
                    "{CHECKPOINT_EVERY_VAR}=`{value}` is not a number; checkpoints every {every} rows"
                ));
                every
            }
        },
        Err(_) => every,
    };
    if every == 0 {
        return;
    }
    if let Some(problem) = sign(store, every) {
        warn(&problem);
    }
}

/// Signs a checkpoint when one is due: what went wrong, if anything.
fn sign(store: &mut Store, every: u64) -> Option<String> {
    let signed = (|| -> Result<Option<String>, SessionError> {
        let path = crate::store::checkpoint_key_path(store.path(), &store.identity().log_id);
        if let Err(source) = crate::store::prepare_key_dir(&path) {
            return Err(crate::checkpoint::CheckpointError::Io { path, source }.into());
        }
        let key = crate::checkpoint::read_or_create_key(&path, "gavel")?;
        Ok(match store.checkpoint_since_last(&key, every)? {
            Some(Err(report)) => Some(format!(
                "not signing a checkpoint of a log that does not verify: {} at seq {}",
                report.problem.map_or("unknown", |p| p.as_str()),
                report.first_bad_seq.unwrap_or(0)
            )),
            _ => None,
        })
    })();
    match signed {
        Ok(problem) => problem,
        Err(err) => Some(format!("no checkpoint signed: {}", chain(&err))),
    }
}

fn warn(problem: &str) {
    let _ = writeln!(std::io::stderr(), "gavel: warning: {}", escape(problem));
}

/// An error and its causes, as `{:#}` of an `anyhow` error prints them.
pub(crate) fn chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut cause = err.source();
    while let Some(next) = cause {
        text.push_str(": ");
        text.push_str(&next.to_string());
        cause = next.source();
    }
    text
}
