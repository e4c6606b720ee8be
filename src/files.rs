//! Replacing a file whole: a temporary file beside it, synced, with the
//! original's permissions, then renamed over it, so that a reader sees the
//! old text or the new one and never a part.

use std::io::Write;
use std::path::{Path, PathBuf};

/// Replaces `path` with `text` in one rename.
pub fn write_atomically(path: &Path, text: &str) -> std::io::Result<()> {
    let temp = write_beside(path, text)?;
    std::fs::rename(&temp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&temp);
    })
}

/// Writes `text` to a temporary file beside `path` (synced, with the
/// original's permissions when there is one) and returns its path, for a
/// caller that renames it over `path` when it is ready.
pub fn write_beside(path: &Path, text: &str) -> std::io::Result<PathBuf> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temp = dir.join(format!(".{name}.gavel-{}.tmp", std::process::id()));
    let write = || -> std::io::Result<()> {
        let mut file = std::fs::File::create(&temp)?;
        file.write_all(text.as_bytes())?;
        if let Ok(meta) = std::fs::metadata(path) {
            file.set_permissions(meta.permissions())?;
        }
        file.sync_all()
    };
    write().inspect_err(|_| {
        let _ = std::fs::remove_file(&temp);
    })?;
    Ok(temp)
}
