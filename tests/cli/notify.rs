//! `[approval.notify]`, through the real binary: the approval page sends
//! each call that starts waiting to a webhook (a local test receiver),
//! once, with a one-time link; the link gives a view of that one call,
//! where only an approver's code answers; it is taken once and ends with
//! the wait; a failing receiver approves nothing.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Child;
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

use serde_json::{Value, json};

use crate::approvals::wait_for_pending;
use crate::approvers::{code_now, enrol, spawn_write_to};
use crate::support::*;

/// A webhook receiver on a free loopback port answering `status`: its
/// URL, and each request body it gets.
fn receiver(status: u16) -> (String, Receiver<Value>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let (send, got) = channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let (_, _, body) = read_http(&mut stream);
            let _ = write!(
                stream,
                "HTTP/1.1 {status} X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            );
            let _ = send.send(serde_json::from_slice(&body).unwrap_or(Value::Null));
        }
    });
    (url, got)
}

/// One HTTP message from `stream`: its first line, headers, body.
fn read_http(stream: &mut TcpStream) -> (String, Vec<(String, String)>, Vec<u8>) {
    let mut reader = BufReader::new(stream);
    let mut first = String::new();
    reader.read_line(&mut first).unwrap();
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap() == 0 || line.trim().is_empty() {
            break;
        }
        let (name, value) = line.split_once(':').unwrap();
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
    }
    let length = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .map_or(0, |(_, v)| v.parse().unwrap());
    let mut body = vec![0; length];
    reader.read_exact(&mut body).unwrap();
    (first, headers, body)
}

/// A request to the page at `address`, as its own script sends it.
fn page_request(
    address: &str,
    method: &str,
    path: &str,
    view: Option<&str>,
    body: Option<Value>,
) -> (u16, Value) {
    let mut stream = TcpStream::connect(address).unwrap();
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {address}\r\nOrigin: http://{address}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n",
        body.len()
    );
    if let Some(view) = view {
        head.push_str(&format!("X-Gavel-View: {view}\r\n"));
    }
    write!(stream, "{head}\r\n{body}").unwrap();
    let (first, _, body) = read_http(&mut stream);
    let status = first.split_whitespace().nth(1).unwrap().parse().unwrap();
    (status, serde_json::from_slice(&body).unwrap_or(Value::Null))
}

fn policy(url: &str) -> String {
    format!(
        r#"name = "notified"

[approval]
wait = "60s"

[approval.notify]
url = "{url}"

[[rules]]
id = "write.by_bob"
action = "ask"
tools = ["write_file"]
approvers = ["bob"]
reason = "bob approves writes"
"#
    )
}

/// `gavel approvals` on a free loopback port: the process, its address, and
/// the lines it writes to stderr after its first.
fn start_page(sandbox: &Sandbox) -> (Child, String, Receiver<String>) {
    let token_file = sandbox.root.join("state/approvals-token");
    let token_file = token_file.to_str().unwrap();
    let mut child = sandbox.spawn(&[
        "approvals",
        "--listen",
        "127.0.0.1:0",
        "--token-file",
        token_file,
    ]);
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let address = first
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .unwrap_or_else(|| panic!("no address in {first}"))
        .to_owned();
    let (send, said) = channel();
    std::thread::spawn(move || {
        for line in lines.map_while(Result::ok) {
            let _ = send.send(line);
        }
    });
    (child, address, said)
}

fn spawn_write(sandbox: &Sandbox, id: &str, wait: &str) -> Child {
    spawn_write_to(sandbox, id, &format!("{id}.txt"), "linked\n", wait)
}

/// The `link` fields of a link `ORIGIN/#call=ID&link=MAC`.
fn link_parts(link: &str) -> (String, String) {
    let fragment = link.split("/#").nth(1).unwrap();
    let field = |name: &str| {
        fragment
            .split('&')
            .find_map(|kv| kv.strip_prefix(&format!("{name}=")))
            .unwrap()
            .to_owned()
    };
    (field("call"), field("link"))
}

