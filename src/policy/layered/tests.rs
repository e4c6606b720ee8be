//! The layering rule, as a property over generated policies and requests:
//! a project under a layer never loosens what the layer decides, and the
//! layered decision is always one of its layers' own.

use proptest::prelude::*;
use serde_json::json;

use super::super::{Action, Layer, Policy};
use crate::facts::lexical_facts;
use crate::request::ToolRequest;

/// How many policy pairs and requests to try: `GAVEL_LAYER_CASES`, else
/// 1,000 (CI runs 10,000).
fn cases() -> u32 {
    std::env::var("GAVEL_LAYER_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1_000)
}

const TOOLS: &[&str] = &["read_file", "write_file", "bash", "*"];
const ACTIONS: &[&str] = &["allow", "ask", "deny"];
const PATH_GLOBS: &[&str] = &["src/**", "*.md", "**", "secrets/*"];
const PROGRAMS: &[&str] = &["ls", "curl", "rm", "git", "grep"];

/// One rule's TOML, from indices into the pools above.
fn rule(index: usize, (tool, action, condition, pick): (usize, usize, usize, usize)) -> String {
    let tool = TOOLS[tool % TOOLS.len()];
    let action = ACTIONS[action % ACTIONS.len()];
    let condition = match (tool, condition % 3) {
        ("bash" | "*", 0) => format!(
            "commands = [{{ program = [\"{}\"] }}]\n",
            PROGRAMS[pick % PROGRAMS.len()]
        ),
        (_, 1) => format!(
            "path_glob = [\"{}\"]\n",
            PATH_GLOBS[pick % PATH_GLOBS.len()]
        ),
        (_, _) => String::new(),
    };
    // An allow that can apply to bash must judge its commands.
    let condition = if action == "allow"
        && matches!(tool, "bash" | "*")
        && !condition.starts_with("commands")
    {
        format!(
            "commands = [{{ program = [\"{}\"] }}]\n",
            PROGRAMS[pick % PROGRAMS.len()]
        )
    } else {
        condition
    };
    format!(
        "[[rules]]\nid = \"r{index}\"\naction = \"{action}\"\ntools = [\"{tool}\"]\n{condition}reason = \"r{index}\"\n"
    )
}

fn policy(name: &str, rules: &[(usize, usize, usize, usize)]) -> Policy {
    let mut text = format!("name = \"{name}\"\n");
    for (i, r) in rules.iter().enumerate() {
        text.push_str(&rule(i, *r));
    }
    Policy::from_toml(&text, name).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

fn request(kind: usize, pick: usize) -> ToolRequest {
    const PATHS: &[&str] = &[
        "src/a.rs",
        "README.md",
        "secrets/key",
        "/etc/passwd",
        "docs/x.md",
    ];
    const COMMANDS: &[&str] = &[
        "ls",
        "curl -s x",
        "rm -rf build",
        "git status | grep x",
        "ls && curl y",
    ];
    match kind % 3 {
        0 => ToolRequest::new("c", "read_file", json!({"path": PATHS[pick % PATHS.len()]})),
        1 => ToolRequest::new(
            "c",
            "write_file",
            json!({"path": PATHS[pick % PATHS.len()], "content": "x"}),
        ),
        _ => ToolRequest::new(
            "c",
            "bash",
            json!({"command": COMMANDS[pick % COMMANDS.len()]}),
        ),
    }
}

fn rules() -> impl Strategy<Value = Vec<(usize, usize, usize, usize)>> {
    prop::collection::vec((0..8usize, 0..8usize, 0..8usize, 0..8usize), 0..5)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn a_project_never_loosens_a_layer_above(
        admin in rules(),
        project in rules(),
        requests in prop::collection::vec((0..3usize, 0..8usize), 1..6),
    ) {
        let admin = policy("admin", &admin);
        let project = policy("project", &project);
        let layered = project.clone().with_layers(vec![Layer {
            name: "admin".into(),
            path: "/etc/gavel/policy.toml".into(),
            policy: admin.clone(),
        }]);
        for (kind, pick) in requests {
            let request = request(kind, pick);
            let facts = lexical_facts(&request);
            let decision = layered.decide(&request, &facts);
            let above = admin.first_match(&request, &facts, &crate::policy::At::none(), None, None);
            let own = project.decide(&request, &facts);
            // Never looser than the layer's own verdict, nor than the project's.
            if let Some(above) = &above {
                prop_assert!(decision.action >= above.action, "{decision:?} loosens {above:?}");
            }
            prop_assert!(decision.action >= own.action, "{decision:?} loosens {own:?}");
            // And always one of them, named by its layer.
            let expected = match &above {
                Some(above) if above.action >= own.action => (above, "admin"),
                _ => (&own, "project"),
            };
            prop_assert_eq!(&decision.rule_id, &expected.0.rule_id);
            prop_assert_eq!(decision.layer.as_deref(), Some(expected.1));
            prop_assert_eq!(decision.layers.len(), 2);
            // A deny anywhere wins.
            if above.as_ref().is_some_and(|a| a.action == Action::Deny) || own.action == Action::Deny {
                prop_assert_eq!(decision.action, Action::Deny);
            }
        }
    }
}
