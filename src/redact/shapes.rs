//! Redaction does not depend on luck: every secret shape, with many
//! generated values, in the places a command puts one, leaves no raw
//! byte; and a path is kept whole however random its folders' names.

use super::*;
use proptest::prelude::*;

fn redactor() -> Redactor {
    Redactor::new([7; 32])
}

/// The shapes of secrets, as a regex of the values generated. The prefix
/// and the alphabet are each vendor's documented form.
const SHAPES: &[(&str, &str)] = &[
    ("aws access key", "AKIA[0-9A-Z]{16}"),
    ("aws session key", "ASIA[0-9A-Z]{16}"),
    ("gcp api key", "AIza[0-9A-Za-z_-]{35}"),
    ("gcp oauth token", r"ya29\.[0-9A-Za-z_-]{60}"),
    ("github pat", "ghp_[A-Za-z0-9]{36}"),
    ("github oauth", "gho_[A-Za-z0-9]{36}"),
    ("github app", "ghs_[A-Za-z0-9]{36}"),
    (
        "github fine-grained",
        "github_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59}",
    ),
    ("gitlab pat", "glpat-[A-Za-z0-9_-]{20}"),
    ("gitlab runner", "glrt-[A-Za-z0-9_-]{20}"),
    ("gitlab ci build", "glcbt-[A-Za-z0-9_-]{20}"),
    ("slack bot", "xoxb-[0-9]{11}-[0-9]{13}-[A-Za-z0-9]{24}"),
    (
        "slack user",
        "xoxp-[0-9]{11}-[0-9]{11}-[0-9]{13}-[a-f0-9]{32}",
    ),
    ("slack app", "xapp-1-[A-Z0-9]{11}-[0-9]{13}-[a-f0-9]{64}"),
    (
        "slack webhook",
        "https://hooks\\.slack\\.com/services/T[A-Z0-9]{8}/B[A-Z0-9]{8}/[A-Za-z0-9]{24}",
    ),
    ("stripe secret", "sk_live_[A-Za-z0-9]{24,99}"),
    ("stripe restricted", "rk_live_[A-Za-z0-9]{24,99}"),
    ("stripe webhook", "whsec_[A-Za-z0-9]{32}"),
    ("openai project", "sk-proj-[A-Za-z0-9_-]{48,156}"),
    ("openai legacy", "sk-[A-Za-z0-9]{48}"),
    ("anthropic", "sk-ant-api03-[A-Za-z0-9_-]{93}AA"),
    ("openrouter", "sk-or-v1-[a-f0-9]{64}"),
    ("npm", "npm_[A-Za-z0-9]{36}"),
    ("pypi", "pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,100}"),
    (
        "jwt",
        "eyJ[A-Za-z0-9_-]{10,40}\\.eyJ[A-Za-z0-9_-]{10,80}\\.[A-Za-z0-9_-]{20,86}",
    ),
    ("sendgrid", "SG\\.[A-Za-z0-9_-]{22}\\.[A-Za-z0-9_-]{43}"),
    ("hugging face", "hf_[A-Za-z]{34}"),
    ("digitalocean", "dop_v1_[a-f0-9]{64}"),
    ("shopify", "shpat_[a-fA-F0-9]{32}"),
    ("databricks", "dapi[a-f0-9]{32}"),
    ("doppler", "dp\\.pt\\.[A-Za-z0-9]{43}"),
    ("vault", "hvs\\.[A-Za-z0-9_-]{90}"),
    (
        "terraform",
        "[A-Za-z0-9]{14}\\.atlasv1\\.[A-Za-z0-9_=-]{67}",
    ),
    ("linear", "lin_api_[A-Za-z0-9]{40}"),
    ("notion", "ntn_[0-9]{11}[A-Za-z0-9]{35}"),
    ("atlassian", "ATATT3xFfGF0[A-Za-z0-9_=-]{170}"),
    ("postman", "PMAK-[a-f0-9]{24}-[a-f0-9]{34}"),
    ("grafana cloud", "glc_[A-Za-z0-9+/]{32,64}={0,2}"),
    (
        "grafana service account",
        "glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}",
    ),
    ("new relic", "NRAK-[A-Z0-9]{27}"),
    ("sentry", "sntrys_eyJ[A-Za-z0-9+/=_]{60,120}"),
    ("pulumi", "pul-[a-f0-9]{40}"),
    (
        "age",
        "AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}",
    ),
    ("fly", "fo1_[A-Za-z0-9_-]{43}"),
    ("planetscale", "pscale_tkn_[A-Za-z0-9_=.-]{43}"),
    ("supabase", "sbp_[a-f0-9]{40}"),
    ("docker hub", "dckr_pat_[A-Za-z0-9_-]{27}"),
    ("figma", "figd_[A-Za-z0-9_-]{40}"),
    ("contentful", "CFPAT-[A-Za-z0-9_-]{43}"),
    ("dynatrace", "dt0c01\\.[A-Z0-9]{24}\\.[A-Z0-9]{64}"),
    ("mailgun", "key-[a-f0-9]{32}"),
    ("mailchimp", "[a-f0-9]{32}-us[0-9]{1,2}"),
    ("twilio api key", "SK[0-9a-f]{32}"),
    ("brevo", "xkeysib-[a-f0-9]{64}-[A-Za-z0-9]{16}"),
    ("square", "sq0atp-[A-Za-z0-9_-]{22}"),
    ("square secret", "sq0csp-[A-Za-z0-9_-]{43}"),
    ("telegram bot", "[0-9]{9}:AA[A-Za-z0-9_-]{33}"),
    ("groq", "gsk_[A-Za-z0-9]{52}"),
    ("replicate", "r8_[A-Za-z0-9]{37}"),
    ("perplexity", "pplx-[A-Za-z0-9]{48}"),
    ("xai", "xai-[A-Za-z0-9]{80}"),
    ("google oauth secret", "GOCSPX-[A-Za-z0-9_-]{28}"),
    ("alibaba", "LTAI[A-Za-z0-9]{20}"),
    ("tencent", "AKID[A-Za-z0-9]{32}"),
    ("rubygems", "rubygems_[a-f0-9]{48}"),
    ("nuget", "oy2[a-z0-9]{43}"),
    ("prefect", "pnu_[A-Za-z0-9]{36}"),
    ("netlify", "nfp_[A-Za-z0-9]{36}"),
    ("sonarqube", "sqp_[a-f0-9]{40}"),
    ("langsmith", "lsv2_pt_[a-f0-9]{32}_[a-f0-9]{10}"),
    ("pinecone", "pcsk_[A-Za-z0-9]{5}_[A-Za-z0-9]{60}"),
    ("1password", "ops_eyJ[A-Za-z0-9_-]{100}"),
    ("resend", "re_[A-Za-z0-9]{8}_[A-Za-z0-9]{24}"),
    ("elevenlabs", "sk_[a-f0-9]{48}"),
    (
        "azure client secret",
        "[A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.-]{34}",
    ),
    (
        "mapbox secret",
        "sk\\.eyJ1[A-Za-z0-9]{40,60}\\.[A-Za-z0-9_-]{22}",
    ),
    (
        "discord webhook",
        "https://discord\\.com/api/webhooks/[0-9]{18}/[A-Za-z0-9_-]{68}",
    ),
];

