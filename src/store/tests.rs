//! The store against in-memory SQLite: append and verify, duplicate calls,
//! how calls are assembled from their events, recorded policies, and two
//! properties: any append sequence verifies, any one-byte payload change is
//! caught at exactly its seq.

use proptest::prelude::*;
use serde_json::json;

use super::*;
use crate::approval::ApprovalStatus;
use crate::audit::{
    ApprovalRecord, DecisionRecord, Event, EventBody, ExecutionStatus, LifecycleRecord,
    RequestRecord, ResultRecord,
};
use crate::facts::Facts;
use crate::policy::{Action, Policy};

const TS: i64 = 1_764_676_800_000_000;

fn event(call_id: &str, offset: i64, body: EventBody) -> Event {
    let tool = match body {
        EventBody::Lifecycle(_) => None,
        _ => Some("bash".to_owned()),
    };
    Event {
        call_id: call_id.to_owned(),
        tool,
        ts_us: TS + offset,
        body,
        principal: None,
    }
}

fn request(call_id: &str) -> Event {
    event(
        call_id,
        0,
        EventBody::Request(RequestRecord {
            tool_use_id: call_id.to_owned(),
            arguments: json!({"command": "echo hi"}),
            client: None,
            arguments_bytes: None,
            arguments_sha256: None,
            principal: None,
        }),
    )
}

fn decision(call_id: &str, action: Action, rule_id: &str) -> Event {
    event(
        call_id,
        1,
        EventBody::Decision(DecisionRecord {
            action,
            rule_id: rule_id.to_owned(),
            reason: format!("decided by {rule_id}"),
            policy: Policy::builtin().reference().clone(),
            layer: None,
            layers: Vec::new(),
            shadow: Vec::new(),
            sandbox: None,
            labels: Vec::new(),
            after: None,
            approvers: None,
            history_through: None,
            facts: Facts {
                workspace: "/ws".into(),
                paths: vec![],
                shell: None,
                shell_sha256: None,
                unprovable: Vec::new(),
                mcp: None,
            },
        }),
    )
}

fn approval(call_id: &str, status: ApprovalStatus) -> Event {
    event(
        call_id,
        2,
        EventBody::Approval(ApprovalRecord::new(
            status,
            crate::approval::ApprovalChannel::Api,
        )),
    )
}

fn result(call_id: &str, status: ExecutionStatus) -> Event {
    event(
        call_id,
        3,
        EventBody::Result(ResultRecord {
            status,
            content: "done".into(),
            content_sha256: None,
            content_bytes: None,
            exit_code: Some(0),
            duration_ms: 5,
            contained: None,
        }),
    )
}

fn lifecycle(session: &str, name: &str) -> Event {
    event(
        session,
        4,
        EventBody::Lifecycle(LifecycleRecord {
            event: name.to_owned(),
            data: json!({"n": 1}),
        }),
    )
}

fn verify(store: &Store) -> VerifyReport {
    store
        .verify(&VerifyOptions::default(), &mut |_| {})
        .expect("verify runs")
}

/// Lets a test edit rows the way an attacker with the file would.
fn drop_triggers(store: &Store) {
    store
        .conn
        .execute_batch("DROP TRIGGER events_no_update; DROP TRIGGER events_no_delete;")
        .unwrap();
}

#[test]
fn empty_log_verifies_with_the_genesis_as_head() {
    let store = Store::open_in_memory().unwrap();
    let report = verify(&store);
    assert!(report.ok);
    assert_eq!(report.rows, 0);
    assert_eq!(
        report.head.as_deref(),
        Some(crate::digest::hex(&store.identity().genesis).as_str())
    );
    let identity = store.identity();
    assert_eq!(identity.log_id.len(), 16);
    assert_eq!(identity.format, crate::chain::FORMAT_VERSION);
    assert_eq!(
        identity.origin,
        format!("gavel/{}", crate::digest::hex(&identity.log_id))
    );
}

