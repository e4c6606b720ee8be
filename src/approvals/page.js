// gavel's approval page: lists the waiting calls every second and sends
// answers with the token from the URL's fragment (never sent to a server).
"use strict";
(function () {
  var match = location.hash.match(/token=([0-9a-f]+)/);
  var token = match ? match[1] : sessionStorage.getItem("gavel-token");
  if (match) {
    sessionStorage.setItem("gavel-token", token);
    history.replaceState(null, "", location.pathname);
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
  // answer with their authenticator's code; the page's token is not enough.
  function approverForm(td, call) {
    var name = input(td, "approver", "your name");
    var code = input(td, "code", "code");
    var person = function () { return { approver: name.value, code: code.value }; };
    button(td, call, "approve", "Approve", null, person);
    button(td, call, "reject", "Reject", null, person);
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
    fetch("/api/answer", {
      method: "POST",
      headers: { "X-Gavel-Token": token || "", "Content-Type": "application/json" },
      body: JSON.stringify(payload)
    }).then(function (r) {
      return r.json().then(function (j) {
        status.textContent = r.ok
          ? j.approval + " " + j.call_id
          : "refused: " + (j.error || r.status);
        status.dataset.last = r.ok ? j.approval : "refused";
        refresh();
      });
    });
  }

  function render(calls) {
    var key = JSON.stringify(calls.map(function (c) { return [c.call_id, c.votes || []]; }));
    var now = Date.now() * 1000;
    if (key === shown) return;
    shown = key;
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
      cell(row, Math.max(0, Math.round((call.until_us - now) / 1e6)) + " s");
      var td = document.createElement("td");
      if (call.approvers) {
        approverForm(td, call);
      } else {
        button(td, call, "approve", "Approve");
        button(td, call, "reject", "Reject");
        button(td, call, "grant-call", "Approve + this call again", "call");
        if (call.tool === "bash") button(td, call, "grant-command", "Approve + this command", "command");
        if (call.tool.indexOf("mcp__") === 0) button(td, call, "grant-tool", "Approve + this tool", "tool");
      }
      row.appendChild(td);
      body.appendChild(row);
    });
  }

  function refresh() {
    fetch("/api/pending", { headers: { "X-Gavel-Token": token || "" } }).then(function (r) {
      if (!r.ok) {
        status.textContent = "refused (" + r.status + "): open the address gavel printed, with its token";
        return;
      }
      return r.json().then(function (calls) {
        if (status.dataset.last === undefined || status.textContent.indexOf("refused") === 0) {
          status.textContent = calls.length + " waiting";
        }
        render(calls);
      });
    }).catch(function () { status.textContent = "gavel is not answering"; });
  }

  refresh();
  setInterval(refresh, 1000);
})();
