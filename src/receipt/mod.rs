//! Receipts (docs/receipts.md): one file that proves one call with no
//! database. It holds the call's chained rows as leaf data, each with an
//! RFC 6962 inclusion proof into a signed (and possibly cosigned)
//! checkpoint, as C2SP `tlog-proof@v1` texts; [`verify`] checks one
//! against the keys a [`Trust`] names. Reading and checking are pure;
//! [`make`] builds one from a store.

mod make;
mod trust;

pub use make::{CosignedNote, MakeError, cosigned_path, file_name, make, read_cosigned, write_all};
pub use trust::{SignatureProblem, Signer, Trust, Verified};

use serde::Serialize;

use crate::chain::{DecodedEvent, decode};
use crate::checkpoint::{Checkpoint, leaf_hash, note_signatures};
use crate::inclusion::{TLOG_PROOF_V1, TlogProof, root_from_inclusion};

/// The first line of a receipt.
pub const RECEIPT_V1: &str = "gavel-receipt@v1";

/// A receipt: the call's id and one proof per chained row of the call, in
/// seq order, each carrying the row's leaf data as its `extra`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Receipt {
    pub call_id: String,
    pub proofs: Vec<TlogProof>,
}

/// A receipt's reference, handed out with a call's answer (`run --json`,
/// `serve`, `gavel mcp`): which call, in which log, from which leaf, and
/// the checkpoint (size, hex root) covering it when there is one yet.
/// `gavel receipt CALL_ID` gives the full proof.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Reference {
    pub call_id: String,
    pub log: String,
    pub index: u64,
    #[serde(with = "covering", skip_serializing_if = "Option::is_none", default)]
    pub checkpoint: Option<(u64, String)>,
}

/// A reference's checkpoint as `{"size": N, "root": "hex"}`.
mod covering {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Serialize, Deserialize)]
    struct Covering {
        size: u64,
        root: String,
    }

    pub fn serialize<S: Serializer>(
        value: &Option<(u64, String)>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        value
            .as_ref()
            .map(|(size, root)| Covering {
                size: *size,
                root: root.clone(),
            })
            .serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<(u64, String)>, D::Error> {
        Ok(Option::<Covering>::deserialize(d)?.map(|c| (c.size, c.root)))
    }
}

/// What is wrong with a receipt, by kind (stable, for the conformance suite).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Problem {
    /// Not a receipt by the grammar (the element is the line).
    Malformed,
    /// A row's leaf data does not read as `enc1` or `enc2`.
    LeafData,
    /// A row of another call.
    CallMismatch,
    /// A proof's index is not its row's seq − 1.
    IndexMismatch,
    /// Rows not in increasing seq order.
    Order,
    /// A checkpoint note that is not well framed or whose body is invalid.
    CheckpointMalformed,
    /// A checkpoint of another log than the row's.
    OriginMismatch,
    /// The proof does not lead from the row's leaf to the checkpoint's root.
    Inclusion,
    /// A signature line by a key the verifier was not given.
    UnknownSigner,
    /// A signature line that does not verify.
    Signature,
    /// Every signature verified, but not the ones the policy needs.
    Quorum,
}

impl Problem {
    pub fn as_str(self) -> &'static str {
        match self {
            Problem::Malformed => "malformed",
            Problem::LeafData => "leaf_data",
            Problem::CallMismatch => "call_mismatch",
            Problem::IndexMismatch => "index_mismatch",
            Problem::Order => "order",
            Problem::CheckpointMalformed => "checkpoint_malformed",
            Problem::OriginMismatch => "origin_mismatch",
            Problem::Inclusion => "inclusion",
            Problem::UnknownSigner => "unknown_signer",
            Problem::Signature => "signature",
            Problem::Quorum => "quorum",
        }
    }
}

/// The first thing wrong with a receipt: what, where (`line N`, `event N`,
/// `event N checkpoint`, `event N signature K`), and a sentence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("{element}: {detail}")]
pub struct Failure {
    pub problem: Problem,
    pub element: String,
    pub detail: String,
}

fn fail(problem: Problem, element: impl Into<String>, detail: impl Into<String>) -> Failure {
    Failure {
        problem,
        element: element.into(),
        detail: detail.into(),
    }
}

