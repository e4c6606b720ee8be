#!/usr/bin/env python3
"""What `gavel exec` adds to a command: the same command run by bash alone
and as the hook rewrote it (`bash -c` of the line that runs it under the
launcher beside GAVEL, `gavel-exec`, else `gavel exec`), decided once and
allowed under a sandbox, interleaved, in one run.

Usage: bench_exec.py GAVEL [--against PREVIOUS_GAVEL] [--runs N] [--floor]

Each case is a command allowed by a rule naming a profile (read-only or
workspace-write); each round decides a call through the Claude Code hook
(not timed), then runs `bash -c COMMAND` and the hook's rewritten line (and,
with --against, the previous release's, each decided by its own hook), in
an order that rotates each round. Prints the median wall time of each and
what each adds to bash alone. With --floor (and a C compiler), three static
C launchers run the command in the same rotation, floors measured in the
same hour: one that only executes it; one that first makes a user and
mount namespace; one that applies gavel's kernel sandbox at its least
(read-only's Landlock paths, the namespaces read-only, a filter of gavel's
size with a listener). Standard library only.
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

CASES = [
    ("`true`", "true", "read-only"),
    ("`cat a.txt`", "cat a.txt", "read-only"),
    # A write the command names (`> out.txt`) is the policy's to judge,
    # not a sandbox's: the writable profile's cost is measured on `true`.
    ("`true`", "true", "workspace-write"),
]

POLICY = """name = "bench"
[[rules]]
id = "bench.{profile}"
action = "allow"
tools = ["bash"]
commands = [{{ program = ["true"] }}, {{ program = ["cat"] }}, {{ program = ["sh"] }}, {{ program = ["echo"] }}]
sandbox = "{profile}"
reason = "bench"
"""


def timed(argv, cwd):
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, capture_output=True)
    if done.returncode != 0:
        sys.exit(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.decode().strip()}")
    return time.perf_counter() - start


FLOOR_C = r"""
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#ifdef SANDBOX
/* gavel's kernel sandbox, at its least: read-only's Landlock paths, the
   namespaces made read-only, a seccomp filter of gavel's size (~110
   instructions) with a listener that is never told anything. */
static void put(const char *path, const char *text) {
    int fd = open(path, O_WRONLY);
    if (fd < 0 || write(fd, text, strlen(text)) < 0) { perror(path); exit(1); }
    close(fd);
}
struct rule { unsigned long long access; int parent; } __attribute__((packed));
static void sandbox(void) {
    struct { unsigned long long fs, net, scoped; } handled = { (1ULL << 16) - 1, 3, 3 };
    int rs = syscall(SYS_landlock_create_ruleset, &handled, sizeof handled, 0);
    if (rs < 0) { perror("landlock"); exit(1); }
    const char *home = getenv("HOME"), *paths[] = { ".", "/usr", "/bin", "/sbin", "/lib", "/lib32",
        "/lib64", "/libx32", "/etc", "/opt", "/proc", "/sys", "~/.cargo", "~/.cargo/bin", "~/.rustup",
        "~/.rustup/toolchains", "~/.local/bin", "~/.local/lib", "~/.nvm", "~/.pyenv", "~/go", "~/go/bin",
        "~/.gitconfig", "~/.config/git", "/dev/null", "/dev/zero", "/dev/full", "/dev/random",
        "/dev/urandom", 0 };
    for (int i = 0; paths[i]; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s%s", paths[i][0] == '~' ? home : "", paths[i] + (paths[i][0] == '~'));
        struct rule r = { 1 | 4 | 8, open(path, O_PATH | O_CLOEXEC) }; /* execute, read file, read dir */
        if (r.parent < 0) continue;
        if (syscall(SYS_landlock_add_rule, rs, 1, &r, 0)) { r.access = 2 | 4; syscall(SYS_landlock_add_rule, rs, 1, &r, 0); }
        close(r.parent);
    }
    char map[64], cwd[4096];
    unsigned uid = getuid(), gid = getgid();
    if (unshare(CLONE_NEWUSER | CLONE_NEWNS)) { perror("unshare"); exit(1); }
    put("/proc/self/setgroups", "deny");
    snprintf(map, sizeof map, "%u %u 1\n", uid, uid); put("/proc/self/uid_map", map);
    snprintf(map, sizeof map, "%u %u 1\n", gid, gid); put("/proc/self/gid_map", map);
    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL);
    struct { unsigned long long set, clr, propagation, userns; } ro = { 1, 0, 0, 0 };
    syscall(SYS_mount_setattr, AT_FDCWD, "/", 0x8000, &ro, sizeof ro);
    if (!getcwd(cwd, sizeof cwd) || chdir(cwd)) { perror("cwd"); exit(1); }
    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    if (syscall(SYS_landlock_restrict_self, rs, 0)) { perror("landlock"); exit(1); }
    close(rs);
    /* a tree of 100 comparisons over numbers no call has */
    struct sock_filter f[110];
    int k = 0, nodes = 100;
    f[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 0);
    for (int i = 0; i < nodes; i++) {
        int l = 2 * i + 1, r = 2 * i + 2;
        int jt = (r < nodes ? r : nodes) - i - 1, jf = (l < nodes ? l : nodes + 1) - i - 1;
        f[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 2000 + i, jt, jf);
    }
    f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF);
    f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    struct sock_fprog program = { k, f };
    int listener = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &program);
    if (listener < 0) { perror("seccomp"); exit(1); }
    close(listener);
}
#endif
int main(int argc, char **argv) {
#ifdef NS
    if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) { perror("unshare"); return 1; }
