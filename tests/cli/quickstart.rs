//! The README's Quickstart runs as written in an empty folder: every
//! command line of its block (after `cargo install`) is run by `bash` in
//! the folder the block's `cd` leads to, with this build's `gavel` first
//! on `PATH`, and exits as its comment says (`exit N`), else 0.

use std::path::Path;

/// The command lines of the README's Quickstart block, with the exit code
/// each comment announces.
fn quickstart() -> Vec<(String, i32)> {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
        .expect("README.md");
    let section = readme
        .split("## Quickstart")
        .nth(1)
        .expect("a Quickstart section");
    let block = section
        .split("```sh\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("a sh block");
    let exit = regex::Regex::new(r"exit (\d+)").unwrap();
    block
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with("cargo install"))
        .map(|line| {
            let code = line
                .split_once(" # ")
                .and_then(|(_, comment)| exit.captures(comment))
                .map_or(0, |c| c[1].parse().unwrap());
            (line.to_owned(), code)
        })
        .collect()
}

#[test]
fn every_quickstart_line_runs_as_written_in_an_empty_folder() {
    let dir = tempfile::tempdir().unwrap();
    let bin = Path::new(env!("CARGO_BIN_EXE_gavel")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let lines = quickstart();
    assert!(lines.len() >= 10, "{lines:?}");
    // The block's `cd` moves the rest of it: each later line runs there.
    let mut cwd = dir.path().to_path_buf();
    for (line, expected) in lines {
        let output = std::process::Command::new("bash")
            .arg("-c")
            .arg(&line)
            .current_dir(&cwd)
            .env("PATH", &path)
            .env_remove("GAVEL_POLICY")
            .env_remove("GAVEL_DB")
            .env_remove("GAVEL_CHECKPOINT_EVERY")
            .env("XDG_DATA_HOME", dir.path().join("data"))
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("{line}: {e}"));
        let code = output.status.code().unwrap_or(-1);
        assert_eq!(
            code,
            expected,
            "`{line}` exited {code}:\n{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        if let Some(rest) = line.split("&& cd ").nth(1) {
            let folder = rest.split_whitespace().next().unwrap();
            cwd = cwd.join(folder);
        }
    }
    assert!(
        cwd.join(".gavel/audit.db").exists(),
        "the calls were recorded"
    );
}
