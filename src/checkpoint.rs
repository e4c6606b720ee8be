//! RFC 6962 Merkle tree hashes and signed checkpoints of the audit log.
//!
//! This module owns three things, all pure:
//!
//! - the RFC 6962 Merkle Tree Hash over a list of leaf hashes ([`leaf_hash`],
//!   [`MerkleBuilder`], [`merkle_root`]), computed in O(n) time and O(log n)
//!   memory so that a store can stream millions of rows through it;
//! - checkpoints in the C2SP `tlog-checkpoint` format ([`Checkpoint`]): an
//!   origin line, the tree size and the base64 root hash;
//! - Ed25519 signed notes in the C2SP `signed-note` format, with signer and
//!   verifier keys in the text forms of `golang.org/x/mod/sumdb/note`
//!   ([`SigningKey`], [`VerifierKey`], [`open`]).
//!
//! It knows nothing about SQLite, records or the CLI: what bytes make a leaf
//! is the store's business. The only file I/O is in the key helpers
//! [`write_keypair`], [`read_signing_key`] and [`read_verifier_key`].
//!
//! The formats are written down in `docs/checkpoints.md`, precisely enough for
//! a third party to verify a checkpoint without gavel.

use std::fmt;
use std::fs::{self, OpenOptions};
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use ed25519_dalek::Signer as _;
use sha2::{Digest as _, Sha256};

/// A SHA-256 output: a leaf hash, an interior node hash or a tree root.
pub type Hash = [u8; 32];

/// Algorithm byte of an Ed25519 key in the note key formats.
const ALG_ED25519: u8 = 0x01;
/// Every signature line starts with an em dash (U+2014) and a space.
const SIG_PREFIX: &str = "\u{2014} ";
/// Refuse notes with more signature lines than this (as the Go reference does).
const MAX_SIGNATURES: usize = 100;
/// Prefix of a signer key in text form.
const PRIVATE_PREFIX: &str = "PRIVATE+KEY+";

/// Everything that can go wrong building, signing, parsing or verifying a
/// checkpoint, or reading and writing its keys.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    /// The note or its checkpoint body does not follow the format.
    #[error("malformed checkpoint: {detail}")]
    Malformed {
        /// What is wrong, for a person.
        detail: String,
    },
    /// A signature line by the expected key is there but does not verify over
    /// the body: the body, or the signature, was changed after signing.
    #[error("checkpoint signature does not verify")]
    BadSignature,
    /// No signature line carries the expected key's name and key id.
    #[error("no signature by key `{name}` on the checkpoint")]
    NoMatchingSignature {
        /// Name of the verifier key that was looked for.
        name: String,
    },
    /// A key name, or a signer or verifier key in text form, is not valid.
    #[error("malformed key: {detail}")]
    KeyFormat {
        /// What is wrong, for a person.
        detail: String,
    },
    /// The checkpoint cannot be signed because its origin cannot stand on one
    /// line of a note.
    #[error("invalid checkpoint origin `{origin}`: {detail}")]
    InvalidOrigin {
        /// The origin as given.
        origin: String,
        /// What is wrong with it.
        detail: &'static str,
    },
    /// A key file (or its `.pub` companion) exists already; keys are never
    /// overwritten.
    #[error("key file `{}` already exists; refusing to overwrite it", path.display())]
    AlreadyExists {
        /// The file that is in the way.
        path: PathBuf,
    },
    /// Reading or writing a key file failed.
    #[error("i/o error on key file `{}`", path.display())]
    Io {
        /// The file being read or written.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// The operating system gave no randomness for a new key.
    #[error("cannot get randomness for a new key")]
    Random {
        /// The underlying error.
        #[source]
        source: getrandom::Error,
    },
}

fn malformed(detail: impl Into<String>) -> CheckpointError {
    CheckpointError::Malformed {
        detail: detail.into(),
    }
}

fn key_format(detail: impl Into<String>) -> CheckpointError {
    CheckpointError::KeyFormat {
        detail: detail.into(),
    }
}

// ---------------------------------------------------------------------------
// Merkle tree (RFC 6962 section 2.1)
// ---------------------------------------------------------------------------

/// RFC 6962 leaf hash: `SHA-256(0x00 ‖ data)`.
pub fn leaf_hash(data: &[u8]) -> Hash {
    let mut h = Sha256::new();
    h.update([0x00]);
    h.update(data);
    h.finalize().into()
}

/// RFC 6962 interior node hash: `SHA-256(0x01 ‖ left ‖ right)`.
pub(crate) fn node_hash(left: &Hash, right: &Hash) -> Hash {
    let mut h = Sha256::new();
    h.update([0x01]);
    h.update(left);
    h.update(right);
    h.finalize().into()
}

/// Streaming RFC 6962 Merkle Tree Hash: push leaf hashes in order, ask for the
/// root at any point.
///
/// It keeps the roots of the perfect subtrees that make up the tree so far,
/// one per set bit of the leaf count, largest (leftmost) first: O(log n)
/// memory, amortised O(1) hashes per push, O(log n) hashes per [`root`].
///
/// [`root`]: MerkleBuilder::root
#[derive(Debug, Clone, Default)]
pub struct MerkleBuilder {
    count: u64,
    /// Roots of complete subtrees of strictly decreasing size 2^k, matching the
    /// set bits of `count` from the most significant down.
    subtrees: Vec<Hash>,
}

impl MerkleBuilder {
    /// An empty tree.
    pub fn new() -> Self {
        Self::default()
    }

    /// Append the next leaf hash (see [`leaf_hash`]).
    pub fn push(&mut self, leaf: Hash) {
        self.push_completing(leaf, u32::MAX);
    }

    /// Append the next leaf hash; when it completes an aligned perfect
    /// subtree of 2^`level` leaves (the leaf count becomes a multiple of
    /// 2^`level`), that subtree's root, at no extra hashing.
    pub fn push_completing(&mut self, leaf: Hash, level: u32) -> Option<Hash> {
        let mut node = leaf;
        let mut completed = (level == 0).then_some(leaf);
        // Each trailing one bit of the old count is a complete subtree of the
        // same size as `node` standing just left of it: merge them, like a
        // carry in binary addition.
        let mut carry = self.count;
        let mut merged = 0;
        while carry & 1 == 1 {
            match self.subtrees.pop() {
                Some(left) => node = node_hash(&left, &node),
                // Unreachable: there is one subtree per set bit of `count`.
                None => break,
            }
            merged += 1;
            if merged == level {
                completed = Some(node);
            }
            carry >>= 1;
        }
        self.subtrees.push(node);
        self.count += 1;
        completed
    }

    /// A tree of `count` leaves from its frontier: the roots of its perfect
    /// subtrees, largest first, one per set bit of `count` (what
    /// [`MerkleBuilder::frontier`] gives). `None` when the numbers disagree.
    pub fn from_frontier(count: u64, frontier: Vec<Hash>) -> Option<Self> {
        (count.count_ones() as usize == frontier.len()).then_some(Self {
            count,
            subtrees: frontier,
        })
    }

    /// The roots of the perfect subtrees that make up the tree so far,
    /// largest (leftmost) first: all that is needed to extend it.
    pub fn frontier(&self) -> &[Hash] {
        &self.subtrees
    }

    /// Number of leaves pushed so far.
    pub fn len(&self) -> u64 {
        self.count
    }

