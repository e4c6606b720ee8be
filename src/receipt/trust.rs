//! Whose signatures a receipt's checkpoint needs (docs/receipts.md): either
//! keys given one by one with a `k-of-n` rule, or a C2SP `tlog-policy`
//! file naming the log's keys, witnesses, groups and the quorum. Pure.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;

use crate::checkpoint::{NoteSignature, VerifierKey};

/// The signature type byte of a cosignature/v1 key (C2SP signed-note).
const COSIGNATURE_V1: u8 = 0x04;

/// A key that may sign or cosign a checkpoint.
#[derive(Debug, Clone)]
pub struct Signer {
    pub key: VerifierKey,
    /// A log key (`log` line): its note signature counts. Keys given with
    /// `--public-key` are both: their note signature or their cosignature counts.
    pub log: bool,
    /// A witness (`witness` line, or a given key): its cosignature counts.
    pub witness: bool,
    /// The name a policy's groups use (a witness's name; the key's own otherwise).
    pub label: String,
}

/// A group of a `tlog-policy`: `k` of its distinct members must hold.
#[derive(Debug, Clone)]
struct Group {
    name: String,
    k: usize,
    members: Vec<Member>,
}

/// A witness (by its index among the signers) or a group defined earlier
/// (by its index among the groups).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Member {
    Witness(usize),
    Group(usize),
}

#[derive(Debug, Clone)]
enum Rule {
    /// At least `k` distinct given keys signed or cosigned.
    KOfN(usize),
    /// A log key signed, and the quorum (if any) of witnesses cosigned.
    Policy {
        groups: Vec<Group>,
        quorum: Option<Member>,
    },
}

/// What a checkpoint must carry to be trusted.
#[derive(Debug, Clone)]
pub struct Trust {
    signers: Vec<Signer>,
    rule: Rule,
}

/// A signature line that verified: by which signer, and, for a
/// cosignature, at what time (Unix seconds).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    pub signer: usize,
    pub cosigned_at: Option<u64>,
}

/// Why a checkpoint's signatures are not trusted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SignatureProblem {
    /// Line `n` (from 1) is by no key of the policy.
    Unknown { line: usize, name: String },
    /// Line `n` is by a key of the policy but does not verify.
    Bad { line: usize, name: String },
    /// Every line verified, but not enough of them.
    Quorum(String),
}

impl Trust {
    /// Keys given one by one; `k_of_n` is the `--policy K-of-N` rule (its
    /// N must be the number of keys), at least one of them by default.
    pub fn from_keys(keys: Vec<VerifierKey>, k_of_n: Option<&str>) -> Result<Self, String> {
        if keys.is_empty() {
            return Err(
                "give the keys to trust: --public-key KEY.pub (repeatable) or --policy FILE".into(),
            );
        }
        let k = match k_of_n {
            None => 1,
            Some(rule) => {
                let (k, n) = rule
                    .split_once("-of-")
                    .and_then(|(k, n)| Some((k.parse::<usize>().ok()?, n.parse::<usize>().ok()?)))
                    .ok_or_else(|| format!("--policy `{rule}` is neither K-of-N nor a file"))?;
                if n != keys.len() || k == 0 || k > n {
                    return Err(format!(
                        "--policy {rule} needs 1 ≤ K ≤ N and N = the {} key(s) given",
                        keys.len()
                    ));
                }
                k
            }
        };
        let signers = keys
            .into_iter()
            .map(|key| Signer {
                label: key.name().to_owned(),
                key,
                log: true,
                witness: true,
            })
            .collect();
        Ok(Self {
            signers,
            rule: Rule::KOfN(k),
        })
    }

