//! `decide` with gavel's built-in policy against two peer policy engines
//! given the same rules and the same precomputed facts, in one criterion
//! group so their times compare directly:
//!
//! - gavel: `Policy::decide(request, facts)`, facts gathered once up front.
//! - regorus (OPA's Rego): the default policy written in Rego over the same
//!   facts (resolved paths, the parsed simple commands of a shell command),
//!   converted to a Rego input value up front.
//! - cedar-policy (Cedar): one `permit` per rule, annotated with its order,
//!   action and id; the first match is the lowest order among the satisfied
//!   policies. Cedar has no quantifiers over sets, so the facts are
//!   projected: paths to the set of their `inside` flags, the parsed shell
//!   commands to a flag saying whether any part is unprovable, and the hard
//!   denies become `like` patterns on the raw command (an approximation that
//!   agrees on this mix).
//!
//! Before timing, all three must agree on action and rule for every request.

use std::collections::HashMap;
use std::hint::black_box;
use std::str::FromStr;

use cedar_policy::{
    Authorizer, Context, Entities, EntityUid, PolicyId, PolicySet, Request as CedarRequest,
};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use gavel::policy::Policy;
use gavel::{Facts, ToolRequest, Workspace};
use gavel_bench::mix;
use serde_json::{Value, json};

const REGO: &str = r#"
package gavel

import rego.v1

path_tools := {"read_file", "write_file", "edit_file", "glob"}

field := "command" if input.tool == "bash"
field := "path" if input.tool in {"read_file", "write_file", "edit_file"}
field := "pattern" if input.tool == "glob"

non_empty_string(s) if {
    is_string(s)
    s != ""
}

invalid if not is_object(input.arguments)

invalid if {
    is_object(input.arguments)
    field
    not non_empty_string(input.arguments[field])
}

paths := input.facts.paths

first_path := paths[0].requested if count(paths) > 0
else := ""

shell := object.get(input.facts, "shell", {})

commands := object.get(shell, "commands", [])

args(c) := array.slice(c.words, 1, count(c.words))

has_flag(a, flag) if {
    startswith(flag, "--")
    some x in a
    x == flag
}

has_flag(a, flag) if {
    startswith(flag, "--")
    some x in a
    startswith(x, concat("", [flag, "="]))
}

has_flag(a, flag) if {
    not startswith(flag, "--")
    some x in a
    startswith(x, "-")
    not startswith(x, "--")
    contains(substring(x, 1, -1), substring(flag, 1, 1))
}

hard_deny if {
    some c in commands
    c.words[0] in {"sudo", "doas", "su", "shutdown", "reboot", "poweroff", "halt"}
}

hard_deny if {
    some c in commands
    regex.match(`^mkfs(\..*)?$`, c.words[0])
}

hard_deny if {
    some c in commands
    c.words[0] == "rm"
    some r in ["-r", "-R", "--recursive"]
    has_flag(args(c), r)
    some f in ["-f", "--force"]
    has_flag(args(c), f)
}

hard_deny if {
    some c in commands
    c.words[0] == "dd"
    some x in args(c)
    startswith(x, "of=/dev/")
}

hard_deny if {
    some c in commands
    some r in object.get(c, "redirects", [])
    trim_left(r.op, "0123456789") != "<"
    regex.match(`^/dev/(sd|nvme|disk|hd|vd)`, r.target)
}

unprovable if count(object.get(shell, "unprovable", [])) > 0

outside if {
    input.tool in path_tools
    count(paths) > 0
    some p in paths
    not p.inside
}

read_allow if {
    input.tool in {"read_file", "glob"}
    count(paths) > 0
    every p in paths {
        p.inside
    }
}

write_ask if {
    input.tool in {"write_file", "edit_file"}
    count(paths) > 0
    some p in paths
    p.inside
}