#[test]
fn appended_events_round_trip_and_verify() {
    let mut store = Store::open_in_memory().unwrap();
    let first = [request("c1"), decision("c1", Action::Allow, "r.allow")];
    assert_eq!(store.append(&first).unwrap(), 2);
    assert_eq!(
        store
            .append(&[result("c1", ExecutionStatus::Succeeded)])
            .unwrap(),
        3
    );
    assert_eq!(store.append(&[lifecycle("s1", "Stop")]).unwrap(), 4);
    assert_eq!(store.event_count().unwrap(), 4);
    let report = verify(&store);
    assert!(report.ok, "{report:?}");
    assert_eq!(report.rows, 4);

    let events = store.call_events("c1").unwrap();
    let kinds: Vec<&str> = events.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(kinds, ["request", "decision", "result"]);
    assert_eq!(events[1].action.as_deref(), Some("allow"));
    assert_eq!(events[1].rule_id.as_deref(), Some("r.allow"));
    assert_eq!(events[2].status.as_deref(), Some("succeeded"));
    assert_eq!(
        events[0].payload,
        first[0].body.to_json(),
        "payload bytes as appended"
    );
    assert_eq!(events[1].ts_us, TS + 1);
    let lifecycle_row = store.call_events("s1").unwrap();
    assert_eq!(lifecycle_row[0].tool, None);
    assert_eq!(lifecycle_row[0].kind, "lifecycle");

    // The stored chain is the documented link of the stored leaves.
    let mut previous = store.identity().genesis;
    let mut all = Vec::new();
    store
        .for_each_event(|e| {
            all.push(e);
            Ok::<_, StoreError>(())
        })
        .unwrap();
    for e in &all {
        previous = crate::chain::link(&previous, &e.leaf.clone().try_into().unwrap());
        assert_eq!(e.chain, previous.to_vec(), "seq {}", e.seq);
    }
    assert_eq!(report.head, Some(crate::digest::hex(&previous)));
}

#[test]
fn duplicate_call_id_is_refused_and_nothing_of_the_batch_is_written() {
    let mut store = Store::open_in_memory().unwrap();
    store
        .append(&[request("c1"), decision("c1", Action::Allow, "r")])
        .unwrap();
    let err = store
        .append(&[
            request("c2"),
            decision("c2", Action::Allow, "r"),
            request("c1"),
        ])
        .unwrap_err();
    assert!(
        matches!(&err, StoreError::DuplicateCall { call_id } if call_id == "c1"),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "call id `c1` was already used; each call needs its own id"
    );
    assert_eq!(store.event_count().unwrap(), 2, "the batch was rolled back");
    assert!(matches!(
        store.call_events("c2"),
        Err(StoreError::UnknownCall { .. })
    ));
    // Later events of an existing call are fine.
    store
        .append(&[result("c1", ExecutionStatus::Succeeded)])
        .unwrap();
    assert!(verify(&store).ok);
}

#[test]
fn calls_assemble_approval_and_status_from_their_events() {
    let mut store = Store::open_in_memory().unwrap();
    // An allowed call that finished.
    store
        .append(&[
            request("done"),
            decision("done", Action::Allow, "r.allow"),
            result("done", ExecutionStatus::Succeeded),
        ])
        .unwrap();
    // An ask handed to the client, never answered.
    store
        .append(&[request("asked"), decision("asked", Action::Ask, "r.ask")])
        .unwrap();
    // An ask answered `pending`, then approved, then interrupted.
    store
        .append(&[
            request("approved"),
            decision("approved", Action::Ask, "r.ask"),
            approval("approved", ApprovalStatus::Pending),
            approval("approved", ApprovalStatus::Approved),
        ])
        .unwrap();
    // A deny whose result was never written.
    store
        .append(&[
            request("denied"),
            decision("denied", Action::Deny, "r.deny"),
        ])
        .unwrap();
    store.append(&[lifecycle("session", "Stop")]).unwrap();

    let calls = store.calls(&AuditQuery::default()).unwrap();
    let got: Vec<(&str, &str, &str)> = calls
        .iter()
        .map(|c| (c.call_id.as_str(), c.approval.as_str(), c.status.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            ("done", "not_required", "succeeded"),
            ("asked", "pending", "incomplete"),
            ("approved", "approved", "incomplete"),
            ("denied", "not_required", "incomplete"),
        ]
    );
    assert_eq!(calls[0].seq, 2, "a call's seq is its decision's");
    assert_eq!(calls[0].tool, "bash");
    assert_eq!(calls[0].request.tool_use_id, "done");
    assert_eq!(calls[1].decision.rule_id, "r.ask");

    let only = |q: AuditQuery| -> Vec<String> {
        store
            .calls(&q)
            .unwrap()
            .into_iter()
            .map(|c| c.call_id)
            .collect()
    };
    assert_eq!(
        only(AuditQuery {
            status: Some("incomplete".into()),
            ..Default::default()
        }),
        ["asked", "approved", "denied"]
    );
    assert_eq!(
        only(AuditQuery {
            approval: Some("pending".into()),
            ..Default::default()
        }),
        ["asked"]
    );
    assert_eq!(
        only(AuditQuery {
            action: Some("ask".into()),
            limit: Some(1),
            ..Default::default()
        }),
        ["asked"]
    );
    assert_eq!(
        only(AuditQuery {
            since: Some(TS + 1),
            until: Some(TS + 2),
            ..Default::default()
        }),
        ["done", "asked", "approved", "denied"]
    );
    assert!(
        only(AuditQuery {
            until: Some(TS + 1),
            ..Default::default()
        })
        .is_empty()
    );

    let stats = store.stats(&AuditQuery::default()).unwrap();
    assert_eq!(stats.calls, 4);
    assert_eq!(stats.by_status.get("incomplete"), Some(&3));
    assert_eq!(stats.by_approval.get("not_required"), Some(&2));
}