/// Random tokens with no shape, drawn uniformly from their alphabet (a
/// regex strategy draws each range of a class as often as any other, so
/// `-` as often as all the letters): found by the entropy detector alone,
/// which misses about 1 in 300 of 32 bytes and 1 in 3,000 of 40 (see
/// `looks_random`); from 48 bytes on, none in 100,000.
const RANDOM: &[(&str, &str)] = &[
    (
        "random alphanumeric",
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
    ),
    (
        "random base64url",
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_",
    ),
];

/// The places a command or a file puts a secret.
const CONTEXTS: &[&str] = &[
    "echo {}",
    "{}",
    "curl -s https://api.example.com/v1?token={}&x=1",
    "curl -H \"Authorization: Bearer {}\" https://api.example.com",
    "export SOME_VALUE={} && ./deploy",
    "printf '%s' '{}' > out.txt",
    "cat /home/dev/.config/app/{}/settings.json",
    "{\"value\": \"{}\", \"n\": 1}",
    "name: prod\nvalue: {}\n",
    "tool --flag={}",
];

/// Pieces of `secret` that must not survive: its runs of letters and
/// digits of at least 12 bytes (a vendor's prefix is shorter).
fn pieces(secret: &str) -> Vec<&str> {
    secret
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|p| p.len() >= 12)
        .collect()
}

