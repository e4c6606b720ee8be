//! The governed pipeline through the library's public API: policy, approval,
//! execution, audit and hooks, with approvers as closures and a `Vec<Event>`
//! (or a custom sink) as the record.

use std::cell::RefCell;
use std::os::unix::fs::symlink;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use gavel::approval::Approver;
use gavel::audit::{AuditError, EventBody};
use gavel::hooks::{HookEvent, Hooks};
use gavel::tools::{Registry, ToolContext, ToolError, ToolHandler, ToolOutput};
use gavel::{
    Action, ApprovalStatus, AuditSink, CallOutcome, Decision, Event, ExecutionStatus,
    GovernedRunner, Policy, ToolRequest, Workspace,
};
use serde_json::{Value, json};

use crate::support::Sandbox;

// ---------------------------------------------------------------- helpers

/// A policy for custom tools: `boom` and `recorded` are allowed, `deploy` is asked.
const CUSTOM_POLICY: &str = r#"
name = "custom-tools"

[[rules]]
id = "custom.allow"
action = "allow"
tools = ["boom", "recorded"]
reason = "{tool} is allowed by the test policy"

[[rules]]
id = "custom.ask"
action = "ask"
tools = ["deploy"]
reason = "{tool} needs approval"
"#;

fn workspace(sandbox: &Sandbox) -> Workspace {
    Workspace::open(&sandbox.ws).unwrap()
}

fn builtin_runner(sandbox: &Sandbox) -> GovernedRunner {
    GovernedRunner::new(Policy::builtin(), workspace(sandbox), Registry::builtin())
}

fn custom_runner(sandbox: &Sandbox, tools: Registry) -> GovernedRunner {
    let policy = Policy::from_toml(CUSTOM_POLICY, "custom-tools.toml").unwrap();
    GovernedRunner::new(policy, workspace(sandbox), tools)
}

fn approve(_: &ToolRequest, _: &Decision) -> ApprovalStatus {
    ApprovalStatus::Approved
}

fn reject(_: &ToolRequest, _: &Decision) -> ApprovalStatus {
    ApprovalStatus::Rejected
}

/// An approver that counts how often it is consulted, and approves.
#[derive(Clone, Default)]
struct Counting(Rc<RefCell<usize>>);

impl Counting {
    fn count(&self) -> usize {
        *self.0.borrow()
    }
}

impl Approver for Counting {
    fn approve(&mut self, _: &ToolRequest, _: &Decision) -> ApprovalStatus {
        *self.0.borrow_mut() += 1;
        ApprovalStatus::Approved
    }
}

/// A handler that counts its calls and succeeds.
#[derive(Clone, Default)]
struct Recorder(Arc<AtomicUsize>);

impl Recorder {
    fn calls(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

impl ToolHandler for Recorder {
    fn call(&self, _: &Value, _: &ToolContext) -> Result<ToolOutput, ToolError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(ToolOutput::text("recorded"))
    }
}

/// A handler that panics.
struct Boom;

impl ToolHandler for Boom {
    fn call(&self, _: &Value, _: &ToolContext) -> Result<ToolOutput, ToolError> {
        panic!("the boom handler always panics")
    }
}

/// A registry with `recorder` under every name in `names`.
fn recording(names: &[&str], recorder: &Recorder) -> Registry {
    let mut tools = Registry::empty();
    for name in names {
        tools.insert(name, recorder.clone());
    }
    tools
}

/// An audit sink that keeps each `append` call as one batch.
#[derive(Clone, Default)]
struct Batches(Rc<RefCell<Vec<Vec<Event>>>>);

impl Batches {
    fn kinds(&self) -> Vec<Vec<&'static str>> {
        self.0
            .borrow()
            .iter()
            .map(|batch| batch.iter().map(|e| e.body.kind()).collect())
            .collect()
    }
}

impl AuditSink for Batches {
    fn append(&mut self, events: &[Event]) -> Result<(), AuditError> {
        self.0.borrow_mut().push(events.to_vec());
        Ok(())
    }
}

/// An audit sink that accepts `accept` batches, then fails.
struct FailsAfter {
    accept: usize,
}

impl AuditSink for FailsAfter {
    fn append(&mut self, _: &[Event]) -> Result<(), AuditError> {
        if self.accept == 0 {
            return Err(AuditError(Box::new(std::io::Error::other("disk full"))));
        }
        self.accept -= 1;
        Ok(())
    }
}

/// Runs one call with a `Vec<Event>` record; returns the outcome and the record.
fn run(
    runner: &GovernedRunner,
    tool: &str,
    arguments: Value,
    approver: &mut dyn Approver,
) -> (CallOutcome, Vec<Event>) {
    let request = ToolRequest::new("toolu_test", tool, arguments);
    let mut audit: Vec<Event> = Vec::new();
    let outcome = runner
        .run("call-1", &request, None, approver, &mut audit)
        .expect("a Vec record never fails");
    (outcome, audit)
}