    /// Whether no leaf has been pushed yet.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The Merkle Tree Hash of the leaves pushed so far; for no leaves, the
    /// SHA-256 of the empty string, as RFC 6962 defines it.
    ///
    /// Folding the subtrees from the right gives exactly RFC 6962's split at
    /// the largest power of two smaller than n: the leftmost subtree is that
    /// power of two and the rest is the tree of the remaining leaves.
    pub fn root(&self) -> Hash {
        let mut rest = self.subtrees.iter().rev();
        let Some(last) = rest.next() else {
            return Sha256::digest([]).into();
        };
        rest.fold(*last, |right, left| node_hash(left, &right))
    }
}

/// RFC 6962 Merkle Tree Hash over already-computed leaf hashes.
pub fn merkle_root(leaves: &[Hash]) -> Hash {
    let mut builder = MerkleBuilder::new();
    for leaf in leaves {
        builder.push(*leaf);
    }
    builder.root()
}

// ---------------------------------------------------------------------------
// Checkpoints (C2SP tlog-checkpoint)
// ---------------------------------------------------------------------------

/// A tree head: the log's origin, its size and the Merkle root over its first
/// `size` leaves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    /// Identifies the log; the first line of the note body.
    pub origin: String,
    /// Number of leaves in the tree.
    pub size: u64,
    /// RFC 6962 Merkle Tree Hash over those leaves.
    pub root: Hash,
}

impl Checkpoint {
    /// The note body: `"<origin>\n<size>\n<base64 std root>\n"`.
    pub fn body(&self) -> String {
        format!(
            "{}\n{}\n{}\n",
            self.origin,
            self.size,
            BASE64.encode(self.root)
        )
    }

    /// Parse a checkpoint body (the note text before the blank line): origin
    /// line, decimal size without leading zeros, base64 32-byte root, then
    /// any number of non-empty extension lines, which are ignored.
    pub fn from_body(body: &str) -> Result<Self, CheckpointError> {
        let Some(body) = body.strip_suffix('\n') else {
            return Err(malformed("body does not end with a newline"));
        };
        if body.chars().any(|c| c < ' ' && c != '\n') {
            return Err(malformed("body contains a control character"));
        }
        let mut lines = body.split('\n');
        let origin = lines.next().unwrap_or_default();
        if origin.is_empty() {
            return Err(malformed("empty origin line"));
        }
        let size = parse_size(lines.next().ok_or_else(|| malformed("no size line"))?)?;
        let root = parse_root(lines.next().ok_or_else(|| malformed("no root hash line"))?)?;
        if lines.any(str::is_empty) {
            return Err(malformed("empty extension line"));
        }
        Ok(Checkpoint {
            origin: origin.to_owned(),
            size,
            root,
        })
    }

    fn check_origin(&self) -> Result<(), CheckpointError> {
        let invalid = |detail| {
            Err(CheckpointError::InvalidOrigin {
                origin: self.origin.clone(),
                detail,
            })
        };
        if self.origin.is_empty() {
            return invalid("it is empty");
        }
        if self.origin.chars().any(char::is_control) {
            return invalid("it contains a newline or another control character");
        }
        Ok(())
    }
}

fn parse_size(line: &str) -> Result<u64, CheckpointError> {
    if line.is_empty() || !line.bytes().all(|b| b.is_ascii_digit()) {
        return Err(malformed(format!("size `{line}` is not a decimal number")));
    }
    if line.len() > 1 && line.starts_with('0') {
        return Err(malformed(format!("size `{line}` has a leading zero")));
    }
    line.parse()
        .map_err(|_| malformed(format!("size `{line}` does not fit in 64 bits")))
}

fn parse_root(line: &str) -> Result<Hash, CheckpointError> {
    let bytes = BASE64
        .decode(line)
        .map_err(|e| malformed(format!("root hash `{line}` is not standard base64: {e}")))?;
    Hash::try_from(bytes.as_slice())
        .map_err(|_| malformed(format!("root hash is {} bytes, not 32", bytes.len())))
}

// ---------------------------------------------------------------------------
// Keys (golang.org/x/mod/sumdb/note text forms)
// ---------------------------------------------------------------------------

/// A key name: non-empty, no Unicode white space, no `+`, no control
/// characters (the note spec's rule, plus the last, which a note could not
/// carry anyway).
fn check_name(name: &str) -> Result<(), CheckpointError> {
    if name.is_empty() {
        return Err(key_format("key name is empty"));
    }
    if name
        .chars()
        .any(|c| c.is_whitespace() || c.is_control() || c == '+')
    {
        return Err(key_format(format!(
            "key name `{name}` contains white space, a control character or `+`"
        )));
    }
    Ok(())
}

/// Key id: the first 4 bytes of `SHA-256(name ‖ 0x0A ‖ 0x01 ‖ public key)`.
fn key_id(name: &str, public: &ed25519_dalek::VerifyingKey) -> [u8; 4] {
    let mut h = Sha256::new();
    h.update(name.as_bytes());
    h.update([b'\n', ALG_ED25519]);
    h.update(public.as_bytes());
    let digest = h.finalize();
    [digest[0], digest[1], digest[2], digest[3]]
}

/// Parse the 8-hex-digit key id of a key's text form.
fn parse_key_id(hex: &str) -> Result<[u8; 4], CheckpointError> {
    // from_str_radix alone would accept a leading `+`.
    if hex.len() != 8 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(key_format(format!("key id `{hex}` is not 8 hex digits")));
    }
    u32::from_str_radix(hex, 16)
        .map(u32::to_be_bytes)
        .map_err(|_| key_format(format!("key id `{hex}` is not 8 hex digits")))
}

/// Decode `base64(0x01 ‖ 32 bytes)` of a key's text form.
fn parse_key_material(b64: &str) -> Result<[u8; 32], CheckpointError> {
    let bytes = BASE64
        .decode(b64)
        .map_err(|e| key_format(format!("key material is not standard base64: {e}")))?;
    match bytes.split_first() {
        Some((&ALG_ED25519, rest)) => <[u8; 32]>::try_from(rest).map_err(|_| {
            key_format(format!(
                "Ed25519 key material is {} bytes, not 32",
                rest.len()
            ))
        }),
        Some((alg, _)) => Err(key_format(format!(
            "unsupported key algorithm {alg:#04x} (only 0x01, Ed25519)"
        ))),
        None => Err(key_format("key material is empty")),
    }
}

fn encode_key_material(key: &[u8; 32]) -> String {
    let mut bytes = [0u8; 33];
    bytes[0] = ALG_ED25519;
    bytes[1..].copy_from_slice(key);
    BASE64.encode(bytes)
}

/// A named Ed25519 signing key for checkpoints.
///
/// `Debug` shows the name and key id, never the secret.
#[derive(Clone)]
pub struct SigningKey {
    name: String,
    key: ed25519_dalek::SigningKey,
}

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SigningKey")
            .field("name", &self.name)
            .field("key_id", &format_args!("{:08x}", self.key_id()))
            .finish_non_exhaustive()
    }
}

impl SigningKey {
    /// A new key named `name` from the operating system's random source.
    ///
    /// The name must be non-empty and contain no white space, control
    /// character or `+`; by convention it equals the checkpoint origin.
    pub fn generate(name: &str) -> Result<Self, CheckpointError> {
        check_name(name)?;
        let mut seed = [0u8; 32];
        getrandom::fill(&mut seed).map_err(|source| CheckpointError::Random { source })?;
        Self::from_seed(name, &seed)
    }

