#!/usr/bin/env python3
"""Proxy overhead of `gavel mcp` per tools/call (docs/performance.md, "MCP proxy").

Starts the test MCP server (fixtures/mcp/test-server.js, node) directly and
behind `gavel mcp`, sends the same sequence of `tools/call` requests (echo,
one at a time, each waiting for its answer) over the same stdio, and prints
the median and percentiles of the round trip, and the median difference.

    scripts/bench_mcp.py [--gavel target/release/gavel] [--calls 2000] [--durability full|normal]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SERVER = ["node", os.path.join(ROOT, "fixtures", "mcp", "test-server.js")]
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
    args = parser.parse_args()
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


if __name__ == "__main__":
    main()
