//! Redaction of secrets before a record is hashed: what the audit log
//! keeps instead of an API key, a token, a password or a private key.
//!
//! Pure: no I/O. The caller owns the per-log key (kept outside the chain,
//! see `docs/record-format.md`) and hands it in. Each secret is replaced by
//! `«redacted:KIND:TAG»`, where TAG is the first 6 bytes (12 hex digits) of
//! HMAC-SHA256(key, secret): equal secrets in one log get equal tags, and a
//! tag does not reveal its secret without the key. Every detector is a
//! `regex` (finite automata, linear in the input), built once.
//!
//! Most payloads hold no secret, so the pass is built to cost little then:
//! every detector names the literals any of its matches contains (its
//! triggers), a single pass finds them all ([`Triggers`]), and a detector
//! runs only on a text where one of its own triggers occurs. A serialized
//! payload in whose raw bytes that pass finds no trigger, and a scan finds
//! no random-looking token, is returned as it came, without being parsed
//! or copied.

use std::borrow::Cow;
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
    /// Whether `text` (with `lower`, its ASCII lowercase) holds a trigger:
    /// one search per trigger, what [`Triggers`] does in one pass. Used
    /// only if that automaton could not be built, and by the tests.
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

// A detector is one bit of a `u64` in [`Triggers`].
const _: () = assert!(BUILT_IN.len() <= 64);

/// Every detector's triggers, found in a single pass over a text: each
/// pair of adjacent bytes (ASCII lowercased) is looked up in a bit table of
/// the pairs a trigger starts with, and only where one does are the few
/// triggers starting so compared. Overlapping occurrences are all seen.
/// Built in microseconds (a process records one call). On the machine of
/// docs/performance.md it read about 1 ns a byte where an Aho-Corasick
/// automaton of the same triggers (ASCII case-insensitive, so without a
/// SIMD prefilter) read 2 to 3 ns a byte and took 75 µs (as an NFA) to
/// 370 µs (as a DFA) to build.
struct Triggers {
    /// Bit `a << 8 | b` is set when a trigger starts with the bytes `a`,
    /// `b` (lowercase).
    starts: Box<[u64; 1024]>,
    /// Every trigger, in the order of its first two bytes.
    list: Vec<Trigger>,
    /// By first byte (lowercase): where its triggers start in `list`.
    first: [u8; 256],
}

struct Trigger {
    /// Its first two bytes, as an index of [`Triggers::starts`].
    start: usize,
    /// The trigger, ASCII lowercase.
    folded: Vec<u8>,
    /// The detectors (bit `i` for `DETECTORS[i]`) it triggers in any ASCII
    /// case.
    any_case: u64,
    /// The detectors it triggers only where it is spelled exactly so.
    exact: Vec<(&'static str, u64)>,
    /// The detectors it may trigger, spelled one way or another.
    all: u64,
}

/// The index of [`Triggers::starts`] of two bytes.
fn pair(a: u8, b: u8) -> usize {
    usize::from(LOWERCASE[usize::from(a)]) << 8 | usize::from(LOWERCASE[usize::from(b)])
}

/// Each byte, ASCII lowercased (a table is faster here than the arithmetic).
static LOWERCASE: [u8; 256] = {
    let mut table = [0; 256];
    let mut byte = 0;
    while byte < 256 {
        table[byte] = (byte as u8).to_ascii_lowercase();
        byte += 1;
    }
    table
};

impl Triggers {
    /// The triggers of [`BUILT_IN`]; `None` if one is shorter than two
    /// bytes (the detectors then search for theirs one by one).
    fn new() -> Option<Self> {
        let mut list: Vec<Trigger> = Vec::new();
        for (i, &(_, _, ignore_case, triggers)) in BUILT_IN.iter().enumerate() {
            let bit = 1u64 << i;
            for &trigger in triggers {
                let folded = trigger.to_ascii_lowercase().into_bytes();
                // A case-insensitive detector looks for its triggers in
                // the lowercased text: one with a capital never occurs
                // there (the unit tests keep there being none).
                if ignore_case && folded != trigger.as_bytes() {
                    continue;
                }
                let [a, b, ..] = folded[..] else {
                    return None;
                };
                let at = match list.iter().position(|t| t.folded == folded) {
                    Some(at) => at,
                    None => {
                        list.push(Trigger {
                            start: pair(a, b),
                            folded,
                            any_case: 0,
                            exact: Vec::new(),
                            all: 0,
                        });
                        list.len() - 1
                    }
                };
                match ignore_case {
                    true => list[at].any_case |= bit,
                    false => list[at].exact.push((trigger, bit)),
                }
                list[at].all |= bit;
            }
        }
        list.sort_by_key(|t| t.start);
        let mut starts = Box::new([0u64; 1024]);
        for trigger in &list {
            starts[trigger.start >> 6] |= 1 << (trigger.start & 63);
        }
        // (No more than 255 triggers: past that, the detectors search one by one.)
        let mut first = [u8::MAX; 256];
        for (at, trigger) in list.iter().enumerate().rev() {
            first[trigger.start >> 8] = u8::try_from(at).ok()?;
        }
        Some(Self {
            starts,
            list,
            first,
        })
    }

