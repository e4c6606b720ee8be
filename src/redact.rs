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
        r"\b(?:glpat|gldt|glptt|glrt|glsoat|glcbt|glft|glimt|glagent|gloas)-[A-Za-z0-9_\-]{20,}",
        false,
        &[
            "glpat-", "gldt-", "glptt-", "glrt-", "glsoat-", "glcbt-", "glft-", "glimt-",
            "glagent-", "gloas-",
        ],
    ),
    (
        "slack_token",
        r"\b(?:xox[abposre]-|xoxe\.xox[bp]-|xapp-)[A-Za-z0-9\-]{10,}",
        false,
        &["xox", "xapp-"],
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
        "sendgrid_key",
        r"\bSG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}",
        false,
        &["SG."],
    ),
    // Tokens that announce themselves by a vendor's prefix. Each
    // alternative asks for the shape its vendor documents (length and
    // alphabet), so that an ordinary word with the same start is kept.
    (
        "api_token",
        concat!(
            r"\b(?:",
            r"hf_[A-Za-z0-9]{30,}",
            r"|do[por]_v1_[a-f0-9]{64}",
            r"|shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}",
            r"|dapi[a-f0-9]{32}",
            r"|dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,}",
            r"|hv[sbr]\.[A-Za-z0-9_\-]{20,}",
            r"|[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=\-]{60,}",
            r"|lin_(?:api|oauth)_[A-Za-z0-9]{40,}",
            r"|secret_[A-Za-z0-9]{43}\b",
            r"|ntn_[A-Za-z0-9]{40,}",
            r"|AT(?:ATT|CTT|BB)[A-Za-z0-9_\-=]{24,}",
            r"|PMAK-[a-f0-9]{24}-[a-f0-9]{34}",
            r"|glc_[A-Za-z0-9+/]{32,}={0,2}",
            r"|glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}",
            r"|NR(?:AK|JS|II)-[A-Za-z0-9]{19,}",
            r"|sntry[su]_[A-Za-z0-9+/=_]{40,}",
            r"|pul-[a-f0-9]{40}",
            r"|AGE-SECRET-KEY-1[A-Z0-9]{58}",
            r"|fo1_[A-Za-z0-9_\-]{40,}",
            r"|fm[12][ar]?_[A-Za-z0-9+/=_\-]{40,}",
            r"|pscale_(?:tkn|pw|oauth)_[A-Za-z0-9=\-_.]{32,}",
            r"|sbp_[a-f0-9]{40}",
            r"|sb_secret_[A-Za-z0-9_\-]{20,}",
            r"|dckr_pat_[A-Za-z0-9_\-]{27,}",
            r"|figd_[A-Za-z0-9_\-]{40,}",
            r"|CFPAT-[A-Za-z0-9_\-]{43,}",
            r"|dt0c01\.[A-Z0-9]{24}\.[A-Z0-9]{64}",
            r"|EZ[AT]K[A-Za-z0-9]{54}",
            r"|FLWSECK(?:_TEST)?-[a-hA-H0-9]{32}-X",
            r"|AKCp[A-Za-z0-9]{60,}",
            r"|cmVmdGtu[A-Za-z0-9]{56,}",
            r"|key-[a-f0-9]{32}\b",
            r"|[a-f0-9]{32}-us[0-9]{1,2}\b",
            r"|SK[0-9a-fA-F]{32}\b",
            r"|x(?:keysib|smtpsib)-[a-f0-9]{64}-[A-Za-z0-9]{16}",
            r"|sq0(?:atp|csp)-[A-Za-z0-9_\-]{22,}",
            r"|EAA[A-Za-z0-9_\-+=]{60,}",
            r"|A{20,}[A-Za-z0-9%]{40,}",
            r"|sl\.(?:u\.)?[A-Za-z0-9_\-=]{40,}",
            r"|[0-9]{8,10}:AA[A-Za-z0-9_\-]{33}",
            r"|gsk_[A-Za-z0-9]{48,}",
            r"|r8_[A-Za-z0-9]{37,}",
            r"|pplx-[A-Za-z0-9]{40,}",
            r"|xai-[A-Za-z0-9]{60,}",
            r"|GOCSPX-[A-Za-z0-9_\-]{28}",
            r"|LTAI[A-Za-z0-9]{12,20}\b",
            r"|AKID[A-Za-z0-9]{32}",
            r"|rubygems_[a-f0-9]{48}",
            r"|CLOJARS_[a-z0-9]{60}",
            r"|oy2[a-z0-9]{43}",
            r"|pnu_[A-Za-z0-9]{36}",
            r"|rdme_[a-z0-9]{70}",
            r"|tfp_[A-Za-z0-9_\-.=]{59}",
            r"|shippo_(?:live|test)_[a-f0-9]{40}",
            r"|HRKU-[A-Za-z0-9_\-]{58,}",
            r"|nfp_[A-Za-z0-9]{36}",
            r"|sq[pua]_[a-f0-9]{40}",
            r"|CCIPAT_[A-Za-z0-9]{20,}_[a-f0-9]{40}",
            r"|bkua_[a-f0-9]{40}",
            r"|API-[A-Z0-9]{26}\b",
            r"|sgp_[A-Za-z0-9]{64}",
            r"|lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}",
            r"|pcsk_[A-Za-z0-9_]{50,}",
            r"|ops_eyJ[A-Za-z0-9_\-]{20,}",
            r"|re_[A-Za-z0-9]{8}_[A-Za-z0-9]{24}",
            r"|sk_[a-f0-9]{48}",
            r"|napi_[a-z0-9]{60,}",
            r"|tvly-(?:dev-)?[A-Za-z0-9]{32,}",
            r"|fc-[a-f0-9]{32}",
            r"|phx_[A-Za-z0-9]{40,}",
            r"|GR1348941[A-Za-z0-9_\-]{20}",
            r"|access_token\$production\$[0-9a-z]{16}\$[0-9a-f]{32}",
            r"|sk\.eyJ[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]{20,}",
            r"|v1\.0-[a-f0-9]{24}-[a-f0-9]{146}",
            r"|https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/[0-9]+/[A-Za-z0-9_\-]+",
            r")",
            // An Azure client secret may start with `~` or `.`: no `\b`.
            r"|[A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.\-]{31,34}",
        ),
        false,
        &[
            "hf_",
            "dop_v1_",
            "doo_v1_",
            "dor_v1_",
            "shpat_",
            "shpca_",
            "shppa_",
            "shpss_",
            "dapi",
            "dp.",
            "hvs.",
            "hvb.",
            "hvr.",
            ".atlasv1.",
            "lin_api_",
            "lin_oauth_",
            "secret_",
            "ntn_",
            "ATATT",
            "ATCTT",
            "ATBB",
            "PMAK-",
            "glc_",
            "glsa_",
            "NRAK-",
            "NRJS-",
            "NRII-",
            "sntrys_",
            "sntryu_",
            "pul-",
            "AGE-SECRET-KEY-1",
            "fo1_",
            "fm1",
            "fm2",
            "pscale_",
            "sbp_",
            "sb_secret_",
            "dckr_pat_",
            "figd_",
            "CFPAT-",
            "dt0c01.",
            "EZAK",
            "EZTK",
            "FLWSECK",
            "AKCp",
            "cmVmdGtu",
            "key-",
            "-us",
            "SK",
            "xkeysib-",
            "xsmtpsib-",
            "sq0atp-",
            "sq0csp-",
            "EAA",
            "AAAAAAAAAAAAAAAAAAAA",
            "sl.",
            ":AA",
            "gsk_",
            "r8_",
            "pplx-",
            "xai-",
            "GOCSPX-",
            "LTAI",
            "AKID",
            "rubygems_",
            "CLOJARS_",
            "oy2",
            "pnu_",
            "rdme_",
            "tfp_",
            "shippo_",
            "HRKU-",
            "nfp_",
            "sqp_",
            "squ_",
            "sqa_",
            "CCIPAT_",
            "bkua_",
            "API-",
            "sgp_",
            "lsv2_",
            "pcsk_",
            "ops_eyJ",
            "re_",
            "sk_",
            "napi_",
            "tvly-",
            "fc-",
            "phx_",
            "GR1348941",
            "access_token$",
            "sk.eyJ",
            "Q~",
            "v1.0-",
            "discord",
        ],
    ),
    (
        "private_key",
        r"PuTTY-User-Key-File-[0-9]+:[\s\S]*?(?:Private-MAC:[ \t]*[0-9a-fA-F]+|\z)",
        false,
        &["PuTTY-User-Key-File-"],
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
    // A run after a `.` is judged as a path's (see [`random_parts`]); so
    // may be one after an escape's letter, which may stand for anything.
    runs(payload).any(|(start, end)| {
        let after = |at: usize, byte: u8| at > 0 && payload[at - 1] == byte;
        !random_parts(&payload[start..end], after(start, b'.')).is_empty()
            || (after(start, b'\\')
                && (!random_parts(&payload[start + 1..end], false).is_empty()
                    || !random_parts(&payload[start + 1..end], true).is_empty()))
    })
}

