//! The approval page in headless Chromium, driven over the DevTools
//! protocol (`--remote-debugging-pipe`: JSON messages ended by NUL on fds 3
//! and 4): approve by click, reject by click, no token refused, a forged
//! cross-site request refused. Skipped without `chromium` unless
//! GAVEL_REQUIRE_CHROMIUM=1.

use std::io::{BufRead, BufReader, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::approvals::wait_for_pending;
use crate::support::*;

pub fn chromium(test: &str) -> Option<std::path::PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("chromium"))
            .find(|path| path.is_file())
    });
    if found.is_none() {
        assert!(
            std::env::var_os("GAVEL_REQUIRE_CHROMIUM").is_none(),
            "GAVEL_REQUIRE_CHROMIUM is set but `chromium` is not on PATH"
        );
        eprintln!("SKIPPED {test}: `chromium` is not installed");
    }
    found
}

/// A headless Chromium spoken to over its DevTools pipe.
pub struct Browser {
    child: Child,
    to: std::fs::File,
    from: Receiver<Value>,
    next: u64,
}

fn pipe() -> (OwnedFd, OwnedFd) {
    let mut fds = [0; 2];
    // SAFETY: pipe(2) fills two descriptors this function then owns.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: both descriptors were just opened and are owned by nobody else.
    unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
}

impl Browser {
    pub fn start(chromium: &std::path::Path, profile: &std::path::Path) -> Self {
        Self::start_with(chromium, profile, &[])
    }