fn at_line(line: usize, detail: impl Into<String>) -> Failure {
    fail(Problem::Malformed, format!("line {line}"), detail)
}

impl Receipt {
    /// The receipt's text: the header, then each proof.
    pub fn to_text(&self) -> String {
        let mut text = format!(
            "{RECEIPT_V1}\ncall {}\nevents {}\n\n",
            json_string(&self.call_id),
            self.proofs.len()
        );
        for proof in &self.proofs {
            text.push_str(&proof.to_text());
        }
        text
    }

    /// Reads a receipt, strictly (docs/receipts.md, "The grammar"); the
    /// first line that breaks it is named. Checks nothing cryptographic.
    pub fn parse(bytes: &[u8]) -> Result<Self, Failure> {
        let text = std::str::from_utf8(bytes).map_err(|e| {
            let line = 1 + bytes[..e.valid_up_to()]
                .iter()
                .filter(|&&b| b == b'\n')
                .count();
            at_line(line, "not UTF-8")
        })?;
        if let Some(at) = text.find(|c: char| c.is_control() && c != '\n') {
            let line = 1 + text[..at].matches('\n').count();
            return Err(at_line(line, "a control character other than a line feed"));
        }
        let Some(body) = text.strip_suffix('\n') else {
            let line = 1 + text.matches('\n').count();
            return Err(at_line(line, "the receipt does not end with a line feed"));
        };
        let lines: Vec<&str> = body.split('\n').collect();
        let line = |n: usize| lines.get(n - 1).copied();
        if line(1) != Some(RECEIPT_V1) {
            return Err(at_line(1, format!("not `{RECEIPT_V1}`")));
        }
        let call_id = line(2)
            .and_then(|l| l.strip_prefix("call "))
            .and_then(|json| {
                let id: String = serde_json::from_str(json).ok()?;
                (json_string(&id) == json).then_some(id)
            })
            .ok_or_else(|| at_line(2, "not `call \"<id>\"` (a JSON string, as gavel writes it)"))?;
        let count = line(3)
            .and_then(|l| l.strip_prefix("events "))
            .filter(|n| is_decimal(n) && *n != "0")
            .and_then(|n| n.parse::<usize>().ok())
            .ok_or_else(|| at_line(3, "not `events N` (N ≥ 1, decimal, no leading zero)"))?;
        if line(4) != Some("") {
            return Err(at_line(4, "not the blank line after the header"));
        }
        let mut n = 5;
        let mut proofs = Vec::new();
        for _ in 0..count {
            let start = n;
            if line(n) != Some(TLOG_PROOF_V1) {
                return Err(at_line(n, format!("not `{TLOG_PROOF_V1}`")));
            }
            n += 1;
            if !line(n).is_some_and(|l| l.starts_with("extra ")) {
                return Err(at_line(n, "not `extra <base64 leaf data>`"));
            }
            // The proof's lines, then the note's body, then its signature lines.
            while line(n).is_some_and(|l| !l.is_empty()) {
                n += 1;
            }
            if line(n).is_none() {
                return Err(at_line(n, "the receipt ends inside a proof"));
            }
            n += 1;
            if line(n).is_none_or(str::is_empty) {
                return Err(at_line(n, "no checkpoint after the proof"));
            }
            while line(n).is_some_and(|l| !l.is_empty()) {
                n += 1;
            }
            if line(n).is_none() {
                return Err(at_line(
                    n,
                    "the checkpoint has no blank line before its signatures",
                ));
            }
            n += 1;
            if !line(n).is_some_and(|l| l.starts_with("\u{2014} ")) {
                return Err(at_line(n, "the checkpoint has no signature line"));
            }
            while line(n).is_some_and(|l| l.starts_with("\u{2014} ")) {
                n += 1;
            }
            let chunk = lines[start - 1..n - 1].join("\n") + "\n";
            let proof =
                TlogProof::parse(&chunk).map_err(|e| at_line(start - 1 + e.line, e.problem))?;
            proofs.push(proof);
        }
        if n <= lines.len() {
            return Err(at_line(
                n,
                format!("more than the {count} events the header says"),
            ));
        }
        Ok(Self { call_id, proofs })
    }
}

