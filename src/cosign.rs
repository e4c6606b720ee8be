//! What the central key signs, and the central log's leaves: the C2SP
//! `tlog-cosignature` (cosignature/v1) over a host's checkpoint, and the
//! cut note that marks where retention cut a log. Pure: no I/O.
//!
//! A cosignature is a note signature line by the central key over
//!
//! ```text
//! "cosignature/v1\ntime <unix seconds>\n" ‖ the checkpoint body (with its final newline)
//! ```
//!
//! written `— <name> base64(key id[4] ‖ timestamp[8, big-endian] ‖ Ed25519 signature[64])`,
//! where the key id is the first 4 bytes of `SHA-256(name ‖ 0x0A ‖ 0x04 ‖ public key)`
//! (signature type 0x04 of C2SP signed-note). It says: the central store
//! verified this checkpoint's rows and accepted them at that time.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use sha2::{Digest as _, Sha256};

use crate::chain::Hash;
use crate::checkpoint::{self, Checkpoint, SigningKey, VerifierKey};

/// The signature type byte of a cosignature/v1 key in C2SP signed-note.
const COSIGNATURE_V1: u8 = 0x04;

/// Domain tag of a central log leaf.
const CENTRAL_LEAF_TAG: &[u8] = b"gavel/central/v1";

/// The cosignature key id of a key: `SHA-256(name ‖ 0x0A ‖ 0x04 ‖ key)[..4]`.
pub fn key_id(name: &str, public: &[u8; 32]) -> [u8; 4] {
    let mut h = Sha256::new();
    h.update(name.as_bytes());
    h.update([0x0A, COSIGNATURE_V1]);
    h.update(public);
    let digest = h.finalize();
    [digest[0], digest[1], digest[2], digest[3]]
}

/// The message a cosignature signs.
fn message(body: &str, time: u64) -> String {
    format!("cosignature/v1\ntime {time}\n{body}")
}

/// The body (text before the blank line, with its final newline) of a signed note.
pub fn note_body(note: &str) -> Option<&str> {
    note.rfind("\n\n").map(|at| &note[..at + 1])
}

/// The cosignature line (ending in a newline) by `key` over a checkpoint `body`, at `time`.
pub fn cosign(key: &SigningKey, body: &str, time: u64) -> String {
    let signature = key.sign_bytes(message(body, time).as_bytes());
    let mut blob = Vec::with_capacity(76);
    blob.extend_from_slice(&key_id(key.name(), &key.public_bytes()));
    blob.extend_from_slice(&time.to_be_bytes());
    blob.extend_from_slice(&signature);
    format!("\u{2014} {} {}\n", key.name(), BASE64.encode(blob))
}

/// Why a cosignature does not verify.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CosignatureError {
    #[error("cosignature line is malformed")]
    Malformed,
    #[error("cosignature is by `{found}`, not by the central key `{expected}`")]
    OtherKey { found: String, expected: String },
    #[error("cosignature does not verify over the checkpoint")]
    BadSignature,
}

/// Checks a cosignature line over a checkpoint `body`; returns its time.
pub fn verify(verifier: &VerifierKey, body: &str, line: &str) -> Result<u64, CosignatureError> {
    let rest = line
        .trim_end_matches('\n')
        .strip_prefix("\u{2014} ")
        .ok_or(CosignatureError::Malformed)?;
    let (name, b64) = rest.split_once(' ').ok_or(CosignatureError::Malformed)?;
    let blob = BASE64
        .decode(b64)
        .map_err(|_| CosignatureError::Malformed)?;
    if blob.len() != 76 {
        return Err(CosignatureError::Malformed);
    }
    let expected_id = key_id(verifier.name(), &verifier.public_bytes());
    if name != verifier.name() || blob[..4] != expected_id {
        return Err(CosignatureError::OtherKey {
            found: name.to_owned(),
            expected: verifier.name().to_owned(),
        });
    }
    verify_signature(verifier, body, &blob[4..]).ok_or(CosignatureError::BadSignature)
}

