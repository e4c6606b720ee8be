//! Announcing a call that waits in the pending queue to a webhook
//! (`[approval.notify]`): one message per call, shaped for its receiver
//! (gavel's JSON, Slack, Discord, ntfy), carrying a one-time link to the
//! approval page. A message never approves anything by itself: the link
//! opens the page, where the approver's factor is still asked for.
//!
//! It knows nothing of the queue or the store: the caller hands it a
//! [`Notice`]. A webhook's URL is a secret, so errors name only its
//! `scheme://host`.

use serde_json::{Value, json};

use crate::policy::{Notify, NotifyFormat, NotifyTarget};

/// The most characters of the arguments a message shows.
const PREVIEW_CHARS: usize = 500;
/// The most characters of a Discord message's `content`.
const DISCORD_CHARS: usize = 2000;
/// The most characters shown of a tool, rule id or who (agent-supplied, unbounded).
const NAME_CHARS: usize = 200;
/// The most characters shown of a rule's reason.
const REASON_CHARS: usize = 400;
/// What every human-readable message says the link is for.
const REVIEW: &str = "review and approve it (your approver factor is still needed)";

/// A call waiting for approval, as a message announces it.
#[derive(Debug, Clone, Copy)]
pub struct Notice<'a> {
    pub call_id: &'a str,
    pub tool: &'a str,
    /// The arguments as judged.
    pub arguments: &'a Value,
    pub rule_id: &'a str,
    pub reason: &'a str,
    /// Who made the call, e.g. `alice via claude-code`.
    pub who: &'a str,
    /// A one-time URL to the approval page for this call.
    pub link: &'a str,
    /// When the wait (and the link) ends, in unix microseconds.
    pub expires_us: i64,
}

/// One HTTP request's content: what [`send`] POSTs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub content_type: &'static str,
    /// Headers beside `Content-Type` (ntfy's `Title`, `Click`, `Tags`).
    pub headers: Vec<(&'static str, String)>,
    pub body: Vec<u8>,
}

/// Why a message was not delivered. Each names the webhook by its
/// `scheme://host` only, never its full URL.
#[derive(Debug, thiserror::Error)]
pub enum NotifyError {
    #[error("no webhook URL: `{env}` is unset or empty")]
    NoUrl { env: String },
    #[error("the webhook URL in `{env}` {problem}")]
    BadUrl { env: String, problem: String },
    #[error("webhook `{origin}` answered HTTP {status}")]
    Status { origin: String, status: u16 },
    #[error("cannot reach webhook `{origin}`: {detail}")]
    Transport { origin: String, detail: String },
}

/// The message announcing `notice`, shaped as `format` asks.
pub fn message(format: NotifyFormat, notice: &Notice) -> Message {
    let expires_at = expires_at(notice.expires_us);
    match format {
        NotifyFormat::Json => json_message(&json!({
            "type": "gavel.pending",
            "call_id": notice.call_id,
            "tool": notice.tool,
            "arguments_preview": preview(notice.arguments, PREVIEW_CHARS),
            "rule_id": notice.rule_id,
            "reason": notice.reason,
            "who": notice.who,
            "link": notice.link,
            "expires_at": expires_at,
        })),
        NotifyFormat::Slack => json_message(&json!({ "text": slack_text(notice, &expires_at) })),
        NotifyFormat::Discord => json_message(&json!({
            "content": discord_text(notice, &expires_at),
            // Arguments may hold `@everyone`: nobody is pinged.
            "allowed_mentions": { "parse": [] },
        })),
        NotifyFormat::Ntfy => Message {
            content_type: "text/plain; charset=utf-8",
            headers: vec![
                (
                    "Title",
                    header_value(&format!(
                        "gavel: {} waits for approval",
                        clip(notice.tool, NAME_CHARS)
                    )),
                ),
                ("Click", header_value(notice.link)),
                ("Tags", "gavel".to_owned()),
            ],
            body: plain_text(notice, &expires_at).into_bytes(),
        },
    }
}