/// Who signed a checkpoint: each signer's label, and a cosignature's time.
pub type Signers = Vec<(String, Option<u64>)>;

/// A receipt that verified: the call as recorded, and its checkpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checked {
    pub call_id: String,
    pub events: Vec<DecodedEvent>,
    /// The checkpoint of the first proof (each proof was checked against its own).
    pub checkpoint: Checkpoint,
    pub signers: Signers,
}

/// Checks a receipt alone: its grammar, then event by event its leaf data,
/// call, index and order, its checkpoint note, origin, inclusion proof,
/// every signature line, and the trust rule, in that order; the first
/// failure is returned.
pub fn verify(bytes: &[u8], trust: &Trust) -> Result<Checked, Failure> {
    let receipt = Receipt::parse(bytes)?;
    let mut events: Vec<DecodedEvent> = Vec::new();
    let mut first: Option<(Checkpoint, Signers)> = None;
    for (i, proof) in receipt.proofs.iter().enumerate() {
        let event = format!("event {}", i + 1);
        let data = proof.extra.as_deref().unwrap_or_default();
        let row = decode(data).map_err(|e| fail(Problem::LeafData, &event, e))?;
        if row.call_id != receipt.call_id {
            return Err(fail(
                Problem::CallMismatch,
                &event,
                format!("row {} is of call `{}`", row.seq, row.call_id),
            ));
        }
        if row.seq.checked_sub(1) != Some(proof.index) {
            return Err(fail(
                Problem::IndexMismatch,
                &event,
                format!("index {} is not row {}'s (seq − 1)", proof.index, row.seq),
            ));
        }
        if let Some(before) = events.last()
            && row.seq <= before.seq
        {
            return Err(fail(
                Problem::Order,
                &event,
                format!("row {} after row {}", row.seq, before.seq),
            ));
        }
        let at_checkpoint = format!("{event} checkpoint");
        let (body, lines) = note_signatures(&proof.checkpoint)
            .map_err(|e| fail(Problem::CheckpointMalformed, &at_checkpoint, e.to_string()))?;
        let checkpoint = Checkpoint::from_body(body)
            .map_err(|e| fail(Problem::CheckpointMalformed, &at_checkpoint, e.to_string()))?;
        let origin = format!("gavel/{}", crate::digest::hex(&row.log_id));
        if checkpoint.origin != origin {
            return Err(fail(
                Problem::OriginMismatch,
                &at_checkpoint,
                format!(
                    "a checkpoint of `{}`, not of the row's log `{origin}`",
                    checkpoint.origin
                ),
            ));
        }
        let root = root_from_inclusion(proof.index, checkpoint.size, &leaf_hash(data), &proof.path);
        if root != Some(checkpoint.root) {
            return Err(fail(
                Problem::Inclusion,
                &event,
                format!(
                    "the proof does not lead from row {} to the root of the checkpoint of size {}",
                    row.seq, checkpoint.size
                ),
            ));
        }
        let verified = trust.check(body, &lines).map_err(|problem| match problem {
            SignatureProblem::Unknown { line, name } => fail(
                Problem::UnknownSigner,
                format!("{event} signature {line}"),
                format!("the signature line by `{name}` is by no key given"),
            ),
            SignatureProblem::Bad { line, name } => fail(
                Problem::Signature,
                format!("{event} signature {line}"),
                format!("the signature by `{name}` does not verify"),
            ),
            SignatureProblem::Quorum(why) => fail(Problem::Quorum, &at_checkpoint, why),
        })?;
        if first.is_none() {
            let signers = verified
                .iter()
                .map(|v| (trust.signers()[v.signer].label.clone(), v.cosigned_at))
                .collect();
            first = Some((checkpoint, signers));
        }
        events.push(row);
    }
    let Some((checkpoint, signers)) = first else {
        return Err(at_line(3, "no events"));
    };
    Ok(Checked {
        call_id: receipt.call_id,
        events,
        checkpoint,
        signers,
    })
}

