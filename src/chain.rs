//! The hash chain: the canonical bytes of a stored event, its leaf hash and
//! the link that ties it to the one before. Pure: no I/O. The encoding is
//! specified in `docs/record-format.md`; a test below checks its vector.
//!
//! ```text
//! enc1  = lp("gavel/event/v1") ‖ u64(seq) ‖ lp(log_id) ‖ i64(ts_us) ‖ lp(kind) ‖ lp(call_id)
//!         ‖ opt(tool) ‖ opt(action) ‖ opt(rule_id) ‖ opt(approval) ‖ opt(status) ‖ lp(payload)
//! enc2  = lp("gavel/event/v2") ‖ the same up to status
//!         ‖ opt(user) ‖ opt(host) ‖ opt(client) ‖ opt(session) ‖ opt(agent) ‖ lp(payload)
//! leaf  = SHA-256(0x00 ‖ enc)
//! chain = SHA-256("gavel/chain/v1" ‖ previous chain ‖ leaf)
//! ```
//!
//! A row is encoded in the format in force at its position: the log's own
//! (`log_meta.format`), until a `format` row switches it (a v1 log that a
//! newer gavel continues; docs/record-format.md, "Format 2").

use sha2::{Digest, Sha256};

/// A SHA-256 value.
pub type Hash = [u8; 32];

/// The record format this build writes (new logs, and rows after a switch).
pub const FORMAT_VERSION: u32 = 2;

/// The record formats this build reads and verifies.
pub const KNOWN_FORMATS: [u32; 2] = [1, 2];

/// Whether this build reads and verifies logs of `format`.
pub fn known_format(format: i64) -> bool {
    KNOWN_FORMATS.iter().any(|&f| i64::from(f) == format)
}

/// The `kind` of the chained row that switches a log's format from there on.
pub const FORMAT_KIND: &str = "format";

/// The `call_id` of a `format` row.
pub const FORMAT_CALL_ID: &str = "gavel/format";

const EVENT_TAG: &[u8] = b"gavel/event/v1";
const EVENT_TAG_V2: &[u8] = b"gavel/event/v2";
const CHAIN_TAG: &[u8] = b"gavel/chain/v1";
const GENESIS_TAG: &[u8] = b"gavel/genesis/v1";

/// Every stored field of one event, borrowed from wherever it lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventFields<'a> {
    pub seq: u64,
    pub log_id: &'a [u8],
    pub ts_us: i64,
    pub kind: &'a str,
    pub call_id: &'a str,
    pub tool: Option<&'a str>,
    pub action: Option<&'a str>,
    pub rule_id: Option<&'a str>,
    pub approval: Option<&'a str>,
    pub status: Option<&'a str>,
    pub payload: &'a [u8],
    /// The format the row is encoded in: 1 or 2 (any other is taken as 2).
    pub format: u32,
    /// Format 2's provenance columns; format 1 does not hash them (they must be NULL there).
    pub who: Who<'a>,
}

/// The provenance columns of a format-2 row: who made the call, from where, through what.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Who<'a> {
    pub user: Option<&'a str>,
    pub host: Option<&'a str>,
    pub client: Option<&'a str>,
    pub session: Option<&'a str>,
    pub agent: Option<&'a str>,
}

impl Who<'_> {
    /// Whether every column is NULL (what a format-1 row must hold).
    pub fn is_empty(&self) -> bool {
        self.user.is_none()
            && self.host.is_none()
            && self.client.is_none()
            && self.session.is_none()
            && self.agent.is_none()
    }
}

/// Where encoded bytes go: a hasher (the leaf hash) or a buffer (the leaf data).
trait Sink {
    fn put(&mut self, bytes: &[u8]);
}

impl Sink for Sha256 {
    fn put(&mut self, bytes: &[u8]) {
        self.update(bytes);
    }
}

impl Sink for Vec<u8> {
    fn put(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }
}

/// Feeds length-prefixed fields into a sink.
struct Encoder<S>(S);

impl<S: Sink> Encoder<S> {
    fn bytes(&mut self, bytes: &[u8]) {
        self.0.put(&(bytes.len() as u64).to_be_bytes());
        self.0.put(bytes);
    }

    fn optional(&mut self, value: Option<&str>) {
        match value {
            None => self.0.put(&[0u8]),
            Some(text) => {
                self.0.put(&[1u8]);
                self.bytes(text.as_bytes());
            }
        }
    }
}

