//! The approval page's TLS (`gavel approvals --tls`): the certificate and
//! key given, or a self-signed certificate for the page's host name, kept
//! (mode 0600) so that its fingerprint stays the same across restarts.

use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::digest::sha256;

/// Why the page cannot serve TLS.
#[derive(Debug, thiserror::Error)]
#[error("TLS: {0}")]
pub struct TlsError(String);

/// A server's TLS set-up and what a person checks it by.
pub struct ServerIdentity {
    pub config: Arc<rustls::ServerConfig>,
    /// SHA-256 of the certificate, colon-separated hex: what a browser shows.
    pub fingerprint: String,
    /// SHA-256 of the public key (SPKI), base64: what `curl --pinnedpubkey
    /// sha256//…` and Chromium's `--ignore-certificate-errors-spki-list` take.
    pub key_pin: Option<String>,
}

fn config(
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    let provider = rustls::crypto::ring::default_provider();
    let config = rustls::ServerConfig::builder_with_provider(provider.into())
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| TlsError(format!("the certificate and key do not go together: {e}")))?;
    Ok(Arc::new(config))
}

fn fingerprint(der: &[u8]) -> String {
    let hex = crate::digest::hex(&sha256(der)).to_ascii_uppercase();
    hex.as_bytes()
        .chunks(2)
        .map(|pair| std::str::from_utf8(pair).unwrap_or("??"))
        .collect::<Vec<_>>()
        .join(":")
}

/// The certificate chain in `cert` and the private key in `key` (PEM).
pub fn from_files(cert: &Path, key: &Path) -> Result<ServerIdentity, TlsError> {
    let chain = CertificateDer::pem_file_iter(cert)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| TlsError(format!("cannot read `{}`: {e}", cert.display())))?;
    let leaf = chain
        .first()
        .ok_or_else(|| TlsError(format!("no certificate in `{}`", cert.display())))?;
    let fingerprint = fingerprint(leaf);
    let key = PrivateKeyDer::from_pem_file(key)
        .map_err(|e| TlsError(format!("cannot read `{}`: {e}", key.display())))?;
    Ok(ServerIdentity {
        config: config(chain, key)?,
        fingerprint,
        key_pin: None,
    })
}

const KEPT_HEAD: &str = "# gavel approval page, self-signed for ";

/// A self-signed certificate for `host`: the one kept in `kept` when it
/// was made for `host`, else a new one, written there.
pub fn self_signed(host: &str, kept: &Path) -> Result<ServerIdentity, TlsError> {
    use rcgen::PublicKeyData as _;
    let head = format!("{KEPT_HEAD}{host}\n");
    let pem = match std::fs::read_to_string(kept) {
        Ok(text) if text.starts_with(&head) => text,
        _ => {
            let made = rcgen::generate_simple_self_signed(vec![host.to_owned()])
                .map_err(|e| TlsError(format!("cannot make a certificate for `{host}`: {e}")))?;
            let text = format!(
                "{head}{}{}",
                made.cert.pem(),
                made.signing_key.serialize_pem()
            );
            keep(kept, &text)
                .map_err(|e| TlsError(format!("cannot write `{}`: {e}", kept.display())))?;
            text
        }
    };
    let unreadable = || TlsError(format!("`{}` is not a certificate and key", kept.display()));
    let cert = CertificateDer::from_pem_slice(pem.as_bytes()).map_err(|_| unreadable())?;
    let key = PrivateKeyDer::from_pem_slice(pem.as_bytes()).map_err(|_| unreadable())?;
    let key_pem = pem.find("-----BEGIN PRIVATE KEY").map(|at| &pem[at..]);
    let pair = key_pem
        .and_then(|text| rcgen::KeyPair::from_pem(text).ok())
        .ok_or_else(unreadable)?;
    use base64::Engine as _;
    let key_pin =
        base64::engine::general_purpose::STANDARD.encode(sha256(&pair.subject_public_key_info()));
    Ok(ServerIdentity {
        fingerprint: fingerprint(&cert),
        config: config(vec![cert], key)?,
        key_pin: Some(key_pin),
    })
}

/// Connections served in TLS with `config`.
pub fn acceptor(config: Arc<rustls::ServerConfig>) -> super::page::Acceptor {
    Box::new(move |stream| {
        let connection =
            rustls::ServerConnection::new(config.clone()).map_err(std::io::Error::other)?;
        Ok(Box::new(rustls::StreamOwned::new(connection, stream)))
    })
}

fn keep(path: &Path, text: &str) -> std::io::Result<()> {
    let _ = std::fs::remove_file(path);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(text.as_bytes())?;
    file.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_self_signed_certificate_is_kept_for_its_host_and_remade_for_another() {
        let dir = tempfile::tempdir().unwrap();
        let kept = dir.path().join("page.pem");
        let first = self_signed("approvals.example", &kept).unwrap();
        let again = self_signed("approvals.example", &kept).unwrap();
        assert_eq!(first.fingerprint, again.fingerprint);
        assert_eq!(first.key_pin, again.key_pin);
        assert_eq!(first.fingerprint.len(), 32 * 3 - 1);
        let other = self_signed("elsewhere.example", &kept).unwrap();
        assert_ne!(first.fingerprint, other.fingerprint);
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&kept).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn given_files_that_are_not_a_certificate_and_key_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let cert = dir.path().join("cert.pem");
        std::fs::write(&cert, "not a certificate").unwrap();
        let err = from_files(&cert, &cert).err().unwrap().to_string();
        assert!(err.contains("no certificate"), "{err}");
    }
}