impl Checked {
    /// The call as recorded, and what proves it, as JSON.
    pub fn to_json(&self) -> serde_json::Value {
        let events: Vec<serde_json::Value> = self.events.iter().map(event_json).collect();
        let signers: Vec<serde_json::Value> = self
            .signers
            .iter()
            .map(|(name, at)| serde_json::json!({"name": name, "cosigned_at": at}))
            .collect();
        serde_json::json!({
            "ok": true,
            "call_id": self.call_id,
            "checkpoint": {
                "origin": self.checkpoint.origin,
                "size": self.checkpoint.size,
                "root": crate::digest::hex(&self.checkpoint.root),
            },
            "signers": signers,
            "events": events,
        })
    }

    /// The same in lines of text: a summary, then each row.
    pub fn to_lines(&self) -> Vec<String> {
        let signers: Vec<String> = self
            .signers
            .iter()
            .map(|(name, at)| match at {
                None => format!("signed by {name}"),
                Some(time) => format!(
                    "cosigned by {name} at {}",
                    crate::archive::format_time(
                        i64::try_from(*time).unwrap_or(0).saturating_mul(1_000_000)
                    )
                ),
            })
            .collect();
        let kinds: Vec<&str> = self.events.iter().map(|e| e.kind.as_str()).collect();
        let mut lines = vec![format!(
            "ok: call {} proved: {} rows ({}) in the checkpoint of {} rows of {}, {}",
            self.call_id,
            self.events.len(),
            kinds.join(", "),
            self.checkpoint.size,
            self.checkpoint.origin,
            signers.join(", ")
        )];
        for e in &self.events {
            let mut head = format!(
                "  seq {}  {}  {}",
                e.seq,
                crate::archive::format_time(e.ts_us),
                e.kind
            );
            for value in [&e.tool, &e.action, &e.rule_id, &e.approval, &e.status]
                .into_iter()
                .flatten()
            {
                head.push_str("  ");
                head.push_str(value);
            }
            lines.push(head);
            lines.push(format!("    {}", String::from_utf8_lossy(&e.payload)));
        }
        lines
    }
}

/// One row as JSON: its columns, and its payload as JSON where it is JSON.
fn event_json(e: &DecodedEvent) -> serde_json::Value {
    let payload = serde_json::from_slice::<serde_json::Value>(&e.payload)
        .unwrap_or_else(|_| String::from_utf8_lossy(&e.payload).into_owned().into());
    serde_json::json!({
        "seq": e.seq,
        "ts": crate::archive::format_time(e.ts_us),
        "kind": e.kind,
        "tool": e.tool,
        "action": e.action,
        "rule_id": e.rule_id,
        "approval": e.approval,
        "status": e.status,
        "user": e.user,
        "host": e.host,
        "client": e.client,
        "session": e.session,
        "agent": e.agent,
        "payload": payload,
    })
}

