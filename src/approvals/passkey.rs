//! Passkeys: the relying party's half of WebAuthn (Level 2), as much as an
//! approval needs. A person enrols a credential through the approval page
//! ([`register`]) and proves each approval with it ([`verify_assertion`]).
//!
//! What is checked: the client data's `type`, `challenge` and `origin`;
//! the authenticator data's RP ID hash and its user-present and
//! user-verified flags; and, for an assertion, the signature over the
//! authenticator data and the client data's SHA-256 with the enrolled
//! public key (ES256 or EdDSA). Attestation is not asked for (`none`): an
//! enrolment is trusted for the one-time code it came with, not for the
//! authenticator's maker.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64URL;
use serde::Deserialize;

use crate::digest::sha256;

/// Why a registration or an assertion is refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PasskeyError {
    #[error("the client data is not WebAuthn's JSON")]
    ClientData,
    #[error("the client data is for `{0}`, not this ceremony")]
    Type(String),
    #[error("the challenge is not the one given")]
    Challenge,
    #[error("the origin `{0}` is not this page's")]
    Origin(String),
    #[error("the authenticator data is malformed")]
    AuthenticatorData,
    #[error("the credential is for another site than `{0}`")]
    RelyingParty(String),
    #[error(
        "the authenticator did not verify the person (user presence and verification are required)"
    )]
    NotVerified,
    #[error("the credential's public key is not a supported COSE key (ES256 or EdDSA)")]
    Key,
    #[error("the signature does not verify")]
    Signature,
}

/// The site passkeys are bound to: its RP ID (a host name) and the origin
/// the browser shows (`https://NAME[:PORT]`).
#[derive(Debug, Clone, Copy)]
pub struct RelyingParty<'a> {
    pub id: &'a str,
    pub origin: &'a str,
}

/// A registered credential: its id and its public key as a COSE key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Credential {
    pub id: Vec<u8>,
    pub public_key: Vec<u8>,
}

/// The client data a browser signs over, as much as is checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientData {
    pub kind: String,
    pub challenge: Vec<u8>,
    pub origin: String,
}

/// Reads `clientDataJSON`.
pub fn client_data(json: &[u8]) -> Result<ClientData, PasskeyError> {
    #[derive(Deserialize)]
    struct Raw {
        #[serde(rename = "type")]
        kind: String,
        challenge: String,
        origin: String,
        #[serde(default, rename = "crossOrigin")]
        cross_origin: bool,
    }
    let raw: Raw = serde_json::from_slice(json).map_err(|_| PasskeyError::ClientData)?;
    // Made inside a frame of another site: never the page's own ceremony.
    if raw.cross_origin {
        return Err(PasskeyError::Origin(raw.origin));
    }
    let challenge = B64URL
        .decode(raw.challenge.trim_end_matches('='))
        .map_err(|_| PasskeyError::ClientData)?;
    Ok(ClientData {
        kind: raw.kind,
        challenge,
        origin: raw.origin,
    })
}

fn check_client(
    rp: RelyingParty,
    kind: &str,
    challenge: &[u8],
    json: &[u8],
) -> Result<(), PasskeyError> {
    let data = client_data(json)?;
    if data.kind != kind {
        return Err(PasskeyError::Type(data.kind));
    }
    if data.challenge != challenge {
        return Err(PasskeyError::Challenge);
    }
    if data.origin != rp.origin {
        return Err(PasskeyError::Origin(data.origin));
    }
    Ok(())
}

const USER_PRESENT: u8 = 0x01;
const USER_VERIFIED: u8 = 0x04;
const ATTESTED: u8 = 0x40;

/// The authenticator data's fixed head: RP ID hash, flags, sign count;
/// checked against `rp`. Returns the flags, the count and the rest.
fn check_authenticator<'d>(
    rp: RelyingParty,
    data: &'d [u8],
) -> Result<(u8, u32, &'d [u8]), PasskeyError> {
    if data.len() < 37 {
        return Err(PasskeyError::AuthenticatorData);
    }
    if data[..32] != sha256(rp.id.as_bytes()) {
        return Err(PasskeyError::RelyingParty(rp.id.to_owned()));
    }
    let flags = data[32];
    if flags & USER_PRESENT == 0 || flags & USER_VERIFIED == 0 {
        return Err(PasskeyError::NotVerified);
    }
    let count = u32::from_be_bytes([data[33], data[34], data[35], data[36]]);
    Ok((flags, count, &data[37..]))
}

