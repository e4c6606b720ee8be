//! The queue against in-memory SQLite: what counts as waiting, answers
//! bound to the recorded arguments, exactly one answer, and waits that end
//! on an answer or on their deadline.

use serde_json::{Value, json};

use super::*;
use crate::facts::Workspace;
use crate::policy::Policy;
use crate::runner::{AskRoute, GovernedRunner};
use crate::tools::Registry;

const NOW: i64 = 1_900_000_000_000_000;

/// A store holding call `c1`: `write_file` asked by the built-in policy and
/// waiting in the queue until `until_us`.
fn queued(until_us: i64) -> (Store, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let workspace = Workspace::open(dir.path()).unwrap();
    let runner = GovernedRunner::new(Policy::builtin(), workspace, Registry::empty());
    let mut store = Store::open_in_memory().unwrap();
    let request = ToolRequest::new("c1", "write_file", json!({"path": "a.txt", "content": "x"}));
    let (_, decision) = runner
        .decide_and_record(
            "c1",
            &request,
            None,
            AskRoute::Queue { until_us },
            &mut store,
        )
        .unwrap();
    assert_eq!(decision.action, crate::Action::Ask);
    (store, dir)
}

fn yes(digest: Option<&str>) -> QueueAnswer {
    QueueAnswer {
        status: ApprovalStatus::Approved,
        channel: ApprovalChannel::Cli,
        approver: "alice".into(),
        reason: None,
        arguments_sha256: digest.map(str::to_owned),
        grant: None,
        proof: None,
    }
}

#[test]
fn a_queued_call_is_pending_with_its_recorded_arguments_and_digests() {
    let (store, _dir) = queued(NOW);
    let listed = pending(&store, NOW - 1).unwrap();
    assert_eq!(listed.len(), 1);
    let p = &listed[0];
    assert_eq!(p.call_id, "c1");
    assert_eq!(p.tool, "write_file");
    assert_eq!(p.arguments, json!({"path": "a.txt", "content": "x"}));
    assert_eq!(
        p.arguments_sha256,
        arguments_digest(&json!({"content": "x", "path": "a.txt"}))
    );
    assert_eq!(p.policy_digest, Policy::builtin().reference().digest);
    assert_eq!(p.until_us, NOW);
    // Its wait is over: no longer listed.
    assert!(pending(&store, NOW).unwrap().is_empty());
}

#[test]
fn an_answer_for_other_arguments_is_refused_and_nothing_is_written() {
    let (mut store, _dir) = queued(NOW);
    let before = store.event_count().unwrap();
    let other = arguments_digest(&json!({"path": "b.txt", "content": "x"}));
    let err = answer(&mut store, "c1", &yes(Some(&other)), None, NOW - 1).unwrap_err();
    assert!(
        matches!(err, ApprovalsError::ArgumentsMismatch { .. }),
        "{err}"
    );
    assert_eq!(store.event_count().unwrap(), before);
}

#[test]
fn exactly_one_answer_wins() {
    let (mut store, _dir) = queued(NOW);
    let digest = pending(&store, NOW - 1).unwrap()[0]
        .arguments_sha256
        .clone();
    answer(&mut store, "c1", &yes(Some(&digest)), None, NOW - 1).unwrap();
    let mut no = yes(None);
    no.status = ApprovalStatus::Rejected;
    let err = answer(&mut store, "c1", &no, None, NOW - 1).unwrap_err();
    assert!(err.to_string().contains("already approved"), "{err}");
    assert!(pending(&store, NOW - 1).unwrap().is_empty());
    let waited = wait(&mut store, "c1", POLL, None, &|_| Vec::new());
    // The pending row is no longer the last: the call is not waiting any more.
    assert!(waited.is_err());
}

#[test]
fn an_expired_wait_cannot_be_answered() {
    let (mut store, _dir) = queued(NOW);
    let err = answer(&mut store, "c1", &yes(None), None, NOW).unwrap_err();
    assert!(matches!(err, ApprovalsError::Expired { .. }), "{err}");
}

