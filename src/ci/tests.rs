use std::path::Path;

use super::*;

fn run() -> Run {
    Run {
        version: "0.1.0".into(),
        timestamp: "2026-05-01T12:30:00".into(),
        hostname: "ci-host".into(),
        seconds: 0.25,
        base: Some(Path::new("/repo").to_path_buf()),
    }
}

fn report() -> Report {
    let mut report = Report::new("replay");
    report.properties.push(("policy".into(), "p & <q>".into()));
    report.checks = vec![
        Check {
            name: "call a: bash ls".into(),
            kind: "replay.unchanged",
            level: Level::Pass,
            message: "decided allow `x` as recorded".into(),
            site: None,
        },
        Check {
            name: "call b: bash echo \"<hi>\" & 'bye'".into(),
            kind: "replay.loosened",
            level: Level::Error,
            message: "loosened: 100% worse,\nline two\r: done".into(),
            site: Some(Site {
                file: "/repo/gavel.toml".into(),
                line: Some(12),
            }),
        },
        Check {
            name: "call c: read_file a,b:c".into(),
            kind: "replay.tightened",
            level: Level::Warning,
            message: "tightened \u{1b}[31m".into(),
            site: Some(Site {
                file: "/elsewhere/p.toml".into(),
                line: None,
            }),
        },
    ];
    report
}

#[test]
fn xml_escapes_markup_line_ends_and_what_xml_cannot_hold() {
    assert_eq!(
        junit::escape("a<b>&\"c'\n\r\t\u{1b}\u{0}\u{FFFF}é"),
        "a&lt;b&gt;&amp;&quot;c&apos;&#10;&#13;&#9;\\x1b\\x00\\u{ffff}é"
    );
}

#[test]
fn junit_has_one_case_per_check_and_a_failure_only_on_errors() {
    let xml = report().render(Format::Junit, &run());
    assert!(xml.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuite name=\"gavel replay\" timestamp=\"2026-05-01T12:30:00\" hostname=\"ci-host\" tests=\"3\" failures=\"1\" errors=\"0\" skipped=\"0\" time=\"0.250\">"), "{xml}");
    assert_eq!(xml.matches("<testcase ").count(), 3, "{xml}");
    assert_eq!(xml.matches("<failure ").count(), 1, "{xml}");
    assert!(xml.contains("<property name=\"policy\" value=\"p &amp; &lt;q&gt;\"/>"));
    assert!(xml.contains(
        "name=\"call b: bash echo &quot;&lt;hi&gt;&quot; &amp; &apos;bye&apos;\" classname=\"gavel.replay.loosened\""
    ));
    assert!(
        xml.contains("at gavel.toml:12</failure>"),
        "relative to the base: {xml}"
    );
    assert!(
        xml.contains(
            "warning: call c: read_file a,b:c: tightened \\x1b[31m (at /elsewhere/p.toml)"
        ),
        "{xml}"
    );
    assert!(xml.contains("<system-err></system-err>\n</testsuite>\n"));
}

#[test]
fn junit_never_writes_an_invalid_time_or_an_empty_host() {
    let mut odd = run();
    odd.timestamp = "yesterday".into();
    odd.hostname = " ".into();
    odd.seconds = f64::NAN;
    let xml = Report::new("verify").render(Format::Junit, &odd);
    assert!(xml.contains("timestamp=\"1970-01-01T00:00:00\" hostname=\"localhost\" tests=\"0\" failures=\"0\" errors=\"0\" skipped=\"0\" time=\"0\""), "{xml}");
}

#[test]
fn sarif_has_a_result_per_finding_at_its_rule_line() {
    let text = report().render(Format::Sarif, &run());
    let log: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(log["version"], "2.1.0");
    let run = &log["runs"][0];
    assert_eq!(run["tool"]["driver"]["name"], "gavel");
    assert_eq!(run["automationDetails"]["id"], "gavel/replay/");
    let results = run["results"].as_array().unwrap();
    assert_eq!(results.len(), 2, "passes are not results");
    assert_eq!(results[0]["level"], "error");
    assert_eq!(results[0]["ruleId"], "replay.loosened");
    let location = &results[0]["locations"][0]["physicalLocation"];
    assert_eq!(location["artifactLocation"]["uri"], "gavel.toml");
    assert_eq!(location["region"]["startLine"], 12);
    assert_eq!(results[1]["level"], "warning");
    let rules = run["tool"]["driver"]["rules"].as_array().unwrap();
    assert_eq!(
        rules[results[1]["ruleIndex"].as_u64().unwrap() as usize]["id"],
        "replay.tightened"
    );
    assert_eq!(
        results[1]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
        "file:///elsewhere/p.toml"
    );
    assert!(
        results[1]["locations"][0]["physicalLocation"]
            .get("region")
            .is_none()
    );
}