#[test]
fn remembered_policy_text_is_returned_by_its_digest() {
    let mut store = Store::open_in_memory().unwrap();
    let policy = Policy::builtin();
    let digest = policy.reference().digest.clone();
    assert_eq!(store.policy_source(&digest).unwrap(), None);
    store.remember_policy(&policy).unwrap();
    store.remember_policy(&policy).unwrap();
    assert_eq!(
        store.policy_source(&digest).unwrap().as_deref(),
        Some(policy.source())
    );
    let rows: i64 = store
        .conn
        .query_row("SELECT count(*) FROM policies", [], |r| r.get(0))
        .unwrap();
    assert_eq!(rows, 1, "once per digest");
    assert_eq!(store.policy_source(&"0".repeat(64)).unwrap(), None);
}

#[test]
fn tampered_policy_text_is_not_returned() {
    let mut store = Store::open_in_memory().unwrap();
    let policy = Policy::builtin();
    let digest = policy.reference().digest.clone();
    store.remember_policy(&policy).unwrap();
    let edit = "UPDATE policies SET source = replace(source, 'deny', 'allow') WHERE digest = ?1";
    // The trigger refuses it by accident, on any other program's
    // connection; an attacker drops the trigger first.
    as_another_program(&store);
    assert!(store.conn.execute(edit, [&digest]).is_err());
    store
        .conn
        .execute_batch("DROP TRIGGER policies_no_update")
        .unwrap();
    store.conn.execute(edit, [&digest]).unwrap();
    assert_eq!(store.policy_source(&digest).unwrap(), None);
    assert_eq!(
        store.recorded_policy(&digest).unwrap(),
        PolicyText::Mismatch
    );
    assert_eq!(
        store.recorded_policy(&"0".repeat(64)).unwrap(),
        PolicyText::Missing
    );
}

#[test]
fn triggers_refuse_edits_of_events() {
    let mut store = Store::open_in_memory().unwrap();
    store
        .append(&[request("c1"), decision("c1", Action::Allow, "r")])
        .unwrap();
    as_another_program(&store);
    for statement in [
        "UPDATE events SET rule_id = 'x' WHERE seq = 2",
        "DELETE FROM events WHERE seq = 1",
        "INSERT OR REPLACE INTO events SELECT * FROM events WHERE seq = 1",
    ] {
        let err = store.conn.execute(statement, []).unwrap_err();
        assert!(err.to_string().contains("append-only"), "{err}");
    }
    assert!(verify(&store).ok);
}

/// Fires the schema's triggers on `store`'s connection, as on any other
/// program's (gavel's own writer does not fire them: its inserts are plain).
fn as_another_program(store: &Store) {
    store
        .conn
        .set_db_config(
            rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_TRIGGER,
            true,
        )
        .unwrap();
}

#[test]
fn gavel_s_own_writer_fires_no_trigger_and_still_refuses_a_taken_key() {
    let mut store = Store::open_in_memory().unwrap();
    store.append(&[request("c1")]).unwrap();
    // A fired BEFORE INSERT trigger would make each insert keep a
    // statement journal; the primary key alone refuses a taken seq.
    let err = store
        .conn
        .execute("INSERT INTO events SELECT * FROM events WHERE seq = 1", [])
        .unwrap_err();
    assert!(err.to_string().contains("UNIQUE"), "{err}");
    store
        .conn
        .execute_batch("CREATE TABLE fired (n); CREATE TRIGGER t BEFORE INSERT ON events BEGIN INSERT INTO fired VALUES (1); END;")
        .unwrap();
    store.append(&[decision("c1", Action::Allow, "r")]).unwrap();
    let fired: i64 = store
        .conn
        .query_row("SELECT count(*) FROM fired", [], |r| r.get(0))
        .unwrap();
    assert_eq!(fired, 0);
    assert!(verify(&store).ok);
}

/// Any event a test might append, chosen by proptest.
fn arb_event() -> impl Strategy<Value = (u8, String, u8)> {
    (0u8..5, "[a-z0-9 ./\"\\\\\u{e9}]{0,24}", any::<u8>())
}

