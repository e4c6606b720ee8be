//! The approval page (`gavel approvals --listen`): a small HTTP/1.1 server
//! over `std::net` (TLS through rustls with `--tls`) that shows the calls
//! waiting in the queue, live, and records a person's approve / reject /
//! grant with channel `web` and the token's name, or, for a call whose rule
//! names approvers, an enrolled person's passkey or TOTP code. It also
//! enrols passkeys (`/enrol`, with the one-time code of `gavel approvers
//! add --passkey`).
//!
//! Access needs the token (header `X-Gavel-Token`, compared in constant
//! time); the page itself holds no data and reads the token from the URL's
//! fragment, which browsers never send. Against cross-site forgery: every
//! API request needs the token header (a cross-site form or `no-cors`
//! fetch cannot set it, and no CORS header is ever sent), the `Host` must
//! be the address the page listens on (DNS rebinding), and an answer must
//! carry an `Origin` of that same address and a JSON body. A passkey's
//! signature covers the origin and a one-time challenge bound to the call,
//! its arguments and policy, and the answer.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use super::links::LinkKey;
use super::passkey::{self, RelyingParty, b64url, from_b64url};
use crate::audit::PasskeyAssertion;

use serde::Deserialize;
use serde_json::json;

use super::{GrantAsk, GrantKind, QueueAnswer};
use crate::approval::{ApprovalChannel, ApprovalStatus};
use crate::principal::Principal;
use crate::store::Store;

/// What the page answers with.
pub struct PageConfig {
    /// The secret every API request must carry.
    pub token: String,
    /// The token's name: recorded as the approver.
    pub name: String,
    /// The origins the page answers to (`http://127.0.0.1:PORT`,
    /// `https://approvals.example:8443`); the first is its public address.
    pub origins: Vec<String>,
    /// The site passkeys are made for and checked against: the public
    /// address's host name, when it is `https://` under a name (browsers
    /// refuse passkeys on a bare IP address or without TLS).
    pub rp_id: Option<String>,
    /// Recorded as the answerer's provenance.
    pub principal: Arc<Principal>,
}

impl PageConfig {
    fn host_allowed(&self, host: &str) -> bool {
        self.origins
            .iter()
            .any(|o| o.split_once("://").is_some_and(|(_, h)| h == host))
    }

    fn relying_party(&self) -> Option<RelyingParty<'_>> {
        Some(RelyingParty {
            id: self.rp_id.as_deref()?,
            origin: self.origins.first()?,
        })
    }
}

/// How long a passkey challenge stays good.
const CHALLENGE_LASTS_US: i64 = 5 * 60 * 1_000_000;

/// A challenge handed to a browser, waiting for its signed answer.
enum Ceremony {
    /// An answer to a call: the nonce its challenge was made with.
    Answer { nonce: Vec<u8> },
    /// An enrolment of `name`.
    Enrol { name: String },
}

/// The page: its configuration, the challenges it handed out (each taken
/// once), the one-time links it took and the views of one call they gave.
pub struct Page {
    pub config: PageConfig,
    challenges: Vec<(Vec<u8>, i64, Ceremony)>,
    links: LinkKey,
    /// Links taken, with the end of their call's wait (then forgotten: an
    /// expired link is refused anyway).
    used_links: Vec<(String, i64)>,
    /// A view's secret, its call, and when it ends (the call's wait).
    views: Vec<(String, String, i64)>,
}

/// Who a request speaks for: the page's token (every waiting call), or a
/// view a one-time link gave (one call, answered only with a factor).
enum Access {
    Page,
    Call(String),
}

impl Access {
    fn covers(&self, call_id: &str) -> bool {
        match self {
            Access::Page => true,
            Access::Call(id) => id == call_id,
        }
    }
}

impl Page {
    pub fn new(config: PageConfig) -> Self {
        Self {
            links: LinkKey::from_token(&config.token),
            config,
            challenges: Vec::new(),
            used_links: Vec::new(),
            views: Vec::new(),
        }
    }

    /// The key the page's one-time links are made with.
    pub fn link_key(&self) -> &LinkKey {
        &self.links
    }

