//! `src/redact.rs` as it was at `fdbca26`, before the trigger automaton
//! (one `contains` per trigger and detector over a lowercased copy, every
//! payload parsed), so that `benches/redact.rs` times the pass before and
//! now in the same run. Trimmed to what the bench calls: no policy
//! loading, no kept tools or paths, no tests; the detection code is
//! unchanged. Do not edit it to follow `src/redact.rs`: it is the baseline.
#![allow(dead_code)]

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(DIGITS[usize::from(b >> 4)] as char);
        out.push(DIGITS[usize::from(b & 0xf)] as char);
    }
    out
}

use std::collections::BTreeMap;
use std::sync::{LazyLock, OnceLock};

use aho_corasick::AhoCorasick;
use regex::Regex;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// Shannon entropy (bits per character) at or above which a long token
/// with mixed letters and digits is taken for a secret. Hex digests (at
/// most 4 bits per character) stay below it.
pub const ENTROPY_THRESHOLD: f64 = 4.5;

/// The shortest token the entropy detector looks at.
pub const ENTROPY_MIN_LEN: usize = 32;

/// One detector: a kind and a pattern whose named group `s` (or, when it
/// did not take part, `q`, then `d`) is the secret; without such groups the
/// whole match is. Compiled at its first use.
struct Detector {
    kind: &'static str,
    pattern: &'static str,
    ignore_case: bool,
    triggers: &'static [&'static str],
    regex: OnceLock<Option<Regex>>,
}

impl Detector {
    /// Whether `text` (with `lower`, its ASCII lowercase) holds a trigger.
    fn triggered(&self, text: &str, lower: &str) -> bool {
        let haystack = if self.ignore_case { lower } else { text };
        self.triggers.iter().any(|t| haystack.contains(t))
    }

    fn regex(&self) -> Option<&Regex> {
        // The patterns are constants checked by a unit test; a bad one is
        // left out rather than taking the process down. Their word
        // boundaries are ASCII ones: with Unicode's, the fast engines give
        // up on any text that is not all ASCII (and a marker, `«…»`, is
        // not), and a 1 MiB payload took 80 times as long. An ASCII `\b`
        // also sees a boundary after a non-ASCII letter, so it only ever
        // redacts more.
        self.regex
            .get_or_init(|| Regex::new(&self.pattern.replace(r"\b", r"(?-u:\b)")).ok())
            .as_ref()
    }
}