    /// The key named `name` with this 32-byte Ed25519 seed (RFC 8032 private
    /// key). Deterministic: for tests, examples and key import.
    pub fn from_seed(name: &str, seed: &[u8; 32]) -> Result<Self, CheckpointError> {
        check_name(name)?;
        Ok(SigningKey {
            name: name.to_owned(),
            key: ed25519_dalek::SigningKey::from_bytes(seed),
        })
    }

    /// The key's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The key id (see [`VerifierKey::key_id`]).
    pub fn key_id(&self) -> u32 {
        u32::from_be_bytes(key_id(&self.name, &self.key.verifying_key()))
    }

    /// The matching verifier key, to hand to whoever checks checkpoints.
    pub fn verifier(&self) -> VerifierKey {
        let key = self.key.verifying_key();
        VerifierKey {
            key_id: key_id(&self.name, &key),
            name: self.name.clone(),
            key,
        }
    }

    /// Sign a checkpoint: the signed note is the body, a blank line and the
    /// signature line `"— <name> <base64(key_id[4] ‖ sig[64])>\n"`.
    ///
    /// Fails only if the origin is empty or holds a newline or another control
    /// character, which would make a note that reads back as a different
    /// checkpoint.
    pub fn sign(&self, checkpoint: &Checkpoint) -> Result<String, CheckpointError> {
        checkpoint.check_origin()?;
        Ok(self.sign_text(&checkpoint.body()))
    }

    /// The raw Ed25519 signature of `message` (for cosignatures, which sign
    /// a message of their own; see `central::cosign`).
    pub fn sign_bytes(&self, message: &[u8]) -> [u8; 64] {
        self.key.sign(message).to_bytes()
    }

    /// The 32-byte Ed25519 public key.
    pub fn public_bytes(&self) -> [u8; 32] {
        self.key.verifying_key().to_bytes()
    }

    /// Sign any note text that ends in a newline (checked by the caller).
    pub(crate) fn sign_text(&self, text: &str) -> String {
        let signature = self.key.sign(text.as_bytes());
        let mut blob = [0u8; 68];
        blob[..4].copy_from_slice(&key_id(&self.name, &self.key.verifying_key()));
        blob[4..].copy_from_slice(&signature.to_bytes());
        format!(
            "{text}\n{SIG_PREFIX}{} {}\n",
            self.name,
            BASE64.encode(blob)
        )
    }

    /// The signer key text form of `golang.org/x/mod/sumdb/note`:
    /// `PRIVATE+KEY+<name>+<hex8 key id>+<base64(0x01 ‖ 32-byte seed)>`.
    pub fn to_text(&self) -> String {
        format!(
            "{PRIVATE_PREFIX}{}+{:08x}+{}",
            self.name,
            self.key_id(),
            encode_key_material(self.key.as_bytes())
        )
    }

    /// Parse the signer key text form (surrounding white space is ignored);
    /// the key id must match the name and key.
    pub fn from_text(s: &str) -> Result<Self, CheckpointError> {
        let s = s.trim();
        let rest = s
            .strip_prefix(PRIVATE_PREFIX)
            .ok_or_else(|| key_format("signer key does not start with `PRIVATE+KEY+`"))?;
        let mut parts = rest.splitn(3, '+');
        let (Some(name), Some(hex), Some(b64)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(key_format(
                "signer key is not `PRIVATE+KEY+<name>+<key id>+<key>`",
            ));
        };
        check_name(name)?;
        let id = parse_key_id(hex)?;
        let seed = parse_key_material(b64)?;
        let key = Self::from_seed(name, &seed)?;
        if key.key_id().to_be_bytes() != id {
            return Err(key_format(format!(
                "key id `{hex}` does not match signer key `{name}`"
            )));
        }
        Ok(key)
    }
}

/// A named Ed25519 public key that checks checkpoint signatures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifierKey {
    name: String,
    key_id: [u8; 4],
    key: ed25519_dalek::VerifyingKey,
}

impl VerifierKey {
    /// The key's name, as it appears on signature lines.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The key id: the first 4 bytes, big-endian, of
    /// `SHA-256(name ‖ 0x0A ‖ 0x01 ‖ public key)`.
    pub fn key_id(&self) -> u32 {
        u32::from_be_bytes(self.key_id)
    }

    /// The 32-byte Ed25519 public key.
    pub fn public_bytes(&self) -> [u8; 32] {
        self.key.to_bytes()
    }

    /// Whether `signature` is this key's Ed25519 signature of `message`
    /// (strict verification, as for notes).
    pub fn verify_bytes(&self, message: &[u8], signature: &[u8]) -> bool {
        ed25519_dalek::Signature::from_slice(signature)
            .is_ok_and(|s| self.key.verify_strict(message, &s).is_ok())
    }

    /// A verifier key from its name and 32-byte public key (checked as
    /// strictly as a key text's).
    pub fn from_parts(name: &str, public: &[u8; 32]) -> Result<Self, CheckpointError> {
        check_name(name)?;
        let key = strict_public_key(public)?;
        Ok(VerifierKey {
            name: name.to_owned(),
            key_id: key_id(name, &key),
            key,
        })
    }

    /// The key id's four bytes.
    pub fn key_id_bytes(&self) -> [u8; 4] {
        self.key_id
    }

    /// The verifier key text form of `golang.org/x/mod/sumdb/note`:
    /// `<name>+<hex8 key id>+<base64(0x01 ‖ 32-byte public key)>`.
    pub fn to_text(&self) -> String {
        format!(
            "{}+{:08x}+{}",
            self.name,
            self.key_id(),
            encode_key_material(self.key.as_bytes())
        )
    }

    /// Parse the verifier key text form (surrounding white space is ignored);
    /// the key id must match the name and key.
    pub fn from_text(s: &str) -> Result<Self, CheckpointError> {
        let s = s.trim();
        if s.starts_with(PRIVATE_PREFIX) {
            return Err(key_format(
                "this is a private signer key, not a verifier key",
            ));
        }
        let mut parts = s.splitn(3, '+');
        let (Some(name), Some(hex), Some(b64)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(key_format("verifier key is not `<name>+<key id>+<key>`"));
        };
        check_name(name)?;
        let id = parse_key_id(hex)?;
        let bytes = parse_key_material(b64)?;
        let key = strict_public_key(&bytes)?;
        if key_id(name, &key) != id {
            return Err(key_format(format!(
                "key id `{hex}` does not match verifier key `{name}`"
            )));
        }
        Ok(VerifierKey {
            name: name.to_owned(),
            key_id: id,
            key,
        })
    }
}

/// Decodes a public key as RFC 8032 (section 5.1.3) does, and refuses a
/// key no honest signer has: the 32 bytes must be the canonical encoding
/// of a point (its y below p = 2^255 - 19, and no sign bit on an x of 0:
/// decoding and encoding again gives the same bytes), and the point must
/// not be of small order (one of the 8 whose order divides 8, under which
/// any signature of the right form verifies for many messages).
/// `curve25519-dalek` alone reduces a y at or above p, so another byte
/// string would name the same key.
fn strict_public_key(bytes: &[u8; 32]) -> Result<ed25519_dalek::VerifyingKey, CheckpointError> {
    // y (the bytes, little-endian, top bit cleared) is at least p exactly
    // when it is p + 0 ... p + 18: 0xed ... 0xff, 30 bytes 0xff, then 0x7f.
    let y_at_least_p =
        bytes[0] >= 0xed && bytes[1..31].iter().all(|b| *b == 0xff) && bytes[31] & 0x7f == 0x7f;
    if y_at_least_p {
        return Err(key_format(
            "public key is not a canonical Ed25519 point encoding (its y is not below 2^255-19)",
        ));
    }
    let key = ed25519_dalek::VerifyingKey::from_bytes(bytes)
        .map_err(|_| key_format("public key is not a valid Ed25519 point"))?;
    // An x of 0 with the sign bit set (y = 1 or y = p - 1) decodes to a
    // point of small order, refused below.
    if key.is_weak() {
        return Err(key_format("public key is an Ed25519 point of small order"));
    }
    Ok(key)
}

