//! `bash`: runs a command with `bash -c` in the workspace, with a timeout and
//! capped output. A non-zero exit, a timeout or a spawn error is a failure
//! that carries the output, never a panic.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;
use wait_timeout::ChildExt;

use super::{Contained, ToolContext, ToolError, ToolHandler, ToolOutput, arg, cap_counting};

/// The built-in shell tool.
#[derive(Debug, Clone, Copy)]
pub struct Bash;

impl ToolHandler for Bash {
    fn call(&self, arguments: &Value, context: &ToolContext) -> Result<ToolOutput, ToolError> {
        let mut command = Command::new("bash");
        command.arg("-c").arg(arg(arguments, "command")?);
        run(command, context)
    }

    fn call_contained(
        &self,
        arguments: &Value,
        context: &ToolContext,
        contained: &Contained,
    ) -> Result<ToolOutput, ToolError> {
        let sandbox = contained.sandbox;
        let made = crate::sandbox::exec::contained_command(
            crate::sandbox::kernel::Support::probe_without_namespaces(),
            arg(arguments, "command")?,
            (&sandbox.profile, &sandbox.spec),
            context.workspace.root(),
            context.workspace.root(),
            context.record.as_deref(),
            contained.call_id,
        )
        .map_err(|e| ToolError::Uncontained(e.to_string()))?;
        let mut made = made;
        let command = made
            .take_command()
            .map_err(|e| ToolError::Uncontained(e.to_string()))?;
        // `made` keeps the private temporary folder until the command is done.
        let output = run(command, context);
        *contained.observed.borrow_mut() = made.observed();
        output
    }
}

/// Runs `command` (`bash -c …`) in the workspace with the context's
/// timeout and output cap.
fn run(mut command: Command, context: &ToolContext) -> Result<ToolOutput, ToolError> {
    let mut child = command
        .current_dir(context.workspace.root())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .map_err(ToolError::Spawn)?;

    let limit = context.output_limit;
    let (tx, rx) = mpsc::channel();
    let readers = [
        child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    ];
    for (index, reader) in readers.into_iter().enumerate() {
        let tx = tx.clone();
        std::thread::spawn(move || {
            let bytes = reader.map(|r| drain(r, limit)).unwrap_or_default();
            let _ = tx.send((index, bytes));
        });
    }
    drop(tx);

    let status = match child.wait_timeout(context.bash_timeout) {
        Ok(Some(status)) => Some(status),
        Ok(None) => None,
        Err(err) => return Err(ToolError::Spawn(err)),
    };
    if status.is_none() {
        // Kill the whole process group so no grandchild keeps the pipes open.
        // SAFETY: kill(2) with a negative pid signals the group we created.
        unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
        let _ = child.wait();
    }

    let mut streams = [(Vec::new(), 0), (Vec::new(), 0)];
    for _ in 0..2 {
        match rx.recv_timeout(Duration::from_secs(2)) {
            Ok((index, bytes)) => streams[index] = bytes,
            Err(_) => break,
        }
    }
    let [(stdout, unkept_out), (stderr, unkept_err)] = streams;
    let mut output = String::from_utf8_lossy(&stdout).into_owned();
    if !stderr.is_empty() {
        if !output.is_empty() && !output.ends_with('\n') {
            output.push('\n');
        }
        output.push_str(&String::from_utf8_lossy(&stderr));
    }
    let output = cap_counting(output, limit, unkept_out.saturating_add(unkept_err));

    match status {
        None => Err(ToolError::Timeout {
            seconds: context.bash_timeout.as_secs(),
            output,
        }),
        Some(status) => match status.code() {
            Some(0) => Ok(ToolOutput {
                content: output,
                exit_code: Some(0),
            }),
            Some(code) => Err(ToolError::Exit { code, output }),
            None => Err(ToolError::Signal { output }),
        },
    }
}

/// Reads `reader` to the end, keeping at most `limit + 1` bytes so the cap
/// can tell it cut; also says how many bytes it read and did not keep.
fn drain(mut reader: impl Read, limit: usize) -> (Vec<u8>, usize) {
    let mut kept = Vec::new();
    let mut unkept = 0usize;
    let mut buf = [0u8; 8192];
    loop {
        match reader.read(&mut buf) {
            Ok(0) | Err(_) => return (kept, unkept),
            Ok(n) => {
                let room = (limit + 1).saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
                unkept = unkept.saturating_add(n - n.min(room));
            }
        }
    }
}