fn shape() -> impl Strategy<Value = (&'static str, String)> {
    let shaped = prop::sample::select(SHAPES).prop_flat_map(|(name, regex)| {
        proptest::string::string_regex(regex)
            .expect("the shapes are valid regexes")
            .prop_map(move |value| (name, value))
    });
    let random = prop::sample::select(RANDOM).prop_flat_map(|(name, alphabet)| {
        let bytes: Vec<char> = alphabet.chars().collect();
        prop::collection::vec(prop::sample::select(bytes), 48..=64)
            .prop_map(move |chars| (name, chars.into_iter().collect()))
    });
    prop_oneof![20 => shaped, 1 => random]
}

fn assert_gone(name: &str, secret: &str, out: &str) -> Result<(), TestCaseError> {
    prop_assert!(!out.contains(secret), "{name}: {secret} in {out}");
    for piece in pieces(secret) {
        prop_assert!(!out.contains(piece), "{name}: {piece} of {secret} in {out}");
    }
    Ok(())
}

/// A folder name as `mktemp`, `tempfile`, pytest and git worktrees make
/// them: a word or none, then random letters and digits.
fn folder() -> impl Strategy<Value = String> {
    prop_oneof![
        "tmp\\.[A-Za-z0-9]{10}",
        "tmp[a-z0-9_]{8}",
        "\\.tmp[A-Za-z0-9]{6}",
        "[a-z]{3,8}(-[a-z]{2,8}){0,3}-[A-Za-z0-9]{8,12}",
        "[a-z]{3,8}_[A-Za-z0-9]{6,16}",
        "pytest-of-[a-z]{3,8}",
        "pytest-[0-9]{1,3}",
        "wt-[a-z]{3,8}-[a-z]{3,8}",
        "[0-9a-f]{2}",
        "[0-9a-f]{40}",
        "[0-9a-f]{64}",
        "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
        "[A-Z][a-z]{2,9}([A-Z][a-z]{2,9}){0,3}",
        "[a-z]{2,10}",
        "v[0-9]\\.[0-9]{1,2}\\.[0-9]{1,2}",
        "\\.cache",
    ]
}

