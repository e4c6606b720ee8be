//! A small seccomp-BPF filter of gavel's own, for what Landlock cannot
//! express: debugging other processes, io_uring (whose operations bypass
//! the syscalls Landlock and this filter see), new namespaces and mounts,
//! loading code into the kernel, terminal input injection, and, when the
//! spec has no network, every `socket(2)`.
//!
//! The filter is built in the parent ([`Filter::bytes`] allocates); the
//! child only installs it ([`Filter::install`], two system calls).

/// One BPF instruction (`struct sock_filter`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Insn {
    code: u16,
    jt: u8,
    jf: u8,
    k: u32,
}

const LD_W_ABS: u16 = 0x20;
const JEQ_K: u16 = 0x15;
const JGE_K: u16 = 0x35;
const JSET_K: u16 = 0x45;
const RET_K: u16 = 0x06;

const OFFSET_NR: u32 = 0;
const OFFSET_ARCH: u32 = 4;
/// The low 32 bits of argument `i` (little-endian `seccomp_data`).
const fn offset_arg(i: u32) -> u32 {
    16 + 8 * i
}

const RET_ALLOW: u32 = 0x7fff_0000;
const RET_USER_NOTIF: u32 = 0x7fc0_0000;
const RET_KILL_PROCESS: u32 = 0x8000_0000;
const fn ret_errno(errno: i32) -> u32 {
    0x0005_0000 | (errno as u32 & 0xffff)
}

#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xc000_003e;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xc000_00b7;

/// The namespace flags of `clone(2)`.
const NAMESPACE_FLAGS: u32 = (libc::CLONE_NEWNS
    | libc::CLONE_NEWUSER
    | libc::CLONE_NEWPID
    | libc::CLONE_NEWNET
    | libc::CLONE_NEWUTS
    | libc::CLONE_NEWIPC
    | libc::CLONE_NEWCGROUP) as u32;

/// Refused with `EPERM` in every sandbox.
const DENIED: &[libc::c_long] = &[
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
    libc::SYS_unshare,
    libc::SYS_setns,
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_chroot,
    libc::SYS_move_mount,
    libc::SYS_open_tree,
    libc::SYS_fsopen,
    libc::SYS_fsmount,
    libc::SYS_fsconfig,
    libc::SYS_fspick,
    libc::SYS_mount_setattr,
    libc::SYS_bpf,
    libc::SYS_perf_event_open,
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_kexec_load,
    libc::SYS_kexec_file_load,
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_userfaultfd,
    libc::SYS_open_by_handle_at,
    libc::SYS_name_to_handle_at,
    libc::SYS_acct,
    libc::SYS_swapon,
    libc::SYS_swapoff,
    libc::SYS_reboot,
    libc::SYS_syslog,
];

/// A compiled filter, ready to install.
#[derive(Debug, Clone)]
pub struct Filter {
    program: Vec<libc::sock_filter>,
}

/// What one system call gets: a return, or instructions that look at its
/// arguments (each of their paths ends in a return).
#[derive(Debug, Clone)]
enum Answer {
    Return(u32),
    Check(Vec<Insn>),
}

impl Answer {
    fn code(&self) -> Vec<Insn> {
        match self {
            Answer::Return(ret) => vec![ret_k(*ret)],
            Answer::Check(code) => code.clone(),
        }
    }
}

const fn insn(code: u16, jt: u8, jf: u8, k: u32) -> Insn {
    Insn { code, jt, jf, k }
}

const fn ret_k(ret: u32) -> Insn {
    insn(RET_K, 0, 0, ret)
}

/// A program under construction: each system call's answer (the first
/// given stands); every other call is allowed.
struct Program(std::collections::BTreeMap<u32, Answer>);

impl Program {
    fn new() -> Self {
        Program(std::collections::BTreeMap::new())
    }

    /// `nr` returns `ret`.
    fn answer(&mut self, nr: libc::c_long, ret: u32) {
        self.check(nr, vec![ret_k(ret)]);
    }