/// Arguments that fit `tool`'s schema, aimed at `path`.
fn path_arguments(tool: &str, path: &str, text: &str) -> Value {
    match tool {
        "glob" => json!({ "pattern": path }),
        "write_file" => json!({ "path": path, "content": text }),
        "edit_file" => json!({ "path": path, "old_text": "a", "new_text": text }),
        _ => json!({ "path": path }),
    }
}

fn kinds(events: &[Event]) -> Vec<&'static str> {
    events.iter().map(|e| e.body.kind()).collect()
}

fn assert_decision(outcome: &CallOutcome, action: Action, rule_id: &str) {
    let decision = outcome.decision();
    assert_eq!(
        (decision.action, decision.rule_id.as_str()),
        (action, rule_id),
        "reason: {}",
        decision.reason
    );
}

// ---------------------------------------------------------------- policy

#[test]
fn hard_denies_are_structured_decisions_with_rule_and_reason() {
    let sandbox = Sandbox::new();
    let runner = builtin_runner(&sandbox);
    for command in [
        "sudo rm -rf /",
        "rm -rf ~",
        "ls && sudo reboot",
        "shutdown -h now",
        "dd if=/dev/zero of=/dev/sda",
    ] {
        let request = ToolRequest::new("t", "bash", json!({ "command": command }));
        let (_, decision) = runner.decide(&request);
        assert_eq!(decision.action, Action::Deny, "{command}");
        assert_eq!(decision.rule_id, "bash.hard_deny", "{command}");
        assert_eq!(
            decision.reason,
            format!("command matches a non-overridable deny rule: {command}")
        );
        assert_eq!(decision.policy.name, "gavel-default");
    }
}

#[test]
fn unmatched_tools_fail_closed_with_default_deny() {
    let sandbox = Sandbox::new();
    let recorder = Recorder::default();
    let runner = GovernedRunner::new(
        Policy::builtin(),
        workspace(&sandbox),
        recording(&["deploy"], &recorder),
    );
    let (outcome, _) = run(&runner, "deploy", json!({"env": "prod"}), &mut approve);
    assert_decision(&outcome, Action::Deny, "default.deny");
    assert_eq!(
        outcome.decision().reason,
        "no permission rule matched tool `deploy`"
    );
    assert_eq!(outcome.result.status, ExecutionStatus::Blocked);
    assert_eq!(
        recorder.calls(),
        0,
        "a registered handler is not a permission"
    );
}

#[test]
fn arguments_that_are_not_an_object_are_denied_as_invalid() {
    let sandbox = Sandbox::new();
    let runner = builtin_runner(&sandbox);
    for (tool, arguments) in [
        ("bash", json!([1])),
        ("read_file", json!("notes.txt")),
        ("read_file", json!({})),
        ("bash", json!({"command": ""})),
        ("write_file", json!({"path": 7})),
    ] {
        let request = ToolRequest::new("t", tool, arguments.clone());
        let (_, decision) = runner.decide(&request);
        assert_eq!(
            (decision.action, decision.rule_id.as_str()),
            (Action::Deny, "request.invalid_arguments"),
            "{tool} {arguments}"
        );
    }
}

#[test]
fn traversal_outside_the_workspace_is_denied_naming_the_canonical_workspace() {
    let sandbox = Sandbox::new();
    // Open the workspace through a symlinked alias: the reason must name the
    // canonical root, not the alias.
    let alias = sandbox.root.join("alias");
    symlink(&sandbox.ws, &alias).unwrap();
    let runner = GovernedRunner::new(
        Policy::builtin(),
        Workspace::open(&alias).unwrap(),
        Registry::builtin(),
    );
    for (tool, path) in [
        ("read_file", "../outside/secret.txt"),
        ("write_file", "../x"),
        ("edit_file", "sub/../../outside/secret.txt"),
    ] {
        let (outcome, _) = run(&runner, tool, path_arguments(tool, path, "x"), &mut approve);
        assert_decision(&outcome, Action::Deny, "path.outside_workspace");
        let reason = &outcome.decision().reason;
        assert!(
            reason.contains(&format!("`{}`", sandbox.ws.display())),
            "{reason}"
        );
        assert!(reason.contains(path), "{reason}");
        assert!(!reason.contains("alias"), "{reason}");
        assert_eq!(outcome.result.status, ExecutionStatus::Blocked);
    }
    assert!(!sandbox.root.join("x").exists(), "nothing was written");
}

#[test]
fn absolute_paths_outside_the_workspace_are_denied() {
    let sandbox = Sandbox::new();
    let runner = builtin_runner(&sandbox);
    let secret = sandbox.outside.join("secret.txt");
    for path in ["/etc/hosts", secret.to_str().unwrap()] {
        let (outcome, _) = run(&runner, "read_file", json!({ "path": path }), &mut approve);
        assert_decision(&outcome, Action::Deny, "path.outside_workspace");
        assert!(outcome.decision().reason.contains(path));
        assert!(!outcome.facts.paths[0].inside);
        assert!(!outcome.result.content.contains("top secret"));
    }
}

