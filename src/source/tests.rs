//! A local source against a real temporary SQLite file: what each reader
//! asks of it, and the bounded check that marks an edited row.

use serde_json::json;

use super::*;
use crate::audit::{DecisionRecord, Event, EventBody, RequestRecord};
use crate::facts::Facts;
use crate::policy::{Action, Policy};
use crate::store::Durability;

const TS: i64 = 1_764_676_800_000_000;

fn call(call_id: &str, command: &str, action: Action) -> [Event; 2] {
    let event = |offset, body| Event {
        call_id: call_id.to_owned(),
        tool: Some("bash".to_owned()),
        ts_us: TS + offset,
        body,
        principal: None,
    };
    [
        event(
            0,
            EventBody::Request(RequestRecord {
                tool_use_id: call_id.to_owned(),
                arguments: json!({ "command": command }),
                client: None,
                arguments_bytes: None,
                arguments_sha256: None,
                principal: None,
            }),
        ),
        event(
            1,
            EventBody::Decision(DecisionRecord {
                action,
                rule_id: "r".to_owned(),
                reason: "decided by r".to_owned(),
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
        ),
    ]
}

/// A log of two calls, `c1` (allowed) and `c2` (denied), in a temporary folder.
fn log() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.db");
    let mut store = Store::open(&path, Durability::Full).unwrap();
    store
        .append(&call("c1", "echo first", Action::Allow))
        .unwrap();
    store
        .append(&call("c2", "echo second", Action::Deny))
        .unwrap();
    drop(store);
    (dir, path)
}

#[test]
fn a_local_source_answers_every_reader_from_one_log() {
    let (_dir, path) = log();
    let mut source =
        Source::open(Location::Local(path.clone()), Selection::default(), true).unwrap();
    assert!(!source.is_central());
    assert_eq!(source.label(), path.display().to_string());
    assert!(source.opened().is_none());
    assert!(source.integrity().unwrap().is_empty());

    let query = AuditQuery {
        action: Some("deny".into()),
        ..AuditQuery::default()
    };
    let mut listed = Vec::new();
    source
        .for_each_listed(&query, false, |from, row| -> Result<(), SourceError> {
            assert!(from.is_none());
            if let Listed::Call(entry) = row {
                listed.push(entry.call_id().to_owned());
            }
            Ok(())
        })
        .unwrap();
    assert_eq!(listed, ["c2"]);
    assert_eq!(source.stats(&AuditQuery::default()).unwrap().calls, 2);

    let call = source.call("c1").unwrap();
    assert!(call.from.is_none());
    assert_eq!(call.store().call_events("c1").unwrap().len(), 2);

    let mut reading = source.reading().unwrap();
    assert_eq!(reading.event_count().unwrap(), Some(4));
    let verified = reading.verify(None, &[], &mut |_| {}).unwrap();
    assert!(verified.ok());
    let mut logs = Vec::new();
    let count = reading
        .for_each_log(&query, |log| -> Result<(), SourceError> {
            logs.push((
                log.from.is_none(),
                log.index,
                log.count,
                log.query.action.clone(),
            ));
            Ok(())
        })
        .unwrap();
    assert_eq!(count, 1);
    assert_eq!(logs, [(true, 0, 1, Some("deny".to_owned()))]);
}

#[test]
fn an_edited_recent_row_is_found_on_opening_and_marks_the_rows_from_it() {
    let (_dir, path) = log();
    // Edit the second call's command in the file itself, as a tamperer would.
    let bytes = std::fs::read(&path).unwrap();
    let edited = String::from_utf8_lossy(&bytes).contains("echo second");
    assert!(edited, "the payload is stored in the main file");
    let mut bytes = bytes;
    let at = bytes
        .windows(b"echo second".len())
        .position(|w| w == b"echo second")
        .unwrap();
    bytes[at..at + b"echo second".len()].copy_from_slice(b"echo SECOND");
    std::fs::write(&path, bytes).unwrap();

    let source = Source::open(Location::Local(path.clone()), Selection::default(), true).unwrap();
    let integrity = source.opened().cloned().expect("the check finds the edit");
    assert!(
        integrity.text.starts_with("the log does not verify"),
        "{}",
        integrity.text
    );
    let bad = integrity.first_bad_seq.unwrap();
    assert!(integrity.unverified(bad) && !integrity.unverified(bad - 1));
    assert!(Integrity::unverified_in(
        std::slice::from_ref(&integrity),
        None,
        bad
    ));
    let filtered = AuditQuery {
        action: Some("deny".into()),
        ..AuditQuery::default()
    };
    assert!(Integrity::filtered_by(&filtered));
    assert!(!Integrity::filtered_by(&AuditQuery::default()));

    // Unchecked, the same log opens with nothing found.
    let unchecked = Source::open(Location::Local(path), Selection::default(), false).unwrap();
    assert!(unchecked.opened().is_none());
}