const BUILT_IN: &[(&str, &str, bool, &[&str])] = &[
    (
        "private_key",
        r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----[\s\S]*?(?:-----END[A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----|\z)",
        false,
        &["-----BEGIN"],
    ),
    (
        "aws_access_key",
        r"\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b",
        false,
        &["AKIA", "ASIA", "ABIA", "ACCA", "AGPA", "AIDA", "AROA"],
    ),
    ("gcp_api_key", r"\bAIza[0-9A-Za-z_\-]{35}", false, &["AIza"]),
    (
        "gcp_oauth_token",
        r"\bya29\.[0-9A-Za-z_\-]{20,}",
        false,
        &["ya29."],
    ),
    (
        "github_token",
        r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,}",
        false,
        &["ghp_", "gho_", "ghu_", "ghs_", "ghr_"],
    ),
    (
        "github_token",
        r"\bgithub_pat_[A-Za-z0-9_]{22,}",
        false,
        &["github_pat_"],
    ),
    (
        "gitlab_token",
        r"\b(?:glpat|gldt|glptt|glrt|glsoat)-[A-Za-z0-9_\-]{20,}",
        false,
        &["glpat-", "gldt-", "glptt-", "glrt-", "glsoat-"],
    ),
    (
        "slack_token",
        r"\bxox[abposre]-[A-Za-z0-9\-]{10,}",
        false,
        &["xox"],
    ),
    (
        "slack_webhook",
        r"https://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9/_\-]+",
        false,
        &["hooks.slack.com/"],
    ),
    (
        "stripe_key",
        r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}",
        false,
        &["_live_", "_test_"],
    ),
    (
        "stripe_key",
        r"\bwhsec_[A-Za-z0-9]{24,}",
        false,
        &["whsec_"],
    ),
    (
        "openai_key",
        r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_\-]{32,}",
        false,
        &["sk-"],
    ),
    ("npm_token", r"\bnpm_[A-Za-z0-9]{36}\b", false, &["npm_"]),
    (
        "pypi_token",
        r"\bpypi-[A-Za-z0-9_\-]{50,}",
        false,
        &["pypi-"],
    ),
    (
        "jwt",
        r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*",
        false,
        &["eyJ"],
    ),
    (
        "azure_key",
        r"(?i)\b(?:AccountKey|SharedAccessKey|SharedAccessSignature)\s*=\s*(?P<s>[A-Za-z0-9+/=%]{20,})",
        true,
        &["accountkey", "sharedaccesskey", "sharedaccesssignature"],
    ),
    (
        "azure_sas",
        r"[?&]sig=(?P<s>[A-Za-z0-9%+/=]{20,})",
        false,
        &["sig="],
    ),
    (
        "auth_header",
        r#"(?i)\b(?:proxy-)?authorization\s*:\s*(?:(?:bearer|basic|token|digest|negotiate|apikey)\s+)?(?P<s>[^\s"'\\]+)"#,
        true,
        &["authorization"],
    ),
    (
        "auth_header",
        r#"(?i)\b(?:x-api-key|api-key|x-auth-token|x-access-token|private-token|x-goog-api-key)\s*:\s*(?P<s>[^\s"'\\]+)"#,
        true,
        &["api-key", "token"],
    ),
    (
        "cookie",
        r#"(?i)\b(?:set-)?cookie\s*:\s*(?P<s>[^\r\n"'\\]+)"#,
        true,
        &["cookie"],
    ),
    (
        "url_credentials",
        r#"\b[A-Za-z][A-Za-z0-9+.\-]*://[^/\s:@"'«]*:(?P<s>[^@\s/"'«]+)@"#,
        false,
        &["://"],
    ),
    (
        "credential_flag",
        r#"(?i)(?:^|\s)--?(?:password|passwd|pass|pwd|token|secret|api-?key|access-?key|secret-?key|auth-?token|client-?secret|private-?key)(?:=|\s+)(?:\\?"(?P<q>[^"\\\n]+)\\?"|'(?P<d>[^'\n]*)'|(?P<s>[^\s"'`«\\]+))"#,
        true,
        &["pass", "pwd", "token", "secret", "key"],
    ),
    (
        "credential_flag",
        r#"(?:^|\s)(?:-u|--user)\s+[^\s:"']+:(?P<s>[^\s"'«]+)"#,
        false,
        &["-u"],
    ),
    (
        "netrc",
        r"\bmachine\s+\S+\s+login\s+\S+\s+password\s+(?P<s>\S+)",
        false,
        &["machine"],
    ),
    (
        "env_line",
        r#"(?m)(?:^|\\n)[ \t]*(?:export[ \t]+)?[A-Za-z_][A-Za-z0-9_]*(?:SECRET|TOKEN|PASS|AUTH|CREDENTIAL|PRIVATE|_KEY|APIKEY)[A-Za-z0-9_]*[ \t]*=[ \t]*(?:\\?"(?P<q>[^"\\\n]+)\\?"|'(?P<d>[^'\n]*)'|(?P<s>[^\s`«\\"]+))"#,
        false,
        &[
            "SECRET",
            "TOKEN",
            "PASS",
            "AUTH",
            "CREDENTIAL",
            "PRIVATE",
            "_KEY",
            "APIKEY",
        ],
    ),
    (
        "assignment",
        r#"(?i)\b(?:[A-Za-z0-9_.\-]*[_.\-])?(?:key|token|secret|password|passwd|pwd|credentials?|api_?key|access_?key|secret_?key|private_?key|client_?secret|auth)\\?["']?\s*[=:]\s*(?:\\?"(?P<q>[^"\\\n]+)\\?"|'(?P<d>[^'\n]*)'|(?P<s>[^\s"'&;|,)}`«\\]+))"#,
        true,
        &[
            "key",
            "token",
            "secret",
            "pass",
            "pwd",
            "credential",
            "auth",
        ],
    ),
];

static DETECTORS: LazyLock<Vec<Detector>> = LazyLock::new(|| {
    BUILT_IN
        .iter()
        .map(|&(kind, pattern, ignore_case, triggers)| Detector {
            kind,
            pattern,
            ignore_case,
            triggers,
            regex: OnceLock::new(),
        })
        .collect()
});

