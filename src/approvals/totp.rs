//! Time-based one-time codes (RFC 6238 over RFC 4226): what a person's
//! authenticator app shows, checked against the secret enrolled for them.
//! Pure: the time is given.

use hmac::{Hmac, KeyInit, Mac};

/// HMAC of `message` under `key` with `D`.
macro_rules! hmac_with {
    ($d:ty, $key:expr, $message:expr) => {{
        let mut mac =
            <Hmac<$d> as KeyInit>::new_from_slice($key).expect("HMAC takes a key of any length");
        mac.update($message);
        mac.finalize().into_bytes().to_vec()
    }};
}

/// The hash under the HMAC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algorithm {
    Sha1,
    Sha256,
    Sha512,
}

impl Algorithm {
    fn name(self) -> &'static str {
        match self {
            Algorithm::Sha1 => "SHA1",
            Algorithm::Sha256 => "SHA256",
            Algorithm::Sha512 => "SHA512",
        }
    }
}

/// A TOTP generator: a secret, a number of digits, a period.
#[derive(Clone, PartialEq, Eq)]
pub struct Totp {
    secret: Vec<u8>,
    digits: u32,
    period: u64,
    algorithm: Algorithm,
}

impl std::fmt::Debug for Totp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Totp")
            .field("secret", &"…")
            .field("digits", &self.digits)
            .field("period", &self.period)
            .field("algorithm", &self.algorithm)
            .finish()
    }
}

/// How many periods a code may be early or late: a phone's clock drifts,
/// and a person takes a moment to type.
pub const DRIFT_STEPS: u64 = 1;

impl Totp {
    /// What authenticator apps assume: HMAC-SHA1, 6 digits, 30 seconds.
    pub fn new(secret: Vec<u8>) -> Self {
        Self::with(secret, Algorithm::Sha1, 6, 30)
    }

    pub fn with(secret: Vec<u8>, algorithm: Algorithm, digits: u32, period: u64) -> Self {
        Self {
            secret,
            digits: digits.clamp(6, 9),
            period: period.max(1),
            algorithm,
        }
    }

    /// The time step `unix_secs` falls in.
    pub fn step(&self, unix_secs: u64) -> u64 {
        unix_secs / self.period
    }

    /// The code of time step `step` (RFC 4226's dynamic truncation).
    pub fn code_at(&self, step: u64) -> String {
        let message = step.to_be_bytes();
        let mac = match self.algorithm {
            Algorithm::Sha1 => hmac_with!(sha1::Sha1, &self.secret, &message),
            Algorithm::Sha256 => hmac_with!(sha2::Sha256, &self.secret, &message),
            Algorithm::Sha512 => hmac_with!(sha2::Sha512, &self.secret, &message),
        };
        let offset = usize::from(mac[mac.len() - 1] & 0x0f);
        let binary = u32::from_be_bytes([
            mac[offset] & 0x7f,
            mac[offset + 1],
            mac[offset + 2],
            mac[offset + 3],
        ]);
        let code = u64::from(binary) % 10u64.pow(self.digits);
        format!("{code:0width$}", width = self.digits as usize)
    }

    /// The step whose code `code` is, at `unix_secs`: the current step or
    /// one [`DRIFT_STEPS`] away; `None` for any other code. Compared in
    /// time that does not depend on where the codes differ.
    pub fn check(&self, code: &str, unix_secs: u64) -> Option<u64> {
        let now = self.step(unix_secs);
        let code = code.trim();
        let mut found = None;
        for step in now.saturating_sub(DRIFT_STEPS)..=now + DRIFT_STEPS {
            if crate::digest::same_secret(code.as_bytes(), self.code_at(step).as_bytes()) {
                found = Some(step);
            }
        }
        found
    }

    /// The `otpauth://` URI an authenticator app reads from a QR code.
    pub fn uri(&self, issuer: &str, account: &str) -> String {
        let issuer = percent(issuer);
        format!(
            "otpauth://totp/{issuer}:{}?secret={}&issuer={issuer}&algorithm={}&digits={}&period={}",
            percent(account),
            base32(&self.secret),
            self.algorithm.name(),
            self.digits,
            self.period
        )
    }
}