    /// Each of `nrs` returns `ret`.
    fn answer_all(&mut self, nrs: &[libc::c_long], ret: u32) {
        for &nr in nrs {
            self.answer(nr, ret);
        }
    }

    /// `nr` runs `code`, which looks at its arguments.
    fn check(&mut self, nr: libc::c_long, code: Vec<Insn>) {
        let answer = match code.as_slice() {
            [only] if only.code == RET_K => Answer::Return(only.k),
            _ => Answer::Check(code),
        };
        self.0.entry(nr as u32).or_insert(answer);
    }

    /// What Landlock cannot express, refused; without `network` and
    /// unless `observed` (the observer refuses it, and records it),
    /// `socket` too.
    fn refuse(&mut self, network: bool, observed: bool) {
        self.answer_all(DENIED, ret_errno(libc::EPERM));
        // clone3 passes its flags in memory a filter cannot read: callers
        // (glibc) fall back to clone, whose flags it can.
        self.answer(libc::SYS_clone3, ret_errno(libc::ENOSYS));
        self.check(
            libc::SYS_clone,
            vec![
                insn(LD_W_ABS, 0, 0, offset_arg(0)),
                insn(JSET_K, 0, 1, NAMESPACE_FLAGS),
                ret_k(ret_errno(libc::EPERM)),
                ret_k(RET_ALLOW),
            ],
        );
        // Typing into the terminal the agent's shell reads.
        self.check(
            libc::SYS_ioctl,
            vec![
                insn(LD_W_ABS, 0, 0, offset_arg(1)),
                insn(JEQ_K, 1, 0, libc::TIOCSTI as u32),
                insn(JEQ_K, 0, 1, libc::TIOCLINUX as u32),
                ret_k(ret_errno(libc::EPERM)),
                ret_k(RET_ALLOW),
            ],
        );
        if !network && !observed {
            self.answer(libc::SYS_socket, ret_errno(libc::EACCES));
        }
    }

    /// What the observer is told of: [`OBSERVED`], `openat` and `open`
    /// with a flag that writes, and without `network`, `socket`; but not
    /// an `execve` that carries `pass` in its fourth and fifth arguments
    /// (which `execve` ignores): the launcher's own.
    fn observe(&mut self, network: bool, pass: Option<[u32; 4]>) {
        if let Some([a, b, c, d]) = pass {
            // Each half of each argument, in turn; any other value: told.
            let mut code = Vec::new();
            for (i, (k, at)) in [(a, 3), (b, 3), (c, 4), (d, 4)].into_iter().enumerate() {
                let offset = offset_arg(at) + if i % 2 == 1 { 4 } else { 0 };
                let to_notify = u8::try_from(2 * (3 - i)).expect("a short jump");
                code.push(insn(LD_W_ABS, 0, 0, offset));
                code.push(if i == 3 {
                    insn(JEQ_K, 1, 0, k)
                } else {
                    insn(JEQ_K, 0, to_notify, k)
                });
            }
            code.push(ret_k(RET_USER_NOTIF));
            code.push(ret_k(RET_ALLOW));
            self.check(libc::SYS_execve, code);
        }
        let mut opens = vec![(libc::SYS_openat, 2)];
        #[cfg(target_arch = "x86_64")]
        opens.push((libc::SYS_open, 1));
        for (nr, flags) in opens {
            self.check(
                nr,
                vec![
                    insn(LD_W_ABS, 0, 0, offset_arg(flags)),
                    insn(JSET_K, 0, 1, WRITE_FLAGS),
                    ret_k(RET_USER_NOTIF),
                    ret_k(RET_ALLOW),
                ],
            );
        }
        self.answer_all(OBSERVED, RET_USER_NOTIF);
        if !network {
            self.answer(libc::SYS_socket, RET_USER_NOTIF);
        }
    }