    /// What `gavel verify --receipt` is given: `--public-key` files and
    /// `--policy`, which is a `K-of-N` rule, a tlog-policy file (then no
    /// keys besides), or a TOML file (gavel's own policy, from
    /// `$GAVEL_POLICY`), which is no rule about keys and is left alone.
    pub fn from_options(
        keys: &[std::path::PathBuf],
        policy: Option<&std::path::Path>,
    ) -> Result<Self, String> {
        let rule = policy.and_then(|p| p.to_str()).filter(|p| {
            p.split_once("-of-")
                .is_some_and(|(k, n)| is_number(k) && is_number(n))
        });
        let tlog_policy = match policy.filter(|_| rule.is_none()) {
            Some(file) => {
                let text = std::fs::read_to_string(file)
                    .map_err(|e| format!("cannot read the policy `{}`: {e}", file.display()))?;
                match Self::from_tlog_policy(&text) {
                    Ok(trust) => Some(trust),
                    // gavel's own policy (from `$GAVEL_POLICY`): tables of rules.
                    Err(_) if text.parse::<toml::Table>().is_ok_and(|t| !t.is_empty()) => None,
                    Err(e) => return Err(format!("`{}`: {e}", file.display())),
                }
            }
            None => None,
        };
        match tlog_policy {
            Some(trust) if keys.is_empty() => Ok(trust),
            Some(_) => {
                Err("give the keys either in the tlog-policy or with --public-key, not both".into())
            }
            None => {
                // A note key signs and cosigns; a cosignature key
                // (`name+id+base64(0x04 ‖ key)`) only cosigns.
                let mut witnesses = Vec::new();
                let keys = keys
                    .iter()
                    .map(|p| {
                        let text = std::fs::read_to_string(p)
                            .map_err(|e| format!("cannot read `{}`: {e}", p.display()))?;
                        match (VerifierKey::from_text(&text), witness_key(text.trim())) {
                            (Ok(key), _) => Ok(key),
                            (Err(_), Ok(key)) => {
                                witnesses.push(key.clone());
                                Ok(key)
                            }
                            (Err(e), Err(_)) => Err(format!("`{}`: {e}", p.display())),
                        }
                    })
                    .collect::<Result<_, _>>()?;
                let mut trust = Self::from_keys(keys, rule)?;
                for signer in &mut trust.signers {
                    signer.log = !witnesses.contains(&signer.key);
                }
                Ok(trust)
            }
        }
    }

    /// A C2SP `tlog-policy`: `log <vkey> [url]`, `witness <name> <vkey>
    /// [url]`, `group <name> <k|any|all> <member>…`, `quorum <name|none>`;
    /// blank lines and `#` comments ignored. Witness keys may be given as
    /// cosignature (0x04) or note (0x01) verifier keys.
    pub fn from_tlog_policy(text: &str) -> Result<Self, String> {
        let mut signers: Vec<Signer> = Vec::new();
        let mut groups: Vec<Group> = Vec::new();
        let mut quorum: Option<Option<Member>> = None;
        for (n, raw) in text.split('\n').enumerate() {
            let at = |problem: String| format!("policy line {}: {problem}", n + 1);
            if raw.chars().any(|c| c.is_control() && c != '\t') {
                return Err(at("a control character other than a tab".into()));
            }
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let fields: Vec<&str> = line.split_whitespace().collect();
            let find = |name: &str| -> Option<Member> {
                signers
                    .iter()
                    .position(|s| s.witness && s.label == name)
                    .map(Member::Witness)
                    .or_else(|| {
                        groups
                            .iter()
                            .position(|g| g.name == name)
                            .map(Member::Group)
                    })
            };
            match fields[0] {
                "log" if (2..=3).contains(&fields.len()) => {
                    let key = VerifierKey::from_text(fields[1]).map_err(|e| at(e.to_string()))?;
                    signers.push(Signer {
                        label: key.name().to_owned(),
                        key,
                        log: true,
                        witness: false,
                    });
                }
                "witness" | "group" if find(fields.get(1).copied().unwrap_or("")).is_some() => {
                    return Err(at(format!("`{}` is defined twice", fields[1])));
                }
                "witness" if (3..=4).contains(&fields.len()) => {
                    let key = witness_key(fields[2]).map_err(at)?;
                    signers.push(Signer {
                        key,
                        log: false,
                        witness: true,
                        label: fields[1].to_owned(),
                    });
                }
                "group" if fields.len() >= 4 => {
                    let mut members = Vec::new();
                    for name in &fields[3..] {
                        let member = find(name)
                            .ok_or_else(|| at(format!("`{name}` is not defined above")))?;
                        if members.contains(&member) {
                            return Err(at(format!("`{name}` is a member twice")));
                        }
                        members.push(member);
                    }
                    let n = members.len();
                    let k = match fields[2] {
                        "any" => 1,
                        "all" => n,
                        k => Some(k)
                            .filter(|k| is_number(k))
                            .and_then(|k| k.parse::<usize>().ok())
                            .filter(|k| (1..=n).contains(k))
                            .ok_or_else(|| {
                                at(format!("threshold `{k}` is not any, all or 1 to {n}"))
                            })?,
                    };
                    groups.push(Group {
                        name: fields[1].to_owned(),
                        k,
                        members,
                    });
                }
                "quorum" if fields.len() == 2 => {
                    if quorum.is_some() {
                        return Err(at("a second quorum line".into()));
                    }
                    let name = fields[1];
                    quorum = Some(if name == "none" {
                        None
                    } else {
                        Some(
                            find(name)
                                .ok_or_else(|| at(format!("`{name}` is not defined above")))?,
                        )
                    });
                }
                _ => return Err(at(format!("not a tlog-policy line: `{line}`"))),
            }
        }
        let Some(quorum) = quorum else {
            return Err("the policy has no quorum line".into());
        };
        if !signers.iter().any(|s| s.log) {
            return Err("the policy names no log key".into());
        }
        Ok(Self {
            signers,
            rule: Rule::Policy { groups, quorum },
        })
    }

