//! The session service through its public API, against a real temporary
//! workspace and SQLite file.

use serde_json::json;

use super::{Ask, Call, Governed, Service, Setup};
use crate::approval::{ApprovalStatus, Fixed};
use crate::runner::AskRoute;
use crate::store::Durability;
use crate::tools::Registry;
use crate::{ExecutionStatus, ToolRequest};

fn setup(dir: &tempfile::TempDir) -> Setup {
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    Setup {
        workspace: Some(ws),
        db: Some(dir.path().join("audit.db")),
        durability: Durability::Normal,
        ..Setup::default()
    }
}

/// The kinds and statuses of a call's chained events, in order.
fn events(service: &mut Service, call_id: &str) -> Vec<(String, Option<String>)> {
    service
        .store()
        .call_events(call_id)
        .unwrap()
        .into_iter()
        .map(|e| (e.kind, e.status.or(e.approval).or(e.action)))
        .collect()
}

#[test]
fn a_call_asked_now_is_approved_run_and_recorded_to_its_result() {
    let dir = tempfile::tempdir().unwrap();
    let mut service = Service::open(&setup(&dir), "test", Registry::builtin()).unwrap();
    assert!(service.opened_fresh());
    let request = ToolRequest::new("w1", "write_file", json!({"path": "a.md", "content": "hi"}));
    let governed = service
        .call(
            Call::new("w1", &request),
            Ask::Now(&mut Fixed(ApprovalStatus::Approved)),
        )
        .unwrap();
    let Governed::Ran(outcome) = governed else {
        panic!("a call asked now runs here");
    };
    assert_eq!(outcome.result.status, ExecutionStatus::Succeeded);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("ws/a.md")).unwrap(),
        "hi"
    );
    let kinds: Vec<String> = events(&mut service, "w1")
        .into_iter()
        .map(|e| e.0)
        .collect();
    assert_eq!(kinds, ["request", "decision", "approval", "result"]);
}

#[test]
fn a_routed_call_is_recorded_ahead_and_never_run_here() {
    let dir = tempfile::tempdir().unwrap();
    let mut service = Service::open(&setup(&dir), "test", Registry::builtin()).unwrap();
    let request = ToolRequest::new("w2", "write_file", json!({"path": "b.md", "content": "no"}));
    let route = AskRoute::Refuse {
        why: "nobody to ask".to_owned(),
    };
    let governed = service
        .call(Call::new("w2", &request), Ask::Route(route))
        .unwrap();
    let Governed::Recorded { decision } = governed else {
        panic!("a routed call is left to the client");
    };
    assert_eq!(decision.rule_id, "path.write_requires_approval");
    assert!(!dir.path().join("ws/b.md").exists(), "never run here");
    assert_eq!(
        events(&mut service, "w2"),
        [
            ("request".to_owned(), None),
            ("decision".to_owned(), Some("ask".to_owned())),
            ("approval".to_owned(), Some("cancelled".to_owned())),
            ("result".to_owned(), Some("blocked".to_owned())),
        ]
    );
}

#[test]
fn a_reused_call_id_is_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let mut service = Service::open(&setup(&dir), "test", Registry::builtin()).unwrap();
    let first = ToolRequest::new("same", "read_file", json!({"path": "x"}));
    service
        .call(
            Call::new("same", &first),
            Ask::Now(&mut Fixed(ApprovalStatus::Approved)),
        )
        .unwrap();
    let second = ToolRequest::new(
        "same",
        "write_file",
        json!({"path": "c.md", "content": "no"}),
    );
    let refused = service.call(
        Call::new("same", &second),
        Ask::Now(&mut Fixed(ApprovalStatus::Approved)),
    );
    assert!(refused.is_err());
    assert!(!dir.path().join("ws/c.md").exists());
}