/// Checks a registration (`navigator.credentials.create`'s response) made
/// for `challenge`: returns the new credential.
pub fn register(
    rp: RelyingParty,
    challenge: &[u8],
    client_data_json: &[u8],
    attestation_object: &[u8],
) -> Result<Credential, PasskeyError> {
    check_client(rp, "webauthn.create", challenge, client_data_json)?;
    let object: ciborium::Value =
        ciborium::from_reader(attestation_object).map_err(|_| PasskeyError::AuthenticatorData)?;
    let data = object
        .as_map()
        .and_then(|map| {
            map.iter()
                .find(|(k, _)| k.as_text() == Some("authData"))
                .and_then(|(_, v)| v.as_bytes())
        })
        .ok_or(PasskeyError::AuthenticatorData)?;
    let (flags, _, rest) = check_authenticator(rp, data)?;
    if flags & ATTESTED == 0 || rest.len() < 18 {
        return Err(PasskeyError::AuthenticatorData);
    }
    // AAGUID (16), credential id length (2), credential id, COSE key.
    let length = usize::from(u16::from_be_bytes([rest[16], rest[17]]));
    let rest = &rest[18..];
    // WebAuthn caps a credential id at 1023 bytes.
    if rest.len() < length || length > 1023 {
        return Err(PasskeyError::AuthenticatorData);
    }
    let (id, key) = rest.split_at(length);
    // The key is one CBOR item; extensions may follow it.
    let mut reader = key;
    let value: ciborium::Value =
        ciborium::from_reader(&mut reader).map_err(|_| PasskeyError::Key)?;
    let public_key = key[..key.len() - reader.len()].to_vec();
    PublicKey::from_cose(&value)?;
    Ok(Credential {
        id: id.to_vec(),
        public_key,
    })
}

/// Checks an assertion (`navigator.credentials.get`'s response) made for
/// `challenge` with `credential`: returns the authenticator's sign count.
pub fn verify_assertion(
    rp: RelyingParty,
    challenge: &[u8],
    credential: &Credential,
    authenticator_data: &[u8],
    client_data_json: &[u8],
    signature: &[u8],
) -> Result<u32, PasskeyError> {
    check_client(rp, "webauthn.get", challenge, client_data_json)?;
    let (_, count, _) = check_authenticator(rp, authenticator_data)?;
    let value: ciborium::Value =
        ciborium::from_reader(credential.public_key.as_slice()).map_err(|_| PasskeyError::Key)?;
    let mut signed = authenticator_data.to_vec();
    signed.extend_from_slice(&sha256(client_data_json));
    PublicKey::from_cose(&value)?.verify(&signed, signature)?;
    Ok(count)
}

/// A credential's public key, read from its COSE key (RFC 9053).
enum PublicKey {
    Es256(p256::ecdsa::VerifyingKey),
    EdDsa(ed25519_dalek::VerifyingKey),
}

impl PublicKey {
    fn from_cose(value: &ciborium::Value) -> Result<Self, PasskeyError> {
        let map = value.as_map().ok_or(PasskeyError::Key)?;
        let field = |label: i64| {
            map.iter()
                .find(|(k, _)| {
                    k.as_integer()
                        .is_some_and(|i| i128::from(i) == label.into())
                })
                .map(|(_, v)| v)
        };
        let int = |label| field(label).and_then(|v| v.as_integer()).map(i128::from);
        let bytes = |label| field(label).and_then(|v| v.as_bytes());
        // kty 2 (EC2), alg -7 (ES256), crv 1 (P-256); kty 1 (OKP), alg -8, crv 6 (Ed25519).
        match (int(1), int(3), int(-1)) {
            (Some(2), Some(-7), Some(1)) => {
                let (x, y) = bytes(-2).zip(bytes(-3)).ok_or(PasskeyError::Key)?;
                let mut point = vec![0x04];
                point.extend_from_slice(x);
                point.extend_from_slice(y);
                p256::ecdsa::VerifyingKey::from_sec1_bytes(&point)
                    .map(Self::Es256)
                    .map_err(|_| PasskeyError::Key)
            }
            (Some(1), Some(-8), Some(6)) => {
                let x: [u8; 32] = bytes(-2)
                    .and_then(|x| x.as_slice().try_into().ok())
                    .ok_or(PasskeyError::Key)?;
                ed25519_dalek::VerifyingKey::from_bytes(&x)
                    .map(Self::EdDsa)
                    .map_err(|_| PasskeyError::Key)
            }
            _ => Err(PasskeyError::Key),
        }
    }

