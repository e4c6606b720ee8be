//! Inclusion proofs of the RFC 6962 tree (docs/checkpoints.md): the audit
//! path of a leaf (RFC 6962 section 2.1.1), the root it leads to (the
//! algorithm of RFC 9162 section 2.1.3.2), and the C2SP `tlog-proof@v1`
//! text that carries one with its checkpoint. The ground a receipt stands
//! on: with a leaf, its proof and a signed checkpoint, one call can be
//! checked without the rest of the log. Pure: no I/O.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;

use crate::chain::Hash;
use crate::checkpoint::{merkle_root, node_hash};

/// The first line of a C2SP `tlog-proof@v1`.
pub const TLOG_PROOF_V1: &str = "c2sp.org/tlog-proof@v1";

/// The audit path of leaf `index` in the tree of `leaves`: the sibling
/// hashes from the leaf's up to the root's child. `None` when `index` is
/// not a leaf of it.
pub fn inclusion_proof(leaves: &[Hash], index: u64) -> Option<Vec<Hash>> {
    let index = usize::try_from(index).ok()?;
    if index >= leaves.len() {
        return None;
    }
    let mut path = Vec::new();
    audit_path(leaves, index, &mut path);
    Some(path)
}

/// PATH(m, D[n]) of RFC 6962: the path within the half holding `m`, then
/// the root of the other half.
fn audit_path(leaves: &[Hash], m: usize, path: &mut Vec<Hash>) {
    let n = leaves.len();
    if n <= 1 {
        return;
    }
    // The largest power of two smaller than n.
    let k = 1usize << (usize::BITS - 1 - (n - 1).leading_zeros());
    if m < k {
        audit_path(&leaves[..k], m, path);
        path.push(merkle_root(&leaves[k..]));
    } else {
        audit_path(&leaves[k..], m - k, path);
        path.push(merkle_root(&leaves[..k]));
    }
}

/// The root that leaf hash `leaf`, at `index` of a tree of `size` leaves,
/// and its audit path `proof` lead to; `None` when the path cannot be one
/// of such a leaf (too short, too long, the index outside the tree).
pub fn root_from_inclusion(index: u64, size: u64, leaf: &Hash, proof: &[Hash]) -> Option<Hash> {
    if index >= size {
        return None;
    }
    let (mut fn_, mut sn) = (index, size - 1);
    let mut r = *leaf;
    for p in proof {
        if sn == 0 {
            return None;
        }
        if fn_ & 1 == 1 || fn_ == sn {
            r = node_hash(p, &r);
            // A right edge: climb to where this node is a right child.
            while fn_ & 1 == 0 && fn_ != 0 {
                fn_ >>= 1;
                sn >>= 1;
            }
        } else {
            r = node_hash(&r, p);
        }
        fn_ >>= 1;
        sn >>= 1;
    }
    (sn == 0).then_some(r)
}

/// A C2SP `tlog-proof@v1`: an entry's index, its audit path, and the
/// signed checkpoint (a note, with any cosignatures) the path leads to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlogProof {
    /// Opaque, unauthenticated data (the `extra` line).
    pub extra: Option<Vec<u8>>,
    pub index: u64,
    pub path: Vec<Hash>,
    /// The checkpoint's signed note, verbatim.
    pub checkpoint: String,
}

/// Why a text is not a `tlog-proof@v1`: the line (from 1) and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("tlog-proof line {line}: {problem}")]
pub struct ProofError {
    pub line: usize,
    pub problem: String,
}

impl TlogProof {
    /// The proof as text: its lines, a blank line, the checkpoint.
    pub fn to_text(&self) -> String {
        let mut text = format!("{TLOG_PROOF_V1}\n");
        if let Some(extra) = &self.extra {
            text.push_str(&format!("extra {}\n", BASE64.encode(extra)));
        }
        text.push_str(&format!("index {}\n", self.index));
        for hash in &self.path {
            text.push_str(&BASE64.encode(hash));
            text.push('\n');
        }
        text.push('\n');
        text.push_str(&self.checkpoint);
        text
    }

    /// Reads a proof, strictly: the header, an optional `extra` line, the
    /// index in decimal without leading zeros, one 32-byte base64 hash per
    /// line, a blank line, then the checkpoint (not checked here: it is
    /// the note's reader's).
    pub fn parse(text: &str) -> Result<Self, ProofError> {
        let bad = |line: usize, problem: &str| ProofError {
            line,
            problem: problem.to_owned(),
        };
        let (head, checkpoint) = text
            .split_once("\n\n")
            .ok_or_else(|| bad(1, "no blank line before the checkpoint"))?;
        let mut lines = head.split('\n').enumerate().map(|(i, l)| (i + 1, l));
        match lines.next() {
            Some((_, TLOG_PROOF_V1)) => {}
            _ => return Err(bad(1, "the first line is not `c2sp.org/tlog-proof@v1`")),
        }
        let mut next = lines.next();
        let mut extra = None;
        if let Some((n, line)) = next
            && let Some(data) = line.strip_prefix("extra ")
        {
            extra = Some(
                BASE64
                    .decode(data)
                    .map_err(|_| bad(n, "extra is not base64"))?,
            );
            next = lines.next();
        }
        let expected = if extra.is_some() { 3 } else { 2 };
        let (n, line) = next.ok_or_else(|| bad(expected, "no index line"))?;
        let index = line
            .strip_prefix("index ")
            .filter(|d| is_decimal(d))
            .and_then(|d| d.parse::<u64>().ok())
            .ok_or_else(|| bad(n, "not `index N` (decimal, no leading zero)"))?;
        let path = lines
            .map(|(n, line)| {
                BASE64
                    .decode(line)
                    .ok()
                    .and_then(|bytes| Hash::try_from(bytes.as_slice()).ok())
                    .ok_or_else(|| bad(n, "not a base64 SHA-256 hash"))
            })
            .collect::<Result<_, _>>()?;
        Ok(Self {
            extra,
            index,
            path,
            checkpoint: checkpoint.to_owned(),
        })
    }
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
    use crate::checkpoint::leaf_hash;
    use proptest::prelude::*;