    /// Whether a trigger can start with the two bytes whose index (see
    /// [`pair`]) is `start`.
    fn may_start(&self, start: usize) -> bool {
        self.starts[start >> 6] & 1 << (start & 63) != 0
    }

    /// The detectors, among `wanted`, of the triggers occurring in `text`
    /// at `at`, whose first two bytes are `start`.
    fn at(&self, text: &[u8], at: usize, start: usize, wanted: u64) -> u64 {
        let first = usize::from(self.first[start >> 8]);
        let mut detectors = 0;
        let same_first = self.list.get(first..).unwrap_or_default().iter();
        for trigger in same_first.take_while(|t| t.start >> 8 == start >> 8) {
            if trigger.start != start {
                continue;
            }
            if trigger.all & wanted == 0 {
                continue;
            }
            let Some(bytes) = text.get(at..at + trigger.folded.len()) else {
                continue;
            };
            if !bytes.eq_ignore_ascii_case(&trigger.folded) {
                continue;
            }
            detectors |= trigger.any_case;
            for &(exact, bit) in &trigger.exact {
                if bytes == exact.as_bytes() {
                    detectors |= bit;
                }
            }
        }
        detectors & wanted
    }

    /// The detectors (bit `i` for `DETECTORS[i]`) one of whose triggers
    /// occurs in `text`.
    fn hits(&self, text: &[u8]) -> u64 {
        let all = u64::MAX >> (64 - BUILT_IN.len().max(1));
        let mut hits = 0;
        for (at, two) in text.windows(2).enumerate() {
            let start = pair(two[0], two[1]);
            if self.may_start(start) {
                hits |= self.at(text, at, start, all & !hits);
                if hits == all {
                    break;
                }
            }
        }
        hits
    }
}

static TRIGGERS: LazyLock<Option<Triggers>> = LazyLock::new(Triggers::new);

/// The detectors (bit `i` for `DETECTORS[i]`) triggered by `text`.
fn triggered(text: &str) -> u64 {
    match TRIGGERS.as_ref() {
        Some(triggers) => triggers.hits(text.as_bytes()),
        None => {
            let lower = text.to_ascii_lowercase();
            DETECTORS
                .iter()
                .enumerate()
                .filter(|(_, d)| d.triggered(text, &lower))
                .fold(0, |hits, (i, _)| hits | 1 << i)
        }
    }
}

/// The bytes of a token the entropy detector looks at: `[A-Za-z0-9+/_=-]`.
static TOKEN_BYTES: [bool; 256] = {
    let mut table = [false; 256];
    let mut byte = 0;
    while byte < 256 {
        let b = byte as u8;
        table[byte] = b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'_' | b'=' | b'-');
        byte += 1;
    }
    table
};

/// Whether `byte` is part of a token the entropy detector looks at.
fn is_token(byte: u8) -> bool {
    TOKEN_BYTES[usize::from(byte)]
}

/// Whether no string of the JSON text `payload` can hold anything the
/// built-in detectors redact: no trigger anywhere in its bytes, no escape
/// that could spell one (`\u…`, `\/`), and no token of a string, as it
/// reads once unescaped, that looks random. Keys and numbers are looked at
/// too, which only ever says no more often. Text that is not JSON gets
/// any answer: such a payload is stored as it is either way.
fn nothing_to_detect(payload: &[u8]) -> bool {
    let Some(triggers) = TRIGGERS.as_ref() else {
        return false;
    };
    // An escape stands for one character; but for `\u…` and `\/`, one
    // that no trigger holds (`"`, `\\`, a control character), so a trigger
    // of a string as it reads unescaped is in the raw bytes too. A
    // backslash that is itself escaped (`\\u`) is taken for an escape as
    // well, which only ever says no more often.
    for (at, two) in payload.windows(2).enumerate() {
        let start = pair(two[0], two[1]);
        if triggers.may_start(start) && triggers.at(payload, at, start, u64::MAX) != 0 {
            return false;
        }
        if two[0] == b'\\' && matches!(two[1], b'u' | b'/') {
            return false;
        }
    }
    !random_token(payload)
}