decision := {"action": "deny", "rule_id": "request.invalid_arguments", "reason": sprintf("`%s` has invalid arguments", [input.tool])} if {
    invalid
} else := {"action": "deny", "rule_id": "bash.hard_deny", "reason": sprintf("command matches a non-overridable deny rule: %s", [input.arguments.command])} if {
    hard_deny
} else := {"action": "deny", "rule_id": "path.outside_workspace", "reason": sprintf("%s path `%s` resolves outside the workspace `%s`", [input.tool, first_path, input.facts.workspace])} if {
    outside
} else := {"action": "allow", "rule_id": "path.read_allow", "reason": sprintf("%s only reads inside the workspace", [input.tool])} if {
    read_allow
} else := {"action": "ask", "rule_id": "path.write_requires_approval", "reason": sprintf("%s mutates workspace content and requires user approval", [input.tool])} if {
    write_ask
} else := {"action": "ask", "rule_id": "mcp.requires_approval", "reason": sprintf("%s is an MCP tool; approval required", [input.tool])} if {
    startswith(input.tool, "mcp__")
} else := {"action": "ask", "rule_id": "bash.unprovable", "reason": sprintf("cannot prove what this command runs (%s); approval required", [concat(", ", shell.unprovable)])} if {
    input.tool == "bash"
    unprovable
} else := {"action": "ask", "rule_id": "bash.requires_approval", "reason": "shell commands can have side effects the policy cannot prove safe; approval required"} if {
    input.tool == "bash"
} else := {"action": "deny", "rule_id": "default.deny", "reason": sprintf("no permission rule matched tool `%s`", [input.tool])}
"#;

/// `like` patterns standing in for the hard-deny regexes (Cedar has no regex).
fn cedar_hard_deny() -> String {
    let mut clauses = Vec::new();
    let words = ["sudo", "shutdown", "reboot", "poweroff", "halt", "mkfs"];
    for word in words {
        clauses.push(format!("context.arguments.command == \"{word}\""));
        clauses.push(format!("context.arguments.command like \"{word} *\""));
        for sep in [";", "&", "|", "(", "`", "$("] {
            for space in ["", " "] {
                clauses.push(format!(
                    "context.arguments.command like \"*{sep}{space}{word} *\""
                ));
            }
        }
    }
    for flags in ["*r*f*", "*f*r*", "*R*f*", "*f*R*"] {
        clauses.push(format!("context.arguments.command like \"rm -{flags}\""));
        clauses.push(format!("context.arguments.command like \"* rm -{flags}\""));
    }
    clauses.push("context.arguments.command like \"*dd *of=/dev/*\"".into());
    for dev in ["sd", "nvme", "disk", "hd", "vd"] {
        clauses.push(format!("context.arguments.command like \"*>/dev/{dev}*\""));
        clauses.push(format!("context.arguments.command like \"*> /dev/{dev}*\""));
    }
    clauses.join(" ||\n    ")
}