#[test]
fn a_call_that_is_not_queued_cannot_be_answered() {
    let (mut store, _dir) = queued(NOW);
    let err = answer(&mut store, "nope", &yes(None), None, NOW - 1).unwrap_err();
    assert!(err.to_string().contains("no such call"), "{err}");
}

#[test]
fn a_wait_returns_the_bound_answer() {
    let far = chrono::Utc::now().timestamp_micros() + 60_000_000;
    let (mut store, _dir) = queued(far);
    let mut no = yes(None);
    no.status = ApprovalStatus::Rejected;
    no.reason = Some("not today".into());
    answer(&mut store, "c1", &no, None, far - 1).unwrap();
    // `answer` leaves the row after the pending one; `wait` starts from the pending row.
    let events = store.call_events("c1").unwrap();
    let pending_seq = events
        .iter()
        .find(|e| e.approval.as_deref() == Some("pending"))
        .unwrap()
        .seq;
    let rows = store.answers_after("c1", pending_seq).unwrap();
    let p = pending_of(&events[..events.len() - 1]).unwrap();
    let waited = answer_in(&rows, &p).unwrap();
    assert_eq!(waited.status, ApprovalStatus::Rejected);
    assert_eq!(waited.channel, ApprovalChannel::Cli);
    assert_eq!(waited.approver.as_deref(), Some("alice"));
    assert_eq!(waited.reason.as_deref(), Some("not today"));
}

#[test]
fn an_unbound_answer_in_the_record_is_ignored() {
    let (store, _dir) = queued(NOW);
    let events = store.call_events("c1").unwrap();
    let p = pending_of(&events).unwrap();
    let mut forged = ApprovalRecord::new(ApprovalStatus::Approved, ApprovalChannel::Cli);
    forged.arguments_sha256 = Some("00".repeat(32));
    forged.policy_digest = Some(p.policy_digest.clone());
    let mut row = events.last().unwrap().clone();
    row.seq += 1;
    row.approval = Some("approved".into());
    row.payload = EventBody::Approval(forged).to_json();
    assert!(answer_in(&[row], &p).is_none());
}

#[test]
fn a_wait_past_its_deadline_records_cancelled_timeout_once() {
    let past = chrono::Utc::now().timestamp_micros() - 1;
    let (mut store, _dir) = queued(past);
    let waited = wait(&mut store, "c1", POLL, None, &|_| Vec::new()).unwrap();
    assert_eq!(waited.status, ApprovalStatus::Cancelled);
    assert_eq!(waited.cause, Some(CancelCause::Timeout));
    let events = store.call_events("c1").unwrap();
    let last = events.last().unwrap();
    assert_eq!(last.approval.as_deref(), Some("cancelled"));
    let record = last.payload_json();
    assert_eq!(record["channel"], "queue");
    assert_eq!(record["cause"], "timeout");
    assert!(store.check_recent().unwrap().ok);
}

#[test]
fn waits_parse_as_documented() {
    assert_eq!(parse_wait("60s"), Ok(Duration::from_secs(60)));
    assert_eq!(parse_wait("90"), Ok(Duration::from_secs(90)));
    assert_eq!(parse_wait("5m"), Ok(Duration::from_secs(300)));
    assert_eq!(parse_wait("1h"), Ok(Duration::from_secs(3600)));
    assert_eq!(parse_wait("250ms"), Ok(Duration::from_millis(250)));
    for bad in ["", "0s", "s", "5x", "-1s", "9999h", "1.5s"] {
        assert!(parse_wait(bad).is_err(), "{bad}");
    }
}

mod grant_matching {
    use super::*;
    use crate::approvals::grants::{Grant, covering};
    use crate::audit::{GrantRecord, GrantScope};

    fn grant(scope: GrantScope) -> Grant {
        Grant {
            record: GrantRecord {
                grant: "g1".into(),
                scope,
                session: Some("s1".into()),
                until_us: Some(NOW + 10),
                uses: Some(2),
                created_by: "alice".into(),
                channel: ApprovalChannel::Cli,
                call_id: "c0".into(),
            },
            seq: 1,
            created_us: NOW - 10,
            revoked: None,
            revoked_seq: None,
            used: 0,
        }
    }