#[test]
fn paths_that_stay_inside_are_not_mistaken_for_escapes() {
    let sandbox = Sandbox::new();
    let runner = builtin_runner(&sandbox);
    let absolute = sandbox.ws.join("notes.txt");
    for path in [
        "notes.txt",
        "./sub/../notes.txt",
        absolute.to_str().unwrap(),
    ] {
        let (outcome, _) = run(&runner, "read_file", json!({ "path": path }), &mut approve);
        assert_decision(&outcome, Action::Allow, "path.read_allow");
        assert_eq!(outcome.result.status, ExecutionStatus::Succeeded, "{path}");
        assert_eq!(outcome.result.content, "hello from the workspace\n");
    }
}

#[test]
fn symlink_escapes_are_denied_for_existing_and_not_yet_existing_files() {
    let sandbox = Sandbox::new();
    symlink(&sandbox.outside, sandbox.ws.join("link")).unwrap();
    symlink(
        sandbox.outside.join("secret.txt"),
        sandbox.ws.join("innocent.txt"),
    )
    .unwrap();
    let runner = builtin_runner(&sandbox);
    for (tool, path) in [
        ("read_file", "link/secret.txt"),
        ("read_file", "innocent.txt"),
        ("write_file", "link/new.txt"),
        ("write_file", "link/deeper/new.txt"),
        ("glob", "link/*.txt"),
    ] {
        let (outcome, _) = run(
            &runner,
            tool,
            path_arguments(tool, path, "pwned"),
            &mut approve,
        );
        assert_decision(&outcome, Action::Deny, "path.outside_workspace");
        let resolved = outcome.facts.paths[0].resolved.as_deref().unwrap();
        assert!(
            resolved.starts_with(sandbox.outside.to_str().unwrap()),
            "{path} resolved to {resolved}"
        );
        assert!(
            outcome
                .decision()
                .reason
                .contains(&format!("`{}`", sandbox.ws.display()))
        );
        assert_eq!(outcome.result.status, ExecutionStatus::Blocked);
    }
    assert!(!sandbox.outside.join("new.txt").exists());
    assert!(!sandbox.outside.join("deeper").exists());
}

#[test]
fn glob_with_a_prefix_outside_the_workspace_is_denied_before_expansion() {
    let sandbox = Sandbox::new();
    let runner = builtin_runner(&sandbox);
    let (outcome, _) = run(
        &runner,
        "glob",
        json!({"pattern": "../outside/*.txt"}),
        &mut approve,
    );
    assert_decision(&outcome, Action::Deny, "path.outside_workspace");
    assert!(!outcome.result.content.contains("secret.txt"));

    sandbox.write("src/a.txt", "");
    let (outcome, _) = run(
        &runner,
        "glob",
        json!({"pattern": "**/*.txt"}),
        &mut approve,
    );
    assert_decision(&outcome, Action::Allow, "path.read_allow");
    assert_eq!(outcome.result.content, "notes.txt\nsrc/a.txt");
}

#[test]
fn the_policy_never_prompts_for_allow_or_deny() {
    let sandbox = Sandbox::new();
    let runner = builtin_runner(&sandbox);
    let approver = Counting::default();
    for (tool, arguments) in [
        ("read_file", json!({"path": "notes.txt"})),
        ("glob", json!({"pattern": "*.txt"})),
        ("bash", json!({"command": "sudo ls"})),
        ("read_file", json!({"path": "/etc/hosts"})),
        ("deploy", json!({})),
        ("bash", json!([1])),
    ] {
        let (outcome, audit) = run(&runner, tool, arguments, &mut approver.clone());
        assert_eq!(outcome.resolution.approval, ApprovalStatus::NotRequired);
        assert_eq!(kinds(&audit), ["request", "decision", "result"]);
    }
    assert_eq!(approver.count(), 0);
}

#[test]
fn deciding_touches_nothing_and_is_repeatable() {
    let sandbox = Sandbox::new();
    let runner = builtin_runner(&sandbox);
    let request = ToolRequest::new(
        "t",
        "write_file",
        json!({"path": "new/file.txt", "content": ""}),
    );
    let first = runner.decide(&request);
    let second = runner.decide(&request);
    assert_eq!(first, second);
    assert_eq!(first.1.action, Action::Ask);
    assert!(!sandbox.ws.join("new").exists());
    // The same request and facts decide the same without a filesystem.
    assert_eq!(runner.policy().decide(&request, &first.0), first.1);
}

#[test]
fn shell_commands_are_never_allowed_from_their_first_token() {
    let sandbox = Sandbox::new();
    let runner = builtin_runner(&sandbox);
    for command in ["ls", "cat x", "git status", "pwd", "cat /etc/passwd"] {
        let request = ToolRequest::new("t", "bash", json!({ "command": command }));
        let (_, decision) = runner.decide(&request);
        assert_eq!(
            (decision.action, decision.rule_id.as_str()),
            (Action::Ask, "bash.requires_approval"),
            "{command}"
        );
    }
}