fn cedar_policies() -> String {
    let reads = r#"[Tool::"read_file", Tool::"glob"]"#;
    let writes = r#"[Tool::"write_file", Tool::"edit_file"]"#;
    let paths = r#"[Tool::"read_file", Tool::"write_file", Tool::"edit_file", Tool::"glob"]"#;
    let any_path = "context.path_inside.containsAny([true, false])";
    format!(
        r#"
@order("0") @action("deny") @rule("request.invalid_arguments")
permit(principal, action == Action::"call", resource)
when {{ !context.arguments_are_object }};

@order("0") @action("deny") @rule("request.invalid_arguments")
permit(principal, action == Action::"call", resource == Tool::"bash")
when {{ !(context.arguments has command) || context.arguments.command == "" }};

@order("0") @action("deny") @rule("request.invalid_arguments")
permit(principal, action == Action::"call", resource)
when {{ resource in [Tool::"read_file", Tool::"write_file", Tool::"edit_file"] && (!(context.arguments has path) || context.arguments.path == "") }};

@order("0") @action("deny") @rule("request.invalid_arguments")
permit(principal, action == Action::"call", resource == Tool::"glob")
when {{ !(context.arguments has pattern) || context.arguments.pattern == "" }};

@order("1") @action("deny") @rule("bash.hard_deny")
permit(principal, action == Action::"call", resource == Tool::"bash")
when {{ context.arguments has command && (
    {hard_deny}
) }};

@order("2") @action("deny") @rule("path.outside_workspace")
permit(principal, action == Action::"call", resource)
when {{ resource in {paths} && {any_path} && context.path_inside.contains(false) }};

@order("3") @action("allow") @rule("path.read_allow")
permit(principal, action == Action::"call", resource)
when {{ resource in {reads} && {any_path} && !context.path_inside.contains(false) }};

@order("4") @action("ask") @rule("path.write_requires_approval")
permit(principal, action == Action::"call", resource)
when {{ resource in {writes} && context.path_inside.contains(true) }};

@order("5") @action("ask") @rule("mcp.requires_approval")
permit(principal, action == Action::"call", resource)
when {{ context.tool like "mcp__*" }};

@order("6") @action("ask") @rule("bash.unprovable")
permit(principal, action == Action::"call", resource == Tool::"bash")
when {{ context.unprovable }};

@order("7") @action("ask") @rule("bash.requires_approval")
permit(principal, action == Action::"call", resource == Tool::"bash");
"#,
        hard_deny = cedar_hard_deny()
    )
}

/// The facts of each request, gathered once from a real workspace.
fn requests_and_facts() -> (tempfile::TempDir, Vec<(ToolRequest, Facts)>) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    mix::setup_workspace(dir.path()).expect("the benchmark workspace");
    let workspace = Workspace::open(dir.path()).expect("the workspace opens");
    let pairs = mix::decide_requests()
        .into_iter()
        .map(|request| {
            let facts = workspace.facts(&request);
            (request, facts)
        })
        .collect();
    (dir, pairs)
}

fn rego_input(request: &ToolRequest, facts: &Facts) -> regorus::Value {
    let input = json!({
        "tool": request.name,
        "arguments": request.arguments,
        "facts": facts,
    });
    regorus::Value::from_json_str(&input.to_string()).expect("valid JSON")
}

struct Cedar {
    authorizer: Authorizer,
    policies: PolicySet,
    entities: Entities,
    rules: HashMap<PolicyId, (u32, String, String)>,
}

impl Cedar {
    fn new() -> Self {
        let policies = PolicySet::from_str(&cedar_policies()).expect("the Cedar policies parse");
        let rules = policies
            .policies()
            .map(|p| {
                let get = |key| p.annotation(key).expect("annotated").to_owned();
                (
                    p.id().clone(),
                    (
                        get("order").parse().expect("a number"),
                        get("action"),
                        get("rule"),
                    ),
                )
            })
            .collect();
        Self {
            authorizer: Authorizer::new(),
            policies,
            entities: Entities::empty(),
            rules,
        }
    }