impl EventFields<'_> {
    /// `SHA-256(0x00 ‖ enc)`: the RFC 6962 leaf hash of the event's encoding.
    pub fn leaf_hash(&self) -> Hash {
        let mut hasher = Sha256::new();
        hasher.update([0u8]);
        let mut enc = Encoder(hasher);
        self.encode_into(&mut enc);
        enc.0.finalize().into()
    }

    /// `enc(row)`: the leaf data, the bytes a receipt carries and a verifier
    /// hashes (with a 0x00 before them) into the leaf.
    pub fn encode(&self) -> Vec<u8> {
        let mut enc = Encoder(Vec::with_capacity(160 + self.payload.len()));
        self.encode_into(&mut enc);
        enc.0
    }

    fn encode_into<S: Sink>(&self, enc: &mut Encoder<S>) {
        enc.bytes(if self.format == 1 {
            EVENT_TAG
        } else {
            EVENT_TAG_V2
        });
        enc.0.put(&self.seq.to_be_bytes());
        enc.bytes(self.log_id);
        enc.0.put(&self.ts_us.to_be_bytes());
        enc.bytes(self.kind.as_bytes());
        enc.bytes(self.call_id.as_bytes());
        enc.optional(self.tool);
        enc.optional(self.action);
        enc.optional(self.rule_id);
        enc.optional(self.approval);
        enc.optional(self.status);
        if self.format != 1 {
            enc.optional(self.who.user);
            enc.optional(self.who.host);
            enc.optional(self.who.client);
            enc.optional(self.who.session);
            enc.optional(self.who.agent);
        }
        enc.bytes(self.payload);
    }
}

/// One event read back from its leaf data (`enc1` or `enc2`), every field owned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodedEvent {
    pub format: u32,
    pub seq: u64,
    pub log_id: Vec<u8>,
    pub ts_us: i64,
    pub kind: String,
    pub call_id: String,
    pub tool: Option<String>,
    pub action: Option<String>,
    pub rule_id: Option<String>,
    pub approval: Option<String>,
    pub status: Option<String>,
    pub user: Option<String>,
    pub host: Option<String>,
    pub client: Option<String>,
    pub session: Option<String>,
    pub agent: Option<String>,
    pub payload: Vec<u8>,
}

/// Reads leaf data back into its fields: the exact inverse of
/// [`EventFields::encode`]. Fails, naming the first field that does not
/// read, on an unknown tag, a length past the end, text that is not UTF-8,
/// an option byte other than 0 or 1, or bytes left over.
pub fn decode(data: &[u8]) -> Result<DecodedEvent, String> {
    let mut r = Reader { data, at: 0 };
    let format = match r.bytes("tag")? {
        tag if tag == EVENT_TAG => 1,
        tag if tag == EVENT_TAG_V2 => 2,
        _ => return Err("the tag is neither gavel/event/v1 nor gavel/event/v2".into()),
    };
    let seq = u64::from_be_bytes(r.fixed("seq")?);
    let log_id = r.bytes("log_id")?.to_vec();
    let ts_us = i64::from_be_bytes(r.fixed("ts_us")?);
    let kind = r.text("kind")?;
    let call_id = r.text("call_id")?;
    let mut opt = |name| r.optional(name);
    let (tool, action, rule_id, approval, status) = (
        opt("tool")?,
        opt("action")?,
        opt("rule_id")?,
        opt("approval")?,
        opt("status")?,
    );
    let (user, host, client, session, agent) = if format == 2 {
        (
            opt("user")?,
            opt("host")?,
            opt("client")?,
            opt("session")?,
            opt("agent")?,
        )
    } else {
        (None, None, None, None, None)
    };
    let payload = r.bytes("payload")?.to_vec();
    if r.at != data.len() {
        return Err(format!("{} bytes follow the payload", data.len() - r.at));
    }
    Ok(DecodedEvent {
        format,
        seq,
        log_id,
        ts_us,
        kind,
        call_id,
        tool,
        action,
        rule_id,
        approval,
        status,
        user,
        host,
        client,
        session,
        agent,
        payload,
    })
}

impl DecodedEvent {
    /// The fields, borrowed, to encode or hash again.
    pub fn fields(&self) -> EventFields<'_> {
        EventFields {
            seq: self.seq,
            log_id: &self.log_id,
            ts_us: self.ts_us,
            kind: &self.kind,
            call_id: &self.call_id,
            tool: self.tool.as_deref(),
            action: self.action.as_deref(),
            rule_id: self.rule_id.as_deref(),
            approval: self.approval.as_deref(),
            status: self.status.as_deref(),
            payload: &self.payload,
            format: self.format,
            who: Who {
                user: self.user.as_deref(),
                host: self.host.as_deref(),
                client: self.client.as_deref(),
                session: self.session.as_deref(),
                agent: self.agent.as_deref(),
            },
        }
    }
}