// ---------------------------------------------------------------- approval

#[test]
fn deny_cannot_be_approved_and_the_handler_never_runs() {
    let sandbox = Sandbox::new();
    let recorder = Recorder::default();
    let tools = recording(&["bash", "read_file", "write_file", "deploy"], &recorder);
    let runner = GovernedRunner::new(Policy::builtin(), workspace(&sandbox), tools);
    let approver = Counting::default();
    for (tool, arguments, rule) in [
        (
            "bash",
            json!({"command": "sudo rm -rf /"}),
            "bash.hard_deny",
        ),
        (
            "read_file",
            json!({"path": "../outside/secret.txt"}),
            "path.outside_workspace",
        ),
        (
            "write_file",
            json!({"path": "/etc/hosts", "content": "x"}),
            "path.outside_workspace",
        ),
        ("deploy", json!({"env": "prod"}), "default.deny"),
        ("bash", json!("sudo ls"), "request.invalid_arguments"),
    ] {
        let (outcome, _) = run(&runner, tool, arguments, &mut approver.clone());
        assert_decision(&outcome, Action::Deny, rule);
        assert!(!outcome.resolution.allowed);
        assert_eq!(outcome.resolution.approval, ApprovalStatus::NotRequired);
        assert_eq!(outcome.result.status, ExecutionStatus::Blocked);
    }
    assert_eq!(approver.count(), 0, "nobody is asked about a deny");
    assert_eq!(recorder.calls(), 0, "no denied handler ran");
}

#[test]
fn ask_approved_runs_the_handler() {
    let sandbox = Sandbox::new();
    let recorder = Recorder::default();
    let runner = custom_runner(&sandbox, recording(&["deploy"], &recorder));
    let (outcome, _) = run(&runner, "deploy", json!({}), &mut approve);
    assert_decision(&outcome, Action::Ask, "custom.ask");
    assert_eq!(outcome.resolution.approval, ApprovalStatus::Approved);
    assert_eq!(outcome.result.status, ExecutionStatus::Succeeded);
    assert_eq!(recorder.calls(), 1);
}

#[test]
fn ask_rejected_is_blocked_and_the_handler_never_runs() {
    let sandbox = Sandbox::new();
    let recorder = Recorder::default();
    let runner = custom_runner(&sandbox, recording(&["deploy"], &recorder));
    let (outcome, _) = run(&runner, "deploy", json!({}), &mut reject);
    assert_eq!(outcome.resolution.approval, ApprovalStatus::Rejected);
    assert_eq!(outcome.result.status, ExecutionStatus::Blocked);
    assert_eq!(
        outcome.result.content,
        "Permission blocked [custom.ask]: deploy needs approval (approval=rejected)"
    );
    assert_eq!(recorder.calls(), 0);
}

#[test]
fn an_approver_that_gives_no_clear_answer_is_cancelled() {
    let sandbox = Sandbox::new();
    let recorder = Recorder::default();
    let runner = custom_runner(&sandbox, recording(&["deploy"], &recorder));
    for answer in [
        ApprovalStatus::Cancelled,
        ApprovalStatus::Pending,
        ApprovalStatus::NotRequired,
    ] {
        let mut approver = move |_: &ToolRequest, _: &Decision| answer;
        let (outcome, audit) = run(&runner, "deploy", json!({}), &mut approver);
        assert_eq!(
            outcome.resolution.approval,
            ApprovalStatus::Cancelled,
            "{answer}"
        );
        assert!(!outcome.resolution.allowed);
        assert_eq!(outcome.result.status, ExecutionStatus::Blocked);
        assert!(outcome.result.content.ends_with("(approval=cancelled)"));
        let EventBody::Approval(approval) = &audit[2].body else {
            panic!("third event is {}", audit[2].body.kind())
        };
        assert_eq!(approval.status, ApprovalStatus::Cancelled);
    }
    assert_eq!(recorder.calls(), 0);
}

// ---------------------------------------------------------------- audit