    fn access(&self, request: &Request, now: i64) -> Option<Access> {
        if request
            .header("x-gavel-token")
            .is_some_and(|t| same_secret(t, &self.config.token))
        {
            return Some(Access::Page);
        }
        let view = request.header("x-gavel-view")?;
        self.views
            .iter()
            .find(|(secret, _, until)| *until > now && same_secret(secret, view))
            .map(|(_, call, _)| Access::Call(call.clone()))
    }

    /// `/api/link`: a one-time link to a waiting call, taken, for a view of it.
    fn take_link(&mut self, store: &Store, body: LinkBody, now: i64) -> Response {
        // One answer for a call that is not waiting and a link that is not
        // its: a link tells nothing of which calls wait.
        let Some(pending) = waiting(store, &body.call_id, now)
            .filter(|pending| self.links.holds(pending, &body.link))
        else {
            return Response::refused(403, "not a link to a call waiting now");
        };
        self.used_links.retain(|(_, until)| *until > now);
        if self.used_links.iter().any(|(link, _)| *link == body.link) {
            return Response::refused(403, "this link was opened already");
        }
        self.used_links.push((body.link, pending.until_us));
        let mut secret = [0u8; 32];
        if getrandom::fill(&mut secret).is_err() {
            return Response::refused(500, "no randomness");
        }
        let view = crate::digest::hex(&secret);
        self.views.retain(|(_, _, until)| *until > now);
        self.views
            .push((view.clone(), pending.call_id.clone(), pending.until_us));
        Response::json(200, json!({ "view": view, "call_id": pending.call_id }))
    }

    fn issue(&mut self, challenge: Vec<u8>, ceremony: Ceremony, now: i64) {
        self.challenges.retain(|(_, until, _)| *until > now);
        // A page open long is not a way to fill the memory.
        if self.challenges.len() >= 1024 {
            self.challenges.remove(0);
        }
        self.challenges
            .push((challenge, now + CHALLENGE_LASTS_US, ceremony));
    }

    /// The ceremony `challenge` was issued for, taken: a second use finds nothing.
    fn take(&mut self, challenge: &[u8], now: i64) -> Option<Ceremony> {
        let at = self
            .challenges
            .iter()
            .position(|(c, until, _)| c == challenge && *until > now)?;
        Some(self.challenges.swap_remove(at).2)
    }
}

/// One request, as much of it as the page reads.
#[derive(Debug, Clone, Default)]
pub struct Request {
    pub method: String,
    pub path: String,
    /// Header names lowercased.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// One response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    pub content_type: &'static str,
    pub body: Vec<u8>,
}

impl Response {
    fn json(status: u16, value: serde_json::Value) -> Self {
        Self {
            status,
            content_type: "application/json",
            body: value.to_string().into_bytes(),
        }
    }

    fn refused(status: u16, why: &str) -> Self {
        Self::json(status, json!({ "error": why }))
    }
}

const MAX_BODY: usize = 64 * 1024;
const PAGE: &str = include_str!("page.html");
const SCRIPT: &str = include_str!("page.js");

/// The body of `POST /api/answer`.
#[derive(Debug, Deserialize)]
struct AnswerBody {
    call_id: String,
    approved: bool,
    arguments_sha256: String,
    #[serde(default)]
    reason: Option<String>,
    /// `call`, `command` or `tool`: a grant with the approval (for the session when
    /// the call has one, else for an hour).
    #[serde(default)]
    grant: Option<String>,
    /// An enrolled approver answering with their authenticator's code:
    /// recorded under their name with factor `totp`, not the token's.
    #[serde(default)]
    approver: Option<String>,
    #[serde(default)]
    code: Option<String>,
    /// An enrolled approver answering with their passkey: what
    /// `navigator.credentials.get` returned for the page's challenge.
    #[serde(default)]
    passkey: Option<AssertionBody>,
}

/// `navigator.credentials.get`'s response, binary fields base64url.
#[derive(Debug, Deserialize)]
struct AssertionBody {
    credential_id: String,
    authenticator_data: String,
    client_data_json: String,
    signature: String,
}

/// The body of `POST /api/passkey/challenge`: the answer a passkey will sign.
#[derive(Debug, Deserialize)]
struct ChallengeBody {
    call_id: String,
    approved: bool,
}