/// An absolute path through such folders to a file.
fn path() -> impl Strategy<Value = String> {
    (
        prop::sample::select(&["/tmp", "/home/dev", "/var/folders/x7", "/work", ""][..]),
        prop::collection::vec(folder(), 1..7),
        "([a-z]{1,10}(_[a-z]{1,8})?|[A-Z][a-z]{2,8}([A-Z][a-z]{2,8})?|README|Makefile)\\.(md|rs|py|json|txt|toml)",
    )
        .prop_map(|(root, folders, file)| format!("{root}/{}/{file}", folders.join("/")))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    #[test]
    fn every_secret_shape_is_redacted_whatever_its_value(
        (name, secret) in shape(),
        context in prop::sample::select(CONTEXTS),
    ) {
        let r = redactor();
        let text = context.replace("{}", &secret);
        let (out, n) = r.redact_str(&text);
        prop_assert!(n > 0, "{name}: {text}");
        assert_gone(name, &secret, &out)?;
        // As a stored payload, beside the facts that hold its shell words.
        let words: Vec<&str> = text.split_whitespace().collect();
        let request = serde_json::to_vec(&serde_json::json!({"command": text})).unwrap();
        let decision = serde_json::to_vec(&serde_json::json!({"words": words})).unwrap();
        for (stored, _) in r.redact_batch(vec![Some(request), Some(decision)], &mut Vec::new()) {
            assert_gone(name, &secret, &String::from_utf8_lossy(&stored))?;
        }
    }

    #[test]
    fn cookie_values_are_never_left_raw_by_entropy_luck(
        a in "[A-Za-z0-9]{32}",
        b in "[A-Za-z0-9]{32}",
    ) {
        let r = redactor();
        let header = format!("Cookie: sessionid={a}; csrftoken={b}");
        let command = format!("curl -H \"{header}\" https://app.example.com/");
        let value = format!("sessionid={a}; csrftoken={b}");
        let request = serde_json::to_vec(&serde_json::json!({"command": command})).unwrap();
        // The decision's facts: the header as a word, its value as a path
        // requested and resolved in the workspace.
        let decision = serde_json::to_vec(&serde_json::json!({
            "words": ["curl", "-H", header],
            "paths": [{"requested": value, "resolved": format!("/tmp/ws/{value}")},
                      {"requested": format!("sessionid={a};")}],
        }))
        .unwrap();
        for (stored, _) in r.redact_batch(vec![Some(request), Some(decision)], &mut Vec::new()) {
            let stored = String::from_utf8_lossy(&stored);
            prop_assert!(!stored.contains(&a) && !stored.contains(&b), "{stored}");
        }
    }

    #[test]
    fn paths_with_random_folder_names_are_recorded_whole(path in path()) {
        let r = redactor();
        for text in [path.clone(), format!("cat {path} | head -n 5"), format!("ls -la {path}")] {
            let (out, n) = r.redact_str(&text);
            prop_assert_eq!((out.as_str(), n), (text.as_str(), 0));
        }
    }

    #[test]
    fn a_secret_in_a_path_is_redacted_and_the_path_around_it_kept(
        (name, secret) in shape(),
        prefix in path(),
    ) {
        // A URL's secret runs to the URL's end, the rest of the path with it.
        prop_assume!(!secret.starts_with("https://"));
        let folder = prefix.rsplit_once('/').map_or("", |(folder, _)| folder).to_owned();
        let text = format!("cat {folder}/{secret}/notes.md");
        let (out, _) = redactor().redact_str(&text);
        assert_gone(name, &secret, &out)?;
        prop_assert!(out.starts_with(&format!("cat {folder}/")), "{name}: {out}");
    }
}

#[test]
fn long_random_tokens_are_taken_whether_or_not_their_entropy_is_high() {
    // 32 random letters and digits fall below 4.5 bits one time in three.
    for token in [
        "aUnArl63XykWZeiNNCiia3anXn9k3ksu",
        "PRZwwrPwV81Aw71l33SCx9vHjHkm1x72",
        "aB1cD2eF3gH4iJ5kL6mN7oP8qR9sT0uV1",
    ] {
        assert!(looks_random(token), "{token}");
    }
    for name in [
        "AbstractSingletonProxyFactoryBean2",
        "getElementsByTagNameNSForXMLDocsAndMore",
        "ThisIsMyVeryLongFunctionName2024",
        "test_redaction_handles_Cookie_values_2",
        "x86_64-unknown-linux-gnu-Release2024",
        "Fix-the-Bug-in-Parser-for-Issue-1234",
        "3f7a0c2b9d1e4f5a6b7c8d9e0f1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c",
    ] {
        assert!(!looks_random(name), "{name}");
    }
}

#[test]
fn a_path_is_judged_by_its_folders_and_base64_whole() {
    let components = |run: &'static [u8]| run.split(|&b| b == b'/');
    let path = b"/tmp/gavel-first-hour-9j5q310f/ws/README";
    assert!(path_like(components(path), true));
    assert!(random_parts(path, false).is_empty());
    // An AWS secret key holds `/`, its pieces read as no words: judged whole.
    let key = b"wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY";
    assert!(!path_like(components(key), false));
    assert_eq!(random_parts(key, false), [(0, key.len())]);
    // A random folder of 32 bytes or more in a path: that folder only.
    let path = b"/home/dev/cache/Zx9Qw3Er7Ty1Ui5Op2As8Df4Gh6Jk0LmNb/file";
    assert_eq!(random_parts(path, false), [(16, 50)]);
    // Folders of a few random bytes each, where a path starts: kept.
    let path = b"/tmp/aB3dE6gH9k/Zx8yW7vU6t/Qp5oR4sT3u/x";
    assert!(random_parts(path, false).is_empty());
}
