//! Passkeys on the approval page, in headless Chromium with a virtual
//! WebAuthn authenticator (DevTools protocol): the page served over TLS
//! (its self-signed certificate pinned by the key pin gavel prints) on a
//! non-loopback address under a host name, a person enrolled with the link
//! `gavel approvers add --passkey` prints, and their passkey counted toward
//! a two-person quorum; the same click without a verified person, a
//! replayed answer and a request from another origin refused.

use std::io::{BufRead, BufReader};
use std::process::Child;

use serde_json::{Value, json};

use crate::approvals::wait_for_pending;
use crate::approvals_page::{Browser, chromium, last_approval, spawn_run};
use crate::approvers::{code_now, enrol};
use crate::support::*;

const HOST: &str = "approvals.gavel.test";

const PASSKEY_AND_CODE: &str = r#"name = "two-person"

[[rules]]
id = "write.two_person"
action = "ask"
tools = ["write_file"]
approvers = ["alice", "bob"]
quorum = 2
reason = "writes need two people"
"#;

/// This machine's first IPv4 address that is not a loopback one.
fn outward_address() -> Option<std::net::Ipv4Addr> {
    let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills `list`, freed below with freeifaddrs.
    if unsafe { libc::getifaddrs(&mut list) } != 0 {
        return None;
    }
    let mut found = None;
    let mut at = list;
    while !at.is_null() {
        // SAFETY: `at` walks the list getifaddrs returned, each entry valid until freed.
        let entry = unsafe { &*at };
        // SAFETY: an AF_INET ifa_addr points to a sockaddr_in.
        if !entry.ifa_addr.is_null()
            && i32::from(unsafe { (*entry.ifa_addr).sa_family }) == libc::AF_INET
        {
            let addr = unsafe { &*(entry.ifa_addr as *const libc::sockaddr_in) };
            let ip = std::net::Ipv4Addr::from(u32::from_be(addr.sin_addr.s_addr));
            if !ip.is_loopback() {
                found = Some(ip);
                break;
            }
        }
        at = entry.ifa_next;
    }
    // SAFETY: `list` came from getifaddrs and is freed once.
    unsafe { libc::freeifaddrs(list) };
    found
}

/// `gavel approvals --tls` on `ip`, under `https://HOST:PORT`: the process,
/// the public origin, the token and the certificate's key pin.
fn start_tls_page(sandbox: &Sandbox, ip: std::net::Ipv4Addr) -> (Child, String, String, String) {
    let port = std::net::TcpListener::bind((ip, 0))
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let origin = format!("https://{HOST}:{port}");
    let token_file = sandbox.root.join("state/approvals-token");
    let listen = format!("{ip}:{port}");
    let mut child = sandbox.spawn(&[
        "approvals",
        "--tls",
        "--name",
        "alice-web",
        "--listen",
        &listen,
        "--url",
        &origin,
        "--token-file",
        token_file.to_str().unwrap(),
    ]);
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let (mut pin, mut token) = (None, None);
    while token.is_none() {
        let line = lines.next().expect("the page says where it is").unwrap();
        if let Some(rest) = line.split("pin sha256//").nth(1) {
            pin = Some(rest.trim_end_matches(')').to_owned());
        }
        if let Some(rest) = line.split("/#token=").nth(1) {
            assert!(line.contains(&origin), "{line}");
            token = rest.split_whitespace().next().map(str::to_owned);
        }
    }
    (
        child,
        origin,
        token.unwrap(),
        pin.expect("a self-signed certificate's key pin is printed"),
    )
}