    /// With more command-line flags (host mappings, a pinned certificate).
    pub fn start_with(
        chromium: &std::path::Path,
        profile: &std::path::Path,
        flags: &[String],
    ) -> Self {
        use std::os::fd::AsRawFd;
        let (chrome_reads, we_write) = pipe();
        let (we_read, chrome_writes) = pipe();
        let (r, w) = (chrome_reads.as_raw_fd(), chrome_writes.as_raw_fd());
        let mut cmd = Command::new(chromium);
        cmd.args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            "--no-first-run",
            "--remote-debugging-pipe",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(flags)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
        // SAFETY: only async-signal-safe dup2(2) calls between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                if libc::dup2(r, 3) < 0 || libc::dup2(w, 4) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd.spawn().expect("start chromium");
        drop(chrome_reads);
        drop(chrome_writes);
        let (send, from) = channel();
        let reader = std::fs::File::from(we_read);
        std::thread::spawn(move || {
            let mut reader = BufReader::new(reader);
            loop {
                let mut message = Vec::new();
                match reader.read_until(0, &mut message) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        message.pop();
                        if let Ok(value) = serde_json::from_slice::<Value>(&message)
                            && send.send(value).is_err()
                        {
                            break;
                        }
                    }
                }
            }
        });
        Self {
            child,
            to: std::fs::File::from(we_write),
            from,
            next: 0,
        }
    }

    pub fn call(&mut self, session: Option<&str>, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        let mut message = json!({"id": id, "method": method, "params": params});
        if let Some(session) = session {
            message["sessionId"] = json!(session);
        }
        let mut bytes = message.to_string().into_bytes();
        bytes.push(0);
        self.to.write_all(&bytes).unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let reply = self
                .from
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("no answer to {method}"));
            if reply["id"] == id {
                assert!(reply.get("error").is_none(), "{method}: {reply}");
                return reply["result"].clone();
            }
        }
    }

    /// Opens `url` in a new tab; its session id.
    pub fn open(&mut self, url: &str) -> String {
        let target = self.call(None, "Target.createTarget", json!({"url": url}));
        let attached = self.call(
            None,
            "Target.attachToTarget",
            json!({"targetId": target["targetId"], "flatten": true}),
        );
        attached["sessionId"].as_str().unwrap().to_owned()
    }

    pub fn eval(&mut self, session: &str, expression: &str) -> Value {
        let result = self.call(
            Some(session),
            "Runtime.evaluate",
            json!({"expression": expression, "returnByValue": true, "awaitPromise": true, "userGesture": true}),
        );
        result["result"]["value"].clone()
    }

    /// Evaluates `expression` until it is true (30 s at most).
    pub fn until(&mut self, session: &str, expression: &str) {
        let started = Instant::now();
        while self.eval(session, expression) != json!(true) {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "never true: {expression}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `gavel approvals` on a free loopback port: the process, its address and token.
pub fn start_page(sandbox: &Sandbox) -> (Child, String, String) {
    let token_file = sandbox.root.join("state/approvals-token");
    let mut child = sandbox.spawn(&[
        "approvals",
        "--listen",
        "127.0.0.1:0",
        "--name",
        "alice-web",
        "--token-file",
        token_file.to_str().unwrap(),
    ]);
    let mut line = String::new();
    BufReader::new(child.stderr.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("no address in {line}"));
    let (address, token) = url
        .trim_start_matches("http://")
        .split_once("/#token=")
        .unwrap();
    (child, address.to_owned(), token.to_owned())
}

pub fn spawn_run(sandbox: &Sandbox, path: &str) -> Child {
    let args = json!({"path": path, "content": "from the page\n"}).to_string();
    sandbox.spawn(&["run", "write_file", &args, "--ask", "wait=60s", "--json"])
}

pub fn last_approval(sandbox: &Sandbox, id: &str) -> Value {
    let shown = json(&run_expecting(
        &mut sandbox.gavel(&["show", id, "--json"]),
        0,
    ));
    let events = shown.get("events").cloned().unwrap_or(shown);
    events
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|e| e["kind"] == "approval")
        .unwrap()["payload"]
        .clone()
}

#[test]
fn the_approval_page_approves_and_rejects_by_click_and_refuses_forgeries() {
    let Some(chromium) = chromium("the_approval_page_approves_and_rejects_by_click") else {
        return;
    };
    let sandbox = Sandbox::new();
    let (mut page, address, token) = start_page(&sandbox);
    let mode = std::fs::metadata(sandbox.root.join("state/approvals-token"))
        .map(|m| std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o777)
        .unwrap();
    assert_eq!(mode, 0o600);
    let mut browser = Browser::start(&chromium, &sandbox.root.join("profile"));

    // Without the token, the page shows nothing and says it was refused.
    let bare = browser.open(&format!("http://{address}/"));
    browser.until(
        &bare,
        "document.getElementById('status').textContent.startsWith('refused (403)')",
    );

    // A call waits; the page shows it live, with its exact arguments.
    let first = spawn_run(&sandbox, "approved.txt");
    let id = wait_for_pending(&sandbox, 1)[0]["call_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let tab = browser.open(&format!("http://{address}/#token={token}"));
    let approve =
        format!("document.querySelector('button[data-call=\"{id}\"][data-action=\"approve\"]')");
    browser.until(&tab, &format!("!!{approve}"));
    assert_eq!(
        browser.eval(&tab, "document.querySelector('pre').textContent"),
        json!("{\n  \"content\": \"from the page\\n\",\n  \"path\": \"approved.txt\"\n}")
    );

    // A forged cross-site request, from a page of another origin, is refused.
    let forged = format!(
        "fetch('http://{address}/api/answer', {{method: 'POST', mode: 'no-cors', \
         headers: {{'Content-Type': 'text/plain'}}, \
         body: JSON.stringify({{call_id: '{id}', approved: true, arguments_sha256: 'x'}})}}) \
         .then(() => true, () => true)"
    );
    let evil = browser.open("data:text/html,<p>elsewhere</p>");
    browser.until(&evil, "document.readyState === 'complete'");
    assert_eq!(browser.eval(&evil, &forged), json!(true));
    let form = format!(
        "(() => {{ const f = document.createElement('form'); f.method = 'POST'; \
         f.action = 'http://{address}/api/answer'; f.enctype = 'text/plain'; \
         const i = document.createElement('input'); i.name = '{{\"call_id\":\"{id}\",\"approved\":true,\"x\":\"'; \
         i.value = '\"}}'; f.appendChild(i); document.body.appendChild(f); f.submit(); return true; }})()"
    );
    assert_eq!(browser.eval(&evil, &form), json!(true));
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        json_lines(&run_expecting(
            &mut sandbox.gavel(&["pending", "--json"]),
            0
        ))
        .len(),
        1,
        "a forged request answered the call"
    );

    // Approve by click: the waiting call runs.
    assert_eq!(
        browser.eval(&tab, &format!("{approve}.click(); true")),
        json!(true)
    );
    let output = first.wait_with_output().unwrap();
    let outcome = json(&output);
    assert_eq!(outcome["status"], "succeeded", "{}", stderr(&output));
    assert_eq!(sandbox.read("approved.txt"), "from the page\n");
    let approval = last_approval(&sandbox, &id);
    assert_eq!(approval["channel"], "web");
    assert_eq!(approval["approver"], "alice-web");

    // Reject by click: the next waiting call is blocked.
    let second = spawn_run(&sandbox, "rejected.txt");
    let id = wait_for_pending(&sandbox, 1)[0]["call_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let reject =
        format!("document.querySelector('button[data-call=\"{id}\"][data-action=\"reject\"]')");
    browser.until(&tab, &format!("!!{reject}"));
    assert_eq!(
        browser.eval(&tab, &format!("{reject}.click(); true")),
        json!(true)
    );
    let output = second.wait_with_output().unwrap();
    assert_eq!(json(&output)["status"], "blocked");
    assert!(!sandbox.ws.join("rejected.txt").exists());
    let approval = last_approval(&sandbox, &id);
    assert_eq!(approval["status"], "rejected");
    assert_eq!(approval["channel"], "web");

    let _ = page.kill();
    let _ = page.wait();
    run_expecting(&mut sandbox.gavel(&["verify"]), 0);
}

#[test]
fn the_page_refuses_requests_without_its_token_or_from_another_origin() {
    use std::io::Read;
    let sandbox = Sandbox::new();
    let (mut page, address, token) = start_page(&sandbox);
    let send = |request: String| -> String {
        let mut stream = std::net::TcpStream::connect(&address).unwrap();
        stream.write_all(request.as_bytes()).unwrap();
        let mut reply = String::new();
        stream.read_to_string(&mut reply).unwrap();
        reply
    };
    let body = r#"{"call_id":"c","approved":true,"arguments_sha256":"x"}"#;
    let post = |headers: &str| {
        format!(
            "POST /api/answer HTTP/1.1\r\nHost: {address}\r\n{headers}Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
    };
    assert!(
        send(format!(
            "GET /api/pending HTTP/1.1\r\nHost: {address}\r\n\r\n"
        ))
        .starts_with("HTTP/1.1 403")
    );
    assert!(
        send(format!(
            "GET /api/pending HTTP/1.1\r\nHost: {address}\r\nX-Gavel-Token: {token}\r\n\r\n"
        ))
        .starts_with("HTTP/1.1 200")
    );
    assert!(send(post("")).starts_with("HTTP/1.1 403"));
    assert!(
        send(post(&format!(
            "X-Gavel-Token: {token}\r\nOrigin: http://evil.example\r\n"
        )))
        .starts_with("HTTP/1.1 403")
    );
    assert!(send(post(&format!("X-Gavel-Token: {token}\r\n"))).starts_with("HTTP/1.1 403"));
    // A rebound name for the same address is another host.
    assert!(
        send(format!(
            "GET /api/pending HTTP/1.1\r\nHost: evil.example\r\nX-Gavel-Token: {token}\r\n\r\n"
        ))
        .starts_with("HTTP/1.1 421")
    );
    // With the token and its own origin, the request is heard (no such call here).
    let heard = send(post(&format!(
        "X-Gavel-Token: {token}\r\nOrigin: http://{address}\r\n"
    )));
    assert!(heard.starts_with("HTTP/1.1 409"), "{heard}");
    let _ = page.kill();
    let _ = page.wait();
}

#[test]
fn an_mcp_call_approved_by_click_with_a_tool_grant_lets_the_next_call_run_unasked() {
    let Some(chromium) = chromium("an_mcp_call_approved_by_click_with_a_tool_grant") else {
        return;
    };
    if !crate::mcp::node_available() {
        return;
    }
    let sandbox = Sandbox::new();
    let policy = sandbox.root.join("policy.toml");
    std::fs::write(&policy, crate::mcp::POLICY).unwrap();
    let policy = policy.display().to_string();
    let server = fixture("mcp/test-server.js").display().to_string();
    let (mut page, address, token) = start_page(&sandbox);
    let mut browser = Browser::start(&chromium, &sandbox.root.join("profile"));
    let mut client = crate::mcp::Client::start(
        &sandbox,
        &["--policy", &policy],
        &["--ask", "wait=60s"],
        &["node", &server],
    );
    client.initialize(json!({}));
    let first = std::thread::scope(|scope| {
        let waiting = scope.spawn(|| client.call("touch", json!({"path": "a.txt"})));
        let id = wait_for_pending(&sandbox, 1)[0]["call_id"]
            .as_str()
            .unwrap()
            .to_owned();
        let tab = browser.open(&format!("http://{address}/#token={token}"));
        let grant = format!(
            "document.querySelector('button[data-call=\"{id}\"][data-action=\"grant-tool\"]')"
        );
        browser.until(&tab, &format!("!!{grant}"));
        assert_eq!(
            browser.eval(&tab, &format!("{grant}.click(); true")),
            json!(true)
        );
        waiting.join().unwrap()
    });
    assert_eq!(crate::mcp::text(&first), "touched a.txt", "{first}");
    // The grant covers the tool with other arguments: no wait, no ask.
    let second = client.call("touch", json!({"path": "b.txt"}));
    assert_eq!(crate::mcp::text(&second), "touched b.txt", "{second}");
    assert_eq!(client.close(), Some(0));
    let grants = json_lines(&run_expecting(&mut sandbox.gavel(&["grants", "--json"]), 0));
    assert_eq!(grants.len(), 1, "{grants:?}");
    assert_eq!(
        grants[0]["scope"],
        json!({"type": "tool", "tool": "mcp__test__touch"})
    );
    assert_eq!(grants[0]["channel"], "web");
    assert_eq!(grants[0]["created_by"], "alice-web");
    assert_eq!(grants[0]["used"], 1);
    let calls = json_lines(&run_expecting(&mut sandbox.gavel(&["log", "--json"]), 0));
    assert_eq!(calls[0]["approval"], "approved");
    assert_eq!(
        calls[1]["rule_id"],
        format!("grant.{}", grants[0]["grant"].as_str().unwrap())
    );
    let _ = page.kill();
    let _ = page.wait();
    run_expecting(&mut sandbox.gavel(&["verify"]), 0);
}

/// A call whose rule needs two enrolled approvers, answered in the browser:
/// the page shows who must approve and who did, offers a name and a code
/// instead of the token's buttons, refuses an answer without a code, counts
/// alice's code once and runs the call on bob's.
#[test]
fn two_approvers_approve_in_the_browser_with_their_codes() {
    use crate::approvers::{TWO_PERSON, code_now, enrol};
    let Some(chromium) = chromium("two_approvers_approve_in_the_browser_with_their_codes") else {
        return;
    };
    let sandbox = Sandbox::new();
    sandbox.write("gavel.toml", TWO_PERSON);
    let alice = enrol(&sandbox, "alice");
    let bob = enrol(&sandbox, "bob");
    let (mut page, address, token) = start_page(&sandbox);
    let mut browser = Browser::start(&chromium, &sandbox.root.join("profile"));
    let run = spawn_run(&sandbox, "agreed.txt");
    let id = wait_for_pending(&sandbox, 1)[0]["call_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let tab = browser.open(&format!("http://{address}/#token={token}"));
    let row = format!("document.querySelector('tr[data-call=\"{id}\"]')");
    browser.until(
        &tab,
        &format!("!!{row} && !!{row}.querySelector('input[name=code]')"),
    );
    assert_eq!(
        browser.eval(
            &tab,
            &format!("!!{row}.querySelector('[data-action=grant-call]')")
        ),
        json!(false),
        "no grant is offered for a call that needs approvers"
    );
    let click = |name: &str, code: &str| {
        format!(
            "(() => {{ const r = {row}; r.querySelector('input[name=approver]').value = '{name}'; \
             r.querySelector('input[name=code]').value = '{code}'; \
             r.querySelector('[data-action=approve]').click(); return true; }})()"
        )
    };
    // The token alone (no name, no code) is refused.
    browser.eval(&tab, &click("", ""));
    browser.until(
        &tab,
        "document.getElementById('status').dataset.last === 'refused'",
    );
    browser.eval(&tab, &click("alice", &code_now(&alice)));
    browser.until(
        &tab,
        &format!("!!{row} && {row}.textContent.includes('approved so far by alice')"),
    );
    browser.eval(&tab, &click("bob", &code_now(&bob)));
    let output = run.wait_with_output().unwrap();
    let outcome = json(&output);
    assert_eq!(outcome["status"], "succeeded", "{}", stderr(&output));
    assert_eq!(sandbox.read("agreed.txt"), "from the page\n");
    let approval = last_approval(&sandbox, &id);
    assert_eq!(approval["approver"], "bob");
    assert_eq!(approval["factor"], "totp");
    assert_eq!(approval["channel"], "web");
    let _ = page.kill();
    let _ = page.wait();
    run_expecting(&mut sandbox.gavel(&["verify"]), 0);
}
