//! How `gavel-exec`, the launcher of contained commands, is linked by a
//! plain `cargo build` or `cargo install`: at a fixed address (no
//! position-independent executable, so the dynamic loader has none of its
//! eleven thousand relative relocations to apply, nor their pages to copy)
//! and with its C library functions bound when first called, not all at
//! start. Measured on `cat a.txt` under `read-only`, this takes about
//! 0.2 ms off every contained command (docs/performance.md, "a fifth
//! pass"). Releases go further: `scripts/build-exec` links it static, which
//! Cargo cannot do for one binary of a package.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-link-arg-bin=gavel-exec=-no-pie");
        println!("cargo:rustc-link-arg-bin=gavel-exec=-Wl,-z,lazy");
    }
}