/// Reads length-prefixed fields off leaf data.
struct Reader<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, name: &str) -> Result<&'a [u8], String> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&end| end <= self.data.len())
            .ok_or_else(|| format!("`{name}` runs past the end of the data"))?;
        let bytes = &self.data[self.at..end];
        self.at = end;
        Ok(bytes)
    }

    fn fixed<const N: usize>(&mut self, name: &str) -> Result<[u8; N], String> {
        let bytes = self.take(N, name)?;
        Ok(<[u8; N]>::try_from(bytes).unwrap_or([0; N]))
    }

    fn bytes(&mut self, name: &str) -> Result<&'a [u8], String> {
        let len = u64::from_be_bytes(self.fixed(name)?);
        let len = usize::try_from(len).map_err(|_| format!("`{name}` is too long"))?;
        self.take(len, name)
    }

    fn text(&mut self, name: &str) -> Result<String, String> {
        let bytes = self.bytes(name)?;
        String::from_utf8(bytes.to_vec()).map_err(|_| format!("`{name}` is not UTF-8"))
    }

    fn optional(&mut self, name: &str) -> Result<Option<String>, String> {
        match self.take(1, name)? {
            [0] => Ok(None),
            [1] => self.text(name).map(Some),
            _ => Err(format!("`{name}` has an option byte other than 0 or 1")),
        }
    }
}

/// The chain value after `leaf`, given the one before it.
pub fn link(previous: &Hash, leaf: &Hash) -> Hash {
    let mut hasher = Sha256::new();
    hasher.update(CHAIN_TAG);
    hasher.update(previous);
    hasher.update(leaf);
    hasher.finalize().into()
}