/// The body of `POST /api/link`: a notification's one-time link.
#[derive(Debug, Deserialize)]
struct LinkBody {
    call_id: String,
    link: String,
}

/// The body of `POST /api/enrol/challenge` and `POST /api/enrol`.
#[derive(Debug, Deserialize)]
struct EnrolBody {
    name: String,
    code: String,
    #[serde(default)]
    client_data_json: Option<String>,
    #[serde(default)]
    attestation_object: Option<String>,
}

fn same_secret(a: &str, b: &str) -> bool {
    crate::digest::same_secret(a.as_bytes(), b.as_bytes())
}

impl Page {
    /// Answers one request.
    pub fn handle(&mut self, store: &mut Store, request: &Request) -> Response {
        let config = &self.config;
        if !request
            .header("host")
            .is_some_and(|h| config.host_allowed(h))
        {
            return Response::refused(421, "unknown host");
        }
        match (request.method.as_str(), request.path.as_str()) {
            ("GET", "/" | "/enrol") => {
                return Response {
                    status: 200,
                    content_type: "text/html; charset=utf-8",
                    body: PAGE.as_bytes().to_vec(),
                };
            }
            ("GET", "/app.js") => {
                return Response {
                    status: 200,
                    content_type: "text/javascript; charset=utf-8",
                    body: SCRIPT.as_bytes().to_vec(),
                };
            }
            _ => {}
        }
        if request
            .header("sec-fetch-site")
            .is_some_and(|s| s != "same-origin" && s != "none")
        {
            return Response::refused(403, "cross-site request");
        }
        let now = chrono::Utc::now().timestamp_micros();
        if request.method == "POST" {
            let origin_ok = request
                .header("origin")
                .is_some_and(|origin| config.origins.iter().any(|o| o == origin));
            if !origin_ok {
                return Response::refused(403, "cross-origin request");
            }
            if !request
                .header("content-type")
                .is_some_and(|c| c.starts_with("application/json"))
            {
                return Response::refused(415, "a JSON body is needed");
            }
        }
        // Enrolling takes the enrolment code, and a link is its own
        // credential: neither needs the page's token.
        match (request.method.as_str(), request.path.as_str()) {
            ("POST", "/api/enrol/challenge" | "/api/enrol") => {
                let Ok(body) = serde_json::from_slice::<EnrolBody>(&request.body) else {
                    return Response::refused(400, "not an enrolment");
                };
                return self.enrol(store, body, request.path == "/api/enrol", now);
            }
            ("POST", "/api/link") => {
                let Ok(body) = serde_json::from_slice::<LinkBody>(&request.body) else {
                    return Response::refused(400, "not a link");
                };
                return self.take_link(store, body, now);
            }
            _ => {}
        }
        let Some(access) = self.access(request, now) else {
            return Response::refused(403, "a token is needed");
        };
        match (request.method.as_str(), request.path.as_str()) {
            ("GET", "/api/pending") => match super::pending(store, now) {
                Ok(mut waiting) => {
                    waiting.retain(|p| access.covers(&p.call_id));
                    Response::json(200, json!(waiting))
                }
                Err(err) => Response::refused(500, &err.to_string()),
            },
            ("POST", "/api/passkey/challenge") => {
                let Ok(body) = serde_json::from_slice::<ChallengeBody>(&request.body) else {
                    return Response::refused(400, "not a challenge request");
                };
                if !access.covers(&body.call_id) {
                    return Response::refused(403, "this link is for another call");
                }
                self.answer_challenge(store, body, now)
            }
            ("POST", "/api/answer") => {
                let Ok(body) = serde_json::from_slice::<AnswerBody>(&request.body) else {
                    return Response::refused(400, "not an answer");
                };
                if let Access::Call(call) = &access {
                    let factor = body.passkey.is_some() || body.code.is_some();
                    if call != &body.call_id || !factor || body.grant.is_some() {
                        return Response::refused(
                            403,
                            "a link answers its own call, with an approver's passkey or code, and grants nothing",
                        );
                    }
                }
                self.answer(store, body, now)
            }
            _ => Response::refused(404, "no such page"),
        }
    }