    /// The program: the architecture checked, then the call's number
    /// looked up. The kernel runs the filter on every call for each number
    /// it knows when it installs it (to cache the calls it always allows)
    /// and compiles it, both at a cost per instruction (a chain of one
    /// comparison per call cost 3 µs per instruction; compiling, about
    /// half a microsecond): the lookup is a binary tree over runs of
    /// numbers with one answer ([`lookup`]), a few comparisons deep and
    /// about one instruction per run.
    fn finish(self) -> Filter {
        // Another architecture's system call numbers mean other calls: kill.
        let mut code = vec![
            insn(LD_W_ABS, 0, 0, OFFSET_ARCH),
            insn(JEQ_K, 1, 0, AUDIT_ARCH),
            ret_k(RET_KILL_PROCESS),
            insn(LD_W_ABS, 0, 0, OFFSET_NR),
        ];
        let mut calls = self.0;
        // The x32 ABI's numbers (bit 30) would bypass every check: refused,
        // as one run up to the last number.
        #[cfg(target_arch = "x86_64")]
        calls.insert(0x4000_0000, Answer::Return(ret_errno(libc::EPERM)));
        code.extend(lookup(&runs(&calls)));
        Filter {
            program: code
                .into_iter()
                .map(|i| libc::sock_filter {
                    code: i.code,
                    jt: i.jt,
                    jf: i.jf,
                    k: i.k,
                })
                .collect(),
        }
    }
}

/// The number line cut into runs, each from its first number up to the
/// next run's: consecutive numbers with one return are one run, each
/// check is a run of its own, and numbers without an answer are allowed.
/// A run that starts at [`X32_TAIL`] or above lasts to the end.
fn runs(calls: &std::collections::BTreeMap<u32, Answer>) -> Vec<(u32, &Answer)> {
    const ALLOWED: &Answer = &Answer::Return(RET_ALLOW);
    let mut runs: Vec<(u32, &Answer)> = vec![(0, ALLOWED)];
    let mut next = 0u32;
    for (&nr, answer) in calls {
        if nr != next {
            // A gap: allowed from the number after the last call.
            push_run(&mut runs, next, ALLOWED);
        }
        push_run(&mut runs, nr, answer);
        next = nr.saturating_add(1);
    }
    if next != u32::MAX && calls.keys().next_back().is_some_and(|&nr| nr < X32_TAIL) {
        push_run(&mut runs, next, ALLOWED);
    }
    runs
}

/// Where the last run, when one is given there, lasts to the end of the
/// numbers (x32's).
const X32_TAIL: u32 = 0x4000_0000;

/// Appends the run starting at `from` with `answer`, or extends the last
/// one when it returns the same.
fn push_run<'a>(runs: &mut Vec<(u32, &'a Answer)>, from: u32, answer: &'a Answer) {
    if let Some((start, last)) = runs.last_mut() {
        let same = matches!((&**last, answer), (Answer::Return(a), Answer::Return(b)) if a == b);
        if same {
            return;
        }
        if *start == from {
            *last = answer;
            return;
        }
    }
    runs.push((from, answer));
}

/// Where a comparison of the lookup goes.
#[derive(Clone, Copy)]
enum Target {
    /// The instruction at this index of the tree.
    Node(usize),
    /// The answer of this run.
    Run(usize),
}