    /// The decision and facts of `command` under the built-in policy, in a
    /// temporary workspace.
    fn decided(
        command: &str,
    ) -> (
        ToolRequest,
        crate::facts::Facts,
        Decision,
        tempfile::TempDir,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let workspace = Workspace::open(dir.path()).unwrap();
        let request = ToolRequest::new("c", "bash", json!({ "command": command }));
        let facts = workspace.facts(&request);
        let decision = Policy::builtin().decide(&request, &facts);
        (request, facts, decision, dir)
    }

    #[test]
    fn a_command_grant_covers_only_an_asked_provable_command_in_its_limits() {
        let grants = [grant(GrantScope::Command {
            words: vec!["cargo".into(), "test".into()],
        })];
        let (request, facts, decision, _dir) = decided("cargo test --lib x");
        assert_eq!(decision.action, crate::Action::Ask);
        assert!(covering(&grants, &request, &facts, &decision, Some("s1"), NOW).is_some());
        // Another session, the end of its time, its uses, a revocation.
        assert!(covering(&grants, &request, &facts, &decision, Some("s2"), NOW).is_none());
        assert!(covering(&grants, &request, &facts, &decision, Some("s1"), NOW + 10).is_none());
        let mut used = grants.clone();
        used[0].used = 2;
        assert!(covering(&used, &request, &facts, &decision, Some("s1"), NOW).is_none());
        let mut revoked = grants.clone();
        revoked[0].revoked = Some(crate::audit::RevocationRecord {
            grant: "g1".into(),
            revoked_by: "bob".into(),
            channel: ApprovalChannel::Cli,
            reason: None,
        });
        assert!(covering(&revoked, &request, &facts, &decision, Some("s1"), NOW).is_none());
        for command in [
            "cargo build",
            "cargo test; ls",
            "cargo test > out",
            "cargo test $(cat x)",
            "PATH=/tmp cargo test",
            "./cargo test",
            "sudo cargo test",
            "cargo test /etc/passwd",
        ] {
            let (request, facts, decision, _dir) = decided(command);
            assert!(
                covering(&grants, &request, &facts, &decision, Some("s1"), NOW).is_none(),
                "{command}: {decision:?}"
            );
        }
    }

    #[test]
    fn a_grant_never_turns_a_deny_into_an_allow() {
        let grants = [grant(GrantScope::Command {
            words: vec!["rm".into()],
        })];
        let (request, facts, decision, _dir) = decided("rm -rf build");
        assert_eq!(decision.action, crate::Action::Deny);
        assert!(covering(&grants, &request, &facts, &decision, Some("s1"), NOW).is_none());
    }

