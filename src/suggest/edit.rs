//! Proposed rules written into a policy file's text, its comments, layout
//! and order kept (`toml_edit`): each new `[[rules]]` table goes just
//! before the rule it is anchored to, with a comment naming where it came
//! from; a rule proposed for removal is taken out with its comments. Only
//! allow rules are ever added or removed: no deny moves.

use toml_edit::{Array, DocumentMut, Item, Table, Value, value};

use super::ladder::RuleSpec;

/// Why a policy file's text could not be edited.
#[derive(Debug, thiserror::Error)]
pub enum EditError {
    #[error("policy `{origin}` is not TOML gavel can edit: {problem}")]
    Parse { origin: String, problem: String },
    #[error(
        "policy `{origin}`: its rules are not written as `[[rules]]` tables; add the proposed rules by hand"
    )]
    NotTables { origin: String },
    #[error(
        "policy `{origin}`: rule {index} of the file is not the rule `{expected}` it loaded as"
    )]
    Mismatch {
        origin: String,
        index: usize,
        expected: String,
    },
}

/// A rule to add, before the project rule at `before` (its index in the
/// file; the number of rules: at the end).
pub struct Insert<'a> {
    pub before: usize,
    pub rule: &'a RuleSpec,
    /// One line of comment above it.
    pub comment: String,
}

/// `source` with `inserts` added and the rules named in `removals` taken
/// out. `ids` are the rules the text loaded as, in order: the file's
/// `[[rules]]` tables must be those.
pub fn edit(
    source: &str,
    origin: &str,
    ids: &[&str],
    inserts: &[Insert<'_>],
    removals: &[&str],
) -> Result<String, EditError> {
    let mut doc: DocumentMut =
        source
            .parse()
            .map_err(|e: toml_edit::TomlError| EditError::Parse {
                origin: origin.to_owned(),
                problem: e.message().to_owned(),
            })?;
    let tables: Vec<Table> = match doc.get("rules") {
        None => Vec::new(),
        Some(Item::ArrayOfTables(array)) => array.iter().cloned().collect(),
        Some(_) => {
            return Err(EditError::NotTables {
                origin: origin.to_owned(),
            });
        }
    };
    for (index, (table, id)) in tables.iter().zip(ids).enumerate() {
        if table.get("id").and_then(Item::as_str) != Some(*id) {
            return Err(EditError::Mismatch {
                origin: origin.to_owned(),
                index: index + 1,
                expected: (*id).to_owned(),
            });
        }
    }
    if tables.len() != ids.len() {
        return Err(EditError::Mismatch {
            origin: origin.to_owned(),
            index: tables.len().min(ids.len()) + 1,
            expected: ids.get(tables.len()).copied().unwrap_or("").to_owned(),
        });
    }
    let mut out: Vec<Table> = Vec::with_capacity(tables.len() + inserts.len());
    let count = tables.len();
    for (index, table) in tables.into_iter().enumerate() {
        out.extend(
            inserts
                .iter()
                .filter(|i| i.before == index)
                .map(|i| table_of(i.rule, &i.comment)),
        );
        let id = table.get("id").and_then(Item::as_str).unwrap_or("");
        if !removals.contains(&id) {
            out.push(table);
        }
    }
    out.extend(
        inserts
            .iter()
            .filter(|i| i.before >= count)
            .map(|i| table_of(i.rule, &i.comment)),
    );
    let mut array = toml_edit::ArrayOfTables::new();
    for table in out {
        array.push(table);
    }
    doc.insert("rules", Item::ArrayOfTables(array));
    Ok(doc.to_string())
}

fn strings<'a>(items: impl IntoIterator<Item = &'a String>) -> Array {
    let mut array = Array::new();
    for item in items {
        array.push(item.as_str());
    }
    array
}