#[test]
fn a_webhook_gets_one_message_per_waiting_call_with_a_one_time_link() {
    let (url, messages) = receiver(200);
    let sandbox = Sandbox::new();
    sandbox.write("gavel.toml", &policy(&url));
    let bob = enrol(&sandbox, "bob");
    let (mut page, address, _said) = start_page(&sandbox);

    let run = spawn_write(&sandbox, "n1", "wait=60s");
    let message = messages
        .recv_timeout(Duration::from_secs(20))
        .expect("the webhook is told of the waiting call");
    assert_eq!(message["type"], "gavel.pending", "{message}");
    assert_eq!(message["call_id"], "n1");
    assert_eq!(message["rule_id"], "write.by_bob");
    let link = message["link"].as_str().unwrap();
    assert!(
        link.starts_with(&format!("http://{address}/#call=n1&link=")),
        "{link}"
    );
    let (call, mac) = link_parts(link);

    // The link is taken once, for a view of that call alone.
    let taken = page_request(
        &address,
        "POST",
        "/api/link",
        None,
        Some(json!({"call_id": call, "link": mac})),
    );
    assert_eq!(taken.0, 200, "{taken:?}");
    let view = taken.1["view"].as_str().unwrap().to_owned();
    let again = page_request(
        &address,
        "POST",
        "/api/link",
        None,
        Some(json!({"call_id": call, "link": mac})),
    );
    assert_eq!(again.0, 403, "{again:?}");
    let forged = page_request(
        &address,
        "POST",
        "/api/link",
        None,
        Some(json!({"call_id": call, "link": "0".repeat(64)})),
    );
    assert_eq!(forged.0, 403, "{forged:?}");
    let listed = page_request(&address, "GET", "/api/pending", Some(&view), None);
    assert_eq!(listed.0, 200);
    assert_eq!(listed.1.as_array().unwrap().len(), 1);
    let digest = listed.1[0]["arguments_sha256"].clone();
    // The view alone does not approve; bob's code does.
    let bare = json!({"call_id": "n1", "approved": true, "arguments_sha256": digest});
    let refused = page_request(&address, "POST", "/api/answer", Some(&view), Some(bare));
    assert_eq!(refused.0, 403, "{refused:?}");
    let with_code = json!({"call_id": "n1", "approved": true, "arguments_sha256": digest,
                           "approver": "bob", "code": code_now(&bob)});
    let answered = page_request(
        &address,
        "POST",
        "/api/answer",
        Some(&view),
        Some(with_code),
    );
    assert_eq!(answered.0, 200, "{answered:?}");
    let outcome = json(&run.wait_with_output().unwrap());
    assert_eq!(outcome["status"], "succeeded", "{outcome}");
    assert_eq!(sandbox.read("n1.txt"), "linked\n");

    // A link ends with its call's wait.
    let run = spawn_write(&sandbox, "n2", "wait=2s");
    let message = messages.recv_timeout(Duration::from_secs(20)).unwrap();
    assert_eq!(message["call_id"], "n2");
    let (call, mac) = link_parts(message["link"].as_str().unwrap());
    let outcome = json(&run.wait_with_output().unwrap());
    assert_eq!(outcome["approval"], "cancelled", "{outcome}");
    let expired = page_request(
        &address,
        "POST",
        "/api/link",
        None,
        Some(json!({"call_id": call, "link": mac})),
    );
    assert_eq!(expired.0, 403, "{expired:?}");
    // One message per call: nothing more came.
    assert!(messages.recv_timeout(Duration::from_secs(2)).is_err());
    let _ = page.kill();
    let _ = page.wait();
}

#[test]
fn a_failing_webhook_is_reported_and_approves_nothing() {
    let (url, messages) = receiver(500);
    let sandbox = Sandbox::new();
    sandbox.write("gavel.toml", &policy(&url));
    enrol(&sandbox, "bob");
    let (mut page, _address, said) = start_page(&sandbox);
    let run = spawn_write(&sandbox, "f1", "wait=3s");
    wait_for_pending(&sandbox, 1);
    messages
        .recv_timeout(Duration::from_secs(20))
        .expect("the webhook was tried");
    let line = said.recv_timeout(Duration::from_secs(10)).unwrap();
    assert!(line.contains("could not notify of call f1"), "{line}");
    assert!(line.contains("HTTP 500"), "{line}");
    let outcome = json(&run.wait_with_output().unwrap());
    assert_eq!(outcome["approval"], "cancelled", "{outcome}");
    assert!(!sandbox.ws.join("f1.txt").exists());
    let _ = page.kill();
    let _ = page.wait();
}

/// The link, opened in a browser: the page takes it, shows that call with
/// an approver's form (no token buttons), and bob's code approves it.
#[test]
fn a_link_opened_in_the_browser_shows_its_call_and_takes_a_code() {
    use crate::approvals_page::{Browser, chromium};
    let Some(chromium) = chromium("a_link_opened_in_the_browser") else {
        return;
    };
    let (url, messages) = receiver(200);
    let sandbox = Sandbox::new();
    sandbox.write("gavel.toml", &policy(&url));
    let bob = enrol(&sandbox, "bob");
    let (mut page, _address, _said) = start_page(&sandbox);
    let run = spawn_write(&sandbox, "b1", "wait=60s");
    let message = messages.recv_timeout(Duration::from_secs(20)).unwrap();
    let mut browser = Browser::start(&chromium, &sandbox.root.join("profile"));
    let tab = browser.open(message["link"].as_str().unwrap());
    let row = "document.querySelector('tr[data-call=\"b1\"]')";
    browser.until(
        &tab,
        &format!("!!{row} && !!{row}.querySelector('input[name=code]')"),
    );
    assert_eq!(
        browser.eval(
            &tab,
            &format!("!!{row}.querySelector('[data-action=grant-call]')")
        ),
        json!(false)
    );
    browser.eval(
        &tab,
        &format!(
            "(() => {{ const r = {row}; r.querySelector('input[name=approver]').value = 'bob'; \
             r.querySelector('input[name=code]').value = '{}'; \
             r.querySelector('[data-action=approve]').click(); return true; }})()",
            code_now(&bob)
        ),
    );
    let outcome = json(&run.wait_with_output().unwrap());
    assert_eq!(outcome["status"], "succeeded", "{outcome}");
    // Opened again (a second tab), the link is refused.
    let again = browser.open(message["link"].as_str().unwrap());
    browser.until(
        &again,
        "document.getElementById('status').textContent.startsWith('refused')",
    );
    let _ = page.kill();
    let _ = page.wait();
}