    fn request(request: &ToolRequest, facts: &Facts) -> CedarRequest {
        let uid = |text: &str| EntityUid::from_str(text).expect("an entity uid");
        let arguments = match &request.arguments {
            Value::Object(_) => request.arguments.clone(),
            _ => json!({}),
        };
        let inside: Vec<bool> = facts.paths.iter().map(|p| p.inside).collect();
        let context = Context::from_json_value(
            json!({
                "arguments_are_object": request.arguments.is_object(),
                "tool": request.name,
                "arguments": arguments,
                "path_inside": inside,
                "unprovable": facts.shell.as_ref().is_some_and(|s| !s.unprovable.is_empty()),
                "workspace": facts.workspace,
            }),
            None,
        )
        .expect("a Cedar context");
        CedarRequest::new(
            uid(r#"Agent::"agent""#),
            uid(r#"Action::"call""#),
            uid(&format!("Tool::{}", Value::String(request.name.clone()))),
            context,
            None,
        )
        .expect("a Cedar request")
    }

    /// The first matching rule's action and id, or the default deny.
    fn decide(&self, request: &CedarRequest) -> (&str, &str) {
        let response = self
            .authorizer
            .is_authorized(request, &self.policies, &self.entities);
        response
            .diagnostics()
            .reason()
            .filter_map(|id| self.rules.get(id))
            .min_by_key(|(order, _, _)| *order)
            .map_or(("deny", "default.deny"), |(_, action, rule)| {
                (action.as_str(), rule.as_str())
            })
    }
}

fn decide(c: &mut Criterion) {
    let (_dir, pairs) = requests_and_facts();
    let policy = Policy::builtin();

    let mut rego = regorus::Engine::new();
    rego.add_policy("gavel.rego".into(), REGO.into())
        .expect("the Rego policy parses");
    let rego_inputs: Vec<regorus::Value> = pairs.iter().map(|(r, f)| rego_input(r, f)).collect();

    let cedar = Cedar::new();
    let cedar_requests: Vec<CedarRequest> =
        pairs.iter().map(|(r, f)| Cedar::request(r, f)).collect();

    // The three engines must agree before their times mean anything.
    for (i, (request, facts)) in pairs.iter().enumerate() {
        let ours = policy.decide(request, facts);
        rego.set_input(rego_inputs[i].clone());
        let theirs = rego
            .eval_rule("data.gavel.decision".into())
            .expect("the Rego decision evaluates");
        let rego_pair = (
            theirs["action"].as_string().expect("action").to_string(),
            theirs["rule_id"].as_string().expect("rule_id").to_string(),
        );
        let cedar_pair = cedar.decide(&cedar_requests[i]);
        let expected = (ours.action.as_str().to_owned(), ours.rule_id.clone());
        assert_eq!(rego_pair, expected, "regorus disagrees on {request:?}");
        assert_eq!(
            (cedar_pair.0.to_owned(), cedar_pair.1.to_owned()),
            expected,
            "cedar disagrees on {request:?}"
        );
    }

    let mut group = c.benchmark_group("decide");
    group.throughput(Throughput::Elements(pairs.len() as u64));
    group.bench_function("gavel", |b| {
        b.iter(|| {
            for (request, facts) in &pairs {
                black_box(policy.decide(black_box(request), black_box(facts)));
            }
        })
    });
    group.bench_function("regorus", |b| {
        b.iter(|| {
            for input in &rego_inputs {
                rego.set_input(input.clone());
                black_box(rego.eval_rule("data.gavel.decision".into()).ok());
            }
        })
    });
    group.bench_function("cedar", |b| {
        b.iter(|| {
            for request in &cedar_requests {
                black_box(cedar.decide(black_box(request)));
            }
        })
    });
    group.finish();
}

/// Parse + decide per bash command: the shell parse happens while gathering
/// facts (`Workspace::facts`), then the policy decides on them.
fn shell(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    mix::setup_workspace(dir.path()).expect("the benchmark workspace");
    let workspace = Workspace::open(dir.path()).expect("the workspace opens");
    let policy = Policy::builtin();
    let commands: Vec<ToolRequest> = [
        "cargo test --workspace",
        "git status && git diff --stat",
        "cd /tmp && sudo make install",
        "bash -c 'rm -rf build'",
        "grep -rn TODO src | head -20 > notes/todo.txt",
        "echo $(git rev-parse HEAD)",
    ]
    .iter()
    .map(|command| ToolRequest::new("s", "bash", json!({ "command": command })))
    .collect();
    let mut group = c.benchmark_group("shell");
    group.throughput(Throughput::Elements(commands.len() as u64));
    group.bench_function("parse+decide", |b| {
        b.iter(|| {
            for request in &commands {
                let facts = workspace.facts(black_box(request));
                black_box(policy.decide(request, &facts));
            }
        })
    });
    group.finish();
}

criterion_group!(benches, decide, shell);
criterion_main!(benches);