#endif
#ifdef SANDBOX
    sandbox();
#endif
    execvp(argv[1], argv + 1);
    perror("execvp");
    return 127;
}
"""


def floors(root):
    """The floor launchers, compiled static into root: exec only; a user
    and mount namespace, then exec; gavel's kernel sandbox at its least
    (Landlock, the namespaces read-only, a filter with a listener), then
    exec."""
    source = os.path.join(root, "floor.c")
    with open(source, "w") as f:
        f.write(FLOOR_C)
    built = []
    for name, flags in [("floor-exec", []), ("floor-userns", ["-DNS"]), ("floor-sandbox", ["-DSANDBOX"])]:
        out = os.path.join(root, name)
        subprocess.run(["cc", "-O2", "-static", *flags, "-o", out, source], check=True)
        built.append((name, out))
    return built


def main(argv):
    if not argv:
        sys.exit(__doc__)
    gavels = [os.path.abspath(argv[0])]
    if "--against" in argv:
        gavels.insert(0, os.path.abspath(argv[argv.index("--against") + 1]))
    runs = int(argv[argv.index("--runs") + 1]) if "--runs" in argv else 200
    root = tempfile.mkdtemp(prefix="gavel-bench-exec-")
    try:
        floor = floors(root) if "--floor" in argv else []
        rows = []
        for n, (name, command, profile) in enumerate(CASES):
            ws = os.path.join(root, f"ws{n}")
            os.makedirs(os.path.join(ws, ".git", "hooks"))
            for path, text in [("a.txt", "hello\n"), (".git/config", "[core]\n"),
                               ("gavel.toml", POLICY.format(profile=profile))]:
                with open(os.path.join(ws, path), "w") as f:
                    f.write(text)
            env = dict(os.environ, GAVEL_CHECKPOINT_EVERY="0")

            def decide(gavel, db, call_id):
                """The hook's rewritten line for a fresh call (not timed)."""
                event = {"hook_event_name": "PreToolUse", "tool_name": "Bash",
                         "tool_input": {"command": command}, "tool_use_id": call_id,
                         "session_id": "bench", "cwd": ws}
                hook = subprocess.run([gavel, "hook", "claude-code", "--workspace", ws, "--db", db],
                                      input=json.dumps(event), cwd=ws, capture_output=True,
                                      text=True, env=env)
                if '"allow"' not in hook.stdout:
                    sys.exit(f"not allowed: {hook.stdout} {hook.stderr}")
                return json.loads(hook.stdout)["hookSpecificOutput"]["updatedInput"]["command"]

            times = [[] for _ in range(len(gavels) + 1 + len(floor))]
            for round_ in range(runs):
                # Each round runs a call of its own, as a client does: the
                # hook's ticket is taken by the launcher's first run.
                argvs = [["bash", "-c", command]] + [
                    ["bash", "-c", decide(g, os.path.join(root, f"audit{n}-{i}.db"), f"bench{n}-{round_}")]
                    for i, g in enumerate(gavels)] + [
                    ["bash", "-c", f"{path} {command}"] for _, path in floor]
                order = list(range(len(argvs)))
                shift = round_ % len(order)
                for k in order[shift:] + order[:shift]:
                    times[k].append(timed(argvs[k], ws))
            rows.append((name, profile, [statistics.median(t) * 1000 for t in times]))
        print(f"{runs} rounds, interleaved; median wall time\n")
        names = [f"`gavel exec`, {w}" for w in ["previous", "now"][-len(gavels):]]
        names += [f"floor: {name}" for name, _ in floor]
        print("| command | profile | bash alone | " + " | ".join(names)
              + " | " + " | ".join(f"added, {w}" for w in names) + " |")
        print("|---|---|---|" + "---|" * (2 * len(names)))
        for name, profile, (plain, *wrapped) in rows:
            print(f"| {name} | {profile} | {plain:.2f} ms | "
                  + " | ".join(f"{w:.2f} ms" for w in wrapped) + " | "
                  + " | ".join(f"{w - plain:+.2f} ms" for w in wrapped) + " |")
    finally:
        shutil.rmtree(root)


if __name__ == "__main__":
    main(sys.argv[1:])