    #[test]
    fn a_paths_grant_covers_its_tool_under_its_glob_only() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src/deep")).unwrap();
        let workspace = Workspace::open(dir.path()).unwrap();
        let grants = [grant(GrantScope::Paths {
            tool: "write_file".into(),
            glob: "src/*".into(),
        })];
        let decide = |path: &str| {
            let request =
                ToolRequest::new("c", "write_file", json!({"path": path, "content": "x"}));
            let facts = workspace.facts(&request);
            let decision = Policy::builtin().decide(&request, &facts);
            (request, facts, decision)
        };
        let (request, facts, decision) = decide("src/a.rs");
        assert_eq!(decision.action, crate::Action::Ask);
        assert!(covering(&grants, &request, &facts, &decision, Some("s1"), NOW).is_some());
        for path in [
            "src/deep/b.rs",
            "README.md",
            "../outside.txt",
            ".gavel/audit.db",
        ] {
            let (request, facts, decision) = decide(path);
            assert!(
                covering(&grants, &request, &facts, &decision, Some("s1"), NOW).is_none(),
                "{path}"
            );
        }
    }

    #[test]
    fn a_tool_grant_covers_its_mcp_tool_with_any_arguments_but_never_a_changed_definition() {
        let dir = tempfile::tempdir().unwrap();
        let workspace = Workspace::open(dir.path()).unwrap();
        let policy = Policy::from_toml(
            r#"
name = "t"
[[rules]]
id = "mcp.definition_changed"
action = "ask"
tools = ["mcp__*"]
definition_changed = true
reason = "changed"
[[rules]]
id = "ask.mcp"
action = "ask"
tools = ["mcp__*"]
reason = "asked"
"#,
            "test",
        )
        .unwrap();
        let grants = [grant(GrantScope::Tool {
            tool: "mcp__srv__touch".into(),
        })];
        let decide = |tool: &str, previous: Option<&str>| {
            let request = ToolRequest::new("c", tool, json!({"path": "anything", "n": 3}));
            let mut facts = workspace.facts(&request);
            facts.mcp = Some(crate::facts::McpFacts {
                server: "srv".into(),
                tool: tool.rsplit("__").next().unwrap().into(),
                definition_sha256: Some("new".into()),
                previous_sha256: previous.map(str::to_owned),
            });
            let decision = policy.decide(&request, &facts);
            (request, facts, decision)
        };
        let (request, facts, decision) = decide("mcp__srv__touch", None);
        assert_eq!(decision.rule_id, "ask.mcp");
        assert!(covering(&grants, &request, &facts, &decision, Some("s1"), NOW).is_some());
        let (request, facts, decision) = decide("mcp__srv__other", None);
        assert!(covering(&grants, &request, &facts, &decision, Some("s1"), NOW).is_none());
        // The rug pull: the same tool under a definition that changed.
        let (request, facts, decision) = decide("mcp__srv__touch", Some("old"));
        assert_eq!(decision.rule_id, "mcp.definition_changed");
        assert!(covering(&grants, &request, &facts, &decision, Some("s1"), NOW).is_none());
        // Even when a policy asks about it under another rule id.
        let mut renamed = decision.clone();
        renamed.rule_id = "ask.mcp".into();
        assert!(covering(&grants, &request, &facts, &renamed, Some("s1"), NOW).is_none());
        // A tool grant never covers a built-in tool of the same name.
        let bash = [grant(GrantScope::Tool {
            tool: "bash".into(),
        })];
        let (request, facts, decision, _dir) = decided("make all");
        assert_eq!(decision.action, crate::Action::Ask);
        assert!(covering(&bash, &request, &facts, &decision, Some("s1"), NOW).is_none());
    }

    #[test]
    fn no_grant_covers_a_call_asked_by_a_rule_no_grant_may_answer() {
        let (request, facts, decision, _dir) = decided("make all");
        let grants = [grant(GrantScope::Call {
            tool: "bash".into(),
            arguments_sha256: arguments_digest(&request.arguments),
        })];
        assert!(covering(&grants, &request, &facts, &decision, Some("s1"), NOW).is_some());
        for rule in crate::approvals::grants::NEVER_GRANTED {
            let mut asked = decision.clone();
            asked.rule_id = (*rule).to_owned();
            assert!(
                covering(&grants, &request, &facts, &asked, Some("s1"), NOW).is_none(),
                "{rule}"
            );
        }
    }

    #[test]
    fn a_call_grant_covers_the_same_arguments_only() {
        let (request, facts, decision, _dir) = decided("make all");
        let grants = [grant(GrantScope::Call {
            tool: "bash".into(),
            arguments_sha256: arguments_digest(&request.arguments),
        })];
        assert!(covering(&grants, &request, &facts, &decision, Some("s1"), NOW).is_some());
        let (other, facts, decision, _dir) = decided("make clean");
        assert!(covering(&grants, &other, &facts, &decision, Some("s1"), NOW).is_none());
    }
}

mod page {
    use super::*;
    use crate::approvals::page::{Page, PageConfig, Request};

    fn config() -> PageConfig {
        PageConfig {
            token: "t0ken".into(),
            name: "alice-web".into(),
            origins: vec!["http://127.0.0.1:9".into()],
            rp_id: None,
            principal: Arc::new(Principal::current("web")),
        }
    }