/// The parts of `run`, a maximal run of token bytes, that the entropy
/// detector takes for secrets, as byte ranges of `run`.
///
/// A run without `/` is judged whole ([`looks_random`]). A run with one
/// may be a path. Its components (split at `/`) that look random on their
/// own are set apart; when what is left reads as a path ([`path_like`]),
/// only they are taken, so that a random-looking folder name (a `mktemp`
/// folder, a worktree's, a cache's hash) does not take the whole path
/// with it. Otherwise (base64, whose alphabet holds `/`, cut into pieces
/// that read as no words) the run is judged whole, so that no part of a
/// secret is left beside its marker. `anchored` tells that the run starts
/// as a path does: at a `/` or `~`, or after a `.` (`/tmp/tmp.x/...`).
pub fn random_parts(run: &[u8], anchored: bool) -> Vec<(usize, usize)> {
    if run.len() < ENTROPY_MIN_LEN {
        return Vec::new();
    }
    if !run.contains(&b'/') {
        return match looks_random_bytes(run) {
            true => vec![(0, run.len())],
            false => Vec::new(),
        };
    }
    let mut parts = Vec::new();
    let mut rest = Vec::new();
    let mut start = 0;
    for component in run.split(|&b| b == b'/') {
        let end = start + component.len();
        match looks_random_bytes(component) {
            true => parts.push((start, end)),
            false => rest.push(component),
        }
        start = end + 1;
    }
    let anchored = anchored || matches!(run.first(), Some(b'/' | b'~'));
    if !path_like(rest.iter().copied(), anchored) && looks_random_bytes(run) {
        return vec![(0, run.len())];
    }
    parts
}

