//! Writes the JSON lines `gavel serve --stdio` reads for a generated session:
//! one `tool_use` line per call, followed by the `approval` line for a call
//! the policy asks about. Also creates the workspace's files.
//!
//! usage: gen-input --workspace DIR --events N --out FILE [--id-prefix P] [--seed S]

use std::io::Write;
use std::path::PathBuf;

use gavel::Workspace;
use gavel_bench::{flag, mix, required};

const USAGE: &str = "gen-input --workspace DIR --events N --out FILE [--id-prefix P] [--seed S]";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let dir = PathBuf::from(required(&args, "--workspace", USAGE));
    let events: u64 = required(&args, "--events", USAGE).parse()?;
    let out = PathBuf::from(required(&args, "--out", USAGE));
    let prefix = flag(&args, "--id-prefix").unwrap_or_else(|| "toolu_".into());
    let seed: u64 = flag(&args, "--seed").map_or(Ok(1), |s| s.parse())?;

    std::fs::create_dir_all(&dir)?;
    mix::setup_workspace(&dir)?;
    let workspace = Workspace::open(&dir)?;
    let calls = mix::calls(&workspace, events, &prefix, seed);
    let mut file = std::io::BufWriter::new(std::fs::File::create(&out)?);
    let mut total = 0;
    for call in &calls {
        writeln!(file, "{}", call.request_line())?;
        if let Some(line) = call.approval_line() {
            writeln!(file, "{line}")?;
        }
        total += call.events();
    }
    file.flush()?;
    println!("{{\"calls\":{},\"events\":{total}}}", calls.len());
    Ok(())
}
