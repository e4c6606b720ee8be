//! A web origin as the approval page and passkeys read it: `http` or
//! `https`, a host (lowercased) and a port (none when it is the scheme's
//! default, as browsers send it). Pure.

/// `scheme://host[:port]`, normalised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    pub https: bool,
    /// The host name or address, lowercased; an IPv6 address without brackets.
    pub host: String,
    /// The port, unless it is the scheme's default.
    pub port: Option<u16>,
}

impl Origin {
    /// Reads `http(s)://host[:port]`, with nothing after it but a `/`.
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.strip_suffix('/').unwrap_or(text);
        let (scheme, rest) = text.split_once("://")?;
        let https = match scheme.to_ascii_lowercase().as_str() {
            "https" => true,
            "http" => false,
            _ => return None,
        };
        if rest.is_empty() || rest.contains(['/', '?', '#', '@']) {
            return None;
        }
        let (host, port) = match rest.strip_prefix('[') {
            Some(v6) => {
                let (host, after) = v6.split_once(']')?;
                (host, after.strip_prefix(':'))
            }
            None => match rest.rsplit_once(':') {
                Some((host, port)) => (host, Some(port)),
                None => (rest, None),
            },
        };
        let port = port.map(str::parse::<u16>).transpose().ok()?;
        let default = if https { 443 } else { 80 };
        (!host.is_empty()).then(|| Self {
            https,
            host: host.to_ascii_lowercase(),
            port: port.filter(|p| *p != default),
        })
    }

    /// Whether the host is a name (passkeys are bound to one), not an address.
    pub fn is_named(&self) -> bool {
        self.host.parse::<std::net::IpAddr>().is_err()
    }

    /// `host[:port]`, as a `Host` header carries it.
    pub fn authority(&self) -> String {
        let host = match self.host.contains(':') {
            true => format!("[{}]", self.host),
            false => self.host.clone(),
        };
        match self.port {
            Some(port) => format!("{host}:{port}"),
            None => host,
        }
    }
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let scheme = if self.https { "https" } else { "http" };
        write!(f, "{scheme}://{}", self.authority())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_are_read_as_browsers_send_them() {
        let cases = [
            (
                "https://Approvals.Example:443",
                Some("https://approvals.example"),
            ),
            (
                "https://approvals.example:8443/",
                Some("https://approvals.example:8443"),
            ),
            ("http://127.0.0.1:80", Some("http://127.0.0.1")),
            ("http://[::1]:9", Some("http://[::1]:9")),
            ("ftp://x", None),
            ("https://x/path", None),
            ("https://user@x", None),
            ("https://x:99999", None),
            ("https://", None),
        ];
        for (text, want) in cases {
            assert_eq!(
                Origin::parse(text).map(|o| o.to_string()).as_deref(),
                want,
                "{text}"
            );
        }
        assert!(Origin::parse("https://a.example").unwrap().is_named());
        assert!(!Origin::parse("https://10.0.0.1").unwrap().is_named());
    }
}