/// Builds events from proptest's choices: each call is a request and a
/// decision, then maybe approvals, a result, and lifecycle events between.
fn build(choices: &[(u8, String, u8)]) -> Vec<Vec<Event>> {
    let actions = [Action::Allow, Action::Ask, Action::Deny];
    let mut batches = Vec::new();
    for (i, (kind, text, n)) in choices.iter().enumerate() {
        let call = format!("call-{i}-{text}");
        let batch = match kind {
            0 => vec![
                request(&call),
                decision(&call, actions[usize::from(*n) % 3], text),
            ],
            1 => vec![
                request(&call),
                decision(&call, Action::Ask, text),
                approval(&call, ApprovalStatus::Approved),
            ],
            2 => {
                let mut r = result(&call, ExecutionStatus::Failed);
                if let EventBody::Result(body) = &mut r.body {
                    body.content = text.clone();
                    body.exit_code = Some(i32::from(*n));
                }
                vec![request(&call), decision(&call, Action::Allow, "r"), r]
            }
            3 => vec![lifecycle(&call, text)],
            _ => {
                let mut e = request(&call);
                e.ts_us = i64::from(*n) * -1_000_003;
                vec![e, decision(&call, Action::Deny, text)]
            }
        };
        batches.push(batch);
    }
    batches
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn any_appended_sequence_verifies(choices in prop::collection::vec(arb_event(), 0..12)) {
        let mut store = Store::open_in_memory().unwrap();
        let mut expected = 0u64;
        for batch in build(&choices) {
            expected += batch.len() as u64;
            prop_assert_eq!(store.append(&batch).unwrap(), expected);
        }
        let report = verify(&store);
        prop_assert!(report.ok, "{:?}", report);
        prop_assert_eq!(report.rows, expected);
    }

    #[test]
    fn any_single_byte_change_to_a_payload_is_caught_at_its_seq(
        choices in prop::collection::vec(arb_event(), 1..8),
        pick in any::<prop::sample::Index>(),
        at in any::<prop::sample::Index>(),
        flip in 1u8..=255,
    ) {
        let mut store = Store::open_in_memory().unwrap();
        for batch in build(&choices) {
            store.append(&batch).unwrap();
        }
        let rows = store.event_count().unwrap();
        let seq = pick.index(rows as usize) as u64 + 1;
        let mut payload: Vec<u8> = store
            .conn
            .query_row("SELECT payload FROM events WHERE seq = ?1", [seq], |r| r.get(0))
            .unwrap();
        let i = at.index(payload.len());
        payload[i] ^= flip;
        drop_triggers(&store);
        store
            .conn
            .execute("UPDATE events SET payload = ?1 WHERE seq = ?2", rusqlite::params![payload, seq])
            .unwrap();
        let report = verify(&store);
        prop_assert!(!report.ok);
        prop_assert_eq!(report.problem, Some(Problem::ContentMismatch));
        prop_assert_eq!(report.first_bad_seq, Some(seq));
        prop_assert_eq!(report.rows, seq - 1);
    }
}

fn anomaly(call_id: &str, kind: crate::audit::AnomalyKind) -> Event {
    event(
        call_id,
        5,
        EventBody::Anomaly(crate::audit::AnomalyRecord {
            anomaly: kind,
            detail: "reported".into(),
            event: "PostToolUse".into(),
            tool_use_id: call_id.into(),
            client: crate::audit::ClientCall::new(
                "claude-code",
                "Bash",
                &json!({}),
                Some("s"),
                1024,
            ),
            mismatched: Vec::new(),
            result: ResultRecord {
                status: ExecutionStatus::Succeeded,
                content: "ran".into(),
                content_sha256: None,
                content_bytes: None,
                exit_code: None,
                duration_ms: 1,
                contained: None,
            },
        }),
    )
}