    /// A challenge for a passkey to sign an answer to a waiting call: bound
    /// to the call, its arguments and policy, the answer and a fresh nonce.
    fn answer_challenge(&mut self, store: &Store, body: ChallengeBody, now: i64) -> Response {
        let Some(rp) = self.config.relying_party() else {
            return Response::refused(
                409,
                "passkeys need the page served over TLS under a host name (--tls --url https://NAME)",
            );
        };
        let rp_id = rp.id.to_owned();
        let Some(pending) = waiting(store, &body.call_id, now) else {
            return Response::refused(409, "that call is not waiting");
        };
        let credentials: Vec<String> = super::approvers::enrolled(store)
            .unwrap_or_default()
            .into_iter()
            // A call whose rule names nobody: any enrolled person (what a
            // one-time link's view answers with).
            .filter(|p| pending.approvers.as_ref().is_none_or(|a| a.admits(&p.name)))
            .filter_map(|p| p.passkey.filter(|k| k.rp_id == rp_id))
            .map(|k| k.credential_id)
            .collect();
        if credentials.is_empty() {
            return Response::refused(409, "no approver of this call has a passkey for this site");
        }
        let mut nonce = vec![0u8; 16];
        if getrandom::fill(&mut nonce).is_err() {
            return Response::refused(500, "no randomness");
        }
        let challenge = super::approvers::passkey_challenge(
            &pending.call_id,
            &pending.arguments_sha256,
            &pending.policy_digest,
            body.approved,
            &nonce,
        );
        self.issue(challenge.to_vec(), Ceremony::Answer { nonce }, now);
        Response::json(
            200,
            json!({
                "challenge": b64url(&challenge),
                "rp_id": rp_id,
                "credentials": credentials,
                "timeout_ms": CHALLENGE_LASTS_US / 1000,
            }),
        )
    }

    fn answer(&mut self, store: &mut Store, body: AnswerBody, now: i64) -> Response {
        let grant = match body.grant.as_deref() {
            None | Some("") => None,
            Some("call") => Some(GrantKind::Call),
            Some("command") => Some(GrantKind::Command),
            Some("tool") => Some(GrantKind::Tool),
            Some(_) => return Response::refused(400, "a grant is `call`, `command` or `tool`"),
        };
        // A passkey or a code proves the person; the token alone proves only the page.
        let (approver, proof) = match (&body.approver, &body.code, body.passkey) {
            (_, _, Some(assertion)) => {
                match self.prove_passkey(store, &body.call_id, body.approved, assertion, now) {
                    Ok((name, proof)) => (name, Some(proof)),
                    Err(why) => return Response::refused(403, &why),
                }
            }
            (Some(name), Some(code), None) => {
                match super::approvers::prove(store, name, code, now) {
                    Ok(proof) => (name.clone(), Some(proof)),
                    Err(err) => return Response::refused(403, &err.to_string()),
                }
            }
            (None, None, None) => (self.config.name.clone(), None),
            _ => {
                return Response::refused(
                    400,
                    "an approver's answer needs both `approver` and `code`",
                );
            }
        };
        let session = store
            .call_events(&body.call_id)
            .ok()
            .and_then(|events| super::pending_of(&events))
            .and_then(|p| p.session);
        let answer = QueueAnswer {
            status: if body.approved {
                ApprovalStatus::Approved
            } else {
                ApprovalStatus::Rejected
            },
            channel: ApprovalChannel::Web,
            approver,
            proof,
            reason: body.reason,
            arguments_sha256: Some(body.arguments_sha256),
            grant: grant.filter(|_| body.approved).map(|kind| GrantAsk {
                kind,
                session: session.is_some(),
                lasts: session.is_none().then_some(Duration::from_secs(3600)),
                uses: None,
            }),
        };
        let principal = Some(&self.config.principal);
        match super::answer(store, &body.call_id, &answer, principal, now) {
            Ok(pending) => Response::json(
                200,
                json!({
                    "call_id": pending.call_id,
                    "approval": pending.recorded_status(answer.status),
                    "approver": answer.approver,
                    "channel": "web",
                }),
            ),
            Err(err) => Response::refused(409, &err.to_string()),
        }
    }