#[test]
fn the_audit_holds_request_decision_approval_and_result_in_order() {
    let sandbox = Sandbox::new();
    let runner = builtin_runner(&sandbox);
    let arguments = json!({"path": "out/report.md", "content": "# ok\n"});
    let (outcome, audit) = run(&runner, "write_file", arguments.clone(), &mut approve);
    assert_eq!(kinds(&audit), ["request", "decision", "approval", "result"]);
    for event in &audit {
        assert_eq!(event.call_id, "call-1");
        assert_eq!(event.tool.as_deref(), Some("write_file"));
    }
    assert!(audit.windows(2).all(|w| w[0].ts_us <= w[1].ts_us));

    let EventBody::Request(request) = &audit[0].body else {
        unreachable!()
    };
    assert_eq!(request.tool_use_id, "toolu_test");
    assert_eq!(request.arguments, arguments);
    let EventBody::Decision(decision) = &audit[1].body else {
        unreachable!()
    };
    assert_eq!(decision.action, Action::Ask);
    assert_eq!(decision.rule_id, "path.write_requires_approval");
    assert_eq!(
        decision.reason,
        "write_file mutates workspace content and requires user approval"
    );
    assert_eq!(&decision.policy, &outcome.decision().policy);
    assert_eq!(decision.facts, outcome.facts);
    assert_eq!(
        decision.facts.paths[0].relative.as_deref(),
        Some("out/report.md")
    );
    let EventBody::Approval(approval) = &audit[2].body else {
        unreachable!()
    };
    assert_eq!(approval.status, ApprovalStatus::Approved);
    let EventBody::Result(result) = &audit[3].body else {
        unreachable!()
    };
    assert_eq!(result.status, ExecutionStatus::Succeeded);
    assert_eq!(result.content, outcome.result.content);
}

#[test]
fn a_rejected_call_is_recorded_as_rejected_and_blocked() {
    let sandbox = Sandbox::new();
    let runner = builtin_runner(&sandbox);
    let (_, audit) = run(
        &runner,
        "bash",
        json!({"command": "touch made.txt"}),
        &mut reject,
    );
    assert_eq!(kinds(&audit), ["request", "decision", "approval", "result"]);
    assert!(matches!(&audit[2].body,
        EventBody::Approval(a) if a.status == ApprovalStatus::Rejected));
    assert!(matches!(&audit[3].body,
        EventBody::Result(r) if r.status == ExecutionStatus::Blocked
            && r.content.starts_with("Permission blocked [bash.requires_approval]")));
    assert!(!sandbox.ws.join("made.txt").exists());
}

