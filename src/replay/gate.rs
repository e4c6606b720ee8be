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