/// Checks the part of a cosignature after its key id (the 8-byte time,
/// then the signature) over a checkpoint `body`; its time when it verifies.
pub fn verify_signature(verifier: &VerifierKey, body: &str, signed: &[u8]) -> Option<u64> {
    let (time, signature) = signed.split_first_chunk::<8>()?;
    let time = u64::from_be_bytes(*time);
    verifier
        .verify_bytes(message(body, time).as_bytes(), signature)
        .then_some(time)
}

/// A central log leaf: `SHA-256(0x00 ‖ lp("gavel/central/v1") ‖ lp(note))`,
/// `lp` being an 8-byte big-endian length prefix.
pub fn central_leaf(note: &str) -> Hash {
    let mut h = Sha256::new();
    h.update([0u8]);
    h.update((CENTRAL_LEAF_TAG.len() as u64).to_be_bytes());
    h.update(CENTRAL_LEAF_TAG);
    h.update((note.len() as u64).to_be_bytes());
    h.update(note.as_bytes());
    h.finalize().into()
}

/// The extension line of a cut note. A cut note is a C2SP checkpoint note
/// of the host's log (its origin, the cut size, the Merkle root of the
/// dropped rows) with this one extension line, `gavel-cut <base64 chain>`,
/// signed by the central key.
const CUT_LINE: &str = "gavel-cut ";

/// What a cut note says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CutMark {
    /// The log's origin, the cut size and the root of rows 1..cut.
    pub checkpoint: Checkpoint,
    /// The chain value after the last dropped row.
    pub chain: Hash,
}

/// Signs a cut note with the central key.
pub fn sign_cut_note(mark: &CutMark, key: &SigningKey) -> String {
    let body = format!(
        "{}{CUT_LINE}{}\n",
        mark.checkpoint.body(),
        BASE64.encode(mark.chain)
    );
    key.sign_text(&body)
}

/// Opens a cut note: the central key's signature, then what it marks.
pub fn open_cut_note(note: &str, key: &VerifierKey) -> Result<CutMark, String> {
    let checkpoint = checkpoint::open(note, key).map_err(|e| e.to_string())?;
    let chain = note
        .split("\n\n")
        .next()
        .unwrap_or_default()
        .lines()
        .find_map(|line| line.strip_prefix(CUT_LINE))
        .and_then(|b64| BASE64.decode(b64).ok())
        .and_then(|bytes| <Hash>::try_from(bytes.as_slice()).ok())
        .ok_or_else(|| format!("the note has no `{}` line", CUT_LINE.trim()))?;
    Ok(CutMark { checkpoint, chain })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cosignature_verifies_and_any_change_breaks_it() {
        let key = SigningKey::from_seed("central.example", &[7u8; 32]).unwrap();
        let body = "gavel/00\n3\nNmQuc8JUCrEh46a/lUWwokmCzYMOsT080Z3jzmwCHsE=\n";
        let line = cosign(&key, body, 1_700_000_000);
        assert!(line.starts_with("\u{2014} central.example "));
        assert_eq!(verify(&key.verifier(), body, &line), Ok(1_700_000_000));
        let other_body = body.replace('3', "4");
        assert_eq!(
            verify(&key.verifier(), &other_body, &line),
            Err(CosignatureError::BadSignature)
        );
        let other = SigningKey::from_seed("central.example", &[8u8; 32]).unwrap();
        assert!(matches!(
            verify(&other.verifier(), body, &line),
            Err(CosignatureError::OtherKey { .. })
        ));
        assert_eq!(
            verify(&key.verifier(), body, "— central.example AAAA\n"),
            Err(CosignatureError::Malformed)
        );
    }

    #[test]
    fn note_body_is_the_text_before_the_signatures() {
        assert_eq!(note_body("o\n1\nR\n\n— k sig\n"), Some("o\n1\nR\n"));
        assert_eq!(note_body("no blank line\n"), None);
    }
}