/// POSTs the message announcing `notice` to `notify`'s webhook, once, within
/// its timeout. Any answer but a 2xx is an error; nothing is retried.
pub fn send(notify: &Notify, notice: &Notice) -> Result<(), NotifyError> {
    let url = match &notify.target {
        NotifyTarget::Url(url) => url.clone(),
        NotifyTarget::Env(env) => {
            let url = std::env::var(env).unwrap_or_default().trim().to_owned();
            if url.is_empty() {
                return Err(NotifyError::NoUrl { env: env.clone() });
            }
            crate::policy::check_notify_url(&url).map_err(|problem| NotifyError::BadUrl {
                env: env.clone(),
                problem,
            })?;
            url
        }
    };
    let origin = origin(&url);
    let message = message(notify.format, notice);
    let agent = ureq::Agent::new_with_config(
        ureq::Agent::config_builder()
            .timeout_global(Some(notify.timeout))
            .http_status_as_error(false)
            .max_redirects(0)
            .build(),
    );
    let mut request = agent
        .post(&url)
        .header("Content-Type", message.content_type);
    for (name, value) in &message.headers {
        request = request.header(*name, value);
    }
    let response = request
        .send(&message.body[..])
        .map_err(|error| NotifyError::Transport {
            detail: transport_detail(&error, &url, &origin),
            origin: origin.clone(),
        })?;
    let status = response.status();
    if !status.is_success() {
        return Err(NotifyError::Status {
            origin,
            status: status.as_u16(),
        });
    }
    Ok(())
}

fn json_message(body: &Value) -> Message {
    Message {
        content_type: "application/json",
        headers: Vec::new(),
        body: body.to_string().into_bytes(),
    }
}

/// Slack mrkdwn: `&`, `<` and `>` of what the call supplied are escaped,
/// so its text can neither link nor mention.
fn slack_text(notice: &Notice, expires_at: &str) -> String {
    let escape = |text: &str| {
        text.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
    };
    format!(
        "*gavel: a call waits for approval*\n`{tool}` by {who}\nRule `{rule}`: {reason}\n```{arguments}```\n<{link}|open in gavel> to {REVIEW}. The link ends at {expires_at}.",
        tool = escape(&inline_code(&clip(notice.tool, NAME_CHARS))),
        who = escape(&clip(notice.who, NAME_CHARS)),
        rule = escape(&inline_code(&clip(notice.rule_id, NAME_CHARS))),
        reason = escape(&clip(notice.reason, REASON_CHARS)),
        arguments = escape(&fenced(&preview(notice.arguments, PREVIEW_CHARS))),
        link = notice.link,
    )
}

/// Discord markdown, at most [`DISCORD_CHARS`]: the arguments' preview is
/// shortened to fit.
fn discord_text(notice: &Notice, expires_at: &str) -> String {
    let text = |arguments: &str| {
        format!(
            "**gavel: a call waits for approval**\n`{tool}` by {who}\nRule `{rule}`: {reason}\n```\n{arguments}\n```\nOpen <{link}> to {REVIEW}. The link ends at {expires_at}.",
            tool = inline_code(&clip(notice.tool, NAME_CHARS)),
            who = clip(notice.who, NAME_CHARS),
            rule = inline_code(&clip(notice.rule_id, NAME_CHARS)),
            reason = clip(notice.reason, REASON_CHARS),
            link = notice.link,
        )
    };
    let room = DISCORD_CHARS.saturating_sub(text("").chars().count());
    let content = text(&fenced(&preview(notice.arguments, room.min(PREVIEW_CHARS))));
    // Only a link of more than ~800 characters leaves it too long.
    clip(&content, DISCORD_CHARS)
}

/// Plain text, for ntfy.
fn plain_text(notice: &Notice, expires_at: &str) -> String {
    format!(
        "{tool} by {who} waits for approval.\nRule {rule}: {reason}\nArguments: {arguments}\nOpen the link to {REVIEW}: {link}\nThe link ends at {expires_at}.",
        tool = clip(notice.tool, NAME_CHARS),
        who = clip(notice.who, NAME_CHARS),
        rule = clip(notice.rule_id, NAME_CHARS),
        reason = clip(notice.reason, REASON_CHARS),
        arguments = preview(notice.arguments, PREVIEW_CHARS),
        link = notice.link,
    )
}