#[test]
fn request_and_decision_are_written_ahead_in_one_append_before_approval() {
    let sandbox = Sandbox::new();
    let recorder = Recorder::default();
    let runner = custom_runner(&sandbox, recording(&["deploy"], &recorder));
    let mut sink = Batches::default();
    // What the record held, and how often the handler had run, when the approver was asked.
    type Snapshot = (Vec<Vec<&'static str>>, usize);
    let at_approval: Rc<RefCell<Option<Snapshot>>> = Rc::default();
    let mut approver = {
        let sink = sink.clone();
        let recorder = recorder.clone();
        let at_approval = Rc::clone(&at_approval);
        move |_: &ToolRequest, _: &Decision| {
            *at_approval.borrow_mut() = Some((sink.kinds(), recorder.calls()));
            ApprovalStatus::Approved
        }
    };
    let request = ToolRequest::new("toolu_1", "deploy", json!({}));
    runner
        .run("call-wa", &request, None, &mut approver, &mut sink)
        .unwrap();

    let (batches, calls) = at_approval.borrow_mut().take().expect("approver was asked");
    assert_eq!(batches, [vec!["request", "decision"]]);
    assert_eq!(
        calls, 0,
        "the handler had not run when the approver was asked"
    );
    assert_eq!(
        sink.kinds(),
        [
            vec!["request", "decision"],
            vec!["approval"],
            vec!["result"]
        ]
    );
}

#[test]
fn a_record_that_cannot_be_written_stops_the_call_before_the_handler() {
    let sandbox = Sandbox::new();
    let recorder = Recorder::default();
    let runner = custom_runner(&sandbox, recording(&["recorded", "deploy"], &recorder));
    let approver = Counting::default();

    // The write-ahead batch fails: nobody is asked, nothing runs.
    let request = ToolRequest::new("t", "recorded", json!({}));
    let err = runner
        .run(
            "c",
            &request,
            None,
            &mut approver.clone(),
            &mut FailsAfter { accept: 0 },
        )
        .unwrap_err();
    assert!(err.to_string().contains("disk full"), "{err}");

    // The approval cannot be recorded: the approved call still does not run.
    let request = ToolRequest::new("t", "deploy", json!({}));
    assert!(
        runner
            .run(
                "c",
                &request,
                None,
                &mut approver.clone(),
                &mut FailsAfter { accept: 1 }
            )
            .is_err()
    );
    assert_eq!(approver.count(), 1);
    assert_eq!(recorder.calls(), 0);
}

// ---------------------------------------------------------------- results

#[test]
fn blocked_results_become_error_tool_results_with_rule_and_reason() {
    let sandbox = Sandbox::new();
    let runner = builtin_runner(&sandbox);
    let (outcome, _) = run(&runner, "bash", json!({"command": "sudo ls"}), &mut approve);
    assert_eq!(
        outcome.result.content,
        "Permission blocked [bash.hard_deny]: command matches a non-overridable deny rule: sudo ls (approval=not_required)"
    );
    assert_eq!(
        outcome.to_protocol_block(),
        json!({
            "type": "tool_result",
            "tool_use_id": "toolu_test",
            "content": outcome.result.content,
            "is_error": true,
        })
    );
}

#[test]
fn failed_and_succeeded_results_become_tool_results() {
    let sandbox = Sandbox::new();
    let runner = builtin_runner(&sandbox);
    let (failed, _) = run(
        &runner,
        "read_file",
        json!({"path": "missing.txt"}),
        &mut approve,
    );
    assert_eq!(failed.result.status, ExecutionStatus::Failed);
    assert_eq!(failed.to_protocol_block()["is_error"], json!(true));
    assert_eq!(failed.to_protocol_block()["type"], json!("tool_result"));

    let (ok, _) = run(
        &runner,
        "read_file",
        json!({"path": "notes.txt"}),
        &mut approve,
    );
    assert_eq!(ok.result.status, ExecutionStatus::Succeeded);
    let block = ok.to_protocol_block();
    assert_eq!(block["is_error"], json!(false));
    assert_eq!(block["content"], json!("hello from the workspace\n"));
    assert_eq!(block["tool_use_id"], json!("toolu_test"));
}

#[test]
fn a_missing_handler_is_a_failed_result() {
    let sandbox = Sandbox::new();
    let runner = GovernedRunner::new(Policy::builtin(), workspace(&sandbox), Registry::empty());
    let (outcome, audit) = run(
        &runner,
        "read_file",
        json!({"path": "notes.txt"}),
        &mut approve,
    );
    assert_decision(&outcome, Action::Allow, "path.read_allow");
    assert_eq!(outcome.result.status, ExecutionStatus::Failed);
    assert_eq!(
        outcome.result.content,
        "no handler is registered for tool `read_file`"
    );
    assert!(matches!(&audit.last().unwrap().body,
        EventBody::Result(r) if r.status == ExecutionStatus::Failed));
}

#[test]
fn a_panicking_handler_is_a_failed_result_not_a_crash() {
    let sandbox = Sandbox::new();
    let mut tools = Registry::empty();
    tools.insert("boom", Boom);
    let runner = custom_runner(&sandbox, tools);
    let (outcome, audit) = run(&runner, "boom", json!({}), &mut approve);
    assert_decision(&outcome, Action::Allow, "custom.allow");
    assert_eq!(outcome.result.status, ExecutionStatus::Failed);
    assert_eq!(outcome.result.content, "handler for `boom` panicked");
    assert_eq!(outcome.to_protocol_block()["is_error"], json!(true));
    assert_eq!(kinds(&audit), ["request", "decision", "result"]);
}

// ---------------------------------------------------------------- tools

#[test]
fn bash_non_zero_exit_is_failed_and_keeps_the_exit_code_and_output() {
    let sandbox = Sandbox::new();
    let runner = builtin_runner(&sandbox);
    let (outcome, audit) = run(
        &runner,
        "bash",
        json!({"command": "echo partial; echo oops >&2; exit 3"}),
        &mut approve,
    );
    assert_eq!(outcome.result.status, ExecutionStatus::Failed);
    assert_eq!(outcome.result.exit_code, Some(3));
    assert!(outcome.result.content.contains("exited with code 3"));
    assert!(outcome.result.content.contains("partial"));
    assert!(outcome.result.content.contains("oops"));
    assert!(matches!(&audit.last().unwrap().body,
        EventBody::Result(r) if r.exit_code == Some(3)));
}

#[test]
fn bash_command_that_does_not_exist_is_failed() {
    let sandbox = Sandbox::new();
    let runner = builtin_runner(&sandbox);
    let (outcome, _) = run(
        &runner,
        "bash",
        json!({"command": "gavel-no-such-command-xyz --flag"}),
        &mut approve,
    );
    assert_eq!(outcome.result.status, ExecutionStatus::Failed);
    assert_eq!(outcome.result.exit_code, Some(127));
    assert!(outcome.result.content.contains("gavel-no-such-command-xyz"));
}

#[test]
fn bash_runs_in_the_workspace_and_succeeds_with_exit_code_zero() {
    let sandbox = Sandbox::new();
    let runner = builtin_runner(&sandbox);
    let (outcome, _) = run(
        &runner,
        "bash",
        json!({"command": "pwd; cat notes.txt"}),
        &mut approve,
    );
    assert_eq!(outcome.result.status, ExecutionStatus::Succeeded);
    assert_eq!(outcome.result.exit_code, Some(0));
    assert_eq!(
        outcome.result.content,
        format!("{}\nhello from the workspace\n", sandbox.ws.display())
    );
}

#[test]
fn read_file_of_a_missing_file_is_failed() {
    let sandbox = Sandbox::new();
    let runner = builtin_runner(&sandbox);
    let (outcome, _) = run(
        &runner,
        "read_file",
        json!({"path": "nope.txt"}),
        &mut approve,
    );
    assert_decision(&outcome, Action::Allow, "path.read_allow");
    assert_eq!(outcome.result.status, ExecutionStatus::Failed);
    assert!(
        outcome.result.content.contains("nope.txt"),
        "{}",
        outcome.result.content
    );
}

#[test]
fn edit_file_fails_when_the_text_is_missing_or_ambiguous() {
    let sandbox = Sandbox::new();
    sandbox.write("code.txt", "alpha beta alpha\n");
    let runner = builtin_runner(&sandbox);

    let (missing, _) = run(
        &runner,
        "edit_file",
        json!({"path": "code.txt", "old_text": "gamma", "new_text": "delta"}),
        &mut approve,
    );
    assert_eq!(missing.result.status, ExecutionStatus::Failed);
    assert_eq!(missing.result.content, "`gamma` not found in `code.txt`");

    let (twice, _) = run(
        &runner,
        "edit_file",
        json!({"path": "code.txt", "old_text": "alpha", "new_text": "delta"}),
        &mut approve,
    );
    assert_eq!(twice.result.status, ExecutionStatus::Failed);
    assert!(
        twice.result.content.contains("2 times"),
        "{}",
        twice.result.content
    );
    assert_eq!(
        sandbox.read("code.txt"),
        "alpha beta alpha\n",
        "file untouched"
    );
}

#[test]
fn edit_file_replaces_text_found_exactly_once() {
    let sandbox = Sandbox::new();
    sandbox.write("code.txt", "alpha beta alpha\n");
    let runner = builtin_runner(&sandbox);
    let (outcome, _) = run(
        &runner,
        "edit_file",
        json!({"path": "code.txt", "old_text": "beta", "new_text": "BETA"}),
        &mut approve,
    );
    assert_decision(&outcome, Action::Ask, "path.write_requires_approval");
    assert_eq!(outcome.result.status, ExecutionStatus::Succeeded);
    assert_eq!(sandbox.read("code.txt"), "alpha BETA alpha\n");
}

#[test]
fn write_file_creates_parent_folders() {
    let sandbox = Sandbox::new();
    let runner = builtin_runner(&sandbox);
    let (outcome, _) = run(
        &runner,
        "write_file",
        json!({"path": "a/b/c/new.txt", "content": "fresh"}),
        &mut approve,
    );
    assert_eq!(outcome.result.status, ExecutionStatus::Succeeded);
    assert_eq!(sandbox.read("a/b/c/new.txt"), "fresh");
}

// ---------------------------------------------------------------- hooks

/// Registers a hook that panics, then one that records what it sees.
fn observed_hooks() -> (Hooks, Arc<Mutex<Vec<String>>>) {
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let mut hooks = Hooks::new();
    hooks.observe(|event| panic!("a broken hook at {}", event.name()));
    let sink = Arc::clone(&seen);
    hooks.observe(move |event| {
        let line = match event {
            HookEvent::PreToolUse(request) => format!("PreToolUse {}", request.name),
            HookEvent::PermissionDecision(_, resolution) => format!(
                "PermissionDecision {} {}",
                resolution.decision.rule_id, resolution.approval
            ),
            HookEvent::PostToolUse(_, result) => {
                format!("PostToolUse {}", result.status.as_str())
            }
            HookEvent::UserPromptSubmit(text) => format!("UserPromptSubmit {text}"),
            HookEvent::Stop => "Stop".to_owned(),
        };
        sink.lock().unwrap().push(line);
    });
    (hooks, seen)
}

#[test]
fn hooks_observe_all_five_stages_in_order_and_a_panicking_hook_breaks_nothing() {
    let sandbox = Sandbox::new();
    let (hooks, seen) = observed_hooks();
    let runner = builtin_runner(&sandbox).with_hooks(hooks);

    runner
        .hooks()
        .emit(HookEvent::UserPromptSubmit("write the report"));
    let (outcome, audit) = run(
        &runner,
        "write_file",
        json!({"path": "report.md", "content": "ok"}),
        &mut approve,
    );
    runner.hooks().emit(HookEvent::Stop);

    assert_eq!(
        *seen.lock().unwrap(),
        [
            "UserPromptSubmit write the report",
            "PreToolUse write_file",
            "PermissionDecision path.write_requires_approval approved",
            "PostToolUse succeeded",
            "Stop",
        ]
    );
    assert_eq!(outcome.result.status, ExecutionStatus::Succeeded);
    assert_eq!(sandbox.read("report.md"), "ok");
    assert_eq!(kinds(&audit), ["request", "decision", "approval", "result"]);
}

#[test]
fn hooks_cannot_change_a_decision_or_a_result() {
    let sandbox = Sandbox::new();
    let plain = builtin_runner(&sandbox);
    let (hooks, seen) = observed_hooks();
    let hooked = builtin_runner(&sandbox).with_hooks(hooks);
    for (tool, arguments) in [
        ("bash", json!({"command": "sudo ls"})),
        ("read_file", json!({"path": "../outside/secret.txt"})),
        ("read_file", json!({"path": "notes.txt"})),
        ("deploy", json!({})),
    ] {
        let (expected, _) = run(&plain, tool, arguments.clone(), &mut reject);
        let (actual, _) = run(&hooked, tool, arguments, &mut reject);
        assert_eq!(actual.resolution, expected.resolution);
        assert_eq!(actual.result.status, expected.result.status);
        assert_eq!(actual.result.content, expected.result.content);
    }
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 12, "three stages per call: {seen:?}");
    assert_eq!(seen[2], "PostToolUse blocked");
}

