//! Prints the SQL a central `gavel log` or `gavel stats` runs for the
//! benchmark's queries, its parameters written in, so that `psql` can run
//! the very same statement (the baseline of the central query figures).
//!
//! usage: central-sql log-rule RULE LIMIT | log-all | stats | stats-host HOST

use gavel::central::query::{calls_statement, stats_statement};
use gavel::store::AuditQuery;

const USAGE: &str = "central-sql log-rule RULE LIMIT | log-all | stats | stats-host HOST";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let statement = match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["log-rule", rule, limit] => calls_statement(
            &AuditQuery {
                rule_id: Some(rule.to_owned()),
                limit: Some(limit.parse()?),
                ..AuditQuery::default()
            },
            None,
            true,
            false,
        ),
        ["log-all"] => calls_statement(&AuditQuery::default(), None, true, false),
        ["stats"] => stats_statement(&AuditQuery::default(), None),
        ["stats-host", host] => stats_statement(
            &AuditQuery {
                host: Some(host.to_owned()),
                ..AuditQuery::default()
            },
            None,
        ),
        _ => return Err(USAGE.into()),
    };
    println!("{};", statement.inlined().trim());
    Ok(())
}