/// Whether `components` (of a run of token bytes, split at `/`) read as a
/// path: of their pieces (split at `-`, `_`, `+`, `=`), those that read
/// as words (see [`word_like`]) hold at least as many bytes as the
/// others; or, for a run `anchored` where a path starts, no other piece
/// is longer than [`PATH_PIECE_MAX`] (the random part of a `mktemp`
/// folder is 6 to 12). The pieces of a random base64 text almost never
/// read as words (a long piece would have to be letters of one case, or
/// capitalized, with digits at its end only).
pub fn path_like<'a>(components: impl IntoIterator<Item = &'a [u8]>, anchored: bool) -> bool {
    let (mut words, mut other, mut longest) = (0usize, 0usize, 0usize);
    for component in components {
        for piece in component.split(|b| matches!(b, b'-' | b'_' | b'+' | b'=')) {
            match word_like(piece) {
                true => words += piece.len(),
                false => {
                    other += piece.len();
                    longest = longest.max(piece.len());
                }
            }
        }
    }
    words >= other || (anchored && longest <= PATH_PIECE_MAX)
}

/// The longest piece of a path's folder name, neither a word nor random
/// on its own, that leaves the path to be judged folder by folder.
pub const PATH_PIECE_MAX: usize = 16;

/// Whether `piece` (letters and digits) reads as a word of a name: digits
/// only, lowercase hex, or letters of one case, capitalized or camel-case
/// (each capital followed by at least two lowercase letters), with digits
/// at its end only.
fn word_like(piece: &[u8]) -> bool {
    if piece
        .iter()
        .all(|b| b.is_ascii_digit() || matches!(b, b'a'..=b'f'))
    {
        return true;
    }
    let letters = piece
        .iter()
        .rposition(|b| !b.is_ascii_digit())
        .map_or(&piece[..0], |last| &piece[..=last]);
    if !letters.iter().all(u8::is_ascii_alphabetic) {
        return false;
    }
    if letters.iter().all(u8::is_ascii_uppercase) || letters.iter().all(u8::is_ascii_lowercase) {
        return true;
    }
    // Camel case: every capital but a leading one starts a run of at
    // least two lowercase letters.
    letters.iter().enumerate().all(|(at, b)| {
        !b.is_ascii_uppercase()
            || (letters.get(at + 1).is_some_and(u8::is_ascii_lowercase)
                && letters.get(at + 2).is_some_and(u8::is_ascii_lowercase))
            || (at == 0 && letters.get(1).is_some_and(u8::is_ascii_lowercase))
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

/// The attributes of a `Set-Cookie:` value (RFC 6265), whose values are
/// no secrets.
const COOKIE_ATTRIBUTES: &[&str] = &[
    "path",
    "domain",
    "expires",
    "max-age",
    "samesite",
    "secure",
    "httponly",
    "priority",
    "partitioned",
    "version",
    "comment",
];

/// The `(kind, secret)` pairs to replace wherever they occur again.
fn known_secrets(found: Vec<(String, String)>) -> Vec<(String, String)> {
    let mut known: Vec<(String, String)> = Vec::new();
    for (kind, secret) in found {
        if kind == "cookie" {
            // Each value of `name=value; name=value` on its own: a cookie
            // header split into shell words (or resolved as a path) keeps
            // the values, not the header as it was.
            for pair in secret.split(';') {
                let Some((name, value)) = pair.split_once('=') else {
                    continue;
                };
                let value = value.trim();
                if value.len() >= KNOWN_MIN_LEN
                    && !COOKIE_ATTRIBUTES
                        .iter()
                        .any(|a| name.trim().eq_ignore_ascii_case(a))
                {
                    known.push((kind.clone(), value.to_owned()));
                }
            }
        }
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
    ///
    /// In three rounds, each over the whole text: the detectors of known
    /// shapes; every other occurrence of what they found; then the
    /// entropy scan, and every other occurrence of what it found. A
    /// secret a detector found is so replaced whole wherever it occurs
    /// before the entropy scan could cut it into random-looking tokens
    /// (which it takes or leaves by chance).
    pub fn redact_str(&self, text: &str) -> (String, usize) {
        let mut found = Vec::new();
        let (out, mut count) = self.detect(text, &mut found);
        let mut out = out.into_owned();
        count += self.replace_known(&mut out, &self.known(found));
        let mut random = Vec::new();
        let mut cow = Cow::Borrowed(out.as_str());
        count += self.redact_entropy(&mut cow, &mut random);
        let mut out = cow.into_owned();
        count += self.replace_known(&mut out, &self.known(random));
        (out, count)
    }

    /// The policy's patterns, then each detector one of whose triggers
    /// occurs in `text` (found in one pass); the secrets found are added to
    /// `found` as `(kind, secret)`. `text` is copied only when something in
    /// it is replaced. The entropy scan is a round of its own
    /// ([`Redactor::redact_entropy`]).
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

    /// Replaces the random-looking parts of `text`'s long tokens (see
    /// [`random_parts`]).
    fn redact_entropy(&self, text: &mut Cow<'_, str>, found: &mut Vec<(String, String)>) -> usize {
        if self.settings.disabled {
            return 0;
        }
        let mut out = String::new();
        let mut last = 0;
        let mut count = 0;
        for (run_start, run_end) in tokens(text) {
            let anchored = run_start > 0 && text.as_bytes()[run_start - 1] == b'.';
            for (start, end) in random_parts(&text.as_bytes()[run_start..run_end], anchored) {
                let (start, end) = (run_start + start, run_start + end);
                let token = &text[start..end];
                if count == 0 {
                    out.reserve(text.len() + 64);
                }
                out.push_str(&text[last..start]);
                out.push_str(&self.marker("high_entropy", token));
                found.push(("high_entropy".to_owned(), token.to_owned()));
                last = end;
                count += 1;
            }
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
        let mut random = Vec::new();
        count += self.entropy_value(value, &mut random);
        let known = self.known(random);
        if !known.is_empty() {
            count += self.replace_value(value, &known);
        }
        count
    }

    /// [`Redactor::redact_entropy`] over every string of `value`.
    fn entropy_value(&self, value: &mut Value, found: &mut Vec<(String, String)>) -> usize {
        match value {
            Value::String(s) => {
                let mut text = Cow::Borrowed(s.as_str());
                let count = self.redact_entropy(&mut text, found);
                if count > 0 {
                    *s = text.into_owned();
                }
                count
            }
            Value::Array(items) => items.iter_mut().map(|v| self.entropy_value(v, found)).sum(),
            Value::Object(map) => map.values_mut().map(|v| self.entropy_value(v, found)).sum(),
            _ => 0,
        }
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
        // Rounds as in [`Redactor::redact_str`], each over the whole batch.
        self.replace_staged(&mut staged, &self.known(found.clone()));
        let mut random = Vec::new();
        for (_, stage) in &mut staged {
            if let Stage::Parsed(Some(value), count) = stage {
                *count += self.entropy_value(value, &mut random);
            }
        }
        self.replace_staged(&mut staged, &self.known(random.clone()));
        found.extend(random);
        staged
            .into_iter()
            .map(|(payload, stage)| {
                let Stage::Parsed(Some(mut value), count) = stage else {
                    return (payload, 0);
                };
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

    /// Replaces the `known` secrets in every payload of a batch, parsing
    /// one left unparsed (nothing for the detectors) only now that there
    /// is something to look for.
    fn replace_staged(&self, staged: &mut [(Vec<u8>, Stage)], known: &Known) {
        if known.is_empty() {
            return;
        }
        for (payload, stage) in staged {
            if let Stage::Clean = stage {
                *stage = Stage::Parsed(serde_json::from_slice::<Value>(payload).ok(), 0);
            }
            if let Stage::Parsed(Some(value), count) = stage {
                *count += self.replace_value(value, known);
            }
        }
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

/// Whether `token` looks like a random secret: at least [`ENTROPY_MIN_LEN`]
/// bytes, letters of both cases, at least [`RANDOM_MATERIAL_MIN`] of them in
/// pieces that read as no words, and either digits and Shannon entropy at
/// or above [`ENTROPY_THRESHOLD`], or the short words of random text.
pub fn looks_random(token: &str) -> bool {
    looks_random_bytes(token.as_bytes())
}

///
/// Entropy alone decides by chance on a short token: 32 random letters and
/// digits fall below [`ENTROPY_THRESHOLD`] one time in three. So a token
/// with letters of both cases whose entropy is at least
/// [`ENTROPY_FLOOR`] is taken too when its words are short: split into
/// words (a capital and its lowercase letters, a run of capitals, a run
/// of digits), they are under 3.2 bytes long on average (2.8 without a
/// digit). Random text falls into words of 1.5 to 2 bytes; a name made of
/// words (`AbstractSingletonProxyFactoryBean2`) into words of 4 and more.
fn looks_random_bytes(bytes: &[u8]) -> bool {
    if bytes.len() < ENTROPY_MIN_LEN
        || !bytes.iter().any(u8::is_ascii_uppercase)
        || !bytes.iter().any(u8::is_ascii_lowercase)
        || random_material(bytes) < RANDOM_MATERIAL_MIN
    {
        return false;
    }
    let digits = bytes.iter().any(u8::is_ascii_digit);
    let entropy = entropy(bytes);
    if digits && entropy >= ENTROPY_THRESHOLD {
        return true;
    }
    if entropy < ENTROPY_FLOOR {
        return false;
    }
    let (words, bytes_in_words) = words(bytes);
    // Average word length under 3.2 (with digits) or 2.8 bytes, in integers.
    match digits {
        true => 5 * bytes_in_words < 16 * words,
        false => 5 * bytes_in_words < 14 * words,
    }
}

/// The fewest bytes of a token, in pieces that read as no words, for it
/// to be taken for a secret: a folder named `tool-first-hour-9j5q310f`
/// or a `mktemp` template's 6 to 12 random bytes after words is a name.
pub const RANDOM_MATERIAL_MIN: usize = 20;

/// How many bytes of `token`'s pieces (split at `/`, `-`, `_`, `+`, `=`)
/// read as no words ([`word_like`]).
fn random_material(token: &[u8]) -> usize {
    token
        .split(|b| matches!(b, b'/' | b'-' | b'_' | b'+' | b'='))
        .filter(|piece| !word_like(piece))
        .map(<[u8]>::len)
        .sum()
}

/// Shannon entropy (bits per character) under which a token is never
/// taken for a secret (see [`looks_random`]).
pub const ENTROPY_FLOOR: f64 = 4.0;

/// How many words `bytes` falls into, and how many bytes they hold: a
/// capital with the lowercase letters after it, lowercase letters, a run
/// of capitals (its last one starts the next word when lowercase letters
/// follow), a run of digits; other bytes separate words.
fn words(bytes: &[u8]) -> (usize, usize) {
    let run = |mut at: usize, class: fn(&u8) -> bool| {
        while at < bytes.len() && class(&bytes[at]) {
            at += 1;
        }
        at
    };
    let (mut words, mut held, mut at) = (0, 0, 0);
    while at < bytes.len() {
        let b = bytes[at];
        let end = if b.is_ascii_digit() {
            run(at, u8::is_ascii_digit)
        } else if b.is_ascii_lowercase() {
            run(at, u8::is_ascii_lowercase)
        } else if b.is_ascii_uppercase() {
            let capitals = run(at, u8::is_ascii_uppercase);
            if capitals < bytes.len() && bytes[capitals].is_ascii_lowercase() {
                if capitals - 1 > at {
                    words += 1;
                    held += capitals - 1 - at;
                }
                at = capitals - 1;
                run(capitals, u8::is_ascii_lowercase)
            } else {
                capitals
            }
        } else {
            at += 1;
            continue;
        };
        words += 1;
        held += end - at;
        at = end;
    }
    (words, held)
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

/// Every secret shape with generated values, and paths with random
/// folder names, through the pass.
#[cfg(test)]
mod shapes;