/// The arguments as compact JSON, at most `max` characters (the last an
/// ellipsis when cut).
fn preview(arguments: &Value, max: usize) -> String {
    clip(&arguments.to_string(), max)
}

/// `text`, at most `max` characters: when longer, its first `max - 1` and `…`.
fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut clipped: String = text.chars().take(max.saturating_sub(1)).collect();
    clipped.push('…');
    clipped
}

/// `text` inside a single-backtick code span: its backticks become quotes.
fn inline_code(text: &str) -> String {
    text.replace('`', "'")
}

/// `text` inside a ``` block: a run of three backticks would close it.
fn fenced(text: &str) -> String {
    text.replace("```", "`\u{200b}``")
}

/// `text` as an HTTP header value: printable ASCII, anything else a `?`.
fn header_value(text: &str) -> String {
    text.chars()
        .map(|c| if (' '..='~').contains(&c) { c } else { '?' })
        .collect()
}

/// When the link ends, RFC 3339 in UTC to the second.
fn expires_at(expires_us: i64) -> String {
    chrono::DateTime::from_timestamp_micros(expires_us)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
        .unwrap_or_default()
}

/// `scheme://host[:port]` of `url`: no user, path or query, which may hold
/// the webhook's secret.
fn origin(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host = authority.rsplit('@').next().unwrap_or_default();
    format!("{}://{host}", scheme.to_ascii_lowercase())
}

/// A transport error as one line, the URL (and its path) left out.
fn transport_detail(error: &ureq::Error, url: &str, origin: &str) -> String {
    if let ureq::Error::BadUri(_) = error {
        return "not a valid URL".to_owned();
    }
    let mut detail = error.to_string().replace(url, origin);
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let path = rest.find(['/', '?', '#']).map_or("", |at| &rest[at..]);
    if path.len() > 1 {
        detail = detail.replace(path, "/…");
    }
    detail.replace(['\r', '\n'], " ")
}

#[cfg(test)]
mod tests {
    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::TcpListener;
    use std::time::Duration;

    use serde_json::{Value, json};

    use super::*;

    const LINK: &str = "https://gavel.example:8443/a/9f8e7d?t=one-time";

