// gavel's approval page: lists the waiting calls every second and sends
// answers with the token from the URL's fragment (never sent to a server).
// A notification's one-time link (#call=ID&link=MAC) is exchanged for a
// view of that one call, answered only with an approver's passkey or code.
// At /enrol, it makes a passkey for a person with the one-time code of
// `gavel approvers add --passkey`, also read from the fragment.
"use strict";
(function () {
  // WebAuthn's binary fields travel as unpadded base64url.
  function b64u(buffer) {
    var bytes = new Uint8Array(buffer), text = "";
    for (var i = 0; i < bytes.length; i++) text += String.fromCharCode(bytes[i]);
    return btoa(text).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  }
  function unb64u(text) {
    var plain = atob(text.replace(/-/g, "+").replace(/_/g, "/"));
    var bytes = new Uint8Array(plain.length);
    for (var i = 0; i < plain.length; i++) bytes[i] = plain.charCodeAt(i);
    return bytes;
  }
  function post(path, payload, sent) {
    var headers = Object.assign({ "Content-Type": "application/json" }, sent || {});
    return fetch(path, { method: "POST", headers: headers, body: JSON.stringify(payload) })
      .then(function (r) {
        return r.json().then(function (j) {
          if (!r.ok) throw new Error(j.error || String(r.status));
          return j;
        });
      });
  }

  if (location.pathname === "/enrol") {
    enrolPage();
    return;
  }

  function enrolPage() {
    var fields = new URLSearchParams(location.hash.slice(1));
    var name = fields.get("name") || "", code = fields.get("code") || "";
    history.replaceState(null, "", location.pathname);
    var say = document.getElementById("enrol-status");
    document.getElementById("queue").hidden = true;
    document.getElementById("enrol").hidden = false;
    document.getElementById("enrol-what").textContent =
      "Make a passkey for " + name + ": gavel counts their approvals only with it.";
    document.getElementById("enrol-button").addEventListener("click", function () {
      var who = { name: name, code: code };
      post("/api/enrol/challenge", who).then(function (o) {
        return navigator.credentials.create({ publicKey: {
          challenge: unb64u(o.challenge),
          rp: { id: o.rp_id, name: "gavel approvals" },
          user: { id: unb64u(o.user_id), name: o.name, displayName: o.name },
          pubKeyCredParams: [{ type: "public-key", alg: -7 }, { type: "public-key", alg: -8 }],
          authenticatorSelection: { userVerification: "required", residentKey: "preferred" },
          attestation: "none",
          timeout: o.timeout_ms
        } });
      }).then(function (credential) {
        return post("/api/enrol", {
          name: name,
          code: code,
          client_data_json: b64u(credential.response.clientDataJSON),
          attestation_object: b64u(credential.response.attestationObject)
        });
      }).then(function (j) {
        say.textContent = j.enrolled + " is enrolled with a passkey";
        say.dataset.last = "enrolled";
      }).catch(function (e) {
        say.textContent = "refused: " + e.message;
        say.dataset.last = "refused";
      });
    });
  }

  var given = new URLSearchParams(location.hash.slice(1));
  var token = given.get("token") || sessionStorage.getItem("gavel-token");
  var view = sessionStorage.getItem("gavel-view");
  if (given.get("token")) {
    sessionStorage.setItem("gavel-token", token);
    sessionStorage.removeItem("gavel-view");
    view = null;
  }
  if (location.hash) history.replaceState(null, "", location.pathname);
  // What every request carries: the page's token, else a link's view.
  function credential() {
    if (token) return { "X-Gavel-Token": token };
    return view ? { "X-Gavel-View": view } : {};
  }
  var status = document.getElementById("status");
  var body = document.getElementById("calls");
  var shown = "";

  function cell(row, text, pre) {
    var td = document.createElement("td");
    var inner = document.createElement(pre ? "pre" : "span");
    inner.textContent = text;
    td.appendChild(inner);
    row.appendChild(td);
    return td;
  }

  function button(td, call, action, label, grant, person) {
    var b = document.createElement("button");
    b.textContent = label;
    b.dataset.call = call.call_id;
    b.dataset.action = action;
    b.addEventListener("click", function () {
      answer(call, action !== "reject", grant, person && person());
    });
    td.appendChild(b);
  }

  function input(td, name, placeholder) {
    var i = document.createElement("input");
    i.name = name;
    i.placeholder = placeholder;
    i.autocomplete = "off";
    if (name === "code") i.inputMode = "numeric";
    td.appendChild(i);
    return i;
  }

  // A call whose rule names approvers counts only an enrolled person's
  // answer with their passkey or their authenticator's code; the page's
  // token is not enough.
  function approverForm(td, call) {
    passkeyButton(td, call, true, "Approve with passkey");
    passkeyButton(td, call, false, "Reject with passkey");
    td.appendChild(document.createElement("br"));
    var name = input(td, "approver", "your name");
    var code = input(td, "code", "code");
    var person = function () { return { approver: name.value, code: code.value }; };
    button(td, call, "approve", "Approve", null, person);
    button(td, call, "reject", "Reject", null, person);
  }

  // The passkey signs a challenge the page binds to this call, its
  // arguments and policy, and this answer.
  function passkeyButton(td, call, approved, label) {
    var b = document.createElement("button");
    b.textContent = label;
    b.dataset.action = approved ? "approve-passkey" : "reject-passkey";
    b.addEventListener("click", function () {
      post("/api/passkey/challenge", { call_id: call.call_id, approved: approved }, credential())
        .then(function (o) {
          return navigator.credentials.get({ publicKey: {
            challenge: unb64u(o.challenge),
            rpId: o.rp_id,
            allowCredentials: o.credentials.map(function (id) {
              return { type: "public-key", id: unb64u(id) };
            }),
            userVerification: "required",
            timeout: o.timeout_ms
          } });
        }).then(function (credential) {
          send({
            call_id: call.call_id,
            approved: approved,
            arguments_sha256: call.arguments_sha256,
            passkey: {
              credential_id: b64u(credential.rawId),
              authenticator_data: b64u(credential.response.authenticatorData),
              client_data_json: b64u(credential.response.clientDataJSON),
              signature: b64u(credential.response.signature)
            }
          });
        }).catch(function (e) { shout("refused: " + e.message, "refused"); });
    });
    td.appendChild(b);
  }

  function shout(text, last) {
    status.textContent = text;
    status.dataset.last = last;
  }

  function answer(call, approved, grant, person) {
    var payload = {
      call_id: call.call_id,
      approved: approved,
      arguments_sha256: call.arguments_sha256
    };
    if (grant) payload.grant = grant;
    if (person) {
      payload.approver = person.approver;
      payload.code = person.code;
    }
    send(payload);
  }

  function send(payload) {
    // A code is taken once, whatever the answer: never sent twice.
    document.querySelectorAll("input[name=code]").forEach(function (i) { i.value = ""; });
    post("/api/answer", payload, credential()).then(function (j) {
      shout(j.approval + " " + j.call_id, j.approval);
      refresh();
    }).catch(function (e) {
      shout("refused: " + e.message, "refused");
      refresh();
    });
  }

  function render(calls) {
    var key = JSON.stringify(calls.map(function (c) { return [c.call_id, c.votes || []]; }));
    var now = Date.now() * 1000;
    if (key === shown) return;
    shown = key;
    // What a person is typing survives a new call or a vote arriving.
    var typed = {};
    body.querySelectorAll("tr").forEach(function (row) {
      typed[row.dataset.call] = Array.prototype.map.call(row.querySelectorAll("input"), function (i) {
        return i.value;
      });
    });
    body.textContent = "";
    calls.forEach(function (call) {
      var row = document.createElement("tr");
      row.dataset.call = call.call_id;
      cell(row, call.call_id);
      cell(row, (call.user || "?") + (call.client ? " via " + call.client : ""));
      cell(row, call.tool);
      cell(row, JSON.stringify(call.arguments, null, 2), true);
      var rule = "[" + call.rule_id + "] " + call.reason;
      if (call.approvers) {
        rule += "\nneeds " + call.approvers.quorum + " of " + call.approvers.names.join(", ") +
          "; approved so far by " + ((call.votes || []).join(", ") || "nobody");
      }
      cell(row, rule, true);
      cell(row, call.sandbox || "");
      cell(row, Math.max(0, Math.round((call.until_us - now) / 1e6)) + " s");
      var td = document.createElement("td");
      if (call.approvers || !token) {
        approverForm(td, call);
      } else {
        button(td, call, "approve", "Approve");
        button(td, call, "reject", "Reject");
        button(td, call, "grant-call", "Approve + this call again", "call");
        if (call.tool === "bash") button(td, call, "grant-command", "Approve + this command", "command");
        if (call.tool.indexOf("mcp__") === 0) button(td, call, "grant-tool", "Approve + this tool", "tool");
      }
      row.appendChild(td);
      (typed[call.call_id] || []).forEach(function (value, n) {
        var input = row.querySelectorAll("input")[n];
        if (input) input.value = value;
      });
      body.appendChild(row);
    });
  }

  function refresh() {
    fetch("/api/pending", { headers: credential() }).then(function (r) {
      if (!r.ok) {
        shout(token || !view
          ? "refused (" + r.status + "): open the address gavel printed, with its token"
          : "this link's view has ended (its call is answered or its wait is over)", "no-token");
        return;
      }
      return r.json().then(function (calls) {
        // The outcome of the last answer stays shown until the next one.
        if (status.dataset.last === undefined || status.dataset.last === "no-token") {
          status.textContent = calls.length + " waiting";
        }
        render(calls);
      });
    }).catch(function () { status.textContent = "gavel is not answering"; });
  }

  function start() {
    refresh();
    setInterval(refresh, 1000);
  }

  if (given.get("link")) {
    post("/api/link", { call_id: given.get("call"), link: given.get("link") }).then(function (j) {
      view = j.view;
      token = null;
      sessionStorage.setItem("gavel-view", view);
      sessionStorage.removeItem("gavel-token");
      start();
    }).catch(function (e) { shout("refused: " + e.message, "refused"); });
  } else {
    start();
  }
})();