// ---------------------------------------------------------------------------
// Signed notes (C2SP signed-note)
// ---------------------------------------------------------------------------

/// One parsed signature line.
struct SignatureLine<'a> {
    name: &'a str,
    key_id: [u8; 4],
    signature: Vec<u8>,
}

/// Split a signed note into its text (ending in its final newline) and its
/// signature lines, checking the framing the way the Go reference does.
fn split_note(note: &str) -> Result<(&str, Vec<SignatureLine<'_>>), CheckpointError> {
    if note.chars().any(|c| c < ' ' && c != '\n') {
        return Err(malformed("note contains a control character"));
    }
    let split = note
        .rfind("\n\n")
        .ok_or_else(|| malformed("no blank line before the signatures"))?;
    let (text, signatures) = (&note[..split + 1], &note[split + 2..]);
    let Some(signatures) = signatures.strip_suffix('\n') else {
        return Err(malformed(if signatures.is_empty() {
            "no signature lines"
        } else {
            "note does not end with a newline"
        }));
    };
    let mut lines = Vec::new();
    for line in signatures.split('\n') {
        if lines.len() == MAX_SIGNATURES {
            return Err(malformed(format!(
                "more than {MAX_SIGNATURES} signature lines"
            )));
        }
        lines.push(parse_signature_line(line)?);
    }
    Ok((text, lines))
}

fn parse_signature_line(line: &str) -> Result<SignatureLine<'_>, CheckpointError> {
    let rest = line
        .strip_prefix(SIG_PREFIX)
        .ok_or_else(|| malformed("signature line does not start with `— `"))?;
    let (name, b64) = rest
        .split_once(' ')
        .ok_or_else(|| malformed("signature line has no signature after the key name"))?;
    check_name(name).map_err(|_| malformed(format!("bad key name `{name}` on signature line")))?;
    let blob = BASE64
        .decode(b64)
        .map_err(|e| malformed(format!("signature by `{name}` is not standard base64: {e}")))?;
    if blob.len() < 5 {
        return Err(malformed(format!("signature by `{name}` is too short")));
    }
    Ok(SignatureLine {
        name,
        key_id: [blob[0], blob[1], blob[2], blob[3]],
        signature: blob[4..].to_vec(),
    })
}

/// Parse a signed note, check that a signature line by `verifier` (same name
/// and key id) verifies over the body, and parse the body into a
/// [`Checkpoint`].
///
/// Signature lines by other keys are allowed and ignored (cosigners). A line
/// by this key that does not verify is [`CheckpointError::BadSignature`];
/// no line by this key is [`CheckpointError::NoMatchingSignature`].
pub fn open(note: &str, verifier: &VerifierKey) -> Result<Checkpoint, CheckpointError> {
    Checkpoint::from_body(open_text(note, verifier)?)
}

/// Check a signed note's framing and its signature by `verifier`; return the
/// signed text (ending in its final newline).
fn open_text<'a>(note: &'a str, verifier: &VerifierKey) -> Result<&'a str, CheckpointError> {
    let (text, signatures) = split_note(note)?;
    let mut verified = false;
    for line in signatures
        .iter()
        .filter(|l| l.name == verifier.name && l.key_id == verifier.key_id)
    {
        let signature = ed25519_dalek::Signature::from_slice(&line.signature)
            .map_err(|_| CheckpointError::BadSignature)?;
        verifier
            .key
            .verify_strict(text.as_bytes(), &signature)
            .map_err(|_| CheckpointError::BadSignature)?;
        verified = true;
    }
    if verified {
        Ok(text)
    } else {
        Err(CheckpointError::NoMatchingSignature {
            name: verifier.name.clone(),
        })
    }
}

/// One signature line of a note: the key name, the 4-byte key id, and the
/// bytes after it (a signature, or a cosignature's time and signature).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoteSignature {
    pub name: String,
    pub key_id: [u8; 4],
    pub signature: Vec<u8>,
}

/// A well-framed note's signed text (ending in its final newline) and its
/// signature lines in order; nothing is verified.
pub fn note_signatures(note: &str) -> Result<(&str, Vec<NoteSignature>), CheckpointError> {
    let (text, lines) = split_note(note)?;
    Ok((
        text,
        lines
            .into_iter()
            .map(|l| NoteSignature {
                name: l.name.to_owned(),
                key_id: l.key_id,
                signature: l.signature,
            })
            .collect(),
    ))
}

/// Parse a signed note's body without checking any signature (for when no
/// verifier key is at hand). The note must still be well framed: a body, a
/// blank line and at least one well-formed signature line.
pub fn parse_unverified(note: &str) -> Result<Checkpoint, CheckpointError> {
    let (text, _) = split_note(note)?;
    Checkpoint::from_body(text)
}

// ---------------------------------------------------------------------------
// Key files
// ---------------------------------------------------------------------------

fn pub_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".pub");
    PathBuf::from(s)
}

fn create_new(path: &Path, mode: u32, contents: &str) -> Result<(), CheckpointError> {
    let io_err = |source: io::Error| {
        if source.kind() == io::ErrorKind::AlreadyExists {
            CheckpointError::AlreadyExists {
                path: path.to_owned(),
            }
        } else {
            CheckpointError::Io {
                path: path.to_owned(),
                source,
            }
        }
    };
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(mode);
    }
    #[cfg(not(unix))]
    let _ = mode;
    let mut file = options.open(path).map_err(io_err)?;
    file.write_all(contents.as_bytes()).map_err(io_err)?;
    file.sync_all().map_err(io_err)
}

/// Write `key` to `path` (mode 0600) and its verifier key to `<path>.pub`
/// (mode 0644), each as one line of text. Refuses, with
/// [`CheckpointError::AlreadyExists`], if either file exists; if the `.pub`
/// file cannot be written, the key file just created is removed again.
pub fn write_keypair(path: &Path, key: &SigningKey) -> Result<(), CheckpointError> {
    let public = pub_path(path);
    for p in [path, public.as_path()] {
        if fs::symlink_metadata(p).is_ok() {
            return Err(CheckpointError::AlreadyExists { path: p.to_owned() });
        }
    }
    create_new(path, 0o600, &format!("{}\n", key.to_text()))?;
    if let Err(e) = create_new(&public, 0o644, &format!("{}\n", key.verifier().to_text())) {
        // Best effort: a key without its .pub would block the next attempt.
        let _ = fs::remove_file(path);
        return Err(e);
    }
    Ok(())
}

fn read_key_file(path: &Path) -> Result<String, CheckpointError> {
    fs::read_to_string(path).map_err(|source| CheckpointError::Io {
        path: path.to_owned(),
        source,
    })
}

fn in_file(path: &Path, e: CheckpointError) -> CheckpointError {
    match e {
        CheckpointError::KeyFormat { detail } => CheckpointError::KeyFormat {
            detail: format!("in `{}`: {detail}", path.display()),
        },
        other => other,
    }
}