/// The chain value before the first event, derived from the log's identity.
pub fn genesis(log_id: &[u8], origin: &str, format: u32) -> Hash {
    let mut enc = Encoder(Sha256::new());
    enc.bytes(GENESIS_TAG);
    enc.bytes(log_id);
    enc.bytes(origin.as_bytes());
    enc.0.update(format.to_be_bytes());
    enc.0.finalize().into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::digest::hex;

    /// The worked example in docs/record-format.md.
    fn vector() -> ([u8; 16], EventFields<'static>) {
        let log_id: [u8; 16] = std::array::from_fn(|i| i as u8);
        let fields = EventFields {
            seq: 1,
            log_id: &[],
            ts_us: 1_764_676_800_000_000,
            kind: "decision",
            call_id: "call-1",
            tool: Some("bash"),
            action: Some("deny"),
            rule_id: Some("bash.hard_deny"),
            approval: None,
            status: None,
            payload: br#"{"action":"deny"}"#,
            format: 1,
            who: Who::default(),
        };
        (log_id, fields)
    }

    #[test]
    fn documented_test_vector_holds() {
        let (log_id, fields) = vector();
        let fields = EventFields {
            log_id: &log_id,
            ..fields
        };
        let genesis = genesis(&log_id, "gavel test", 1);
        let leaf = fields.leaf_hash();
        let chain = link(&genesis, &leaf);
        assert_eq!(
            hex(&genesis),
            "c80793bf43a6d677a08a28b17d4679442a115377fb38c0b36a966b50d0d626c3"
        );
        assert_eq!(
            hex(&leaf),
            "042b741e4012f54735311c9ebd71a1941cf25f8a3ab3b277ca16df6dd7c1bcb0"
        );
        assert_eq!(
            hex(&chain),
            "6853a4bacd97ec490b5b6d3976b0d095fe344fbd7c18487d13f0bfe1b8ed3064"
        );
    }

    /// The format-2 worked example in docs/record-format.md: the same row
    /// with provenance columns, in a log created at format 2.
    #[test]
    fn documented_v2_test_vector_holds() {
        let (log_id, fields) = vector();
        let fields = EventFields {
            log_id: &log_id,
            format: 2,
            who: Who {
                user: Some("alice"),
                host: Some("build-01"),
                client: Some("claude-code"),
                session: Some("s-1"),
                agent: None,
            },
            ..fields
        };
        let genesis = genesis(&log_id, "gavel test", 2);
        let leaf = fields.leaf_hash();
        let chain = link(&genesis, &leaf);
        assert_eq!(
            hex(&genesis),
            "c8c0fe9843da9141a70a4c7bebc261bb286c0541cc0b1a149661ae1d1c03cd9b"
        );
        assert_eq!(
            hex(&leaf),
            "3a1708bf343a66c0b28716a8ca386fc9f7ece440710d551b1b9f344410855657"
        );
        assert_eq!(
            hex(&chain),
            "d052c97b551f5b1cce6466b5213d27c79079816670faac753782a2e4fdb48e30"
        );
        // Format 1 hashes no provenance: the same row under format 1 is the v1 vector's leaf.
        let v1 = EventFields {
            format: 1,
            ..fields
        };
        assert_eq!(
            hex(&v1.leaf_hash()),
            "042b741e4012f54735311c9ebd71a1941cf25f8a3ab3b277ca16df6dd7c1bcb0"
        );
    }

    /// The leaf data a receipt carries hashes to the leaf, and reads back
    /// to the very fields; a cut, an extra byte or a bad option byte does not read.
    #[test]
    fn leaf_data_round_trips() {
        let (log_id, base) = vector();
        for format in [1, 2] {
            let who = if format == 2 {
                Who {
                    user: Some("alice"),
                    agent: Some("reviewer"),
                    ..Who::default()
                }
            } else {
                Who::default()
            };
            let fields = EventFields {
                log_id: &log_id,
                format,
                who,
                ..base
            };
            let data = fields.encode();
            assert_eq!(crate::checkpoint::leaf_hash(&data), fields.leaf_hash());
            let decoded = decode(&data).unwrap();
            assert_eq!(decoded.fields(), fields);
            assert!(decode(&data[..data.len() - 1]).is_err());
            let mut longer = data.clone();
            longer.push(0);
            assert!(decode(&longer).unwrap_err().contains("follow the payload"));
        }
        let mut data = EventFields {
            log_id: &log_id,
            ..base
        }
        .encode();
        // The `tool` option byte, right after the call id: the tag, seq,
        // log id, time, kind ("decision") and call id ("call-1") before it.
        let at = (8 + 14) + 8 + (8 + 16) + 8 + (8 + 8) + (8 + 6);
        assert_eq!(data[at], 1);
        data[at] = 2;
        assert!(decode(&data).unwrap_err().contains("`tool`"));
    }

    #[test]
    fn every_provenance_column_changes_a_v2_leaf() {
        let (log_id, base) = vector();
        let base = EventFields {
            log_id: &log_id,
            format: 2,
            ..base
        };
        let who = Who::default();
        let variants = [
            Who {
                user: Some("a"),
                ..who
            },
            Who {
                host: Some("a"),
                ..who
            },
            Who {
                client: Some("a"),
                ..who
            },
            Who {
                session: Some("a"),
                ..who
            },
            Who {
                agent: Some("a"),
                ..who
            },
        ];
        let mut seen = std::collections::BTreeSet::new();
        seen.insert(base.leaf_hash());
        for who in variants {
            assert!(
                seen.insert(EventFields { who, ..base }.leaf_hash()),
                "{who:?}"
            );
        }
    }

    #[test]
    fn every_field_changes_the_leaf() {
        let (log_id, base) = vector();
        let base = EventFields {
            log_id: &log_id,
            ..base
        };
        let other_id = [9u8; 16];
        let variants = [
            EventFields { seq: 2, ..base },
            EventFields {
                log_id: &other_id,
                ..base
            },
            EventFields { ts_us: 1, ..base },
            EventFields {
                kind: "request",
                ..base
            },
            EventFields {
                call_id: "call-2",
                ..base
            },
            EventFields { tool: None, ..base },
            EventFields {
                action: Some("allow"),
                ..base
            },
            EventFields {
                rule_id: Some("x"),
                ..base
            },
            EventFields {
                approval: Some(""),
                ..base
            },
            EventFields {
                status: Some("failed"),
                ..base
            },
            EventFields {
                payload: b"{}",
                ..base
            },
        ];
        for variant in variants {
            assert_ne!(variant.leaf_hash(), base.leaf_hash(), "{variant:?}");
        }
    }

    #[test]
    fn field_boundaries_cannot_shift() {
        let (log_id, base) = vector();
        let a = EventFields {
            log_id: &log_id,
            call_id: "ab",
            tool: Some("c"),
            ..base
        };
        let b = EventFields {
            log_id: &log_id,
            call_id: "a",
            tool: Some("bc"),
            ..base
        };
        assert_ne!(a.leaf_hash(), b.leaf_hash());
    }
}
