use super::*;
use proptest::prelude::*;

fn redactor() -> Redactor {
    Redactor::new([7; 32])
}

fn corpus() -> Vec<(String, Vec<String>)> {
    include_str!("../../fixtures/secrets/corpus.txt")
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|line| {
            let text = line.replace("[[", "").replace("]]", "").replace('⏎', "\n");
            let secrets = line
                .split("[[")
                .skip(1)
                .filter_map(|s| s.split("]]").next())
                .map(str::to_owned)
                .collect();
            (text, secrets)
        })
        .collect()
}

/// Triggers in other cases, near misses, the characters the patterns
/// stop at, markers, escapes and non-ASCII letters that case-fold to
/// ASCII ones (the Kelvin sign, the long s).
const FRAGMENTS: &[&str] = &[
    "AKIA",
    "akia",
    "ASIA",
    "AIza",
    "aiza",
    "ya29.",
    "ghp_",
    "GHP_",
    "gho_",
    "github_pat_",
    "glpat-",
    "xox",
    "XOXb-",
    "xoxb-",
    "xoxp-12345",
    "hooks.slack.com/",
    "https://hooks.slack.com/services/",
    "sk_live_",
    "pk_test_",
    "_test_",
    "whsec_",
    "sk-",
    "SK-",
    "sk-proj-",
    "sk-ant-",
    "npm_",
    "pypi-",
    "eyJ",
    "EYJ",
    "eyJhbGciOiJIUzI1NiJ9.",
    "AccountKey=",
    "accountkey",
    "SharedAccessSignature=",
    "sig=",
    "SIG=",
    "&sig=",
    "Authorization: Bearer ",
    "AUTHORIZATION:",
    "proxy-authorization: basic ",
    "x-api-key: ",
    "Api-Key:",
    "private-token:",
    "X-Auth-Token:",
    "Cookie: ",
    "set-cookie:",
    "://",
    "https://user:",
    "postgres://admin:",
    "@",
    "--password ",
    "--password=",
    "-p",
    "--token=",
    "--api-key ",
    " -u ",
    "-U ",
    "--user ",
    "admin:",
    "machine ",
    "Machine ",
    " login ",
    " password ",
    "export ",
    "SECRET",
    "secret",
    "Secret",
    "TOKEN",
    "token",
    "PASS",
    "pass",
    "Pass",
    "AUTH",
    "auth",
    "CREDENTIAL",
    "credentials",
    "PRIVATE",
    "_KEY",
    "_key",
    "APIKEY",
    "apikey",
    "key",
    "KEY",
    "pwd",
    "PWD",
    "DB_PASSWORD=",
    "api_key: ",
    "password: '",
    "=",
    ":",
    " = ",
    "\"",
    "'",
    "\\",
    "\\\"",
    "\\n",
    "\n",
    "\r\n",
    "\t",
    " ",
    "  ",
    "/",
    "$",
    "$HOME",
    "&",
    "?",
    ";",
    "|",
    ",",
    ")",
    "}",
    "`",
    "«",
    "»",
    "«redacted:github_token:0123456789ab»",
    "«redacted:",
    "-----BEGIN RSA PRIVATE KEY-----",
    "-----END RSA PRIVATE KEY-----",
    "-----BEGIN",
    "\u{212a}",
    "\u{17f}",
    "Account\u{212a}ey=",
    "acce\u{17f}\u{17f}",
    "é",
    "日本",
    "0123456789abcdef",
];

/// Secrets of an earlier event of the call that no detector finds (so a
/// payload holding one has nothing to detect but still one to replace).
const EARLIER: &[&str] = &["hunter2hunter2", "opensesame42", "zq/x+y=w_v-u"];

/// A text mixing corpus lines, corpus secrets, fragments and noise.
fn text() -> impl Strategy<Value = String> {
    let corpus = corpus();
    let lines: Vec<String> = corpus.iter().map(|(text, _)| text.clone()).collect();
    let secrets: Vec<String> = corpus.into_iter().flat_map(|(_, s)| s).collect();
    let piece = prop_oneof![
        4 => prop::sample::select(FRAGMENTS).prop_map(str::to_owned),
        1 => prop::sample::select(EARLIER).prop_map(str::to_owned),
        2 => prop::sample::select(lines),
        2 => prop::sample::select(secrets),
        2 => "[a-z]{1,8}",
        1 => "[A-Za-z0-9]{1,40}",
        1 => "[A-Za-z0-9+/=_-]{28,48}",
        1 => "[ -~]{1,12}",
    ];
    prop::collection::vec(piece, 0..10).prop_map(|pieces| pieces.concat())
}

