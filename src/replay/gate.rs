//! A replay used as a gate: which drift fails it, counted over a report
//! (the exit code) and judged call by call (where a CI report fails).

use super::{Direction, DriftReport};

/// Which drift fails a replay used as a gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailOn {
    /// Any loosened, tightened or rerouted call.
    Any,
    Loosened,
    Tightened,
    Never,
}

/// A replay's gate: the drift it fails on and whether calls that cannot be
/// re-decided exactly (a field stored redacted) fail with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gate {
    pub fail_on: FailOn,
    /// With `Any` or `Loosened`, undecidable calls fail (the drift they
    /// could hide) unless this is set.
    pub allow_undecidable: bool,
}

impl Gate {
    /// How many calls of `report` make the gate fail.
    pub fn failing(&self, report: &DriftReport) -> u64 {
        let undecidable = |n: u64| if self.allow_undecidable { 0 } else { n };
        match self.fail_on {
            FailOn::Any => report.changed + undecidable(report.undecidable),
            FailOn::Loosened => report.loosened + undecidable(report.undecidable_loosened),
            FailOn::Tightened => report.tightened,
            FailOn::Never => 0,
        }
    }

    /// Whether one call that moved `direction` fails the gate.
    pub fn fails(&self, direction: Direction, undecidable: bool) -> bool {
        let counted = match self.fail_on {
            FailOn::Any => true,
            FailOn::Loosened => direction == Direction::Loosened,
            FailOn::Tightened => direction == Direction::Tightened && !undecidable,
            FailOn::Never => false,
        };
        counted && !(undecidable && self.allow_undecidable)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{Action, Decision, PolicyRef};
    use crate::replay::{DriftBuilder, FactSource, Kept};

    fn decision(action: Action, rule: &str) -> Decision {
        let policy = PolicyRef {
            name: "p".into(),
            digest: "d".into(),
        };
        Decision::new(action, rule, "r".into(), policy)
    }

    #[test]
    fn the_calls_a_gate_fails_one_by_one_are_the_calls_it_counts() {
        let actions = [Action::Allow, Action::Ask, Action::Deny];
        let mut drift = DriftBuilder::keeping(
            PolicyRef {
                name: "p".into(),
                digest: "e".into(),
            },
            FactSource::Recorded,
            Kept::Every,
        );
        let mut n = 0;
        // Every move between two verdicts, as a call and as an undecidable one.
        for from in actions {
            for to in actions {
                for rule in ["same", "other"] {
                    for undecidable in [false, true] {
                        n += 1;
                        let (was, now) = (decision(from, "same"), decision(to, rule));
                        let id = format!("c{n}");
                        let arguments = serde_json::json!({"command": "ls"});
                        if undecidable {
                            drift.add_undecidable(&id, "bash", &arguments, &was, &now);
                        } else {
                            drift.add_call(&id, "bash", &arguments, &was, &now);
                        }
                    }
                }
            }
        }
        let report = drift.finish();
        assert!(report.undecidable > 0 && report.loosened > 0 && report.tightened > 0);
        assert_eq!(
            report.replayed.len() as u64,
            report.total,
            "every call is kept"
        );
        for fail_on in [
            FailOn::Any,
            FailOn::Loosened,
            FailOn::Tightened,
            FailOn::Never,
        ] {
            for allow_undecidable in [false, true] {
                let gate = Gate {
                    fail_on,
                    allow_undecidable,
                };
                let one_by_one = report
                    .replayed
                    .iter()
                    .filter_map(|c| c.direction.map(|d| gate.fails(d, c.undecidable)))
                    .filter(|fails| *fails)
                    .count() as u64;
                assert_eq!(one_by_one, gate.failing(&report), "{gate:?}");
            }
        }
    }
}