    fn verify(&self, message: &[u8], signature: &[u8]) -> Result<(), PasskeyError> {
        match self {
            Self::Es256(key) => {
                use p256::ecdsa::signature::Verifier as _;
                let signature = p256::ecdsa::Signature::from_der(signature)
                    .map_err(|_| PasskeyError::Signature)?;
                key.verify(message, &signature)
                    .map_err(|_| PasskeyError::Signature)
            }
            Self::EdDsa(key) => {
                let signature = ed25519_dalek::Signature::from_slice(signature)
                    .map_err(|_| PasskeyError::Signature)?;
                key.verify_strict(message, &signature)
                    .map_err(|_| PasskeyError::Signature)
            }
        }
    }
}

/// `bytes` as unpadded base64url, WebAuthn's encoding of binary fields in JSON.
pub fn b64url(bytes: &[u8]) -> String {
    B64URL.encode(bytes)
}

/// The bytes of unpadded (or padded) base64url `text`.
pub fn from_b64url(text: &str) -> Option<Vec<u8>> {
    B64URL.decode(text.trim_end_matches('=')).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use p256::ecdsa::signature::Signer as _;

    const RP: RelyingParty = RelyingParty {
        id: "approvals.example",
        origin: "https://approvals.example:8443",
    };

    /// A software authenticator: a P-256 key and the bytes it would send.
    struct Authenticator {
        key: p256::ecdsa::SigningKey,
        id: Vec<u8>,
    }

    impl Authenticator {
        fn new() -> Self {
            let key = p256::ecdsa::SigningKey::from_slice(&sha256(b"a test key")).unwrap();
            Self {
                key,
                id: b"credential-1".to_vec(),
            }
        }

        fn cose(&self) -> Vec<u8> {
            use ciborium::Value;
            let point = self.key.verifying_key().to_sec1_point(false);
            let point = point.as_bytes();
            let map = Value::Map(vec![
                (Value::from(1), Value::from(2)),
                (Value::from(3), Value::from(-7)),
                (Value::from(-1), Value::from(1)),
                (Value::from(-2), Value::Bytes(point[1..33].to_vec())),
                (Value::from(-3), Value::Bytes(point[33..].to_vec())),
            ]);
            let mut out = Vec::new();
            ciborium::into_writer(&map, &mut out).unwrap();
            out
        }

        fn head(rp_id: &str, flags: u8, count: u32) -> Vec<u8> {
            let mut data = sha256(rp_id.as_bytes()).to_vec();
            data.push(flags);
            data.extend_from_slice(&count.to_be_bytes());
            data
        }

        fn client(kind: &str, challenge: &[u8], origin: &str) -> Vec<u8> {
            serde_json::json!({"type": kind, "challenge": b64url(challenge), "origin": origin})
                .to_string()
                .into_bytes()
        }

        fn attestation(&self, rp_id: &str, flags: u8) -> Vec<u8> {
            use ciborium::Value;
            let mut data = Self::head(rp_id, flags, 0);
            data.extend_from_slice(&[0; 16]);
            data.extend_from_slice(&(self.id.len() as u16).to_be_bytes());
            data.extend_from_slice(&self.id);
            data.extend_from_slice(&self.cose());
            let object = Value::Map(vec![
                (Value::from("fmt"), Value::from("none")),
                (Value::from("attStmt"), Value::Map(vec![])),
                (Value::from("authData"), Value::Bytes(data)),
            ]);
            let mut out = Vec::new();
            ciborium::into_writer(&object, &mut out).unwrap();
            out
        }

        fn sign(&self, data: &[u8], client: &[u8]) -> Vec<u8> {
            let mut signed = data.to_vec();
            signed.extend_from_slice(&sha256(client));
            let signature: p256::ecdsa::Signature = self.key.sign(&signed);
            signature.to_der().as_bytes().to_vec()
        }
    }

    const UP_UV: u8 = USER_PRESENT | USER_VERIFIED;

    #[test]
    fn a_registration_gives_the_credential_and_its_key() {
        let auth = Authenticator::new();
        let client = Authenticator::client("webauthn.create", b"enrol", RP.origin);
        let credential = register(
            RP,
            b"enrol",
            &client,
            &auth.attestation(RP.id, UP_UV | ATTESTED),
        )
        .unwrap();
        assert_eq!(credential.id, auth.id);
        assert_eq!(credential.public_key, auth.cose());
    }

    #[test]
    fn a_registration_for_another_site_origin_challenge_or_without_verification_is_refused() {
        let auth = Authenticator::new();
        let ok_client = Authenticator::client("webauthn.create", b"enrol", RP.origin);
        let attested = auth.attestation(RP.id, UP_UV | ATTESTED);
        let cases = [
            (
                ok_client.clone(),
                auth.attestation("evil.example", UP_UV | ATTESTED),
                PasskeyError::RelyingParty(RP.id.into()),
            ),
            (
                Authenticator::client("webauthn.create", b"enrol", "https://evil.example"),
                attested.clone(),
                PasskeyError::Origin("https://evil.example".into()),
            ),
            (
                Authenticator::client("webauthn.create", b"other", RP.origin),
                attested.clone(),
                PasskeyError::Challenge,
            ),
            (
                Authenticator::client("webauthn.get", b"enrol", RP.origin),
                attested.clone(),
                PasskeyError::Type("webauthn.get".into()),
            ),
            (
                ok_client.clone(),
                auth.attestation(RP.id, USER_PRESENT | ATTESTED),
                PasskeyError::NotVerified,
            ),
            (
                ok_client,
                attested[..40].to_vec(),
                PasskeyError::AuthenticatorData,
            ),
        ];
        for (client, attestation, want) in cases {
            assert_eq!(register(RP, b"enrol", &client, &attestation), Err(want));
        }
    }

    #[test]
    fn an_assertion_verifies_with_the_enrolled_key_and_nothing_else() {
        let auth = Authenticator::new();
        let credential = Credential {
            id: auth.id.clone(),
            public_key: auth.cose(),
        };
        let data = Authenticator::head(RP.id, UP_UV, 7);
        let client = Authenticator::client("webauthn.get", b"approve", RP.origin);
        let signature = auth.sign(&data, &client);
        assert_eq!(
            verify_assertion(RP, b"approve", &credential, &data, &client, &signature),
            Ok(7)
        );
        // A changed client data (another answer's challenge), a changed
        // authenticator data, or another key's signature: refused.
        let other = Authenticator::client("webauthn.get", b"reject", RP.origin);
        assert_eq!(
            verify_assertion(RP, b"reject", &credential, &data, &other, &signature),
            Err(PasskeyError::Signature)
        );
        let mut changed = data.clone();
        changed[36] ^= 1;
        assert_eq!(
            verify_assertion(RP, b"approve", &credential, &changed, &client, &signature),
            Err(PasskeyError::Signature)
        );
        let stranger = Authenticator {
            key: p256::ecdsa::SigningKey::from_slice(&sha256(b"another key")).unwrap(),
            id: auth.id.clone(),
        };
        let forged = stranger.sign(&data, &client);
        assert_eq!(
            verify_assertion(RP, b"approve", &credential, &data, &client, &forged),
            Err(PasskeyError::Signature)
        );
        assert_eq!(
            verify_assertion(RP, b"approve", &credential, &data, &client, b"\x30\x00"),
            Err(PasskeyError::Signature)
        );
    }
}