#[test]
fn uris_percent_encode_what_is_not_plain() {
    assert_eq!(sarif::uri("dir/gavel.toml"), "dir/gavel.toml");
    assert_eq!(sarif::uri("my dir/a#b%.toml"), "my%20dir/a%23b%25.toml");
    assert_eq!(sarif::uri("/abs/é.toml"), "file:///abs/%C3%A9.toml");
}

#[test]
fn github_escapes_data_and_properties_as_the_toolkit_does() {
    assert_eq!(github::data("a%b\r\nc:d,e"), "a%25b%0D%0Ac:d,e");
    assert_eq!(github::property("a%b\r\nc:d,e"), "a%25b%0D%0Ac%3Ad%2Ce");
    let text = report().render(Format::Github, &run());
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines,
        [
            "::error file=gavel.toml,line=12,title=gavel replay%3A call b%3A bash echo \"<hi>\" & 'bye'::loosened: 100%25 worse,%0Aline two%0D: done",
            "::warning file=/elsewhere/p.toml,title=gavel replay%3A call c%3A read_file a%2Cb%3Ac::tightened \u{1b}[31m",
            "gavel replay: 3 checked: 1 failed, 1 warnings, 0 notes, 1 passed",
        ]
    );
}

#[test]
fn a_report_fails_exactly_when_a_check_is_an_error() {
    let mut report = report();
    assert!(report.fails());
    report.checks.retain(|c| c.level != Level::Error);
    assert!(!report.fails());
}

#[test]
fn every_kind_is_described() {
    for (kind, text) in KINDS {
        assert_eq!(describe(kind), *text);
        assert!(!text.is_empty());
    }
    assert_eq!(describe("nope"), "");
}

#[test]
fn lint_findings_are_errors_only_under_strict_and_never_matched_rules_notes() {
    use crate::policy::lint::{Finding, LintKind};
    let finding = |kind, rule: &str| Finding {
        kind,
        rule_id: rule.into(),
        by: None,
        message: format!("about {rule}"),
    };
    let policy = crate::policy::Policy::from_toml(
        "name = \"p\"\n\n[[rules]]\nid = \"a\"\naction = \"allow\"\nreason = \"r\"\n",
        "dir/p.toml",
    )
    .unwrap();
    let sites = Sites::of(&policy);
    let findings = [finding(LintKind::UnconditionalAllow, "a")];
    let never = [finding(LintKind::NeverMatched, "a")];
    for (strict, level) in [(true, Level::Error), (false, Level::Warning)] {
        let mut report = Report::for_policy("policy lint", &policy);
        lint(&mut report, &findings, &never, strict, &sites);
        let levels: Vec<Level> = report.checks.iter().map(|c| c.level).collect();
        assert_eq!(levels, [level, Level::Note]);
        assert_eq!(report.fails(), strict);
        assert_eq!(
            report.checks[0].site,
            Some(Site {
                file: "dir/p.toml".into(),
                line: Some(3)
            })
        );
        assert_eq!(report.checks[1].kind, "lint.never_matched");
    }
    // A decision no rule wrote points at the file; the built-in policy at nothing.
    assert_eq!(sites.rule("default.deny").unwrap().line, None);
    assert_eq!(Sites::of(&crate::policy::Policy::builtin()).rule("x"), None);
}

#[test]
fn verify_lists_the_checks_made_up_to_the_broken_one() {
    use crate::store::{Problem, VerifyReport};
    let mut report = Report::new("verify");
    let broken = VerifyReport::bad(3, Some(4), Problem::ChainBreak, "seq 4".into());
    verify(&mut report, &broken, "audit.db");
    let kinds: Vec<(&str, Level)> = report.checks.iter().map(|c| (c.kind, c.level)).collect();
    assert_eq!(
        kinds,
        [
            ("verify.identity", Level::Pass),
            ("verify.chain", Level::Error)
        ]
    );
    assert_eq!(
        report.checks[1].message,
        "tampered: chain_break at seq 4: seq 4"
    );
    let mut report = Report::new("verify");
    let forged = VerifyReport::bad(0, None, Problem::IdentityMismatch, "x".into());
    verify(&mut report, &forged, "audit.db");
    assert_eq!(report.checks.len(), 1);
    assert!(report.fails());
}