    fn notice(arguments: &Value) -> Notice<'_> {
        Notice {
            call_id: "c-1",
            tool: "bash",
            arguments,
            rule_id: "bash.requires_approval",
            reason: "runs <a> command & more",
            who: "alice via claude-code",
            link: LINK,
            // 2024-05-01T12:00:00Z
            expires_us: 1_714_564_800_000_000,
        }
    }

    fn body_json(message: &Message) -> Value {
        assert_eq!(message.content_type, "application/json");
        serde_json::from_slice(&message.body).unwrap()
    }

    #[test]
    fn json_carries_every_field() {
        let arguments = json!({"command": "rm -rf build"});
        let message = message(NotifyFormat::Json, &notice(&arguments));
        assert!(message.headers.is_empty());
        assert_eq!(
            body_json(&message),
            json!({
                "type": "gavel.pending",
                "call_id": "c-1",
                "tool": "bash",
                "arguments_preview": "{\"command\":\"rm -rf build\"}",
                "rule_id": "bash.requires_approval",
                "reason": "runs <a> command & more",
                "who": "alice via claude-code",
                "link": LINK,
                "expires_at": "2024-05-01T12:00:00Z",
            })
        );
    }

    #[test]
    fn slack_links_to_the_page_and_escapes_what_the_call_supplied() {
        let arguments = json!({"command": "echo <!channel> ```"});
        let body = body_json(&message(NotifyFormat::Slack, &notice(&arguments)));
        let object = body.as_object().unwrap();
        assert_eq!(object.len(), 1);
        let text = object["text"].as_str().unwrap();
        assert!(text.contains(&format!("<{LINK}|open in gavel>")), "{text}");
        assert!(text.contains("review and approve"), "{text}");
        assert!(text.contains("runs &lt;a&gt; command &amp; more"), "{text}");
        assert!(text.contains("&lt;!channel&gt;"), "{text}");
        assert!(!text.contains("<!channel>"), "{text}");
        assert!(text.contains("2024-05-01T12:00:00Z"), "{text}");
        assert!(text.contains("alice via claude-code"), "{text}");
        // The arguments cannot close their code block early.
        assert_eq!(text.matches("```").count(), 2, "{text}");
    }

    #[test]
    fn discord_fits_its_limit_and_pings_nobody() {
        let arguments = json!({"content": "x".repeat(10_000)});
        let reason = "r".repeat(5_000);
        let notice = Notice {
            reason: &reason,
            ..notice(&arguments)
        };
        let body = body_json(&message(NotifyFormat::Discord, &notice));
        assert_eq!(body["allowed_mentions"], json!({"parse": []}));
        let content = body["content"].as_str().unwrap();
        assert!(content.chars().count() <= 2000, "{}", content.len());
        assert!(content.contains(&format!("<{LINK}>")), "{content}");
        assert!(content.contains("review and approve"), "{content}");
        assert!(content.contains("xxx…\n```"), "{content}");
    }

    #[test]
    fn ntfy_is_plain_text_with_title_click_and_tags() {
        let arguments = json!({"command": "ls"});
        let message = message(NotifyFormat::Ntfy, &notice(&arguments));
        assert_eq!(message.content_type, "text/plain; charset=utf-8");
        assert_eq!(
            message.headers,
            vec![
                ("Title", "gavel: bash waits for approval".to_owned()),
                ("Click", LINK.to_owned()),
                ("Tags", "gavel".to_owned()),
            ]
        );
        let body = String::from_utf8(message.body).unwrap();
        assert!(body.contains("{\"command\":\"ls\"}"), "{body}");
        assert!(body.contains(LINK), "{body}");
        assert!(body.contains("review and approve"), "{body}");
        assert!(body.contains("alice via claude-code"), "{body}");
    }

    #[test]
    fn an_ntfy_title_is_a_valid_header() {
        let arguments = json!({});
        let notice = Notice {
            tool: "werkzeug\u{e9}\nX-Evil: 1",
            ..notice(&arguments)
        };
        let message = message(NotifyFormat::Ntfy, &notice);
        assert_eq!(
            message.headers[0].1,
            "gavel: werkzeug??X-Evil: 1 waits for approval"
        );
    }

    #[test]
    fn previews_are_cut_at_500_characters() {
        let short = json!({"a": 1});
        assert_eq!(preview(&short, PREVIEW_CHARS), "{\"a\":1}");
        let long = json!({"text": "é".repeat(2_000)});
        let cut = preview(&long, PREVIEW_CHARS);
        assert_eq!(cut.chars().count(), 500);
        assert!(cut.starts_with("{\"text\":\"éé"));
        assert!(cut.ends_with("é…"));
        let body = body_json(&message(NotifyFormat::Json, &notice(&long)));
        assert_eq!(body["arguments_preview"], json!(cut));
    }

    #[test]
    fn errors_name_the_host_never_the_path() {
        assert_eq!(
            origin("HTTPS://user:pw@hooks.example.com:8443/services/T0/SECRET?x=y"),
            "https://hooks.example.com:8443"
        );
        let error = NotifyError::Status {
            origin: origin("https://hooks.example.com/services/SECRET"),
            status: 404,
        };
        assert_eq!(
            error.to_string(),
            "webhook `https://hooks.example.com` answered HTTP 404"
        );
        // Nothing listens on port 1: a transport error.
        let notify = Notify {
            target: NotifyTarget::Url("http://127.0.0.1:1/hooks/SECRET-TOKEN".into()),
            format: NotifyFormat::Json,
            timeout: Duration::from_secs(5),
        };
        let arguments = json!({});
        let error = send(&notify, &notice(&arguments)).unwrap_err();
        let text = error.to_string();
        assert!(matches!(error, NotifyError::Transport { .. }), "{text}");
        assert!(
            text.starts_with("cannot reach webhook `http://127.0.0.1:1`"),
            "{text}"
        );
        assert!(
            !text.contains("SECRET") && !text.contains("hooks"),
            "{text}"
        );
        assert!(!text.contains('\n'), "{text}");
        let detail = transport_detail(
            &ureq::Error::BadUri("http://h/SECRET".into()),
            "http://h/SECRET",
            "http://h",
        );
        assert_eq!(detail, "not a valid URL");
    }

    /// What a receiver got: the request line, headers (names lowercased), body.
    type Received = (String, Vec<(String, String)>, Vec<u8>);

    /// A one-request HTTP server on 127.0.0.1 answering `status`: its URL,
    /// and its thread, which returns what it received.
    fn receiver(status: u16) -> (String, std::thread::JoinHandle<Received>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/hooks/T0/SECRET", listener.local_addr().unwrap());
        let handle = std::thread::spawn(move || {
            let (stream, _) = listener.accept().unwrap();
            let mut reader = BufReader::new(stream);
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            let mut headers = Vec::new();
            loop {
                let mut header = String::new();
                reader.read_line(&mut header).unwrap();
                let header = header.trim_end();
                if header.is_empty() {
                    break;
                }
                let (name, value) = header.split_once(':').unwrap();
                headers.push((name.to_ascii_lowercase(), value.trim().to_owned()));
            }
            let length: usize = headers
                .iter()
                .find(|(name, _)| name == "content-length")
                .map_or(0, |(_, value)| value.parse().unwrap());
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            let answer =
                format!("HTTP/1.1 {status} X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
            reader.get_mut().write_all(answer.as_bytes()).unwrap();
            (line.trim_end().to_owned(), headers, body)
        });
        (url, handle)
    }

    #[test]
    fn send_posts_the_message() {
        let (url, handle) = receiver(200);
        let notify = Notify {
            target: NotifyTarget::Url(url),
            format: NotifyFormat::Ntfy,
            timeout: Duration::from_secs(10),
        };
        let arguments = json!({"command": "ls"});
        send(&notify, &notice(&arguments)).unwrap();
        let (line, headers, body) = handle.join().unwrap();
        assert_eq!(line, "POST /hooks/T0/SECRET HTTP/1.1");
        let header = |name: &str| {
            headers
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(header("content-type"), Some("text/plain; charset=utf-8"));
        assert_eq!(header("click"), Some(LINK));
        assert_eq!(header("tags"), Some("gavel"));
        let expected = message(NotifyFormat::Ntfy, &notice(&arguments));
        assert_eq!(body, expected.body);
    }

    #[test]
    fn send_posts_json() {
        let (url, handle) = receiver(204);
        let notify = Notify {
            target: NotifyTarget::Url(url),
            format: NotifyFormat::Json,
            timeout: Duration::from_secs(10),
        };
        let arguments = json!({"command": "ls"});
        send(&notify, &notice(&arguments)).unwrap();
        let (line, headers, body) = handle.join().unwrap();
        assert!(line.starts_with("POST "), "{line}");
        assert!(headers.contains(&("content-type".into(), "application/json".into())));
        let body: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(body["type"], "gavel.pending");
        assert_eq!(body["call_id"], "c-1");
    }

    #[test]
    fn a_500_is_an_error() {
        let (url, handle) = receiver(500);
        let origin = origin(&url);
        let notify = Notify {
            target: NotifyTarget::Url(url),
            format: NotifyFormat::Slack,
            timeout: Duration::from_secs(10),
        };
        let arguments = json!({});
        let error = send(&notify, &notice(&arguments)).unwrap_err();
        handle.join().unwrap();
        assert!(
            matches!(&error, NotifyError::Status { status: 500, origin: o } if *o == origin),
            "{error}"
        );
        assert!(!error.to_string().contains("SECRET"), "{error}");
    }

    #[test]
    fn an_unset_url_env_is_an_error() {
        let notify = Notify {
            target: NotifyTarget::Env("GAVEL_TEST_NOTIFY_URL_NEVER_SET".into()),
            format: NotifyFormat::Json,
            timeout: Duration::from_secs(1),
        };
        let arguments = json!({});
        let error = send(&notify, &notice(&arguments)).unwrap_err();
        assert!(matches!(error, NotifyError::NoUrl { .. }), "{error}");
        assert_eq!(
            error.to_string(),
            "no webhook URL: `GAVEL_TEST_NOTIFY_URL_NEVER_SET` is unset or empty"
        );
    }
}