    /// The signers, in the order given.
    pub fn signers(&self) -> &[Signer] {
        &self.signers
    }

    /// Checks every signature line of a note over its signed text `body`:
    /// each must be by a key of this policy and verify (a line nobody can
    /// check is refused: a receipt holds nothing unchecked), then the rule
    /// must hold.
    pub fn check(
        &self,
        body: &str,
        lines: &[NoteSignature],
    ) -> Result<Vec<Verified>, SignatureProblem> {
        let mut verified = Vec::new();
        for (n, line) in lines.iter().enumerate() {
            let note = self.signers.iter().position(|s| {
                s.log && s.key.name() == line.name && s.key.key_id_bytes() == line.key_id
            });
            let cosign = self.signers.iter().position(|s| {
                s.witness
                    && s.key.name() == line.name
                    && crate::cosign::key_id(s.key.name(), &s.key.public_bytes()) == line.key_id
            });
            let ok = match (note, cosign) {
                (Some(i), _) => self.signers[i]
                    .key
                    .verify_bytes(body.as_bytes(), &line.signature)
                    .then_some(Verified {
                        signer: i,
                        cosigned_at: None,
                    }),
                (None, Some(i)) => {
                    crate::cosign::verify_signature(&self.signers[i].key, body, &line.signature)
                        .map(|time| Verified {
                            signer: i,
                            cosigned_at: Some(time),
                        })
                }
                (None, None) => {
                    return Err(SignatureProblem::Unknown {
                        line: n + 1,
                        name: line.name.clone(),
                    });
                }
            };
            match ok {
                Some(v) => verified.push(v),
                None => {
                    return Err(SignatureProblem::Bad {
                        line: n + 1,
                        name: line.name.clone(),
                    });
                }
            }
        }
        self.holds(&verified).map(|()| verified)
    }