    fn request(method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Request {
        Request {
            method: method.into(),
            path: path.into(),
            headers: headers
                .iter()
                .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
                .collect(),
            body: body.as_bytes().to_vec(),
        }
    }

    #[test]
    fn the_page_answers_only_its_host_its_token_and_its_origin() {
        let far = chrono::Utc::now().timestamp_micros() + 60_000_000;
        let (mut store, _dir) = queued(far);
        let mut page = Page::new(config());
        let host = ("host", "127.0.0.1:9");
        let token = ("x-gavel-token", "t0ken");
        let get = |h: &[(&str, &str)]| request("GET", "/api/pending", h, "");
        assert_eq!(
            page.handle(&mut store, &request("GET", "/", &[host], ""))
                .status,
            200
        );
        assert_eq!(page.handle(&mut store, &get(&[host])).status, 403);
        assert_eq!(
            page.handle(&mut store, &get(&[host, ("x-gavel-token", "t0kem")]))
                .status,
            403
        );
        assert_eq!(
            page.handle(&mut store, &get(&[("host", "evil:9"), token]))
                .status,
            421
        );
        assert_eq!(
            page.handle(
                &mut store,
                &get(&[host, token, ("sec-fetch-site", "cross-site")])
            )
            .status,
            403
        );
        let listed = page.handle(&mut store, &get(&[host, token]));
        assert_eq!(listed.status, 200);
        let listed: Value = serde_json::from_slice(&listed.body).unwrap();
        let digest = listed[0]["arguments_sha256"].as_str().unwrap().to_owned();
        let body =
            json!({"call_id": "c1", "approved": true, "arguments_sha256": digest, "grant": "call"})
                .to_string();
        let json_type = ("content-type", "application/json");
        let origin = ("origin", "http://127.0.0.1:9");
        let post = |h: &[(&str, &str)]| request("POST", "/api/answer", h, &body);
        assert_eq!(
            page.handle(&mut store, &post(&[host, token, json_type]))
                .status,
            403
        );
        assert_eq!(
            page.handle(
                &mut store,
                &post(&[host, token, json_type, ("origin", "http://evil")])
            )
            .status,
            403
        );
        assert_eq!(
            page.handle(&mut store, &post(&[host, token, origin]))
                .status,
            415
        );
        let answered = page.handle(&mut store, &post(&[host, token, json_type, origin]));
        assert_eq!(
            answered.status,
            200,
            "{}",
            String::from_utf8_lossy(&answered.body)
        );
        // Recorded with channel `web`, the token's name, and the grant it asked for.
        let last = store.call_events("c1").unwrap().pop().unwrap();
        let record = last.payload_json();
        assert_eq!(record["channel"], "web");
        assert_eq!(record["approver"], "alice-web");
        let made = grants(&store).unwrap();
        assert_eq!(made.len(), 1);
        assert_eq!(made[0].record.channel, ApprovalChannel::Web);
        assert_eq!(made[0].record.created_by, "alice-web");
        assert!(matches!(made[0].record.scope, GrantScope::Call { .. }));
        // A second answer is a conflict, not a second row.
        assert_eq!(
            page.handle(&mut store, &post(&[host, token, json_type, origin]))
                .status,
            409
        );
    }
}

mod page_grants {
    use super::*;
    use crate::approvals::page::{Page, PageConfig, Request};

    /// POSTs an approval of `call` with `grant` to the page; its status.
    fn approve_with(store: &mut Store, call: &str, grant: &str) -> u16 {
        let mut page = Page::new(PageConfig {
            token: "t0ken".into(),
            name: "alice-web".into(),
            origins: vec!["http://127.0.0.1:9".into()],
            rp_id: None,
            principal: Arc::new(Principal::current("web")),
        });
        let events = store.call_events(call).unwrap();
        let digest = pending_of(&events).unwrap().arguments_sha256;
        let body =
            json!({"call_id": call, "approved": true, "arguments_sha256": digest, "grant": grant});
        let request = Request {
            method: "POST".into(),
            path: "/api/answer".into(),
            headers: [
                ("host", "127.0.0.1:9"),
                ("x-gavel-token", "t0ken"),
                ("content-type", "application/json"),
                ("origin", "http://127.0.0.1:9"),
            ]
            .iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
            .collect(),
            body: body.to_string().into_bytes(),
        };
        page.handle(store, &request).status
    }