/// The byte ranges of `text`'s maximal runs of token characters
/// (`[A-Za-z0-9+/_=-]`) at least [`ENTROPY_MIN_LEN`] long: what the entropy
/// detector looks at. A plain scan, so that a payload with no secret never
/// starts a regex engine.
fn tokens(text: &str) -> impl Iterator<Item = (usize, usize)> + '_ {
    let bytes = text.as_bytes();
    let is_token =
        |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'_' | b'=' | b'-');
    let mut at = 0;
    std::iter::from_fn(move || {
        while at < bytes.len() {
            while at < bytes.len() && !is_token(bytes[at]) {
                at += 1;
            }
            let start = at;
            while at < bytes.len() && is_token(bytes[at]) {
                at += 1;
            }
            if at - start >= ENTROPY_MIN_LEN {
                return Some((start, at));
            }
        }
        None
    })
}

static MARKER: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"«redacted:[a-z_]+:[0-9a-f]{12}»").ok());

/// The shortest secret replaced wherever it occurs again in a payload.
const KNOWN_MIN_LEN: usize = 6;

/// The secrets found, each with the parts that may be stored apart (the
/// lines of a private key), as one automaton that finds every occurrence
/// in a single pass. Patterns are ordered longest first.
struct Known {
    /// The marker of each pattern of `automaton`, by pattern index.
    markers: Vec<String>,
    automaton: Option<AhoCorasick>,
}

impl Known {
    fn is_empty(&self) -> bool {
        self.markers.is_empty()
    }
}

/// The `(kind, secret)` pairs to replace wherever they occur again.
fn known_secrets(found: Vec<(String, String)>) -> Vec<(String, String)> {
    let mut known: Vec<(String, String)> = Vec::new();
    for (kind, secret) in found {
        if kind == "private_key" {
            for part in secret.split(|c: char| c.is_whitespace() || c == '\\') {
                let part = part.trim_start_matches('n');
                if part.len() >= 16 && !part.starts_with("-----") {
                    known.push((kind.clone(), part.to_owned()));
                }
            }
        }
        if secret.len() >= KNOWN_MIN_LEN {
            known.push((kind, secret));
        }
    }
    known.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then_with(|| a.cmp(b)));
    // One marker per secret text: the first (longest-first, then by kind) names it.
    known.dedup_by(|a, b| a.1 == b.1);
    known
}

/// A policy's `[redact]` section, compiled: extra patterns (each match, or
/// its group `s`, is redacted with kind `policy`), tools kept whole, and
/// the switch that turns redaction off.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// Patterns added by the policy.
    pub patterns: Vec<Regex>,
    /// Turns redaction off for the whole log.
    pub disabled: bool,
}

/// Redacts with one log's key.
#[derive(Clone)]
pub struct Redactor {
    key: [u8; 32],
    settings: Settings,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Redactor").finish_non_exhaustive()
    }
}

impl Redactor {
    pub fn new(key: [u8; 32]) -> Self {
        Self {
            key,
            settings: Settings::default(),
        }
    }