// ---------------------------------------------------------------- edges

#[test]
fn a_symlink_loop_fails_closed_as_outside_the_workspace() {
    let sandbox = Sandbox::new();
    symlink("b", sandbox.ws.join("a")).unwrap();
    symlink("a", sandbox.ws.join("b")).unwrap();
    let runner = builtin_runner(&sandbox);
    let (outcome, _) = run(&runner, "read_file", json!({"path": "a/x"}), &mut approve);
    assert_decision(&outcome, Action::Deny, "path.outside_workspace");
    assert!(outcome.facts.paths[0].error.is_some());
    assert_eq!(outcome.facts.paths[0].resolved, None);
}

#[test]
fn glob_does_not_follow_symlinked_folders_out_of_the_workspace() {
    let sandbox = Sandbox::new();
    symlink(&sandbox.outside, sandbox.ws.join("link")).unwrap();
    sandbox.write("sub/inner.txt", "");
    let runner = builtin_runner(&sandbox);
    // Another client's glob may follow the link: a pattern that matches a
    // file through it is judged outside before anything runs, and the
    // reason names the match.
    for pattern in ["*/*.txt", "**/*.txt", "**/secret.txt"] {
        let (outcome, _) = run(&runner, "glob", json!({ "pattern": pattern }), &mut approve);
        assert_decision(&outcome, Action::Deny, "path.outside_workspace");
        assert_eq!(outcome.result.status, ExecutionStatus::Blocked, "{pattern}");
        assert!(
            outcome.result.content.contains("`link/secret.txt`"),
            "{pattern}: {}",
            outcome.result.content
        );
    }
    // Nothing matches through the link: the pattern stays inside.
    let (outcome, _) = run(
        &runner,
        "glob",
        json!({ "pattern": "**/*.rs" }),
        &mut approve,
    );
    assert_decision(&outcome, Action::Allow, "path.read_allow");
    let (outcome, _) = run(
        &runner,
        "glob",
        json!({ "pattern": "sub/*.txt" }),
        &mut approve,
    );
    assert_decision(&outcome, Action::Allow, "path.read_allow");
    assert_eq!(outcome.result.content, "sub/inner.txt");
    let absolute = format!("{}/*.txt", sandbox.ws.display());
    let (outcome, _) = run(
        &runner,
        "glob",
        json!({ "pattern": absolute }),
        &mut approve,
    );
    assert_decision(&outcome, Action::Allow, "path.read_allow");
    assert_eq!(outcome.result.content, "notes.txt");
}

