//! Times whole processes: runs a command `--runs` times after `--warmup`
//! untimed runs and prints the median, min, max and mean wall time as JSON.
//! `{i}` in the arguments and in the `--stdin` file becomes a number unique
//! to each run (so each hook call gets a fresh tool_use_id). Stdout is
//! discarded; an exit code outside `--ok` (default 0) stops with its stderr.
//!
//! usage: timeit [--runs N] [--warmup N] [--stdin FILE] [--ok 0,3] -- CMD ARGS...

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Instant;

use gavel_bench::flag;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let split = args
        .iter()
        .position(|a| a == "--")
        .ok_or("usage: timeit [--runs N] [--warmup N] [--stdin FILE] [--ok 0,3] -- CMD ARGS...")?;
    let (options, command) = (&args[..split], &args[split + 1..]);
    let runs: usize = flag(options, "--runs").map_or(Ok(10), |s| s.parse())?;
    let warmup: usize = flag(options, "--warmup").map_or(Ok(2), |s| s.parse())?;
    let stdin = flag(options, "--stdin")
        .map(std::fs::read_to_string)
        .transpose()?;
    let ok: Vec<i32> = flag(options, "--ok")
        .unwrap_or_else(|| "0".into())
        .split(',')
        .map(str::parse)
        .collect::<Result<_, _>>()?;
    let (program, rest) = command.split_first().ok_or("no command given")?;
    let base = gavel_bench::rows::now_us();

    let mut times = Vec::with_capacity(runs);
    for k in 0..warmup + runs {
        let unique = format!("{base}{k}");
        let argv: Vec<String> = rest.iter().map(|a| a.replace("{i}", &unique)).collect();
        let input = stdin.as_ref().map(|s| s.replace("{i}", &unique));
        let started = Instant::now();
        let mut child = Command::new(program)
            .args(&argv)
            .stdin(if input.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()?;
        if let (Some(text), Some(mut pipe)) = (&input, child.stdin.take()) {
            pipe.write_all(text.as_bytes())?;
        }
        let output = child.wait_with_output()?;
        let elapsed = started.elapsed().as_secs_f64();
        let code = output.status.code().unwrap_or(-1);
        if !ok.contains(&code) {
            return Err(format!(
                "`{program} {}` exited {code}: {}",
                argv.join(" "),
                String::from_utf8_lossy(&output.stderr).trim()
            )
            .into());
        }
        if k >= warmup {
            times.push(elapsed);
        }
    }
    times.sort_by(f64::total_cmp);
    let median = if times.len() % 2 == 1 {
        times[times.len() / 2]
    } else {
        (times[times.len() / 2 - 1] + times[times.len() / 2]) / 2.0
    };
    let mean = times.iter().sum::<f64>() / times.len() as f64;
    println!(
        "{{\"runs\":{runs},\"median_s\":{median},\"min_s\":{},\"max_s\":{},\"mean_s\":{mean}}}",
        times[0],
        times[times.len() - 1]
    );
    Ok(())
}