    fn holds(&self, verified: &[Verified]) -> Result<(), SignatureProblem> {
        let mut by: Vec<usize> = verified.iter().map(|v| v.signer).collect();
        by.sort_unstable();
        by.dedup();
        match &self.rule {
            Rule::KOfN(k) => {
                if by.len() >= *k {
                    Ok(())
                } else {
                    Err(SignatureProblem::Quorum(format!(
                        "{k} of the {} keys given must sign; {} did",
                        self.signers.len(),
                        by.len()
                    )))
                }
            }
            Rule::Policy { groups, quorum } => {
                let logged = verified
                    .iter()
                    .any(|v| v.cosigned_at.is_none() && self.signers[v.signer].log);
                if !logged {
                    return Err(SignatureProblem::Quorum(
                        "no signature by a log key of the policy".into(),
                    ));
                }
                let cosigned: Vec<usize> = verified
                    .iter()
                    .filter(|v| v.cosigned_at.is_some())
                    .map(|v| v.signer)
                    .collect();
                // Groups only name groups defined before them: one pass in order.
                let mut met: Vec<bool> = Vec::with_capacity(groups.len());
                let holds = |m: &Member, met: &[bool]| match m {
                    Member::Witness(i) => cosigned.contains(i),
                    Member::Group(g) => met[*g],
                };
                for group in groups {
                    let count = group.members.iter().filter(|m| holds(m, &met)).count();
                    met.push(count >= group.k);
                }
                match quorum {
                    Some(member) if !holds(member, &met) => Err(SignatureProblem::Quorum(
                        "the policy's quorum of witnesses did not cosign".into(),
                    )),
                    _ => Ok(()),
                }
            }
        }
    }
}

fn is_number(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit())
}