#[test]
fn bash_that_outlives_its_timeout_is_failed() {
    let sandbox = Sandbox::new();
    let mut context = ToolContext::new(workspace(&sandbox));
    context.bash_timeout = std::time::Duration::from_secs(1);
    let runner = builtin_runner(&sandbox).with_context(context);
    let started = std::time::Instant::now();
    let (outcome, _) = run(
        &runner,
        "bash",
        json!({"command": "echo started; sleep 30"}),
        &mut approve,
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    assert_eq!(outcome.result.status, ExecutionStatus::Failed);
    assert!(
        outcome.result.content.contains("timed out"),
        "{}",
        outcome.result.content
    );
    assert!(outcome.result.content.contains("started"));
}

#[test]
fn hard_deny_sees_commands_after_a_newline_or_a_shell_keyword() {
    let sandbox = Sandbox::new();
    let runner = builtin_runner(&sandbox);
    for command in [
        "echo hi\nsudo reboot",
        "echo hi\nshutdown -h now",
        "{ sudo ls; }",
        "if true; then sudo ls; fi",
        "time sudo ls",
    ] {
        let request = ToolRequest::new("t", "bash", json!({ "command": command }));
        let (_, decision) = runner.decide(&request);
        assert_eq!(decision.rule_id, "bash.hard_deny", "{command:?}");
    }
}

#[test]
fn hard_deny_catches_recursive_force_delete_with_separate_or_long_flags() {
    let sandbox = Sandbox::new();
    let runner = builtin_runner(&sandbox);
    for command in [
        "rm -r -f /",
        "rm -f -r /",
        "rm --recursive --force /",
        "rm -rf --no-preserve-root /",
    ] {
        let request = ToolRequest::new("t", "bash", json!({ "command": command }));
        let (_, decision) = runner.decide(&request);
        assert_eq!(decision.rule_id, "bash.hard_deny", "{command:?}");
    }
}
