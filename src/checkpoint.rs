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
fn node_hash(left: &Hash, right: &Hash) -> Hash {
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
        let mut node = leaf;
        // Each trailing one bit of the old count is a complete subtree of the
        // same size as `node` standing just left of it: merge them, like a
        // carry in binary addition.
        let mut carry = self.count;
        while carry & 1 == 1 {
            match self.subtrees.pop() {
                Some(left) => node = node_hash(&left, &node),
                // Unreachable: there is one subtree per set bit of `count`.
                None => break,
            }
            carry >>= 1;
        }
        self.subtrees.push(node);
        self.count += 1;
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

    /// Sign any note text that ends in a newline (checked by the caller).
    fn sign_text(&self, text: &str) -> String {
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
        let key = ed25519_dalek::VerifyingKey::from_bytes(&bytes)
            .map_err(|_| key_format("public key is not a valid Ed25519 point"))?;
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
    if !verified {
        return Err(CheckpointError::NoMatchingSignature {
            name: verifier.name.clone(),
        });
    }
    Checkpoint::from_body(text)
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

/// Read a signer key file written by [`write_keypair`].
pub fn read_signing_key(path: &Path) -> Result<SigningKey, CheckpointError> {
    SigningKey::from_text(&read_key_file(path)?).map_err(|e| in_file(path, e))
}

/// Read a verifier key file (the `.pub` written by [`write_keypair`], or any
/// file holding a verifier key in text form).
pub fn read_verifier_key(path: &Path) -> Result<VerifierKey, CheckpointError> {
    VerifierKey::from_text(&read_key_file(path)?).map_err(|e| in_file(path, e))
}