/// A text with nothing for the detectors most of the time: words,
/// paths, digests and the secrets of [`EARLIER`].
fn quiet() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        4 => "[a-z]{1,6}",
        2 => prop::sample::select(&[" ", "\n", "\n", "/", "src/module_7/file.rs", "é"][..])
            .prop_map(str::to_owned),
        1 => "[0-9a-f]{32,64}",
        1 => prop::sample::select(EARLIER).prop_map(str::to_owned),
    ];
    prop::collection::vec(piece, 0..12).prop_map(|pieces| pieces.concat())
}

/// `text` as a JSON string literal, with `/` written `\/` when `slash`
/// and every `every`-th character (when not 0) as a `\u` escape.
fn json_string(text: &str, slash: bool, every: usize) -> String {
    let mut out = String::from("\"");
    for (i, c) in text.chars().enumerate() {
        let escape = |out: &mut String, c: char| {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        };
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '/' if slash => out.push_str("\\/"),
            c if (c as u32) < 0x20 => escape(&mut out, c),
            c if every > 0 && i % every == every - 1 => escape(&mut out, c),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A JSON object holding three texts (one in an array, one in a nested
/// object), its strings escaped in one of several ways; or, cut short,
/// no JSON at all.
fn payload() -> impl Strategy<Value = Vec<u8>> {
    (
        prop::array::uniform3(prop_oneof![text(), quiet()]),
        any::<bool>(),
        prop_oneof![6 => Just(0usize), 1 => 1..6usize],
        prop_oneof![9 => Just(false), 1 => Just(true)],
    )
        .prop_map(|([a, b, c], slash, every, cut)| {
            let s = |t: &str| json_string(t, slash, every);
            let mut json = format!(
                "{{\"command\":{},\"args\":[{},{{\"stdout\":{}}}],\"exit_code\":0}}",
                s(&a),
                s(&b),
                s(&c)
            );
            if cut {
                json.pop();
            }
            json.into_bytes()
        })
}

/// A redactor with no settings, with policy patterns, or turned off.
fn settings() -> impl Strategy<Value = Redactor> {
    prop_oneof![
        6 => Just(redactor()),
        1 => Just(redactor().with_settings(Settings {
            patterns: vec![
                Regex::new(r"hunter[0-9]+").unwrap(),
                Regex::new(r"id=(?P<s>[a-z]{4,})").unwrap(),
            ],
            ..Settings::default()
        })),
        1 => Just(redactor().with_settings(Settings {
            disabled: true,
            ..Settings::default()
        })),
    ]
}

/// Secrets found earlier in the call.
fn earlier() -> impl Strategy<Value = Vec<(String, String)>> {
    let corpus: Vec<String> = corpus().into_iter().flat_map(|(_, s)| s).collect();
    let secret = prop_oneof![
        prop::sample::select(corpus),
        prop::sample::select(EARLIER).prop_map(str::to_owned),
    ];
    let pair = (
        prop::sample::select(&["env_line", "private_key", "jwt"][..]),
        secret,
    )
        .prop_map(|(kind, secret)| (kind.to_owned(), secret));
    prop_oneof![
        2 => Just(Vec::new()),
        1 => prop::collection::vec(pair, 1..3),
    ]
}

/// The detectors triggered by `text` the way the reference tells.
fn triggered_each(text: &str) -> u64 {
    let lower = text.to_ascii_lowercase();
    DETECTORS
        .iter()
        .enumerate()
        .filter(|(_, d)| d.triggered(text, &lower))
        .fold(0, |hits, (i, _)| hits | 1 << i)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(192))]

    #[test]
    fn one_pass_finds_the_triggers_one_search_each_finds(text in text()) {
        prop_assert_eq!(triggered(&text), triggered_each(&text));
    }

    #[test]
    fn long_tokens_are_found_as_before(
        pieces in prop::collection::vec(
            (
                prop_oneof!["[A-Za-z0-9+/=_-]{28,36}", "[A-Za-z0-9+/=_-]{0,70}"],
                "[ .:\\\\\"é]{1,2}",
            ),
            0..8,
        )
    ) {
        let text: String = pieces.into_iter().map(|(token, gap)| token + &gap).collect();
        prop_assert_eq!(
            tokens(&text).collect::<Vec<_>>(),
            reference::tokens(&text).collect::<Vec<_>>()
        );
    }

    #[test]
    fn a_text_is_redacted_as_before(r in settings(), text in text()) {
        prop_assert_eq!(r.redact_str(&text), reference::redact_str(&r, &text));
        let mut value = serde_json::json!({"a": text, "b": [text.to_lowercase()]});
        let mut before = value.clone();
        let n = r.redact_value(&mut value);
        prop_assert_eq!(n, reference::redact_value(&r, &mut before));
        prop_assert_eq!(value, before);
    }

    #[test]
    fn a_batch_is_redacted_as_before(
        r in settings(),
        payloads in prop::collection::vec(prop::option::weighted(0.9, payload()), 1..4),
        earlier in earlier(),
    ) {
        let (mut found, mut found_before) = (earlier.clone(), earlier);
        let now = r.redact_batch(payloads.clone(), &mut found);
        let before = reference::redact_batch(&r, payloads, &mut found_before);
        prop_assert_eq!(now, before);
        prop_assert_eq!(found, found_before);
    }
}

#[test]
fn long_tokens_next_to_each_other_are_found_as_before() {
    for a in 0..=66 {
        for b in 0..=66 {
            for c in [0, 31, 32, 33] {
                let text = format!("{} {}:{}", "x".repeat(a), "y".repeat(b), "z".repeat(c));
                assert_eq!(
                    tokens(&text).collect::<Vec<_>>(),
                    reference::tokens(&text).collect::<Vec<_>>(),
                    "{a} {b} {c}"
                );
            }
        }
    }
}

#[test]
fn every_corpus_line_is_redacted_as_before() {
    let r = redactor();
    for (text, _) in corpus() {
        assert_eq!(
            r.redact_str(&text),
            reference::redact_str(&r, &text),
            "{text}"
        );
        let payload = serde_json::to_vec(&serde_json::json!({"command": text})).unwrap();
        let mut found = Vec::new();
        let mut found_before = Vec::new();
        assert_eq!(
            r.redact_batch(vec![Some(payload.clone())], &mut found),
            reference::redact_batch(&r, vec![Some(payload)], &mut found_before),
            "{text}"
        );
        assert_eq!(found, found_before);
    }
}

#[test]
fn a_payload_with_nothing_to_detect_is_returned_without_a_copy() {
    let r = redactor();
    let lines = "drwxr-xr-x 2 dev dev 4096 Dec  3 09:41 src/module_7/file.rs\n".repeat(64);
    let payload =
        serde_json::to_vec(&serde_json::json!({"status": "succeeded", "content": lines})).unwrap();
    assert!(nothing_to_detect(&payload));
    let at = payload.as_ptr();
    let (out, n) = r.redact_payload(payload);
    assert_eq!((out.as_ptr(), n), (at, 0));
    // Only what could hide a trigger or a random token is parsed.
    for clean in [
        r#"{"a":"plain text\n\t\"quoted\"\\"}"#,
        r#"{"a":"3f7a0c2b9d1e4f5a6b7c8d9e0f1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c"}"#,
    ] {
        assert!(nothing_to_detect(clean.as_bytes()), "{clean}");
    }
    for not_clean in [
        r#"{"a":"a \u0041KIA"}"#,
        r#"{"a":"https:\/\/hooks.slack.com"}"#,
        r#"{"a":"Sk-x","b":"sk-"}"#,
        r#"{"a":"x\nwJalrXUtnFEMIK7MDENGbPxRfiCYzEXAMPLEKEY9"}"#,
        // Random once unescaped, not with the `n` of `\n` in front.
        r#"{"a":"x\nBGr6wB1TnPMCroos6ajSsR8SQljnnBGiA5Jy8a"}"#,
        r#"{"a":"x","b":"ghp_"}"#,
        r#"{"a":"x","b":"AUTHORIZATION"}"#,
    ] {
        assert!(!nothing_to_detect(not_clean.as_bytes()), "{not_clean}");
        let payload = not_clean.as_bytes().to_vec();
        assert_eq!(
            r.redact_batch(vec![Some(payload.clone())], &mut Vec::new()),
            reference::redact_batch(&r, vec![Some(payload)], &mut Vec::new())
        );
    }
    // A secret found earlier in the call is still looked for in it.
    let payload = br#"{"a":"cat /tmp/hunter2hunter2"}"#.to_vec();
    let mut found = vec![("env_line".to_owned(), "hunter2hunter2".to_owned())];
    let (out, n) = r.redact_batch(vec![Some(payload)], &mut found).remove(0);
    assert_eq!(n, 1);
    assert!(!String::from_utf8(out).unwrap().contains("hunter2"));
}

#[test]
fn case_insensitive_triggers_are_written_in_lowercase() {
    for (kind, _, ignore_case, triggers) in BUILT_IN {
        for trigger in *triggers {
            assert!(
                !ignore_case || trigger.to_ascii_lowercase() == *trigger,
                "{kind}: {trigger}"
            );
        }
    }
    assert!(TRIGGERS.is_some());
}