    /// The person a passkey answer is from: its challenge must be one this
    /// page issued (taken now) for exactly this answer to this call.
    fn prove_passkey(
        &mut self,
        store: &Store,
        call_id: &str,
        approved: bool,
        body: AssertionBody,
        now: i64,
    ) -> Result<(String, super::Proof), String> {
        let (rp_id, origin) = self
            .config
            .relying_party()
            .map(|rp| (rp.id.to_owned(), rp.origin.to_owned()))
            .ok_or("passkeys need the page served over TLS under a host name")?;
        let client = from_b64url(&body.client_data_json)
            .and_then(|json| passkey::client_data(&json).ok())
            .ok_or("the passkey answer's client data is unreadable")?;
        let nonce = match self.take(&client.challenge, now) {
            Some(Ceremony::Answer { nonce }) => nonce,
            _ => {
                return Err(
                    "this passkey answer's challenge was used already or expired; answer again"
                        .into(),
                );
            }
        };
        let pending = waiting(store, call_id, now).ok_or("that call is not waiting")?;
        let assertion = PasskeyAssertion {
            credential_id: body.credential_id,
            authenticator_data: body.authenticator_data,
            client_data_json: body.client_data_json,
            signature: body.signature,
            nonce: b64url(&nonce),
        };
        // The relying party's origin is the page's public one: a copy of the
        // page under another address signs for another origin.
        let rp = RelyingParty {
            id: &rp_id,
            origin: &origin,
        };
        super::approvers::prove_passkey(store, rp, &pending, approved, assertion)
            .map_err(|e| e.to_string())
    }

    /// `/api/enrol/challenge` (`finish` false): a challenge to make a passkey
    /// with; `/api/enrol` (`finish` true): the new passkey, recorded.
    fn enrol(&mut self, store: &mut Store, body: EnrolBody, finish: bool, now: i64) -> Response {
        let Some(rp) = self.config.relying_party() else {
            return Response::refused(
                409,
                "passkeys need the page served over TLS under a host name (--tls --url https://NAME)",
            );
        };
        let (rp_id, origin) = (rp.id.to_owned(), rp.origin.to_owned());
        if let Err(err) = super::approvers::check_enrolment_code(store, &body.name, &body.code, now)
        {
            return Response::refused(403, &err.to_string());
        }
        if !finish {
            let mut challenge = vec![0u8; 32];
            if getrandom::fill(&mut challenge).is_err() {
                return Response::refused(500, "no randomness");
            }
            let name = body.name.clone();
            self.issue(challenge.clone(), Ceremony::Enrol { name }, now);
            return Response::json(
                200,
                json!({
                    "challenge": b64url(&challenge),
                    "rp_id": rp_id,
                    "user_id": b64url(&crate::digest::sha256(body.name.as_bytes())[..16]),
                    "name": body.name,
                    "timeout_ms": CHALLENGE_LASTS_US / 1000,
                }),
            );
        }
        let (Some(client), Some(attestation)) = (
            body.client_data_json.as_deref().and_then(from_b64url),
            body.attestation_object.as_deref().and_then(from_b64url),
        ) else {
            return Response::refused(400, "an enrolment needs the new passkey");
        };
        let Ok(data) = passkey::client_data(&client) else {
            return Response::refused(400, "the passkey's client data is unreadable");
        };
        match self.take(&data.challenge, now) {
            Some(Ceremony::Enrol { name }) if name == body.name => {}
            _ => {
                return Response::refused(
                    403,
                    "this enrolment's challenge was used already or expired",
                );
            }
        }
        let rp = RelyingParty {
            id: &rp_id,
            origin: &origin,
        };
        let credential = match passkey::register(rp, &data.challenge, &client, &attestation) {
            Ok(credential) => credential,
            Err(err) => return Response::refused(403, &err.to_string()),
        };
        let by = self.config.principal.clone();
        match super::approvers::enrol_passkey(
            store,
            &body.name,
            &body.code,
            &credential,
            &rp_id,
            &by,
            now,
        ) {
            Ok(()) => Response::json(200, json!({ "enrolled": body.name, "factor": "passkey" })),
            Err(err) => Response::refused(409, &err.to_string()),
        }
    }
}