/// A string as JSON, the way a receipt's `call` line writes it: `"` and
/// `\` escaped, and every control character (Unicode Cc): `\b \f \n \r
/// \t` for those, `\u00xx` (lowercase hex) for the others; the rest as is.
fn json_string(text: &str) -> String {
    let json = serde_json::Value::String(text.to_owned()).to_string();
    // serde_json escapes U+0000–U+001F; U+007F–U+009F are Cc too.
    if !json.contains(|c: char| c.is_control()) {
        return json;
    }
    json.chars()
        .map(|c| {
            if c.is_control() {
                format!("\\u{:04x}", c as u32)
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// ASCII digits, `0` or without a leading zero.
fn is_decimal(text: &str) -> bool {
    !text.is_empty()
        && text.bytes().all(|b| b.is_ascii_digit())
        && (text == "0" || !text.starts_with('0'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chain::{EventFields, Who};
    use crate::checkpoint::{SigningKey, merkle_root};
    use crate::inclusion::inclusion_proof;
    use proptest::prelude::*;

    /// A receipt of call `c` (rows 2 and 4 of a log of 5 rows), signed by
    /// a fixed key; and the trust that checks it.
    fn receipt() -> (String, Trust) {
        let key = SigningKey::from_seed("test", &[9u8; 32]).unwrap();
        let log_id = [7u8; 16];
        let rows: Vec<Vec<u8>> = (1..=5u64)
            .map(|seq| {
                let call = if seq % 2 == 0 { "c" } else { "other" };
                EventFields {
                    seq,
                    log_id: &log_id,
                    ts_us: 1_764_892_800_000_000 + seq as i64,
                    kind: if seq == 2 { "request" } else { "decision" },
                    call_id: call,
                    tool: Some("bash"),
                    action: (seq == 4).then_some("allow"),
                    rule_id: (seq == 4).then_some("bash.read_only"),
                    approval: None,
                    status: None,
                    payload: br#"{"command":"ls"}"#,
                    format: 2,
                    who: Who::default(),
                }
                .encode()
            })
            .collect();
        let leaves: Vec<_> = rows.iter().map(|r| leaf_hash(r)).collect();
        let checkpoint = Checkpoint {
            origin: format!("gavel/{}", crate::digest::hex(&log_id)),
            size: 5,
            root: merkle_root(&leaves),
        };
        let note = key.sign(&checkpoint).unwrap();
        let proofs = [1u64, 3]
            .iter()
            .map(|&index| TlogProof {
                extra: Some(rows[index as usize].clone()),
                index,
                path: inclusion_proof(&leaves, index).unwrap(),
                checkpoint: note.clone(),
            })
            .collect();
        let text = Receipt {
            call_id: "c".into(),
            proofs,
        }
        .to_text();
        (text, Trust::from_keys(vec![key.verifier()], None).unwrap())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// Whatever is inserted, removed or replaced anywhere in a receipt,
        /// it no longer verifies, and nothing panics on the way.
        #[test]
        fn no_edit_of_a_receipt_verifies(
            at in any::<prop::sample::Index>(),
            cut in 0usize..40,
            insert in prop::collection::vec(any::<u8>(), 0..8),
        ) {
            let (text, trust) = receipt();
            let bytes = text.as_bytes();
            let start = at.index(bytes.len());
            let end = (start + cut).min(bytes.len());
            let mut edited = bytes[..start].to_vec();
            edited.extend_from_slice(&insert);
            edited.extend_from_slice(&bytes[end..]);
            prop_assume!(edited != bytes);
            prop_assert!(verify(&edited, &trust).is_err());
        }
    }

    #[test]
    fn the_receipt_of_the_property_test_verifies() {
        let (text, trust) = receipt();
        let checked = verify(text.as_bytes(), &trust).unwrap();
        assert_eq!(checked.events.len(), 2);
        assert_eq!(checked.events[1].rule_id.as_deref(), Some("bash.read_only"));
    }

    /// Every call id reads back from its `call` line, control characters
    /// (C0 and C1) escaped, and another spelling of it is refused.
    #[test]
    fn call_lines_are_canonical_json() {
        for id in [
            "toolu_01",
            "a\"b\\c",
            "tab\there",
            "nl\nx",
            "c1\u{85}\u{9f}\u{7f}",
            "é/ü",
        ] {
            let line = json_string(id);
            assert!(!line.contains(|c: char| c.is_control()), "{line:?}");
            let receipt = Receipt {
                call_id: id.to_owned(),
                proofs: Vec::new(),
            };
            let text = receipt.to_text().replace("events 0", "events 1");
            // The header reads; the missing proof is what fails (line 5).
            let failure = Receipt::parse(text.as_bytes()).unwrap_err();
            assert_eq!(failure.element, "line 5", "{id:?}: {failure}");
        }
        assert_eq!(json_string("\u{85}"), "\"\\u0085\"");
        assert_eq!(json_string("\u{1f}\n"), "\"\\u001f\\n\"");
        let spelled = "gavel-receipt@v1\ncall \"\\u0061\"\nevents 1\n\n";
        assert_eq!(
            Receipt::parse(spelled.as_bytes()).unwrap_err().element,
            "line 2"
        );
    }

    #[test]
    fn receipt_file_names_never_collide() {
        assert_eq!(file_name("toolu_01"), "toolu_01.receipt");
        let slash = file_name("a/b");
        assert!(
            slash.starts_with("a_b-") && slash.ends_with(".receipt"),
            "{slash}"
        );
        assert_ne!(slash, file_name("a_b"));
        assert_ne!(file_name("a/b"), file_name("a:b"));
        assert!(file_name("..").starts_with("..-"));
        assert!(file_name("").starts_with("-"));
    }
}
