use super::*;

fn decision(action: Action, rule_id: &str, reason: &str) -> Decision {
    Decision {
        action,
        rule_id: rule_id.into(),
        reason: reason.into(),
        policy: PolicyRef {
            name: "p".into(),
            digest: "d".into(),
        },
        layer: None,
        layers: Vec::new(),
        shadow: Vec::new(),
        sandbox: None,
        labels: Vec::new(),
        after: None,
        approvers: None,
    }
}

#[test]
fn directions_follow_strictness() {
    let v = |action, rule: &str| Verdict {
        action,
        rule_id: rule.into(),
        sandbox: None,
        approvers: None,
    };
    assert_eq!(
        direction(&v(Action::Deny, "a"), &v(Action::Ask, "b")),
        Some(Direction::Loosened)
    );
    assert_eq!(
        direction(&v(Action::Ask, "a"), &v(Action::Allow, "a")),
        Some(Direction::Loosened)
    );
    assert_eq!(
        direction(&v(Action::Allow, "a"), &v(Action::Deny, "b")),
        Some(Direction::Tightened)
    );
    assert_eq!(
        direction(&v(Action::Ask, "a"), &v(Action::Ask, "b")),
        Some(Direction::Rerouted)
    );
    assert_eq!(direction(&v(Action::Ask, "a"), &v(Action::Ask, "a")), None);
    // The same ask, answered only by more people with a factor: stricter.
    let with = |quorum: u32| Verdict {
        approvers: Some(crate::policy::Approvers {
            names: vec!["alice".into(), "bob".into()],
            quorum,
            factors: Vec::new(),
        }),
        ..v(Action::Ask, "a")
    };
    assert_eq!(
        direction(&v(Action::Ask, "a"), &with(1)),
        Some(Direction::Tightened)
    );
    assert_eq!(direction(&with(1), &with(2)), Some(Direction::Tightened));
    assert_eq!(
        direction(&with(2), &v(Action::Ask, "a")),
        Some(Direction::Loosened)
    );
    // The same people, counted only with a passkey: stricter; back: looser.
    let passkey_only = Verdict {
        approvers: Some(crate::policy::Approvers {
            factors: vec!["passkey".into()],
            ..with(1).approvers.unwrap()
        }),
        ..v(Action::Ask, "a")
    };
    assert_eq!(
        direction(&with(1), &passkey_only),
        Some(Direction::Tightened)
    );
    assert_eq!(
        direction(&passkey_only, &with(1)),
        Some(Direction::Loosened)
    );
}

#[test]
fn a_changed_reason_alone_is_not_drift() {
    let mut drift = DriftBuilder::new(
        PolicyRef {
            name: "p".into(),
            digest: "e".into(),
        },
        FactSource::Recorded,
    );
    drift.add(
        "c1",
        &decision(Action::Ask, "r", "old"),
        &decision(Action::Ask, "r", "new"),
    );
    drift.add(
        "c2",
        &decision(Action::Deny, "r", "x"),
        &decision(Action::Allow, "s", "x"),
    );
    drift.add(
        "c3",
        &decision(Action::Deny, "r", "x"),
        &decision(Action::Allow, "s", "x"),
    );
    drift.add(
        "c4",
        &decision(Action::Allow, "s", "x"),
        &decision(Action::Ask, "t", "x"),
    );
    let report = drift.finish();
    assert_eq!(
        (
            report.total,
            report.unchanged,
            report.changed,
            report.reason_changed
        ),
        (4, 1, 3, 1)
    );
    assert_eq!(
        (report.loosened, report.tightened, report.rerouted),
        (2, 1, 0)
    );
    assert_eq!(report.transitions[0].direction, Direction::Loosened);
    assert_eq!(report.transitions[0].call_ids, ["c2", "c3"]);
    assert_eq!(report.transitions[1].direction, Direction::Tightened);
}