/// The lookup of `runs` (the number in the accumulator): a binary tree of
/// `>=` comparisons, in order, each child right after its parent or
/// further on; then each check's instructions; then one return for each
/// answer the runs share. Every jump is forward.
fn lookup(runs: &[(u32, &Answer)]) -> Vec<Insn> {
    // The tree: (first number of the upper half, where >=, where <).
    fn grow(
        nodes: &mut Vec<(u32, Target, Target)>,
        first: usize,
        runs: &[(u32, &Answer)],
    ) -> Target {
        if runs.len() == 1 {
            return Target::Run(first);
        }
        let mid = runs.len() / 2;
        let at = nodes.len();
        nodes.push((runs[mid].0, Target::Run(0), Target::Run(0)));
        let below = grow(nodes, first, &runs[..mid]);
        let above = grow(nodes, first + mid, &runs[mid..]);
        nodes[at] = (runs[mid].0, above, below);
        Target::Node(at)
    }
    let mut nodes = Vec::new();
    if let Target::Run(only) = grow(&mut nodes, 0, runs) {
        return runs[only].1.code();
    }
    // Each run's code: a check's own block, or a return shared by all
    // runs that return it; blocks first, then the shared returns.
    let mut blocks: Vec<&[Insn]> = Vec::new();
    let mut shared: Vec<u32> = Vec::new();
    let mut codes: Vec<Code> = Vec::new();
    for (_, answer) in runs {
        codes.push(match answer {
            Answer::Check(code) => {
                blocks.push(code);
                Code::Block(blocks.len() - 1)
            }
            Answer::Return(ret) => Code::Shared(match shared.iter().position(|r| r == ret) {
                Some(i) => i,
                None => {
                    shared.push(*ret);
                    shared.len() - 1
                }
            }),
        });
    }
    let mut block_at = Vec::with_capacity(blocks.len());
    let mut at = nodes.len();
    for block in &blocks {
        block_at.push(at);
        at += block.len();
    }
    let position = |target: Target| match target {
        Target::Node(i) => i,
        Target::Run(r) => match codes[r] {
            Code::Block(b) => block_at[b],
            Code::Shared(i) => at + i,
        },
    };
    let jump = |from: usize, to: usize| {
        u8::try_from(to - from - 1).expect("a filter small enough for 8-bit jumps")
    };
    let mut code: Vec<Insn> = nodes
        .iter()
        .enumerate()
        .map(|(i, &(k, above, below))| {
            insn(JGE_K, jump(i, position(above)), jump(i, position(below)), k)
        })
        .collect();
    code.extend(blocks.into_iter().flatten());
    code.extend(shared.into_iter().map(ret_k));
    code
}

/// Where a run's code is: a check's block, or a shared return.
#[derive(Clone, Copy)]
enum Code {
    Block(usize),
    Shared(usize),
}

/// The calls the observer is told of ([`Filter::observer`]): what may
/// write, create, remove, rename or change a file, and what executes.
/// `openat` and `open` only with a flag that writes.
const OBSERVED: &[libc::c_long] = &[
    libc::SYS_openat2,
    libc::SYS_unlinkat,
    libc::SYS_renameat,
    libc::SYS_renameat2,
    libc::SYS_mkdirat,
    libc::SYS_symlinkat,
    libc::SYS_linkat,
    libc::SYS_fchmodat,
    libc::SYS_fchownat,
    libc::SYS_truncate,
    libc::SYS_mknodat,
    libc::SYS_utimensat,
    libc::SYS_execve,
    libc::SYS_execveat,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_creat,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_unlink,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_rename,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_mkdir,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_rmdir,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_symlink,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_link,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_chmod,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_chown,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_lchown,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_mknod,
];

/// The `open` flags that write.
const WRITE_FLAGS: u32 = (libc::O_WRONLY | libc::O_RDWR | libc::O_CREAT | libc::O_TRUNC) as u32;

impl Filter {
    /// The observer's filter: every call of [`OBSERVED`] (and `openat` or
    /// `open` with a flag that writes, and, without `network`, `socket`)
    /// is handed to gavel's observer, which answers: it lets the kernel
    /// decide the file calls and refuses `socket` itself
    /// (`super::observe`). Installed with a listener.
    pub fn observer(network: bool) -> Self {
        let mut p = Program::new();
        p.observe(network, None);
        p.finish()
    }

    /// The sandbox's filter; `network` false refuses every `socket(2)`.
    pub fn sandbox(network: bool) -> Self {
        let mut p = Program::new();
        p.refuse(network, false);
        p.finish()
    }

    /// [`Filter::sandbox`] and [`Filter::observer`] in one program (one
    /// filter for the kernel to compile and to run on each call), for a
    /// child whose observer refuses `socket` itself: the sandbox's
    /// refusals first, then what the observer is told of. Installed with
    /// a listener. An `execve` carrying `pass` ([`Program::observe`]) is
    /// not the observer's.
    pub fn sandbox_observed(network: bool, pass: [u32; 4]) -> Self {
        let mut p = Program::new();
        p.refuse(network, true);
        p.observe(network, Some(pass));
        p.finish()
    }