#[test]
fn anomalies_sit_beside_the_first_result_and_ungoverned_calls_are_listed() {
    use crate::audit::AnomalyKind;
    let mut store = Store::open_in_memory().unwrap();
    store
        .append(&[
            request("denied"),
            decision("denied", Action::Deny, "bash.hard_deny"),
            result("denied", ExecutionStatus::Blocked),
            anomaly("denied", AnomalyKind::RanDespiteDeny),
            anomaly("orphan", AnomalyKind::RanWithoutDecision),
            anomaly("orphan", AnomalyKind::SecondCompletion),
            request("clean"),
            decision("clean", Action::Allow, "x.allow"),
            result("clean", ExecutionStatus::Succeeded),
        ])
        .unwrap();
    let mut rows = Vec::new();
    store
        .for_each_entry(&AuditQuery::default(), |entry| {
            rows.push((
                entry.call_id().to_owned(),
                entry.status().to_owned(),
                entry.anomalies().to_vec(),
            ));
            Ok::<_, StoreError>(())
        })
        .unwrap();
    assert_eq!(
        rows,
        [
            (
                "denied".to_owned(),
                "blocked".to_owned(),
                vec![AnomalyKind::RanDespiteDeny]
            ),
            (
                "orphan".to_owned(),
                UNGOVERNED.to_owned(),
                vec![
                    AnomalyKind::RanWithoutDecision,
                    AnomalyKind::SecondCompletion
                ]
            ),
            ("clean".to_owned(), "succeeded".to_owned(), vec![]),
        ]
    );
    // Decided calls alone for the callers that need a decision.
    assert_eq!(store.calls(&AuditQuery::default()).unwrap().len(), 2);
    let only = AuditQuery {
        anomalies: true,
        ..AuditQuery::default()
    };
    let mut ids = Vec::new();
    store
        .for_each_entry(&only, |entry| {
            ids.push(entry.call_id().to_owned());
            Ok::<_, StoreError>(())
        })
        .unwrap();
    assert_eq!(ids, ["denied", "orphan"]);
    let listed = store.anomalies(&AuditQuery::default()).unwrap();
    assert_eq!(listed.len(), 3);
    assert_eq!(listed[0].action.as_deref(), Some("deny"));
    assert_eq!(listed[0].recorded_status.as_deref(), Some("blocked"));
    assert_eq!(listed[1].action, None);
    let stats = store.stats(&AuditQuery::default()).unwrap();
    assert_eq!((stats.calls, stats.anomalous_calls), (3, 2));
    assert_eq!(stats.by_status[UNGOVERNED], 1);
    assert!(verify(&store).ok);
}

/// A call whose events share one batch took its secrets once per event,
/// and the list doubled with each batch it was in (a session of asked
/// shell commands with secrets in them ran out of memory in `serve`).
#[test]
fn recent_secrets_are_kept_once_however_often_a_call_appears() {
    let mut secrets = super::RecentSecrets::default();
    let secret = |s: &str| (s.to_owned(), "kind".to_owned());
    secrets.keep(&["a", "a"], vec![secret("one"), secret("one")]);
    for _ in 0..64 {
        let found = secrets.take(&["a", "a", "b", "b"]);
        secrets.keep(&["a", "a", "b", "b"], found);
    }
    assert_eq!(secrets.take(&["a", "b", "a"]), vec![secret("one")]);
}

/// A passkey answer's assertion is high-entropy by nature: it is stored
/// exactly as given, while the rest of its row (the person's reason) is
/// redacted as any row is.
#[test]
fn key_material_is_stored_exact_and_the_rest_of_its_row_redacted() {
    let mut store = Store::open_in_memory().unwrap();
    let secret = "ghp_1a2B3c4D5e6F7g8H9i0J1k2L3m4N5o6P7q8R";
    let assertion = crate::audit::PasskeyAssertion {
        credential_id: "q8Zr1mX0vN3kP7sT2wY5bC9dF4gH6jL".into(),
        authenticator_data: "SZYN5YgOjGh0NBcPZHZgW4_krrmihjLHmVzzuoMdl2MFAAAABw".into(),
        client_data_json: "eyJ0eXBlIjoid2ViYXV0aG4uZ2V0IiwiY2hhbGxlbmdlIjoiYWJjIn0".into(),
        signature: "MEUCIQDx7Kq2mN9pL4vR8sT1wY6bC3dF5gH7jK0zXa2eV4uQ".into(),
        nonce: "n0nc3Zq8Rk2mX7vP".into(),
    };
    let mut record = ApprovalRecord::new(
        ApprovalStatus::Approved,
        crate::approval::ApprovalChannel::Web,
    );
    record.reason = Some(format!("fine, it only prints {secret}"));
    record.assertion = Some(assertion.clone());
    store
        .append(&[request("k1"), event("k1", 2, EventBody::Approval(record))])
        .unwrap();
    let row = store
        .call_events("k1")
        .unwrap()
        .into_iter()
        .find(|e| e.kind == "approval")
        .unwrap();
    let text = String::from_utf8(row.payload.clone()).unwrap();
    assert!(!text.contains(secret), "{text}");
    let EventBody::Approval(stored) = EventBody::from_json("approval", &row.payload).unwrap()
    else {
        panic!("not an approval: {text}");
    };
    assert_eq!(stored.assertion, Some(assertion));
    assert!(store.verify(&Default::default(), &mut |_| {}).unwrap().ok);
}