    #[test]
    fn the_page_grants_an_mcp_tool_and_refuses_a_tool_grant_for_a_builtin_tool() {
        let far = chrono::Utc::now().timestamp_micros() + 60_000_000;
        // `write_file` is not an MCP tool: refused, nothing recorded.
        let (mut store, _dir) = queued(far);
        assert_ne!(approve_with(&mut store, "c1", "tool"), 200);
        assert!(grants(&store).unwrap().is_empty());
        assert!(pending_of(&store.call_events("c1").unwrap()).is_some());
        // An MCP tool asked by the policy: granted whole.
        let dir = tempfile::tempdir().unwrap();
        let policy = Policy::from_toml(
            "name = \"t\"\n[[rules]]\nid = \"ask.mcp\"\naction = \"ask\"\ntools = [\"mcp__*\"]\nreason = \"asked\"\n",
            "test",
        )
        .unwrap();
        let runner = GovernedRunner::new(
            policy,
            Workspace::open(dir.path()).unwrap(),
            Registry::empty(),
        );
        let mut store = Store::open_in_memory().unwrap();
        let request = ToolRequest::new("m1", "mcp__srv__touch", json!({"path": "a"}));
        runner
            .decide_and_record(
                "m1",
                &request,
                None,
                AskRoute::Queue { until_us: far },
                &mut store,
            )
            .unwrap();
        assert_eq!(approve_with(&mut store, "m1", "tool"), 200);
        let made = grants(&store).unwrap();
        assert_eq!(
            made[0].record.scope,
            GrantScope::Tool {
                tool: "mcp__srv__touch".into()
            }
        );
    }
}

mod replay_limits {
    use super::*;
    use crate::approvals::grants::{Grant, GrantSource};
    use crate::replay::{FactSource, replay};
    use crate::store::AuditQuery;

    /// A writer that records every asked call as allowed by its grant,
    /// whatever the grant's limits: what a forged or buggy record holds.
    struct Forging(Grant);

    impl GrantSource for Forging {
        fn cover(
            &self,
            _: &ToolRequest,
            _: &crate::facts::Facts,
            decision: &Decision,
            _: Option<&str>,
        ) -> Option<Decision> {
            (decision.action == crate::Action::Ask).then(|| grants::granted(&self.0, decision))
        }
    }

    #[test]
    fn replay_finds_a_recorded_grant_use_beyond_its_limit() {
        let far = chrono::Utc::now().timestamp_micros() + 60_000_000;
        let (mut store, dir) = queued(far);
        let mut yes = yes(None);
        yes.grant = Some(GrantAsk {
            kind: GrantKind::Paths("*".into()),
            session: false,
            lasts: None,
            uses: Some(1),
        });
        let now = chrono::Utc::now().timestamp_micros();
        answer(&mut store, "c1", &yes, None, now).unwrap();
        let grant = grants(&store).unwrap().remove(0);
        let id = grant.record.grant.clone();
        let runner = GovernedRunner::new(
            Policy::builtin(),
            Workspace::open(dir.path()).unwrap(),
            Registry::empty(),
        )
        .with_grants(Box::new(Forging(grant)));
        for call in ["c2", "c3"] {
            let request =
                ToolRequest::new(call, "write_file", json!({"path": "b.txt", "content": "x"}));
            let (_, decision) = runner
                .decide_and_record(call, &request, None, AskRoute::Elsewhere, &mut store)
                .unwrap();
            assert_eq!(decision.rule_id, format!("grant.{id}"));
        }
        let report = replay(
            &store,
            &AuditQuery::default(),
            &Policy::builtin(),
            FactSource::Recorded,
            &mut |_| {},
        )
        .unwrap();
        let listed: Vec<(&str, bool, Option<&str>)> = report
            .granted_calls
            .iter()
            .map(|g| (g.call_id.as_str(), g.covered, g.lapsed.as_deref()))
            .collect();
        assert_eq!(
            listed,
            [
                ("c2", true, None),
                ("c3", false, Some("used up (1 of 1 uses)"))
            ]
        );
        assert_eq!(report.granted, 1);
        // The second use is drift: allowed when recorded, asked by the rules now.
        assert_eq!(report.tightened, 1, "{report:?}");
    }
}