    /// Adds a policy's settings.
    pub fn with_settings(mut self, settings: Settings) -> Self {
        self.settings = settings;
        self
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The marker that replaces `secret`.
    pub fn marker(&self, kind: &str, secret: &str) -> String {
        let tag = hmac_sha256(&self.key, secret.as_bytes());
        format!("«redacted:{kind}:{}»", hex(&tag[..6]))
    }

    /// `text` with its secrets replaced, and how many there were.
    pub fn redact_str(&self, text: &str) -> (String, usize) {
        let mut found = Vec::new();
        let (mut out, mut count) = self.detect(text, &mut found);
        count += self.replace_known(&mut out, &self.known(found));
        (out, count)
    }

    /// One pass of every detector over `text`; the secrets found are added
    /// to `found` as `(kind, secret)`.
    fn detect(&self, text: &str, found: &mut Vec<(String, String)>) -> (String, usize) {
        if self.settings.disabled {
            return (text.to_owned(), 0);
        }
        let mut out = text.to_owned();
        let mut count = 0;
        for pattern in &self.settings.patterns {
            count += self.apply(&mut out, "policy", pattern, found);
        }
        let lower = out.to_ascii_lowercase();
        for detector in DETECTORS.iter() {
            if !detector.triggered(&out, &lower) {
                continue;
            }
            if let Some(regex) = detector.regex() {
                count += self.apply(&mut out, detector.kind, regex, found);
            }
        }
        count += self.redact_entropy(&mut out, found);
        (out, count)
    }

    /// The secrets of `found` compiled for [`Redactor::replace_known`].
    fn known(&self, found: Vec<(String, String)>) -> Known {
        let secrets = known_secrets(found);
        let automaton = match secrets.is_empty() {
            true => None,
            false => AhoCorasick::new(secrets.iter().map(|(_, secret)| secret)).ok(),
        };
        Known {
            markers: secrets
                .iter()
                .map(|(kind, secret)| self.marker(kind, secret))
                .collect(),
            automaton,
        }
    }

    /// Replaces every literal occurrence of a secret already found (in
    /// this string or another of the same payload), so that a form the
    /// detectors do not see (a path the facts normalized, one line of a
    /// private key) does not keep it.
    fn replace_known(&self, text: &mut String, known: &Known) -> usize {
        let Some(automaton) = &known.automaton else {
            return 0;
        };
        // Every occurrence, overlaps included; then longest secret first,
        // leftmost first, each kept unless it overlaps one kept before: a
        // longer secret is never cut open by a shorter one inside it.
        let mut spans: Vec<(usize, usize, usize)> = automaton
            .find_overlapping_iter(text.as_str())
            .map(|m| (m.pattern().as_usize(), m.start(), m.end()))
            .collect();
        if spans.is_empty() {
            return 0;
        }
        spans.sort_unstable();
        let mut kept: BTreeMap<usize, (usize, usize)> = BTreeMap::new();
        for (pattern, start, end) in spans {
            let overlaps = kept
                .range(..end)
                .next_back()
                .is_some_and(|(&s, &(e, _))| s >= start || e > start);
            if !overlaps {
                kept.insert(start, (end, pattern));
            }
        }
        let mut out = String::with_capacity(text.len());
        let mut last = 0;
        for (&start, &(end, pattern)) in &kept {
            out.push_str(&text[last..start]);
            out.push_str(&known.markers[pattern]);
            last = end;
        }
        out.push_str(&text[last..]);
        *text = out;
        kept.len()
    }

    fn apply(
        &self,
        text: &mut String,
        kind: &str,
        regex: &Regex,
        found: &mut Vec<(String, String)>,
    ) -> usize {
        if !regex.is_match(text) {
            return 0;
        }
        let markers: Vec<(usize, usize)> = MARKER
            .as_ref()
            .map(|m| m.find_iter(text).map(|m| (m.start(), m.end())).collect())
            .unwrap_or_default();
        let mut out = String::with_capacity(text.len());
        let mut last = 0;
        let mut count = 0;
        // The fast engines find each match; captures (slow over a long
        // text) are resolved only at each match's start.
        for found_at in regex.find_iter(text) {
            let Some(caps) = regex.captures_at(text, found_at.start()) else {
                continue;
            };
            let Some(whole) = caps.get(0) else { continue };
            let secret = ["s", "q", "d"]
                .iter()
                .find_map(|name| caps.name(name))
                .unwrap_or(whole);
            let value = secret.as_str();
            if value.is_empty()
                || value.starts_with('$')
                || markers
                    .iter()
                    .any(|(start, end)| secret.start() < *end && *start < secret.end())
            {
                continue;
            }
            out.push_str(&text[last..secret.start()]);
            out.push_str(&self.marker(kind, value));
            found.push((kind.to_owned(), value.to_owned()));
            last = secret.end();
            count += 1;
        }
        out.push_str(&text[last..]);
        *text = out;
        count
    }

    fn redact_entropy(&self, text: &mut String, found: &mut Vec<(String, String)>) -> usize {
        let mut out = String::with_capacity(text.len());
        let mut last = 0;
        let mut count = 0;
        for (start, end) in tokens(text) {
            let token = &text[start..end];
            if !looks_random(token) {
                continue;
            }
            out.push_str(&text[last..start]);
            out.push_str(&self.marker("high_entropy", token));
            found.push(("high_entropy".to_owned(), token.to_owned()));
            last = end;
            count += 1;
        }
        if count > 0 {
            out.push_str(&text[last..]);
            *text = out;
        }
        count
    }

    /// Redacts every string (not the keys) of `value` in place; returns the
    /// count. A secret found in one string is also taken out of the others.
    pub fn redact_value(&self, value: &mut Value) -> usize {
        if self.settings.disabled {
            return 0;
        }
        let mut found = Vec::new();
        let mut count = self.detect_value(value, &mut found);
        let known = self.known(found);
        if !known.is_empty() {
            count += self.replace_value(value, &known);
        }
        count
    }

    fn detect_value(&self, value: &mut Value, found: &mut Vec<(String, String)>) -> usize {
        match value {
            Value::String(s) => {
                let (redacted, count) = self.detect(s, found);
                if count > 0 {
                    *s = redacted;
                }
                count
            }
            Value::Array(items) => items.iter_mut().map(|v| self.detect_value(v, found)).sum(),
            Value::Object(map) => map.values_mut().map(|v| self.detect_value(v, found)).sum(),
            _ => 0,
        }
    }

    fn replace_value(&self, value: &mut Value, known: &Known) -> usize {
        match value {
            Value::String(s) => self.replace_known(s, known),
            Value::Array(items) => items.iter_mut().map(|v| self.replace_value(v, known)).sum(),
            Value::Object(map) => map.values_mut().map(|v| self.replace_value(v, known)).sum(),
            _ => 0,
        }
    }

    /// The stored form of an event payload (a JSON object): its strings
    /// redacted and, when anything was, the count in a top-level
    /// `redactions` field. A payload with nothing to redact is returned as
    /// it is, byte for byte.
    pub fn redact_payload(&self, payload: Vec<u8>) -> (Vec<u8>, usize) {
        let mut found = Vec::new();
        self.redact_batch(vec![Some(payload)], &mut found)
            .pop()
            .unwrap_or_default()
    }

    /// Redacts the payloads of one batch (a call's request and decision are
    /// appended together): a secret found in one is also taken out of the
    /// others, where the facts may hold it split into shell words. `None`
    /// stands for a payload kept whole; it is returned empty with count 0.
    /// `found` brings secrets already found (in earlier events of the same
    /// call) and gets those found here added.
    pub fn redact_batch(
        &self,
        payloads: Vec<Option<Vec<u8>>>,
        found: &mut Vec<(String, String)>,
    ) -> Vec<(Vec<u8>, usize)> {
        if self.settings.disabled {
            return payloads
                .into_iter()
                .map(|p| (p.unwrap_or_default(), 0))
                .collect();
        }
        let mut parsed: Vec<(Option<Vec<u8>>, Option<Value>, usize)> = payloads
            .into_iter()
            .map(|payload| {
                let value = payload
                    .as_deref()
                    .and_then(|bytes| serde_json::from_slice::<Value>(bytes).ok());
                (payload, value, 0)
            })
            .collect();
        for (_, value, count) in &mut parsed {
            if let Some(value) = value {
                *count += self.detect_value(value, found);
            }
        }
        let known = self.known(found.clone());
        parsed
            .into_iter()
            .map(|(payload, value, mut count)| {
                let payload = payload.unwrap_or_default();
                let Some(mut value) = value else {
                    return (payload, 0);
                };
                if !known.is_empty() {
                    count += self.replace_value(&mut value, &known);
                }
                if count == 0 {
                    return (payload, 0);
                }
                if let Value::Object(map) = &mut value {
                    map.insert("redactions".to_owned(), Value::from(count as u64));
                }
                match serde_json::to_vec(&value) {
                    Ok(bytes) => (bytes, count),
                    Err(_) => (payload, 0),
                }
            })
            .collect()
    }
}

/// Whether `token` looks like a random secret: long, letters of both cases
/// and digits, and Shannon entropy at or above [`ENTROPY_THRESHOLD`].
pub fn looks_random(token: &str) -> bool {
    let bytes = token.as_bytes();
    if bytes.len() < ENTROPY_MIN_LEN
        || !bytes.iter().any(u8::is_ascii_digit)
        || !bytes.iter().any(u8::is_ascii_uppercase)
        || !bytes.iter().any(u8::is_ascii_lowercase)
    {
        return false;
    }
    entropy(bytes) >= ENTROPY_THRESHOLD
}

/// Shannon entropy of `bytes`, in bits per byte.
pub fn entropy(bytes: &[u8]) -> f64 {
    let mut counts = [0u32; 256];
    for b in bytes {
        counts[usize::from(*b)] += 1;
    }
    let n = bytes.len() as f64;
    counts
        .iter()
        .filter(|c| **c > 0)
        .map(|c| {
            let p = f64::from(*c) / n;
            -p * p.log2()
        })
        .sum()
}

/// HMAC-SHA256 (RFC 2104).
pub fn hmac_sha256(key: &[u8; 32], message: &[u8]) -> [u8; 32] {
    let mut block = [0u8; 64];
    block[..32].copy_from_slice(key);
    let mut inner = Sha256::new();
    inner.update(block.map(|b| b ^ 0x36));
    inner.update(message);
    let inner: [u8; 32] = inner.finalize().into();
    let mut outer = Sha256::new();
    outer.update(block.map(|b| b ^ 0x5c));
    outer.update(inner);
    outer.finalize().into()
}
