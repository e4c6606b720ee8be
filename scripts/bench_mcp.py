#!/usr/bin/env python3
"""Proxy overhead of `gavel mcp` per tools/call (docs/performance.md, "MCP proxy").

Starts the test MCP server (fixtures/mcp/test-server.js, node) directly and
behind `gavel mcp`, sends the same sequence of `tools/call` requests (echo,
one at a time, each waiting for its answer) over the same stdio, and prints
the median and percentiles of the round trip, and the median difference.
With --http, the same over Streamable HTTP: the HTTP test server
(fixtures/mcp/http-server.js) called directly, then through
`gavel mcp --listen 127.0.0.1:0 --upstream URL`, one kept-alive connection.

    scripts/bench_mcp.py [--gavel target/release/gavel] [--calls 2000] [--durability full|normal] [--http]
"""

import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SERVER = ["node", os.path.join(ROOT, "fixtures", "mcp", "test-server.js")]
HTTP_SERVER = ["node", os.path.join(ROOT, "fixtures", "mcp", "http-server.js")]
POLICY = """
name = "bench"
[[rules]]
id = "bench.echo"
action = "allow"
tools = ["mcp__test__echo"]
reason = "echo"
"""


def session(command, calls, env=None):
    """Round-trip times (seconds) of `calls` echo calls over `command`'s stdio."""
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            env=env, bufsize=0)

    def request(msg_id, method, params):
        line = json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        proc.stdin.write(line.encode() + b"\n")
        while True:
            answer = json.loads(proc.stdout.readline())
            if answer.get("id") == msg_id:
                return answer

    request(0, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                              "clientInfo": {"name": "bench", "version": "1"}})
    proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
    request(1, "tools/list", {})
    times = []
    for n in range(calls):
        start = time.perf_counter()
        answer = request(2 + n, "tools/call", {"name": "echo", "arguments": {"text": str(n)}})
        times.append(time.perf_counter() - start)
        if answer["result"]["content"][0]["text"] != str(n):
            sys.exit(f"unexpected answer: {answer}")
    proc.stdin.close()
    proc.wait()
    return times


def http_session(url, calls):
    """Round-trip times (seconds) of `calls` echo calls POSTed to `url`."""
    host, port = url.split("//")[1].split("/")[0].split(":")
    conn = http.client.HTTPConnection(host, int(port))
    session = None

    def post(message):
        nonlocal session
        headers = {"Content-Type": "application/json",
                   "Accept": "application/json, text/event-stream",
                   "MCP-Protocol-Version": "2025-06-18"}
        if session:
            headers["Mcp-Session-Id"] = session
        conn.request("POST", "/mcp", json.dumps(message), headers)
        response = conn.getresponse()
        body = response.read().decode()
        session = session or response.getheader("Mcp-Session-Id")
        if response.getheader("Content-Type", "").startswith("text/event-stream"):
            data = [line[5:].strip() for line in body.splitlines() if line.startswith("data:")]
            return json.loads(data[-1])
        return json.loads(body) if body.strip() else None

    post({"jsonrpc": "2.0", "id": 0, "method": "initialize",
          "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                     "clientInfo": {"name": "bench", "version": "1"}}})
    post({"jsonrpc": "2.0", "method": "notifications/initialized"})
    post({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}})
    times = []
    for n in range(calls):
        start = time.perf_counter()
        answer = post({"jsonrpc": "2.0", "id": 2 + n, "method": "tools/call",
                       "params": {"name": "echo", "arguments": {"text": str(n)}}})
        times.append(time.perf_counter() - start)
        if not answer["result"]["content"][0]["text"].startswith(f"{n} (session"):
            sys.exit(f"unexpected answer: {answer}")
    conn.close()
    return times


def started(command, env, marker):
    """Starts `command`; the first line it prints (on stdout or stderr) containing `marker`."""
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            env=env, text=True)
    for line in proc.stdout:
        if marker in line:
            return proc, line
    sys.exit(f"{command[0]} did not start")


def describe(name, times):
    ms = sorted(t * 1000 for t in times)
    p = lambda q: ms[min(len(ms) - 1, int(q * len(ms)))]
    print(f"{name:<28} median {statistics.median(ms):7.3f} ms   p90 {p(0.9):7.3f} ms   p99 {p(0.99):7.3f} ms")
    return statistics.median(ms)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gavel", default=os.path.join(ROOT, "target", "release", "gavel"))
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--durability", choices=["full", "normal", "both"], default="both")
    parser.add_argument("--http", action="store_true", help="Streamable HTTP instead of stdio")
    args = parser.parse_args()
    if args.http:
        return main_http(args)
    with tempfile.TemporaryDirectory() as tmp:
        policy = os.path.join(tmp, "policy.toml")
        with open(policy, "w") as f:
            f.write(POLICY)
        env = dict(os.environ, GAVEL_CHECKPOINT_EVERY="0")
        session(SERVER, 50)  # warm node's caches
        direct = describe("direct", session(SERVER, args.calls))
        modes = ["full", "normal"] if args.durability == "both" else [args.durability]
        for mode in modes:
            db = os.path.join(tmp, f"{mode}.db")
            proxied = [args.gavel, "--workspace", tmp, "--db", db, "--policy", policy,
                       "--durability", mode, "mcp", "--"] + SERVER
            median = describe(f"gavel mcp (--durability {mode})", session(proxied, args.calls, env))
            print(f"{'':<28} overhead {median - direct:7.3f} ms per call (median)")


def main_http(args):
    with tempfile.TemporaryDirectory() as tmp:
        policy = os.path.join(tmp, "policy.toml")
        with open(policy, "w") as f:
            f.write(POLICY)
        env = dict(os.environ, GAVEL_CHECKPOINT_EVERY="0", PORT="0")
        server, line = started(HTTP_SERVER, env, "listening")
        upstream = f"http://127.0.0.1:{line.split()[1]}/mcp"
        try:
            http_session(upstream, 50)  # warm node's caches
            direct = describe("direct (HTTP)", http_session(upstream, args.calls))
            modes = ["full", "normal"] if args.durability == "both" else [args.durability]
            for mode in modes:
                db = os.path.join(tmp, f"{mode}.db")
                proxy, line = started(
                    [args.gavel, "--workspace", tmp, "--db", db, "--policy", policy,
                     "--durability", mode, "mcp", "--name", "test",
                     "--listen", "127.0.0.1:0", "--upstream", upstream], env, "listening on")
                url = next(w for w in line.split() if w.startswith("http://"))
                try:
                    median = describe(f"gavel mcp --listen ({mode})", http_session(url, args.calls))
                    print(f"{'':<28} overhead {median - direct:7.3f} ms per call (median)")
                finally:
                    proxy.kill()
                    proxy.wait()
        finally:
            server.kill()
            server.wait()


if __name__ == "__main__":
    main()
