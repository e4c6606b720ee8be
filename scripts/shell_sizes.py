#!/usr/bin/env python3
"""Decision time and memory by input shape, end to end (docs/performance.md).

    scripts/shell_sizes.py BIN[,BIN2...] [SHAPE...]

For each shape (all by default), builds a Claude Code PreToolUse payload of
about SIZE bytes (env, default 1 MiB), feeds it to `BIN hook claude-code` in
a fresh temporary workspace, and prints a markdown row: wall time, CPU time
(user + system, which other work on the machine disturbs less), peak RSS
and the decision, per binary, then the CPU ratio of the last binary to the
first. Binaries run alternately, RUNS times (env, default 1); the run with
the median CPU time is shown.
"""
import json, os, sys, time, tempfile

OUT = os.path.join(tempfile.mkdtemp(prefix="gavel-sizes-"), "out.txt")

SIZE = int(os.environ.get("SIZE", 1 << 20))

def rep(unit, head="", tail="", size=SIZE):
    n = max(0, (size - len(head) - len(tail)) // len(unit))
    return head + unit * n + tail

def nest(opening, closing, head="echo ", core="x", size=SIZE):
    n = max(0, (size - len(head) - len(core)) // (len(opening) + len(closing)))
    return head + opening * n + core + closing * n

SHAPES = {
 "words": ("Bash", rep(" word", "echo")),
 "pipeline": ("Bash", rep(" | grep x", "ls")),
 "pipeline_tight": ("Bash", rep("|ls", "ls")),
 "list_semi": ("Bash", rep("; ls", "ls")),
 "list_newline": ("Bash", rep("\nls", "ls")),
 "background": ("Bash", rep(" & ls", "ls")),
 "and_or": ("Bash", rep(" && ls || ls", "ls")),
 "redirects": ("Bash", rep(" >/dev/null", "ls")),
 "redirects_in": ("Bash", rep(" <a", "ls")),
 "assignments": ("Bash", rep("a=1 ", "", "ls")),
 "long_word": ("Bash", rep("a", "echo ")),
 "long_squote": ("Bash", rep("a", "echo '", "'")),
 "long_dquote": ("Bash", rep("a", "echo \"", "\"")),
 "unclosed_quote": ("Bash", rep("a ", "echo '")),
 "vars": ("Bash", rep(" $x", "echo")),
 "vars_braced": ("Bash", rep("${x}", "echo ")),
 "ansi_c": ("Bash", rep(" $'a\\tb'", "echo")),
 "escapes": ("Bash", rep("\\a", "echo ")),
 "globs": ("Bash", rep(" *.rs", "ls")),
 "braces_expand": ("Bash", rep("{a,b}", "echo ")),
 "parens": ("Bash", nest("(", ")", "", "ls")),
 "parens_open": ("Bash", rep("(", "")),
 "subshell_list": ("Bash", nest("( ls; ", ")", "", "ls")),
 "groups": ("Bash", nest("{ ", "; }", "", "ls")),
 "cmdsubst": ("Bash", nest("$(", ")")),
 "cmdsubst_open": ("Bash", rep("$(", "echo ")),
 "arith": ("Bash", nest("$((", "))", "echo ", "1")),
 "arith_open": ("Bash", rep("$((", "echo ")),
 "backticks_seq": ("Bash", rep(" `ls`", "echo")),
 "dquote_subst": ("Bash", nest("\"$(echo ", ")\"")),
 "param_nest": ("Bash", nest("${x:-", "}")),
 "param_open": ("Bash", rep("${x:-", "echo ")),
 "if_nest": ("Bash", nest("if ls; then ", "; fi", "", "ls")),
 "while_seq": ("Bash", rep("while ls; do ls; done; ", "")),
 "for_seq": ("Bash", rep("for i in a b; do ls; done; ", "")),
 "case_seq": ("Bash", rep("case x in a) ls;; esac; ", "")),
 "func_defs": ("Bash", rep("f() { ls; }; ", "")),
 "dbracket": ("Bash", rep("[[ a == b ]] && ", "", "ls")),
 "heredocs": ("Bash", rep("cat <<E\nx\nE\n", "")),
 "heredoc_ops": ("Bash", rep(" <<E", "cat", "\n")),
 "heredoc_big": ("Bash", rep("line of text\n", "cat <<'E'\n", "E\n")),
 "heredoc_unquoted": ("Bash", rep("line $x `ls`\n", "cat <<E\n", "E\n")),
 "herestrings": ("Bash", rep(" <<<x", "cat")),
 "procsubst": ("Bash", rep(" <(ls)", "cat")),
 "sh_c": ("Bash", "bash -c " + json.dumps(rep("; ls", "ls", size=SIZE - 20))),
 "eval": ("Bash", "eval " + json.dumps(rep("; ls", "ls", size=SIZE - 20))),
 "comments": ("Bash", rep("# comment\n", "", "ls")),
 "cr_bytes": ("Bash", rep("ls\r#; ", "")),
 "x_paren": ("Bash", rep("x=(", "")),
 "dollar_bracket": ("Bash", rep("$[", "echo ")),
 "lshift": ("Bash", rep("<<", "")),
 "wrappers": ("Bash", rep("env ", "", "ls")),
 "wrapper_nice": ("Bash", rep("nice -n 1 ", "", "ls")),
 "cd_path": ("Bash", rep("a/", "cd ", "f; ls")),
 "bash_path": ("Bash", rep("a/", "cat ", "f")),
 "dotdot_path": ("Bash", rep("../", "cat ", "f")),
 "many_args_paths": ("Bash", rep(" a/b", "cat")),
 "rm_args": ("Bash", rep(" a", "rm")),
 "read_path": ("Read", rep("a/", "", "f")),
 "read_dotdot": ("Read", rep("../", "", "f")),
 "glob_pattern": ("Glob", rep("*/", "", "f")),
 "glob_braces": ("Glob", rep("{a,b}", "")),
 "glob_class": ("Glob", rep("[ab]", "")),
 "write_content": ("Write", None),
 "edit_big": ("Edit", None),
 "json_desc": ("BashDesc", None),
}

def payload(name, ws):
    tool, text = SHAPES[name]
    if tool == "Bash":
        ti = {"command": text, "description": "d"}
    elif tool == "BashDesc":
        tool, ti = "Bash", {"command": "ls", "description": "x" * SIZE}
    elif tool == "Read":
        ti = {"file_path": text}
    elif tool == "Glob":
        ti = {"pattern": text}
    elif tool == "Write":
        ti = {"file_path": "out.txt", "content": "x" * SIZE}
    elif tool == "Edit":
        ti = {"file_path": "a.txt", "old_string": "a" * (SIZE // 2), "new_string": "b" * (SIZE // 2)}
    return {"session_id": "s", "transcript_path": "/tmp/t.jsonl", "cwd": ws, "permission_mode": "default",
            "hook_event_name": "PreToolUse", "tool_name": tool, "tool_input": ti,
            "tool_use_id": "toolu_" + str(time.time_ns())}

def run_rss(binary, name, ws):
    data = json.dumps(payload(name, ws)).encode()
    with tempfile.TemporaryFile() as f, open(os.devnull, "wb") as null:
        f.write(data); f.seek(0)
        t = time.perf_counter()
        pid = os.fork()
        if pid == 0:
            os.chdir(ws); os.dup2(f.fileno(), 0)
            o = os.open(OUT, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            os.dup2(o, 1); os.dup2(o, 2)
            os.execv(binary, [binary, "hook", "claude-code"])
        _, status, ru = os.wait4(pid, 0)
        wall = time.perf_counter() - t
    out = open(OUT, "rb").read()
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024, out, os.waitstatus_to_exitcode(status)

if __name__ == "__main__":
    bins = sys.argv[1].split(",")
    names = sys.argv[2:] or list(SHAPES)
    runs = int(os.environ.get("RUNS", 1))
    ws = tempfile.mkdtemp(prefix="gavel-ws-")
    open(os.path.join(ws, "a.txt"), "w").write("a" * (SIZE // 2))
    print("| shape | " + " | ".join(f"{b}: wall, CPU, peak RSS, decision" for b in bins) + " | CPU after / before |")
    print("|---|" + "---|" * (len(bins) + 1))
    for name in names:
        cells, cpus = [], []
        results = {b: [] for b in bins}
        for _ in range(runs):
            for b in bins:
                results[b].append(run_rss(b, name, ws))
        for b in bins:
            rs = sorted(results[b], key=lambda r: r[1])
            wall, cpu, rss, out, code = rs[len(rs) // 2]
            try:
                dec = json.loads(out.decode().splitlines()[0])["hookSpecificOutput"]["permissionDecision"]
            except Exception:
                dec = "exit %d" % code
            cpus.append(cpu)
            cells.append(f"{wall:.2f} s, {cpu:.2f} s, {rss:.0f} MB, {dec}")
        ratio = f"{cpus[-1] / cpus[0]:.2f}×" if len(cpus) > 1 and cpus[0] > 0 else "–"
        print(f"| {name} | " + " | ".join(cells) + f" | {ratio} |", flush=True)