/// Whether a maximal run of token bytes of `payload`, a JSON text, looks
/// random, or would once its string is unescaped (an escape's letter, as
/// the `n` of `\n`, is no part of the token that follows it).
fn random_token(payload: &[u8]) -> bool {
    runs(payload).any(|(start, end)| {
        looks_random_bytes(&payload[start..end])
            || (start > 0
                && payload[start - 1] == b'\\'
                && looks_random_bytes(&payload[start + 1..end]))
    })
}

/// The byte ranges of `text`'s maximal runs of token characters
/// (`[A-Za-z0-9+/_=-]`) at least [`ENTROPY_MIN_LEN`] long: what the entropy
/// detector looks at. A plain scan, so that a payload with no secret never
/// starts a regex engine.
fn tokens(text: &str) -> impl Iterator<Item = (usize, usize)> + '_ {
    runs(text.as_bytes())
}

/// The byte ranges of the maximal runs of token bytes of `bytes` at least
/// [`ENTROPY_MIN_LEN`] long, in order. Looks at one byte in
/// [`ENTROPY_MIN_LEN`] (a run that long cannot fit between two of them)
/// and around those that are token bytes only.
fn runs(bytes: &[u8]) -> impl Iterator<Item = (usize, usize)> + '_ {
    let mut probe = ENTROPY_MIN_LEN - 1;
    std::iter::from_fn(move || {
        while probe < bytes.len() {
            if !is_token(bytes[probe]) {
                probe += ENTROPY_MIN_LEN;
                continue;
            }
            let mut start = probe;
            while start > 0 && is_token(bytes[start - 1]) {
                start -= 1;
            }
            let mut end = probe + 1;
            while end < bytes.len() && is_token(bytes[end]) {
                end += 1;
            }
            // The next run that long starts after `end`, a byte that is
            // not a token's, so it covers `end + ENTROPY_MIN_LEN`.
            probe = end + ENTROPY_MIN_LEN;
            if end - start >= ENTROPY_MIN_LEN {
                return Some((start, end));
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
    /// Tools whose events are stored without redaction.
    pub keep_tools: Vec<String>,
    /// Paths (globs) whose calls are stored without redaction.
    pub keep_paths: Option<globset::GlobSet>,
    /// Turns redaction off for the whole log.
    pub disabled: bool,
}

impl Settings {
    /// Compiles a policy's settings; a pattern that does not compile (the
    /// policy loader refuses those) is left out.
    pub fn from_policy(policy: &crate::policy::RedactSettings) -> Self {
        Self {
            patterns: policy
                .patterns
                .iter()
                .filter_map(|p| Regex::new(p).ok())
                .collect(),
            keep_tools: policy.keep_tools.clone(),
            keep_paths: keep_paths(&policy.keep_paths),
            disabled: !policy.enabled,
        }
    }

    /// Whether events of `tool` are stored whole.
    pub fn keeps(&self, tool: Option<&str>) -> bool {
        self.disabled || tool.is_some_and(|t| self.keep_tools.iter().any(|k| k == t))
    }

    /// Whether a call on a file at `path` (as the request names it, or
    /// relative to the workspace) is stored whole. A leading `./` is ignored.
    pub fn keeps_path(&self, path: &str) -> bool {
        let path = path.strip_prefix("./").unwrap_or(path);
        self.keep_paths
            .as_ref()
            .is_some_and(|set| set.is_match(path))
    }

    /// Whether any path is kept whole (a lookup is needed per call).
    pub fn keeps_any_path(&self) -> bool {
        self.keep_paths.as_ref().is_some_and(|set| !set.is_empty())
    }
}

/// The `keep_paths` globs, compiled (`*` stays within a folder, `**` crosses
/// folders); a glob that does not compile (the policy loader refuses those) is left out.
fn keep_paths(globs: &[String]) -> Option<globset::GlobSet> {
    if globs.is_empty() {
        return None;
    }
    let mut builder = globset::GlobSetBuilder::new();
    for glob in globs {
        if let Ok(glob) = globset::GlobBuilder::new(glob)
            .literal_separator(true)
            .build()
        {
            builder.add(glob);
        }
    }
    builder.build().ok()
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
        format!("«redacted:{kind}:{}»", crate::digest::hex(&tag[..6]))
    }

    /// `text` with its secrets replaced, and how many there were.
    pub fn redact_str(&self, text: &str) -> (String, usize) {
        let mut found = Vec::new();
        let (out, mut count) = self.detect(text, &mut found);
        let mut out = out.into_owned();
        count += self.replace_known(&mut out, &self.known(found));
        (out, count)
    }

    /// The policy's patterns, then each detector one of whose triggers
    /// occurs in `text` (found in one pass), then the entropy scan; the
    /// secrets found are added to `found` as `(kind, secret)`. `text` is
    /// copied only when something in it is replaced.
    ///
    /// The triggers are looked for once, before the detectors run. A
    /// marker a detector puts in holds no trigger of a later one but its
    /// kind's words (`token`, `key`, `auth`), which the case-insensitive
    /// detectors never saw as triggers either (they looked at the text as
    /// it was before the first detector); a case-sensitive detector whose
    /// only triggers an earlier one took out runs and finds nothing.
    fn detect<'t>(
        &self,
        text: &'t str,
        found: &mut Vec<(String, String)>,
    ) -> (Cow<'t, str>, usize) {
        let mut out = Cow::Borrowed(text);
        if self.settings.disabled {
            return (out, 0);
        }
        let mut count = 0;
        for pattern in &self.settings.patterns {
            count += self.apply(&mut out, "policy", pattern, found);
        }
        let hits = triggered(&out);
        if hits != 0 {
            for (i, detector) in DETECTORS.iter().enumerate() {
                if hits & 1 << i == 0 {
                    continue;
                }
                if let Some(regex) = detector.regex() {
                    count += self.apply(&mut out, detector.kind, regex, found);
                }
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

    /// Replaces the matches of `regex` in `text` (a copy is made only when
    /// one is replaced).
    fn apply(
        &self,
        text: &mut Cow<'_, str>,
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
        if count > 0 {
            out.push_str(&text[last..]);
            *text = Cow::Owned(out);
        }
        count
    }

    fn redact_entropy(&self, text: &mut Cow<'_, str>, found: &mut Vec<(String, String)>) -> usize {
        let mut out = String::new();
        let mut last = 0;
        let mut count = 0;
        for (start, end) in tokens(text) {
            let token = &text[start..end];
            if !looks_random(token) {
                continue;
            }
            if count == 0 {
                out.reserve(text.len() + 64);
            }
            out.push_str(&text[last..start]);
            out.push_str(&self.marker("high_entropy", token));
            found.push(("high_entropy".to_owned(), token.to_owned()));
            last = end;
            count += 1;
        }
        if count > 0 {
            out.push_str(&text[last..]);
            *text = Cow::Owned(out);
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
                    *s = redacted.into_owned();
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
        // A payload in whose bytes no detector can find anything is not
        // parsed (nor copied) unless a secret found elsewhere in the call
        // has to be looked for in it.
        let quick = self.settings.patterns.is_empty();
        let mut staged: Vec<(Vec<u8>, Stage)> = payloads
            .into_iter()
            .map(|payload| match payload {
                None => (Vec::new(), Stage::Kept),
                Some(bytes) if quick && nothing_to_detect(&bytes) => (bytes, Stage::Clean),
                Some(bytes) => {
                    let value = serde_json::from_slice::<Value>(&bytes).ok();
                    (bytes, Stage::Parsed(value, 0))
                }
            })
            .collect();
        for (_, stage) in &mut staged {
            if let Stage::Parsed(Some(value), count) = stage {
                *count += self.detect_value(value, found);
            }
        }
        let known = self.known(found.clone());
        staged
            .into_iter()
            .map(|(payload, stage)| {
                let (value, mut count) = match stage {
                    Stage::Kept | Stage::Parsed(None, _) => return (payload, 0),
                    Stage::Clean if known.is_empty() => return (payload, 0),
                    Stage::Clean => match serde_json::from_slice::<Value>(&payload) {
                        Ok(value) => (value, 0),
                        Err(_) => return (payload, 0),
                    },
                    Stage::Parsed(Some(value), count) => (value, count),
                };
                let mut value = value;
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

/// Where a payload of a batch is in [`Redactor::redact_batch`].
enum Stage {
    /// Kept whole by the policy (returned empty).
    Kept,
    /// Nothing for the detectors in its bytes: not parsed.
    Clean,
    /// Parsed (`None` if it is no JSON), with the count of its detections.
    Parsed(Option<Value>, usize),
}

/// Whether `token` looks like a random secret: long, letters of both cases
/// and digits, and Shannon entropy at or above [`ENTROPY_THRESHOLD`].
pub fn looks_random(token: &str) -> bool {
    looks_random_bytes(token.as_bytes())
}

fn looks_random_bytes(bytes: &[u8]) -> bool {
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

/// The redaction pass as it was before the trigger automaton (one search
/// per trigger and detector over a lowercased copy, every payload parsed
/// and copied), kept as the reference the property tests compare with.
#[cfg(test)]
mod reference;

#[cfg(test)]
mod tests;

/// The pass against [`reference`], the one it replaced: the same bytes out
/// for every input.
#[cfg(test)]
mod same_as_before;