/// The `[[rules]]` table of `rule`, with `comment` above it.
pub fn table_of(rule: &RuleSpec, comment: &str) -> Table {
    let mut table = Table::new();
    table.insert("id", value(rule.id.as_str()));
    table.insert("action", value("allow"));
    table.insert("tools", value(strings(&rule.tools)));
    if rule.inside {
        table.insert("path_scope", value("inside"));
    }
    if let Some(glob) = &rule.path_glob {
        table.insert("path_glob", value(strings([glob])));
    }
    if let Some(regex) = &rule.command_regex {
        table.insert("command_regex", value(strings([regex])));
    }
    if !rule.command_prefix.is_empty() {
        let mut array = Array::new();
        for prefix in &rule.command_prefix {
            array.push(Value::Array(strings(prefix)));
        }
        table.insert("command_prefix", value(array));
    }
    if let Some(sandbox) = &rule.sandbox {
        table.insert("sandbox", value(sandbox.as_str()));
    }
    table.insert("reason", value(rule.reason.as_str()));
    let comment: String = comment.lines().map(|line| format!("# {line}\n")).collect();
    table.decor_mut().set_prefix(format!("\n{comment}"));
    table
}

/// One rule table as text, for a proposal's `rule`.
pub fn rule_text(rule: &RuleSpec) -> String {
    let mut doc = DocumentMut::new();
    let mut array = toml_edit::ArrayOfTables::new();
    let mut table = table_of(rule, "");
    table.decor_mut().set_prefix("");
    array.push(table);
    doc.insert("rules", Item::ArrayOfTables(array));
    doc.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(id: &str) -> RuleSpec {
        RuleSpec {
            id: id.into(),
            tools: vec!["bash".into()],
            command_prefix: vec![vec!["cargo".into(), "test".into()]],
            command_regex: None,
            inside: true,
            path_glob: None,
            sandbox: Some("workspace-write".into()),
            reason: "learned".into(),
        }
    }

    #[test]
    fn rules_go_before_their_anchor_and_comments_stay() {
        let source = "name = \"p\" # the name\n\n# first\n[[rules]]\nid = \"a\"\naction = \"deny\"\nreason = \"x\"\n\n# second, kept\n[[rules]]\nid = \"b\"\naction = \"ask\"\nreason = \"y\"\n";
        let rule = spec("suggest.bash.cargo-test");
        let out = edit(
            source,
            "p.toml",
            &["a", "b"],
            &[Insert {
                before: 1,
                rule: &rule,
                comment: "proposal 1".into(),
            }],
            &[],
        )
        .unwrap();
        let a = out.find("id = \"a\"").unwrap();
        let new = out.find("suggest.bash.cargo-test").unwrap();
        let b = out.find("id = \"b\"").unwrap();
        assert!(a < new && new < b, "{out}");
        assert!(
            out.contains("# the name") && out.contains("# first") && out.contains("# second, kept")
        );
        assert!(out.contains("# proposal 1\n[[rules]]"), "{out}");
        assert!(
            out.contains("command_prefix = [[\"cargo\", \"test\"]]"),
            "{out}"
        );
        let policy = crate::policy::Policy::from_toml(&out, "p.toml").unwrap();
        let ids: Vec<&str> = policy.rules().iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, ["a", "suggest.bash.cargo-test", "b"]);
        // A removal takes the rule and its comment out, and nothing else.
        let out = edit(source, "p.toml", &["a", "b"], &[], &["b"]).unwrap();
        assert!(
            !out.contains("id = \"b\"") && !out.contains("# second"),
            "{out}"
        );
        assert!(
            out.starts_with("name = \"p\" # the name\n\n# first\n[[rules]]"),
            "{out}"
        );
    }

    #[test]
    fn a_file_whose_tables_are_not_its_rules_is_refused() {
        let err = edit("name = \"p\"\nrules = []\n", "p", &[], &[], &[]).unwrap_err();
        assert!(matches!(err, EditError::NotTables { .. }));
        let err = edit(
            "name = \"p\"\n[[rules]]\nid = \"x\"\n",
            "p",
            &["y"],
            &[],
            &[],
        )
        .unwrap_err();
        assert!(matches!(err, EditError::Mismatch { .. }));
        assert!(edit("not toml [", "p", &[], &[], &[]).is_err());
    }
}