/// The call `call_id`, when it waits in the queue now.
fn waiting(store: &Store, call_id: &str, now: i64) -> Option<super::Pending> {
    let events = store.call_events(call_id).ok()?;
    super::pending_of(&events).filter(|p| p.until_us > now)
}

/// Reads one request from `stream` (headers, and a body of at most 64 KiB).
pub fn read_request(stream: &mut dyn Read) -> std::io::Result<Request> {
    let mut reader = BufReader::new(stream.take(MAX_BODY as u64 + 16 * 1024));
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_owned();
    let path = parts.next().unwrap_or_default().to_owned();
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            break;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
        }
        if headers.len() > 100 {
            break;
        }
    }
    let length = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse::<usize>().ok())
        .unwrap_or(0)
        .min(MAX_BODY);
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body)?;
    Ok(Request {
        method,
        path,
        headers,
        body,
    })
}

fn write_response(stream: &mut dyn Write, response: &Response) -> std::io::Result<()> {
    let reason = match response.status {
        200 => "OK",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        409 => "Conflict",
        415 => "Unsupported Media Type",
        421 => "Misdirected Request",
        500 => "Internal Server Error",
        _ => "Error",
    };
    write!(
        stream,
        "HTTP/1.1 {} {reason}\r\nContent-Type: {}\r\nContent-Length: {}\r\nCache-Control: no-store\r\n\
         X-Frame-Options: DENY\r\nX-Content-Type-Options: nosniff\r\nReferrer-Policy: no-referrer\r\n\
         Content-Security-Policy: default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'unsafe-inline'; frame-ancestors 'none'\r\n\
         Connection: close\r\n\r\n",
        response.status,
        response.content_type,
        response.body.len()
    )?;
    stream.write_all(&response.body)?;
    stream.flush()
}

/// One connection's bytes: plain TCP, or TLS over it.
pub trait Connection: Read + Write {}
impl<T: Read + Write> Connection for T {}

/// An accepted socket that ends its reads at a deadline: a peer that
/// sends a byte now and then holds the page (one connection at a time)
/// for [`CONNECTION_LASTS`] at most.
pub struct Timed {
    stream: TcpStream,
    until: std::time::Instant,
}

/// How long one connection may take to send its request.
pub const CONNECTION_LASTS: Duration = Duration::from_secs(10);

impl Timed {
    fn new(stream: TcpStream) -> std::io::Result<Self> {
        stream.set_write_timeout(Some(Duration::from_secs(5)))?;
        Ok(Self {
            stream,
            until: std::time::Instant::now() + CONNECTION_LASTS,
        })
    }
}

impl Read for Timed {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let left = self
            .until
            .checked_duration_since(std::time::Instant::now())
            .filter(|left| !left.is_zero())
            .ok_or(std::io::ErrorKind::TimedOut)?;
        self.stream.set_read_timeout(Some(left))?;
        self.stream.read(buf)
    }
}

impl Write for Timed {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.stream.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.stream.flush()
    }
}

/// Makes a connection of an accepted socket (wraps it in TLS, or not).
pub type Acceptor = Box<dyn Fn(Timed) -> std::io::Result<Box<dyn Connection>> + Send>;

/// Connections served as they are, without TLS.
pub fn plain() -> Acceptor {
    Box::new(|stream| Ok(Box::new(stream)))
}

/// Serves the page on `listener` until the process ends, one request at a time.
pub fn serve(
    listener: TcpListener,
    page: &mut Page,
    store: &mut Store,
    accept: &Acceptor,
) -> std::io::Result<()> {
    for stream in listener.incoming() {
        let Ok(stream) = stream.and_then(Timed::new) else {
            continue;
        };
        let Ok(mut connection) = accept(stream) else {
            continue;
        };
        let response = match read_request(&mut connection) {
            Ok(request) => page.handle(store, &request),
            // A failed TLS handshake lands here too: nothing to answer it with.
            Err(_) => Response::refused(400, "unreadable request"),
        };
        let _ = write_response(&mut connection, &response);
    }
    Ok(())
}