/// A witness's verifier key: `name+hex8+base64(0x04 ‖ key)` (its
/// cosignature key id checked) or a note key `name+hex8+base64(0x01 ‖ key)`.
fn witness_key(text: &str) -> Result<VerifierKey, String> {
    let mut parts = text.splitn(3, '+');
    let (Some(name), Some(hex), Some(b64)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(format!("`{text}` is not a verifier key"));
    };
    let bytes = BASE64
        .decode(b64)
        .map_err(|_| format!("the key of `{name}` is not base64"))?;
    match bytes.split_first() {
        Some((&COSIGNATURE_V1, public)) => {
            let public: [u8; 32] = public
                .try_into()
                .map_err(|_| format!("the key of `{name}` is not 32 bytes"))?;
            let key = VerifierKey::from_parts(name, &public).map_err(|e| e.to_string())?;
            let id = crate::cosign::key_id(name, &public);
            if crate::digest::hex(&id) != hex.to_ascii_lowercase() {
                return Err(format!(
                    "key id `{hex}` does not match the witness key `{name}`"
                ));
            }
            Ok(key)
        }
        _ => VerifierKey::from_text(text).map_err(|e| e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoint::{Checkpoint, SigningKey, note_signatures};

    fn keys() -> (SigningKey, SigningKey) {
        (
            SigningKey::from_seed("host", &[1u8; 32]).unwrap(),
            SigningKey::from_seed("central", &[2u8; 32]).unwrap(),
        )
    }

    fn cosigned_note() -> String {
        let (host, central) = keys();
        let checkpoint = Checkpoint {
            origin: "gavel/00".into(),
            size: 3,
            root: [7u8; 32],
        };
        let note = host.sign(&checkpoint).unwrap();
        let line = crate::cosign::cosign(&central, &checkpoint.body(), 1_700_000_000);
        note + &line
    }

    fn check(trust: &Trust, note: &str) -> Result<Vec<Verified>, SignatureProblem> {
        let (body, lines) = note_signatures(note).unwrap();
        trust.check(body, &lines)
    }

    #[test]
    fn k_of_n_counts_distinct_signers() {
        let (host, central) = keys();
        let note = cosigned_note();
        let both =
            Trust::from_keys(vec![host.verifier(), central.verifier()], Some("2-of-2")).unwrap();
        let verified = check(&both, &note).unwrap();
        assert_eq!(verified[1].cosigned_at, Some(1_700_000_000));
        // The host's signature alone does not make 2-of-2.
        let alone = note.lines().take(5).collect::<Vec<_>>().join("\n") + "\n";
        assert!(matches!(
            check(&both, &alone),
            Err(SignatureProblem::Quorum(_))
        ));
        // A line by a key not given is refused, not skipped.
        let host_only = Trust::from_keys(vec![host.verifier()], None).unwrap();
        assert_eq!(
            check(&host_only, &note),
            Err(SignatureProblem::Unknown {
                line: 2,
                name: "central".into()
            })
        );
        assert!(Trust::from_keys(vec![host.verifier()], Some("2-of-2")).is_err());
        assert!(Trust::from_keys(vec![host.verifier()], Some("0-of-1")).is_err());
    }

    /// A cosignature key file (0x04) given with --public-key counts its
    /// cosignature, and only that: it never stands for the log's signature.
    #[test]
    fn a_cosignature_key_file_only_cosigns() {
        let (host, central) = keys();
        let public = central.verifier().public_bytes();
        let mut material = vec![COSIGNATURE_V1];
        material.extend_from_slice(&public);
        let dir = tempfile::tempdir().unwrap();
        let host_file = dir.path().join("host.pub");
        let central_file = dir.path().join("central.vkey");
        std::fs::write(&host_file, host.verifier().to_text() + "\n").unwrap();
        std::fs::write(
            &central_file,
            format!(
                "central+{}+{}\n",
                crate::digest::hex(&crate::cosign::key_id("central", &public)),
                BASE64.encode(material)
            ),
        )
        .unwrap();
        let both = Trust::from_options(&[host_file, central_file.clone()], Some("2-of-2".as_ref()))
            .unwrap();
        assert_eq!(check(&both, &cosigned_note()).unwrap().len(), 2);
        let central_only = Trust::from_options(&[central_file], None).unwrap();
        assert_eq!(
            check(&central_only, &cosigned_note()),
            Err(SignatureProblem::Unknown {
                line: 1,
                name: "host".into()
            })
        );
    }

    #[test]
    fn a_tlog_policy_needs_the_log_and_its_quorum() {
        let (host, central) = keys();
        let public = central.verifier().public_bytes();
        let mut material = vec![COSIGNATURE_V1];
        material.extend_from_slice(&public);
        let witness = format!(
            "central+{}+{}",
            crate::digest::hex(&crate::cosign::key_id("central", &public)),
            BASE64.encode(material)
        );
        let policy = format!(
            "# host and central\nlog {}\nwitness central {witness}\ngroup all-of-them all central\nquorum all-of-them\n",
            host.verifier().to_text()
        );
        let trust = Trust::from_tlog_policy(&policy).unwrap();
        assert!(check(&trust, &cosigned_note()).is_ok());
        let alone = cosigned_note()
            .lines()
            .take(5)
            .collect::<Vec<_>>()
            .join("\n")
            + "\n";
        assert!(matches!(
            check(&trust, &alone),
            Err(SignatureProblem::Quorum(_))
        ));
        let none = format!("log {}\nquorum none\n", host.verifier().to_text());
        assert!(check(&Trust::from_tlog_policy(&none).unwrap(), &alone).is_ok());
        for bad in [
            "quorum none\n".to_owned(),
            format!("log {}\n", host.verifier().to_text()),
            format!("log {}\nquorum nobody\n", host.verifier().to_text()),
            format!(
                "log {}\nwitness w {witness}\ngroup g 2 w\nquorum g\n",
                host.verifier().to_text()
            ),
            // One witness listed twice is not two.
            format!(
                "log {}\nwitness w {witness}\ngroup g 2 w w\nquorum g\n",
                host.verifier().to_text()
            ),
            format!(
                "log {}\nwitness w {witness}\nwitness w {witness}\nquorum w\n",
                host.verifier().to_text()
            ),
            format!("log {}\r\nquorum none\n", host.verifier().to_text()),
        ] {
            assert!(Trust::from_tlog_policy(&bad).is_err(), "{bad}");
        }
        // Nested groups: each names only groups above it, decided in one pass.
        let nested = format!(
            "log {}\nwitness central {witness}\ngroup a any central\ngroup b all a\nquorum b\n",
            host.verifier().to_text()
        );
        let trust = Trust::from_tlog_policy(&nested).unwrap();
        assert!(check(&trust, &cosigned_note()).is_ok());
        assert!(check(&trust, &alone).is_err());
    }
}