/// The signing key at `path`, made (with its `.pub`) on first use: gavel's
/// automatic checkpoints sign with a key kept beside the database. Two
/// gavels making it at once both end up reading the one that was written.
pub fn read_or_create_key(path: &Path, name: &str) -> Result<SigningKey, CheckpointError> {
    if fs::symlink_metadata(path).is_err() {
        match write_keypair(path, &SigningKey::generate(name)?) {
            Ok(()) | Err(CheckpointError::AlreadyExists { .. }) => {}
            Err(other) => return Err(other),
        }
    }
    // Another gavel may be writing it right now: a short file is retried.
    let mut last = None;
    for _ in 0..50 {
        match read_signing_key(path) {
            Ok(key) => return Ok(key),
            Err(err) => last = Some(err),
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    Err(last.unwrap_or(CheckpointError::KeyFormat {
        detail: format!("`{}` holds no key", path.display()),
    }))
}

/// Read a signer key file written by [`write_keypair`].
pub fn read_signing_key(path: &Path) -> Result<SigningKey, CheckpointError> {
    SigningKey::from_text(&read_key_file(path)?).map_err(|e| in_file(path, e))
}

/// Read a verifier key file (the `.pub` written by [`write_keypair`], or any
/// file holding a verifier key in text form).
pub fn read_verifier_key(path: &Path) -> Result<VerifierKey, CheckpointError> {
    VerifierKey::from_text(&read_key_file(path)?).map_err(|e| in_file(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// RFC 6962 section 2.1, written as the RFC states it (recursive).
    fn reference_root(leaves: &[Hash]) -> Hash {
        match leaves.len() {
            0 => Sha256::digest([]).into(),
            1 => leaves[0],
            n => {
                let k = (n - 1).next_power_of_two() / 2;
                let k = if k == 0 { 1 } else { k };
                // k is the largest power of two strictly less than n.
                let k = if k * 2 < n { k * 2 } else { k };
                node_hash(&reference_root(&leaves[..k]), &reference_root(&leaves[k..]))
            }
        }
    }

    fn leaves(n: usize) -> Vec<Hash> {
        (0..n as u64).map(|i| leaf_hash(&i.to_be_bytes())).collect()
    }

    fn test_key(name: &str) -> SigningKey {
        SigningKey::from_seed(name, &[7; 32]).unwrap()
    }

    fn test_checkpoint() -> Checkpoint {
        Checkpoint {
            origin: "gavel.example/audit".to_owned(),
            size: 5,
            root: merkle_root(&leaves(5)),
        }
    }

    #[test]
    fn reference_split_is_largest_power_of_two_below_n() {
        // Spot-check the test's own helper against RFC 6962's definition.
        for (n, k) in [(2, 1), (3, 2), (4, 2), (5, 4), (8, 4), (9, 8), (70, 64)] {
            let l = leaves(n);
            let want = node_hash(&reference_root(&l[..k]), &reference_root(&l[k..]));
            assert_eq!(reference_root(&l), want, "n = {n}");
        }
    }

    // -- RFC 6962 vectors ----------------------------------------------------

    #[test]
    fn empty_tree_root_is_sha256_of_nothing() {
        assert_eq!(
            hex(&MerkleBuilder::new().root()),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(merkle_root(&[]), MerkleBuilder::new().root());
    }

    #[test]
    fn one_leaf_tree_root_is_its_leaf_hash() {
        let leaf = leaf_hash(b"");
        assert_eq!(
            hex(&leaf),
            "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d"
        );
        assert_eq!(merkle_root(&[leaf]), leaf);
    }

    /// The reference tree of the certificate-transparency test data: leaf
    /// inputs and the root of every prefix 0..=8.
    #[test]
    fn certificate_transparency_reference_tree() {
        let inputs: [&[u8]; 8] = [
            b"",
            &[0x00],
            &[0x10],
            &[0x20, 0x21],
            &[0x30, 0x31],
            &[0x40, 0x41, 0x42, 0x43],
            &[0x50, 0x51, 0x52, 0x53, 0x54, 0x55, 0x56, 0x57],
            &[
                0x60, 0x61, 0x62, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68, 0x69, 0x6a, 0x6b, 0x6c, 0x6d,
                0x6e, 0x6f,
            ],
        ];
        let roots = [
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
            "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
            "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
            "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
            "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
            "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
            "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
            "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
        ];
        let hashes: Vec<Hash> = inputs.iter().map(|d| leaf_hash(d)).collect();
        let mut builder = MerkleBuilder::new();
        assert_eq!(hex(&builder.root()), roots[0]);
        for (i, leaf) in hashes.iter().enumerate() {
            builder.push(*leaf);
            assert_eq!(hex(&builder.root()), roots[i + 1], "size {}", i + 1);
            assert_eq!(hex(&merkle_root(&hashes[..=i])), roots[i + 1]);
            assert_eq!(hex(&reference_root(&hashes[..=i])), roots[i + 1]);
        }
    }

    #[test]
    fn builder_matches_reference_for_every_size_up_to_70() {
        let all = leaves(70);
        let mut builder = MerkleBuilder::new();
        assert!(builder.is_empty());
        for n in 0..=70 {
            assert_eq!(builder.len(), n as u64);
            assert_eq!(builder.root(), reference_root(&all[..n]), "n = {n}");
            assert_eq!(merkle_root(&all[..n]), reference_root(&all[..n]));
            if n < 70 {
                builder.push(all[n]);
            }
        }
    }

    #[test]
    fn builder_memory_stays_logarithmic() {
        let mut builder = MerkleBuilder::new();
        for i in 0..5000u64 {
            builder.push(leaf_hash(&i.to_be_bytes()));
            assert_eq!(builder.subtrees.len() as u32, builder.len().count_ones());
        }
    }

    proptest! {
        #[test]
        fn builder_equals_reference(n in 0usize..=300, seed in any::<u64>()) {
            let leaves: Vec<Hash> = (0..n as u64)
                .map(|i| leaf_hash(&(seed ^ i).to_le_bytes()))
                .collect();
            prop_assert_eq!(merkle_root(&leaves), reference_root(&leaves));
        }
    }

    // -- interoperability vectors ---------------------------------------------

    /// The example of golang.org/x/mod/sumdb/note's documentation, used as a
    /// known answer: key text forms, key id and the exact signed note.
    #[test]
    fn go_sumdb_note_example_byte_for_byte() {
        let skey = "PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz";
        let vkey = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW";
        let text = "If you think cryptography is the answer to your problem,\n\
                    then you don't know what your problem is.\n";
        let note = format!(
            "{text}\n\u{2014} PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n"
        );
        let signer = SigningKey::from_text(skey).unwrap();
        assert_eq!(signer.key_id(), 0xc74f20a3);
        assert_eq!(signer.to_text(), skey);
        assert_eq!(signer.verifier().to_text(), vkey);
        assert_eq!(signer.sign_text(text), note);
        let verifier = VerifierKey::from_text(vkey).unwrap();
        assert_eq!(verifier, signer.verifier());
        assert_eq!(open_text(&note, &verifier).unwrap(), text);
    }

    /// The verifier key and note of the C2SP signed-note specification.
    #[test]
    fn c2sp_signed_note_example_verifies() {
        let vkey = "example.com/foo+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k";
        let note = "This is an example message.\n\n\u{2014} example.com/foo \
                    Uw2QOkn8srV1yJGh2VYRlL1Tnagv1YEq6TfXppzi2ONncAlTgK7Ztg1ERYNZXsYjOBH3mFXmRKuwHjG1Yu72IneyaQM=\n";
        let verifier = VerifierKey::from_text(vkey).unwrap();
        assert_eq!(verifier.key_id(), 0x530d903a);
        assert_eq!(
            open_text(note, &verifier).unwrap(),
            "This is an example message.\n"
        );
    }

    // -- sign and open ----------------------------------------------------------

    #[test]
    fn sign_then_open_round_trips() {
        let key = test_key("gavel.example/audit");
        let checkpoint = test_checkpoint();
        let note = key.sign(&checkpoint).unwrap();
        assert!(note.starts_with(&checkpoint.body()));
        assert_eq!(open(&note, &key.verifier()).unwrap(), checkpoint);
        assert_eq!(parse_unverified(&note).unwrap(), checkpoint);
    }

    #[test]
    fn zero_size_checkpoint_round_trips() {
        let key = test_key("k");
        let checkpoint = Checkpoint {
            origin: "k".to_owned(),
            size: 0,
            root: merkle_root(&[]),
        };
        let note = key.sign(&checkpoint).unwrap();
        assert!(note.starts_with("k\n0\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n\n"));
        assert_eq!(open(&note, &key.verifier()).unwrap(), checkpoint);
    }

    #[test]
    fn extension_lines_and_cosignatures_are_allowed() {
        let key = test_key("gavel.example/audit");
        let other = SigningKey::from_seed("witness.example", &[9; 32]).unwrap();
        let body = format!("{}extension line\nanother\n", test_checkpoint().body());
        let signed = key.sign_text(&body);
        let cosigned = other.sign_text(&body);
        let cosig_line = cosigned.rsplit_once("\n\n").unwrap().1;
        let note = format!("{signed}{cosig_line}");
        assert_eq!(open(&note, &key.verifier()).unwrap(), test_checkpoint());
        assert_eq!(open(&note, &other.verifier()).unwrap(), test_checkpoint());
    }

    /// Replace the first occurrence of `from` with `to` in a signed note.
    fn tamper(note: &str, from: &str, to: &str) -> String {
        assert!(note.contains(from), "{from:?} not in {note:?}");
        note.replacen(from, to, 1)
    }

    #[test]
    fn tampered_origin_is_a_bad_signature() {
        let key = test_key("gavel.example/audit");
        let note = key.sign(&test_checkpoint()).unwrap();
        let bad = tamper(&note, "gavel.example/audit\n", "gavel.example/audiT\n");
        assert!(matches!(
            open(&bad, &key.verifier()),
            Err(CheckpointError::BadSignature)
        ));
    }

    #[test]
    fn tampered_size_is_a_bad_signature() {
        let key = test_key("gavel.example/audit");
        let note = key.sign(&test_checkpoint()).unwrap();
        let bad = tamper(&note, "\n5\n", "\n4\n");
        assert!(matches!(
            open(&bad, &key.verifier()),
            Err(CheckpointError::BadSignature)
        ));
        // Still a well-formed checkpoint: only the signature catches it.
        assert_eq!(parse_unverified(&bad).unwrap().size, 4);
    }

    #[test]
    fn tampered_root_is_a_bad_signature() {
        let key = test_key("gavel.example/audit");
        let checkpoint = test_checkpoint();
        let note = key.sign(&checkpoint).unwrap();
        let mut other_root = checkpoint.root;
        other_root[31] ^= 1;
        let bad = tamper(
            &note,
            &BASE64.encode(checkpoint.root),
            &BASE64.encode(other_root),
        );
        assert!(matches!(
            open(&bad, &key.verifier()),
            Err(CheckpointError::BadSignature)
        ));
    }

    #[test]
    fn tampered_signature_is_a_bad_signature() {
        let key = test_key("gavel.example/audit");
        let note = key.sign(&test_checkpoint()).unwrap();
        let (body, sig_line) = note.rsplit_once("\n\n").unwrap();
        let b64 = sig_line.trim_end().rsplit_once(' ').unwrap().1;
        let mut blob = BASE64.decode(b64).unwrap();
        for i in [4, 40, 67] {
            blob[i] ^= 0x80;
            let bad = format!(
                "{body}\n\n\u{2014} gavel.example/audit {}\n",
                BASE64.encode(&blob)
            );
            assert!(
                matches!(
                    open(&bad, &key.verifier()),
                    Err(CheckpointError::BadSignature)
                ),
                "byte {i}"
            );
            blob[i] ^= 0x80;
        }
        // A truncated signature by the right key id is bad too, not malformed.
        let short = format!(
            "{body}\n\n\u{2014} gavel.example/audit {}\n",
            BASE64.encode(&blob[..40])
        );
        assert!(matches!(
            open(&short, &key.verifier()),
            Err(CheckpointError::BadSignature)
        ));
    }

    #[test]
    fn wrong_key_finds_no_matching_signature() {
        let key = test_key("gavel.example/audit");
        let note = key.sign(&test_checkpoint()).unwrap();
        // Same name, different key: the key id differs.
        let impostor = SigningKey::from_seed("gavel.example/audit", &[8; 32]).unwrap();
        assert_ne!(impostor.key_id(), key.key_id());
        let err = open(&note, &impostor.verifier()).unwrap_err();
        assert!(
            matches!(&err, CheckpointError::NoMatchingSignature { name } if name == "gavel.example/audit"),
            "{err:?}"
        );
        // Same key, different name.
        let renamed = test_key("other.example");
        assert!(matches!(
            open(&note, &renamed.verifier()),
            Err(CheckpointError::NoMatchingSignature { .. })
        ));
        // A signature line claiming the verifier's key id but made with
        // another key does not verify.
        let impostor_note = impostor.sign(&test_checkpoint()).unwrap();
        let (body, line) = impostor_note.rsplit_once("\n\n").unwrap();
        let mut blob = BASE64
            .decode(line.trim_end().rsplit_once(' ').unwrap().1)
            .unwrap();
        blob[..4].copy_from_slice(&key.key_id().to_be_bytes());
        let forged = format!(
            "{body}\n\n\u{2014} gavel.example/audit {}\n",
            BASE64.encode(&blob)
        );
        assert!(matches!(
            open(&forged, &key.verifier()),
            Err(CheckpointError::BadSignature)
        ));
    }

    #[test]
    fn origin_that_would_break_the_note_is_refused() {
        let key = test_key("k");
        for origin in ["", "a\n99\nAAAA", "tab\there"] {
            let checkpoint = Checkpoint {
                origin: origin.to_owned(),
                ..test_checkpoint()
            };
            assert!(
                matches!(
                    key.sign(&checkpoint),
                    Err(CheckpointError::InvalidOrigin { .. })
                ),
                "{origin:?}"
            );
        }
    }

    // -- malformed notes ----------------------------------------------------------

    fn assert_malformed(note: &str) {
        let key = test_key("gavel.example/audit");
        assert!(
            matches!(
                open(note, &key.verifier()),
                Err(CheckpointError::Malformed { .. })
            ),
            "open accepted {note:?}"
        );
        assert!(
            matches!(
                parse_unverified(note),
                Err(CheckpointError::Malformed { .. })
            ),
            "parse_unverified accepted {note:?}"
        );
    }

    #[test]
    fn malformed_framing_is_rejected() {
        let key = test_key("gavel.example/audit");
        let note = key.sign(&test_checkpoint()).unwrap();
        let body = test_checkpoint().body();
        let (_, sig_line) = note.rsplit_once("\n\n").unwrap();
        assert_malformed("");
        assert_malformed(&body); // no blank line, no signature
        assert_malformed(&format!("{body}{sig_line}")); // missing blank line
        assert_malformed(&format!("{body}\n")); // blank line but no signature
        assert_malformed(note.trim_end_matches('\n')); // last line unterminated
        assert_malformed(&note.replace('\u{2014}', "-")); // not an em dash
        assert_malformed(&tamper(&note, "audit ", "audit")); // no space before signature
        assert_malformed(&format!("{body}\n\u{2014} k\n")); // name only
        assert_malformed(&format!("{body}\n\u{2014} k AAAA\n")); // too short
        assert_malformed(&format!("{body}\n\u{2014} k !!!!!!!!\n")); // bad base64
        assert_malformed(&format!("{body}\n\u{2014}  AAAAAAAA\n")); // empty name
        assert_malformed(&tamper(&note, "\n5\n", "\n5\r\n")); // control character
        let many = format!("{body}\n{}", sig_line.repeat(101));
        assert_malformed(&many);
        assert!(parse_unverified(&format!("{body}\n{}", sig_line.repeat(100))).is_ok());
    }

    #[test]
    fn malformed_bodies_are_rejected() {
        let key = test_key("gavel.example/audit");
        let root = BASE64.encode(test_checkpoint().root);
        let cases = [
            "\n5\nROOT\n".to_owned(),                     // empty origin
            "o\n".to_owned(),                             // no size
            "o\n5\n".to_owned(),                          // no root
            "o\n05\nROOT\n".to_owned(),                   // leading zero
            "o\n00\nROOT\n".to_owned(),                   // leading zero
            "o\n+5\nROOT\n".to_owned(),                   // sign
            "o\n-1\nROOT\n".to_owned(),                   // negative
            "o\n5 \nROOT\n".to_owned(),                   // trailing space
            "o\n\nROOT\n".to_owned(),                     // empty size
            "o\n18446744073709551616\nROOT\n".to_owned(), // u64::MAX + 1
            "o\n5\nAAAA\n".to_owned(),                    // 3-byte root
            "o\n5\nnot base64!\n".to_owned(),
            format!("o\n5\n{}\n", root.trim_end_matches('=')), // unpadded
            "o\n5\nROOT\n\nextension\n".to_owned(),            // empty extension line
        ];
        for case in cases {
            let body = case.replace("ROOT", &root);
            let note = key.sign_text(&body);
            assert!(
                matches!(
                    open(&note, &key.verifier()),
                    Err(CheckpointError::Malformed { .. })
                ),
                "open accepted {body:?}"
            );
            assert!(
                matches!(
                    parse_unverified(&note),
                    Err(CheckpointError::Malformed { .. })
                ),
                "parse_unverified accepted {body:?}"
            );
        }
        assert!(matches!(
            Checkpoint::from_body(&format!("o\tx\n5\n{root}\n")),
            Err(CheckpointError::Malformed { .. })
        ));
        assert!(matches!(
            Checkpoint::from_body(&format!("o\n5\n{root}")),
            Err(CheckpointError::Malformed { .. })
        ));
        // The largest size is fine.
        let body = format!("o\n18446744073709551615\n{root}\n");
        let checkpoint = open(&key.sign_text(&body), &key.verifier()).unwrap();
        assert_eq!(checkpoint.size, u64::MAX);
    }

    // -- keys ------------------------------------------------------------------------

    #[test]
    fn key_text_round_trips() {
        let key = SigningKey::generate("gavel.example/audit").unwrap();
        let text = key.to_text();
        assert!(text.starts_with("PRIVATE+KEY+gavel.example/audit+"));
        let back = SigningKey::from_text(&format!("{text}\n")).unwrap();
        assert_eq!(back.to_text(), text);
        assert_eq!(back.verifier(), key.verifier());
        let vtext = key.verifier().to_text();
        let material = format!(
            "+{}",
            BASE64.encode([&[1u8][..], key.verifier().key.as_bytes()].concat())
        );
        assert_eq!(
            vtext,
            format!("gavel.example/audit+{:08x}{material}", key.key_id())
        );
        assert_eq!(VerifierKey::from_text(&vtext).unwrap(), key.verifier());
        // Two generated keys differ.
        let other = SigningKey::generate("gavel.example/audit").unwrap();
        assert_ne!(other.to_text(), text);
    }

    #[test]
    fn debug_does_not_show_the_secret() {
        let key = test_key("k");
        let debug = format!("{key:?}");
        let seed_b64 = key.to_text().rsplit_once('+').unwrap().1.to_owned();
        assert!(debug.contains(&format!("{:08x}", key.key_id())), "{debug}");
        assert!(!debug.contains(&seed_b64[4..20]), "{debug}");
        assert!(!debug.contains("7, 7, 7"), "{debug}");
    }

    #[test]
    fn bad_key_names_are_refused() {
        for name in ["", "a b", "a+b", "a\nb", "tab\t", "nbsp\u{a0}"] {
            assert!(
                matches!(
                    SigningKey::generate(name),
                    Err(CheckpointError::KeyFormat { .. })
                ),
                "{name:?}"
            );
        }
    }

    #[test]
    fn malformed_key_texts_are_refused() {
        let key = test_key("gavel.example/audit");
        let stext = key.to_text();
        let vtext = key.verifier().to_text();
        let id = format!("{:08x}", key.key_id());
        let wrong_id = format!("{:08x}", key.key_id() ^ 1);
        let bad_signers = [
            stext.replacen("PRIVATE", "PUBLIC", 1),
            stext.replacen(&id, &wrong_id, 1),
            stext.replacen(&id, "+1234567", 1),
            stext.replacen(&id, &id[..7], 1),
            stext.replacen("audit", "audiT", 1), // id no longer matches name
            format!("PRIVATE+KEY+gavel.example/audit+{id}"),
            format!(
                "PRIVATE+KEY+gavel.example/audit+{id}+{}",
                BASE64.encode([2u8; 33])
            ),
            format!(
                "PRIVATE+KEY+gavel.example/audit+{id}+{}",
                BASE64.encode([1u8; 32])
            ),
            format!("{stext}="),
            vtext.clone(),
        ];
        for text in &bad_signers {
            assert!(
                matches!(
                    SigningKey::from_text(text),
                    Err(CheckpointError::KeyFormat { .. })
                ),
                "{text:?}"
            );
        }
        let bad_verifiers = [
            stext.clone(),
            vtext.replacen(&id, &wrong_id, 1),
            vtext.replacen("audit", "audiT", 1),
            format!("gavel.example/audit+{id}"),
            format!("gavel.example/audit+{id}+{}", BASE64.encode([1u8; 32])),
            format!("a b+{id}+{}", vtext.rsplit_once('+').unwrap().1),
        ];
        for text in &bad_verifiers {
            assert!(
                matches!(
                    VerifierKey::from_text(text),
                    Err(CheckpointError::KeyFormat { .. })
                ),
                "{text:?}"
            );
        }
    }

    /// The 8 canonical encodings of the points of small order, and the
    /// non-reduced encodings (y + p) of valid points.
    const SMALL_ORDER: [&str; 8] = [
        "0000000000000000000000000000000000000000000000000000000000000000",
        "0000000000000000000000000000000000000000000000000000000000000080",
        "0100000000000000000000000000000000000000000000000000000000000000",
        "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05",
        "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc85",
        "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a",
        "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa",
        "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
    ];

    fn verifier_text(name: &str, hex: &str) -> String {
        let mut public = [0u8; 32];
        for (i, byte) in public.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap();
        }
        let mut data = vec![0x01];
        data.extend_from_slice(&public);
        let id = &Sha256::digest([name.as_bytes(), b"\n", &data].concat())[..4];
        format!("{name}+{}+{}", crate::digest::hex(id), BASE64.encode(&data))
    }

    #[test]
    fn key_files_accepted_a_point_whose_y_is_not_reduced() {
        // y = 3 + p, 4 + p, ... 18 + p: each names the point of y = 3, ...;
        // RFC 8032 refuses the encoding (y must be below p).
        for y in [3u8, 4, 5, 6, 9, 10, 14, 15, 16, 18] {
            let mut hex = format!("{:02x}", 0xedu8 + y);
            hex.push_str(&"ff".repeat(30));
            hex.push_str("7f");
            let text = verifier_text("gavel", &hex);
            let err = VerifierKey::from_text(&text).unwrap_err();
            assert!(err.to_string().contains("canonical"), "{y}: {err}");
        }
        // x = 0 with its sign bit set (y = 1 + p too).
        for hex in [
            "0100000000000000000000000000000000000000000000000000000000000080",
            "eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
        ] {
            assert!(
                VerifierKey::from_text(&verifier_text("gavel", hex)).is_err(),
                "{hex}"
            );
        }
        for hex in SMALL_ORDER {
            let err = VerifierKey::from_text(&verifier_text("gavel", hex)).unwrap_err();
            assert!(err.to_string().contains("small order"), "{hex}: {err}");
        }
        // An honest key still reads.
        let key = test_key("gavel");
        assert!(VerifierKey::from_text(&key.verifier().to_text()).is_ok());
    }

    // -- key files -------------------------------------------------------------------

    #[cfg(unix)]
    fn mode(path: &Path) -> u32 {
        use std::os::unix::fs::PermissionsExt as _;
        fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn keypair_files_round_trip_with_private_mode() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("checkpoint.key");
        let key = SigningKey::generate("gavel.example/audit").unwrap();
        write_keypair(&path, &key).unwrap();
        let pub_file = dir.path().join("checkpoint.key.pub");
        #[cfg(unix)]
        {
            assert_eq!(mode(&path), 0o600);
            assert_eq!(mode(&pub_file) & 0o600, 0o600);
            assert_eq!(mode(&pub_file) & 0o033, 0, "never wider than 0644");
        }
        assert_eq!(
            fs::read_to_string(&pub_file).unwrap(),
            format!("{}\n", key.verifier().to_text())
        );
        let back = read_signing_key(&path).unwrap();
        assert_eq!(back.to_text(), key.to_text());
        assert_eq!(read_verifier_key(&pub_file).unwrap(), key.verifier());
        // The private file is not a verifier key.
        let err = read_verifier_key(&path).unwrap_err();
        assert!(err.to_string().contains("checkpoint.key"), "{err}");
    }

    #[test]
    fn write_keypair_refuses_to_overwrite() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("k");
        let first = test_key("k");
        write_keypair(&path, &first).unwrap();
        let second = SigningKey::generate("k").unwrap();
        assert!(matches!(
            write_keypair(&path, &second),
            Err(CheckpointError::AlreadyExists { path: p }) if p == path
        ));
        assert_eq!(read_signing_key(&path).unwrap().to_text(), first.to_text());

        // A stray .pub alone also blocks, and no key file is left behind.
        let lonely = dir.path().join("lonely");
        fs::write(dir.path().join("lonely.pub"), "keep me\n").unwrap();
        assert!(matches!(
            write_keypair(&lonely, &second),
            Err(CheckpointError::AlreadyExists { .. })
        ));
        assert!(!lonely.exists());
        assert_eq!(
            fs::read_to_string(dir.path().join("lonely.pub")).unwrap(),
            "keep me\n"
        );
    }

    #[test]
    fn missing_key_file_is_an_io_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("absent");
        assert!(matches!(
            read_signing_key(&path),
            Err(CheckpointError::Io { path: p, .. }) if p == path
        ));
        assert!(matches!(
            read_verifier_key(&path),
            Err(CheckpointError::Io { .. })
        ));
    }

    // -- the worked example of docs/checkpoints.md -------------------------------

    /// Every value in the worked example of `docs/checkpoints.md`; if this
    /// fails, the format drifted or the document is wrong.
    #[test]
    fn docs_worked_example() {
        let seed: [u8; 32] = std::array::from_fn(|i| i as u8);
        let key = SigningKey::from_seed("gavel.example/audit", &seed).unwrap();
        assert_eq!(
            key.to_text(),
            "PRIVATE+KEY+gavel.example/audit+efbeb9c8+AQABAgMEBQYHCAkKCwwNDg8QERITFBUWFxgZGhscHR4f"
        );
        let verifier = key.verifier();
        assert_eq!(
            verifier.to_text(),
            "gavel.example/audit+efbeb9c8+AQOhB7/zzhC+HXDdGOdLwJln5NYwm6UNXx3chmQSVTG4"
        );
        assert_eq!(
            hex(verifier.key.as_bytes()),
            "03a107bff3ce10be1d70dd18e74bc09967e4d6309ba50d5f1ddc8664125531b8"
        );
        let mut id_input = b"gavel.example/audit\n\x01".to_vec();
        id_input.extend_from_slice(verifier.key.as_bytes());
        assert_eq!(
            hex(&Sha256::digest(&id_input)),
            "efbeb9c8023d13b006837956d78016dd84ce5ca5468f6a48b1563ad58b4de5dc"
        );

        let leaves: Vec<Hash> = [&b"a"[..], b"b", b"c"]
            .iter()
            .map(|d| leaf_hash(d))
            .collect();
        let leaf_hex: Vec<String> = leaves.iter().map(|l| hex(l)).collect();
        assert_eq!(
            leaf_hex,
            [
                "022a6979e6dab7aa5ae4c3e5e45f7e977112a7e63593820dbec1ec738a24f93c",
                "57eb35615d47f34ec714cacdf5fd74608a5e8e102724e80b24b287c0c27b6a31",
                "597fcb31282d34654c200d3418fca5705c648ebf326ec73d8ddef11841f876d8",
            ]
        );
        let ab = node_hash(&leaves[0], &leaves[1]);
        let root = merkle_root(&leaves);
        assert_eq!(root, node_hash(&ab, &leaves[2]));
        assert_eq!(
            hex(&root),
            "36642e73c2540ab121e3a6bf9545b0a24982cd830eb13d3cd19de3ce6c021ec1"
        );

        let checkpoint = Checkpoint {
            origin: "gavel.example/audit".to_owned(),
            size: 3,
            root,
        };
        let note = "gavel.example/audit\n\
                    3\n\
                    NmQuc8JUCrEh46a/lUWwokmCzYMOsT080Z3jzmwCHsE=\n\
                    \n\
                    \u{2014} gavel.example/audit 7765yIcqBRRAgaLVk9zI0Zepno/B+wzKnYooI36u6/+bvyT8eO9KxDyN8v8s77q1NE96iTYNwjN9PMY1GjIDNfHztgI=\n";
        assert_eq!(key.sign(&checkpoint).unwrap(), note);
        assert_eq!(open(note, &verifier).unwrap(), checkpoint);
    }
}