    /// A filter that answers `ENOSYS` to `landlock_create_ruleset`, as a
    /// kernel without Landlock does: for testing that `gavel exec` refuses.
    pub fn without_landlock() -> Self {
        let mut p = Program::new();
        p.answer(libc::SYS_landlock_create_ruleset, ret_errno(libc::ENOSYS));
        p.finish()
    }

    /// Installs the filter (as [`Filter::install`]) with a listener: the
    /// descriptor its notifications arrive on. Async-signal-safe.
    pub fn install_listener(&self) -> std::io::Result<std::os::fd::RawFd> {
        let program = libc::sock_fprog {
            len: self.program.len() as libc::c_ushort,
            filter: self.program.as_ptr() as *mut libc::sock_filter,
        };
        // SAFETY: as in `install`.
        if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: as in `install`.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_seccomp,
                libc::SECCOMP_SET_MODE_FILTER,
                libc::SECCOMP_FILTER_FLAG_NEW_LISTENER,
                &program as *const libc::sock_fprog,
            )
        };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(fd as std::os::fd::RawFd)
    }

    /// How many instructions the filter has.
    pub fn len(&self) -> usize {
        self.program.len()
    }

    /// Whether the filter is empty (never: it always ends in a return).
    pub fn is_empty(&self) -> bool {
        self.program.is_empty()
    }

    /// Installs the filter on the calling thread (and what it executes),
    /// setting `no_new_privs` first. Async-signal-safe: no allocation, so a
    /// forked child may call it before `execve`.
    pub fn install(&self) -> std::io::Result<()> {
        let program = libc::sock_fprog {
            len: self.program.len() as libc::c_ushort,
            filter: self.program.as_ptr() as *mut libc::sock_filter,
        };
        // SAFETY: prctl and seccomp read only `program`, which outlives the
        // calls; the kernel copies the filter.
        unsafe {
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::syscall(
                libc::SYS_seccomp,
                libc::SECCOMP_SET_MODE_FILTER,
                0,
                &program as *const libc::sock_fprog,
            ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the filter over one `seccomp_data` the way the kernel does.
    fn run(filter: &Filter, nr: u32, args: [u32; 6]) -> u32 {
        run_counting(filter, nr, args).0
    }

    /// [`run`], and how many instructions it took.
    fn run_counting(filter: &Filter, nr: u32, args: [u32; 6]) -> (u32, usize) {
        run_wide(filter, nr, args.map(u64::from))
    }

    /// [`run_counting`] with arguments of 64 bits.
    fn run_wide(filter: &Filter, nr: u32, args: [u64; 6]) -> (u32, usize) {
        let mut data = [0u8; 64];
        data[0..4].copy_from_slice(&nr.to_le_bytes());
        data[4..8].copy_from_slice(&AUDIT_ARCH.to_le_bytes());
        for (i, a) in args.iter().enumerate() {
            let at = offset_arg(i as u32) as usize;
            data[at..at + 8].copy_from_slice(&a.to_le_bytes());
        }
        let mut acc = 0u32;
        let mut pc = 0usize;
        for steps in 1.. {
            let i = filter.program[pc];
            match i.code {
                LD_W_ABS => {
                    let at = i.k as usize;
                    acc = u32::from_le_bytes(data[at..at + 4].try_into().unwrap());
                }
                RET_K => return (i.k, steps),
                JEQ_K | JGE_K | JSET_K => {
                    let hit = match i.code {
                        JEQ_K => acc == i.k,
                        JGE_K => acc >= i.k,
                        _ => acc & i.k != 0,
                    };
                    pc += usize::from(if hit { i.jt } else { i.jf });
                }
                other => panic!("unknown instruction {other:#x}"),
            }
            pc += 1;
        }
        unreachable!()
    }

    #[test]
    fn every_call_is_looked_up_in_a_few_comparisons() {
        for network in [false, true] {
            let both = Filter::sandbox_observed(network, PASS);
            let mut program = Program::new();
            program.refuse(network, true);
            program.observe(network, Some(PASS));
            // Each run of numbers with one answer is about one
            // instruction (the kernel compiles every one of them).
            assert!(both.len() <= 120, "{} instructions", both.len());
            let edges = [0x3fff_ffff, 0x4000_0000, 0x4000_0001, u32::MAX];
            for nr in (0..600u32).chain(edges) {
                let (answer, steps) = run_counting(&both, nr, [0; 6]);
                let expected = match program.0.get(&nr) {
                    #[cfg(target_arch = "x86_64")]
                    None if nr >= X32_TAIL => ret_errno(libc::EPERM),
                    None => RET_ALLOW,
                    Some(Answer::Return(ret)) => *ret,
                    // Zero arguments: no pass, no namespace flag, no
                    // write flag, no terminal injection.
                    Some(Answer::Check(_)) if nr == libc::SYS_execve as u32 => RET_USER_NOTIF,
                    Some(Answer::Check(_)) => RET_ALLOW,
                };
                assert_eq!(answer, expected, "call {nr}, network {network}");
                assert!(steps <= 14, "call {nr}: {steps} instructions");
            }
        }
    }

    #[test]
    fn the_sandbox_filter_refuses_what_landlock_cannot_express() {
        let closed = Filter::sandbox(false);
        let open = Filter::sandbox(true);
        let eperm = ret_errno(libc::EPERM);
        assert_eq!(run(&closed, libc::SYS_ptrace as u32, [0; 6]), eperm);
        assert_eq!(run(&closed, libc::SYS_io_uring_setup as u32, [0; 6]), eperm);
        assert_eq!(run(&closed, libc::SYS_mount as u32, [0; 6]), eperm);
        assert_eq!(run(&closed, libc::SYS_read as u32, [0; 6]), RET_ALLOW);
        let newuser = libc::CLONE_NEWUSER as u32;
        assert_eq!(
            run(&closed, libc::SYS_clone as u32, [newuser, 0, 0, 0, 0, 0]),
            eperm
        );
        let thread = (libc::CLONE_VM | libc::CLONE_THREAD) as u32;
        assert_eq!(
            run(&closed, libc::SYS_clone as u32, [thread, 0, 0, 0, 0, 0]),
            RET_ALLOW
        );
        assert_eq!(
            run(&closed, libc::SYS_clone3 as u32, [0; 6]),
            ret_errno(libc::ENOSYS)
        );
        let sti = [0, libc::TIOCSTI as u32, 0, 0, 0, 0];
        assert_eq!(run(&closed, libc::SYS_ioctl as u32, sti), eperm);
        let winsz = [0, libc::TIOCGWINSZ as u32, 0, 0, 0, 0];
        assert_eq!(run(&closed, libc::SYS_ioctl as u32, winsz), RET_ALLOW);
        let inet = [libc::AF_INET as u32, 1, 0, 0, 0, 0];
        assert_eq!(
            run(&closed, libc::SYS_socket as u32, inet),
            ret_errno(libc::EACCES)
        );
        assert_eq!(run(&open, libc::SYS_socket as u32, inet), RET_ALLOW);
        #[cfg(target_arch = "x86_64")]
        assert_eq!(
            run(&closed, 0x4000_0000 | libc::SYS_read as u32, [0; 6]),
            eperm
        );
    }

    #[test]
    fn the_observer_is_told_of_writes_and_executions_only() {
        let f = Filter::observer(false);
        let creat = [0, 0, (libc::O_WRONLY | libc::O_CREAT) as u32, 0, 0, 0];
        let read = [0, 0, libc::O_RDONLY as u32, 0, 0, 0];
        assert_eq!(run(&f, libc::SYS_openat as u32, creat), RET_USER_NOTIF);
        assert_eq!(run(&f, libc::SYS_openat as u32, read), RET_ALLOW);
        assert_eq!(run(&f, libc::SYS_execve as u32, [0; 6]), RET_USER_NOTIF);
        assert_eq!(run(&f, libc::SYS_unlinkat as u32, [0; 6]), RET_USER_NOTIF);
        assert_eq!(run(&f, libc::SYS_read as u32, [0; 6]), RET_ALLOW);
        assert_eq!(run(&f, libc::SYS_socket as u32, [0; 6]), RET_USER_NOTIF);
        let online = Filter::observer(true);
        assert_eq!(run(&online, libc::SYS_socket as u32, [0; 6]), RET_ALLOW);
        // The two in one: the sandbox refuses, the observer is told, and
        // `socket` is the observer's to refuse (and record).
        let both = Filter::sandbox_observed(false, PASS);
        let inet = [libc::AF_INET as u32, 1, 0, 0, 0, 0];
        assert_eq!(run(&both, libc::SYS_socket as u32, inet), RET_USER_NOTIF);
        assert_eq!(
            run(&both, libc::SYS_ptrace as u32, [0; 6]),
            ret_errno(libc::EPERM)
        );
        let newuser = [libc::CLONE_NEWUSER as u32, 0, 0, 0, 0, 0];
        assert_eq!(
            run(&both, libc::SYS_clone as u32, newuser),
            ret_errno(libc::EPERM)
        );
        assert_eq!(run(&both, libc::SYS_openat as u32, creat), RET_USER_NOTIF);
        assert_eq!(run(&both, libc::SYS_openat as u32, read), RET_ALLOW);
        assert_eq!(run(&both, libc::SYS_execve as u32, [0; 6]), RET_USER_NOTIF);
        assert_eq!(run(&both, libc::SYS_read as u32, [0; 6]), RET_ALLOW);
        let online = Filter::sandbox_observed(true, PASS);
        assert_eq!(run(&online, libc::SYS_socket as u32, inet), RET_ALLOW);
        // Every call of both lists, each to its own answer.
        for &nr in DENIED {
            assert_eq!(
                run(&both, nr as u32, [0; 6]),
                ret_errno(libc::EPERM),
                "{nr}"
            );
        }
        for &nr in OBSERVED {
            assert_eq!(run(&both, nr as u32, [0; 6]), RET_USER_NOTIF, "{nr}");
        }
        for nr in [
            libc::SYS_write,
            libc::SYS_close,
            libc::SYS_getpid,
            libc::SYS_exit_group,
        ] {
            assert_eq!(run(&both, nr as u32, [0; 6]), RET_ALLOW, "{nr}");
        }
    }

    const PASS: [u32; 4] = [0x1111_2222, 0x3333_4444, 0x5555_6666, 0x7777_8888];

    #[test]
    fn only_the_launchers_own_execve_passes_unobserved() {
        let f = Filter::sandbox_observed(false, PASS);
        let execve = libc::SYS_execve as u32;
        let with = |a3: u64, a4: u64| run_wide(&f, execve, [1, 2, 3, a3, a4, 0]).0;
        let (a3, a4) = (0x3333_4444_1111_2222, 0x7777_8888_5555_6666);
        assert_eq!(with(a3, a4), RET_ALLOW);
        // Any half wrong, or the halves swapped: told.
        for (x, y) in [
            (a3 ^ 1, a4),
            (a3 ^ (1 << 32), a4),
            (a3, a4 ^ 1),
            (a3, a4 ^ (1 << 63)),
            (a4, a3),
            (0, 0),
        ] {
            assert_eq!(with(x, y), RET_USER_NOTIF, "{x:#x} {y:#x}");
        }
        // execveat has no pass.
        let at = run_wide(&f, libc::SYS_execveat as u32, [0, 0, 0, a3, a4, 0]).0;
        assert_eq!(at, RET_USER_NOTIF);
        // The observer's filter alone (a thread observer's child) has none.
        let plain = Filter::observer(false);
        assert_eq!(
            run_wide(&plain, execve, [0, 0, 0, a3, a4, 0]).0,
            RET_USER_NOTIF
        );
    }

    #[test]
    fn the_test_filter_only_hides_landlock() {
        let f = Filter::without_landlock();
        assert_eq!(
            run(&f, libc::SYS_landlock_create_ruleset as u32, [0; 6]),
            ret_errno(libc::ENOSYS)
        );
        assert_eq!(run(&f, libc::SYS_unshare as u32, [0; 6]), RET_ALLOW);
    }
}