    /// The reference tree of the certificate-transparency test data.
    fn reference_leaves() -> Vec<Hash> {
        let data: [&[u8]; 8] = [
            b"",
            b"\x00",
            b"\x10",
            b"\x20\x21",
            b"\x30\x31",
            b"\x40\x41\x42\x43",
            b"\x50\x51\x52\x53\x54\x55\x56\x57",
            b"\x60\x61\x62\x63\x64\x65\x66\x67\x68\x69\x6a\x6b\x6c\x6d\x6e\x6f",
        ];
        data.iter().map(|d| leaf_hash(d)).collect()
    }

    fn hex(path: &[Hash]) -> Vec<String> {
        path.iter().map(|h| crate::digest::hex(h)).collect()
    }

    #[test]
    fn audit_paths_are_the_reference_ones() {
        let leaves = reference_leaves();
        // RFC 6962's test data (certificate-transparency, merkle tree tests).
        assert_eq!(inclusion_proof(&leaves[..1], 0), Some(vec![]));
        assert_eq!(
            hex(&inclusion_proof(&leaves, 0).unwrap()),
            [
                "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
                "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
                "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
            ]
        );
        assert_eq!(
            hex(&inclusion_proof(&leaves, 5).unwrap()),
            [
                "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
                "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
                "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
            ]
        );
        assert_eq!(
            hex(&inclusion_proof(&leaves[..3], 2).unwrap()),
            ["fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125"]
        );
        assert_eq!(
            hex(&inclusion_proof(&leaves[..5], 1).unwrap()),
            [
                "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
                "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
                "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
            ]
        );
        assert_eq!(inclusion_proof(&leaves, 8), None);
    }

    proptest! {
        #[test]
        fn every_leaf_proves_into_its_root_and_nothing_else_does(
            size in 1usize..70,
            pick in any::<prop::sample::Index>(),
            flip in any::<prop::sample::Index>(),
        ) {
            let leaves: Vec<Hash> = (0..size as u32).map(|i| leaf_hash(&i.to_be_bytes())).collect();
            let root = merkle_root(&leaves);
            let index = pick.index(size);
            let path = inclusion_proof(&leaves, index as u64).unwrap();
            let size = size as u64;
            let got = root_from_inclusion(index as u64, size, &leaves[index], &path);
            prop_assert_eq!(got, Some(root));
            // Another leaf, another index, a shorter or longer path, a
            // changed hash of it: never the root.
            let other = (index + 1) % leaves.len();
            if other != index {
                prop_assert_ne!(root_from_inclusion(index as u64, size, &leaves[other], &path), Some(root));
                prop_assert_ne!(root_from_inclusion(other as u64, size, &leaves[index], &path), Some(root));
            }
            if let Some((_, shorter)) = path.split_last() {
                prop_assert_ne!(root_from_inclusion(index as u64, size, &leaves[index], shorter), Some(root));
                let mut changed = path.clone();
                changed[flip.index(path.len())][0] ^= 1;
                prop_assert_ne!(root_from_inclusion(index as u64, size, &leaves[index], &changed), Some(root));
            }
            let mut longer = path.clone();
            longer.push(root);
            prop_assert_ne!(root_from_inclusion(index as u64, size, &leaves[index], &longer), Some(root));
            prop_assert_eq!(root_from_inclusion(size, size, &leaves[index], &path), None);
        }
    }

    #[test]
    fn a_tlog_proof_reads_back_as_written_and_strictly() {
        let leaves = reference_leaves();
        let proof = TlogProof {
            extra: Some(b"call_1".to_vec()),
            index: 5,
            path: inclusion_proof(&leaves, 5).unwrap(),
            checkpoint: "gavel/x\n8\nAAAA\n\n\u{2014} k abc=\n".into(),
        };
        let text = proof.to_text();
        assert!(text.starts_with("c2sp.org/tlog-proof@v1\nextra Y2FsbF8x\nindex 5\nvBoG"));
        assert_eq!(TlogProof::parse(&text), Ok(proof.clone()));
        let without = TlogProof {
            extra: None,
            ..proof.clone()
        };
        assert_eq!(TlogProof::parse(&without.to_text()), Ok(without));
        for (wrong, line) in [
            (text.replacen("@v1", "@v2", 1), 1),
            (text.replacen("index 5", "index 05", 1), 3),
            (text.replacen("index 5", "index -5", 1), 3),
            (text.replacen("vBoG", "vBo", 1), 4),
            (text.replacen("\n\n", "\n", 1), 7),
        ] {
            assert_eq!(
                TlogProof::parse(&wrong).map_err(|e| e.line),
                Err(line),
                "{wrong}"
            );
        }
    }
}