/// Everything but unreserved characters, percent-encoded (RFC 3986).
fn percent(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

const ALPHABET: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

/// RFC 4648 base 32, without padding: how TOTP secrets are written.
pub fn base32(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(5) * 8);
    let (mut buffer, mut bits) = (0u32, 0u32);
    for &byte in bytes {
        buffer = (buffer << 8) | u32::from(byte);
        bits += 8;
        while bits >= 5 {
            bits -= 5;
            out.push(ALPHABET[((buffer >> bits) & 31) as usize] as char);
        }
    }
    if bits > 0 {
        out.push(ALPHABET[((buffer << (5 - bits)) & 31) as usize] as char);
    }
    out
}

/// Reads base 32 (either case, padding and blanks ignored); `None` when a
/// character is not of the alphabet.
pub fn from_base32(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let (mut buffer, mut bits) = (0u32, 0u32);
    for c in text.chars().filter(|c| !c.is_whitespace() && *c != '=') {
        let value = ALPHABET
            .iter()
            .position(|&a| a as char == c.to_ascii_uppercase())? as u32;
        buffer = (buffer << 5) | value;
        bits += 5;
        if bits >= 8 {
            bits -= 8;
            out.push((buffer >> bits) as u8);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 6238, appendix B: each algorithm's seed, at each time, 8 digits.
    #[test]
    fn the_rfc_6238_test_vectors_hold() {
        let seed = |n: usize| {
            b"1234567890"
                .iter()
                .copied()
                .cycle()
                .take(n)
                .collect::<Vec<u8>>()
        };
        let vectors: [(u64, [&str; 3]); 6] = [
            (59, ["94287082", "46119246", "90693936"]),
            (1_111_111_109, ["07081804", "68084774", "25091201"]),
            (1_111_111_111, ["14050471", "67062674", "99943326"]),
            (1_234_567_890, ["89005924", "91819424", "93441116"]),
            (2_000_000_000, ["69279037", "90698825", "38618901"]),
            (20_000_000_000, ["65353130", "77737706", "47863826"]),
        ];
        let generators = [
            Totp::with(seed(20), Algorithm::Sha1, 8, 30),
            Totp::with(seed(32), Algorithm::Sha256, 8, 30),
            Totp::with(seed(64), Algorithm::Sha512, 8, 30),
        ];
        for (time, codes) in vectors {
            for (totp, code) in generators.iter().zip(codes) {
                assert_eq!(
                    totp.code_at(totp.step(time)),
                    code,
                    "{:?} at {time}",
                    totp.algorithm
                );
                assert_eq!(totp.check(code, time), Some(totp.step(time)));
            }
        }
    }

    #[test]
    fn a_code_holds_one_step_either_way_and_no_further() {
        let totp = Totp::new(b"12345678901234567890".to_vec());
        let now = 1_700_000_000;
        let step = totp.step(now);
        assert_eq!(totp.check(&totp.code_at(step - 1), now), Some(step - 1));
        assert_eq!(totp.check(&totp.code_at(step + 1), now), Some(step + 1));
        assert_eq!(totp.check(&totp.code_at(step - 2), now), None);
        assert_eq!(totp.check("", now), None);
        assert_eq!(totp.check("12345", now), None);
        assert_eq!(totp.code_at(step).len(), 6);
    }

    #[test]
    fn base32_reads_what_it_writes() {
        for bytes in [&b""[..], b"f", b"fo", b"foo", b"foob", b"fooba", b"foobar"] {
            assert_eq!(from_base32(&base32(bytes)).unwrap(), bytes);
        }
        // RFC 4648's vector, padding dropped.
        assert_eq!(base32(b"foobar"), "MZXW6YTBOI");
        assert_eq!(from_base32("mzxw 6ytb oi======").unwrap(), b"foobar");
        assert_eq!(from_base32("MZ1W"), None);
        let uri = Totp::new(b"foobar".to_vec()).uri("gavel", "alice@host");
        assert_eq!(
            uri,
            "otpauth://totp/gavel:alice%40host?secret=MZXW6YTBOI&issuer=gavel&algorithm=SHA1&digits=6&period=30"
        );
    }
}