#[test]
fn a_passkey_approves_over_tls_and_nothing_without_it_does() {
    let Some(chromium) = chromium("a_passkey_approves_over_tls") else {
        return;
    };
    let Some(ip) = outward_address() else {
        eprintln!("SKIPPED a_passkey_approves_over_tls: no non-loopback IPv4 address");
        return;
    };
    let sandbox = Sandbox::new();
    sandbox.write("gavel.toml", PASSKEY_AND_CODE);
    let bob = enrol(&sandbox, "bob");
    let (mut page, origin, token, pin) = start_tls_page(&sandbox, ip);
    let mut browser = Browser::start_with(
        &chromium,
        &sandbox.root.join("profile"),
        &[
            format!("--host-resolver-rules=MAP *.gavel.test {ip}"),
            format!("--ignore-certificate-errors-spki-list={pin}"),
        ],
    );

    // Enrolment: the link is printed once, and opens the page's /enrol.
    let output = run_expecting(
        &mut sandbox.gavel(&["approvers", "add", "alice", "--passkey", "--url", &origin]),
        0,
    );
    let link = stdout(&output).lines().next().unwrap().to_owned();
    assert!(
        link.starts_with(&format!("{origin}/enrol#name=alice&code=")),
        "{link}"
    );
    let tab = browser.open("about:blank");
    browser.call(Some(&tab), "WebAuthn.enable", json!({}));
    let authenticator = browser.call(
        Some(&tab),
        "WebAuthn.addVirtualAuthenticator",
        json!({"options": {
            "protocol": "ctap2", "transport": "internal", "hasResidentKey": true,
            "hasUserVerification": true, "isUserVerified": true
        }}),
    )["authenticatorId"]
        .clone();
    browser.call(Some(&tab), "Page.navigate", json!({"url": link}));
    // The script shows the enrolment once it has read the link (and
    // listens to the button).
    browser.until(&tab, "document.getElementById('enrol').hidden === false");
    browser.eval(&tab, "document.getElementById('enrol-button').click()");
    browser.until(
        &tab,
        "document.getElementById('enrol-status').dataset.last !== undefined",
    );
    assert_eq!(
        browser.eval(&tab, "document.getElementById('enrol-status').textContent"),
        json!("alice is enrolled with a passkey")
    );
    let listed = json_lines(&run_expecting(
        &mut sandbox.gavel(&["approvers", "list", "--json"]),
        0,
    ));
    let alice = listed.iter().find(|p| p["name"] == "alice").unwrap();
    assert_eq!(alice["factor"], "passkey");
    assert_eq!(alice["passkey"]["rp_id"], HOST);

    // A call that needs alice and bob.
    let run = spawn_run(&sandbox, "agreed.txt");
    let waiting = wait_for_pending(&sandbox, 1);
    let id = waiting[0]["call_id"].as_str().unwrap().to_owned();
    let digest = waiting[0]["arguments_sha256"].as_str().unwrap().to_owned();
    browser.call(
        Some(&tab),
        "Page.navigate",
        json!({"url": format!("{origin}/#token={token}")}),
    );
    let row = format!("document.querySelector('tr[data-call=\"{id}\"]')");
    browser.until(
        &tab,
        &format!("!!{row} && !!{row}.querySelector('[data-action=approve-passkey]')"),
    );
    // Every answer the page sends is kept, to be sent again.
    browser.eval(
        &tab,
        "(() => { window.sent = []; const f = window.fetch; window.fetch = (u, o) => { \
         if (u === '/api/answer') window.sent.push(o.body); return f(u, o); }; return true; })()",
    );
    let status = "document.getElementById('status')";
    let click = format!(
        "(() => {{ {status}.dataset.last = ''; {row}.querySelector('[data-action=approve-passkey]').click(); return true; }})()"
    );

    // The same click, the authenticator not verifying the person: refused.
    browser.call(
        Some(&tab),
        "WebAuthn.setUserVerified",
        json!({"authenticatorId": authenticator, "isUserVerified": false}),
    );
    browser.eval(&tab, &click);
    browser.until(&tab, &format!("{status}.dataset.last === 'refused'"));
    let said = browser.eval(&tab, &format!("{status}.textContent"));
    assert!(said.as_str().unwrap().contains("not allowed"), "{said}");
    // The token alone, without a passkey or a code: refused.
    let token_only = browser.eval(
        &tab,
        &format!(
            "fetch('/api/answer', {{method: 'POST', headers: {{'X-Gavel-Token': '{token}', \
             'Content-Type': 'application/json'}}, body: JSON.stringify({{call_id: '{id}', approved: true, \
             arguments_sha256: '{digest}'}})}}).then(r => r.json().then(j => [r.status, j.error]))"
        ),
    );
    assert_eq!(token_only[0], json!(409), "{token_only}");
    assert!(
        token_only[1]
            .as_str()
            .unwrap()
            .contains("without a second factor"),
        "{token_only}"
    );
    assert!(
        approvals_of(&sandbox, &id)
            .iter()
            .all(|a| a["approval"] != "approved" && a["vote"] != true)
    );

    // The person verified: alice's passkey counts, once.
    browser.call(
        Some(&tab),
        "WebAuthn.setUserVerified",
        json!({"authenticatorId": authenticator, "isUserVerified": true}),
    );
    browser.eval(&tab, &click);
    browser.until(&tab, &format!("{status}.dataset.last === 'pending'"));
    let vote = last_approval(&sandbox, &id);
    assert_eq!(
        (&vote["approver"], &vote["factor"], &vote["vote"]),
        (&json!("alice"), &json!("passkey"), &json!(true)),
        "{vote}"
    );
    // The same signed answer sent again: refused, and nothing recorded.
    let before = approvals_of(&sandbox, &id).len();
    let replayed = browser.eval(
        &tab,
        &format!(
            "fetch('/api/answer', {{method: 'POST', headers: {{'X-Gavel-Token': '{token}', \
             'Content-Type': 'application/json'}}, body: window.sent[window.sent.length - 1]}}) \
             .then(r => r.json().then(j => [r.status, j.error]))"
        ),
    );
    assert_eq!(replayed[0], json!(403), "{replayed}");
    assert!(
        replayed[1].as_str().unwrap().contains("used already"),
        "{replayed}"
    );
    assert_eq!(approvals_of(&sandbox, &id).len(), before);

    // From another origin (same address, another name): the page is not
    // there, and a request to it cannot carry the token.
    let other = browser.open(&format!(
        "https://other.gavel.test:{}/",
        origin.rsplit(':').next().unwrap()
    ));
    let cross = browser.eval(
        &other,
        &format!(
            "fetch('{origin}/api/passkey/challenge', {{method: 'POST', headers: {{'X-Gavel-Token': '{token}', \
             'Content-Type': 'application/json'}}, body: JSON.stringify({{call_id: '{id}', approved: true}})}}) \
             .then(r => 'answered ' + r.status, e => 'refused')"
        ),
    );
    assert_eq!(cross, json!("refused"));
    assert_eq!(approvals_of(&sandbox, &id).len(), before);

    // bob's code makes two.
    browser.eval(
        &tab,
        &format!(
            "(() => {{ const r = {row}; r.querySelector('input[name=approver]').value = 'bob'; \
             r.querySelector('input[name=code]').value = '{}'; \
             r.querySelector('[data-action=approve]').click(); return true; }})()",
            code_now(&bob)
        ),
    );
    let output = run.wait_with_output().unwrap();
    let outcome = json(&output);
    assert_eq!(outcome["status"], "succeeded", "{}", stderr(&output));
    assert_eq!(sandbox.read("agreed.txt"), "from the page\n");
    let _ = page.kill();
    let _ = page.wait();
    // The quorum is in the record, alice's signature checked from the log.
    run_expecting(&mut sandbox.gavel(&["verify"]), 0);
}

fn approvals_of(sandbox: &Sandbox, id: &str) -> Vec<Value> {
    let shown = json(&run_expecting(
        &mut sandbox.gavel(&["show", id, "--json"]),
        0,
    ));
    let events = shown.get("events").cloned().unwrap_or(shown);
    events
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "approval")
        .map(|e| e["payload"].clone())
        .collect()
}
