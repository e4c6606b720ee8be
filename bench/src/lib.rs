//! gavel's benchmark harness: what the baseline binaries and the data
//! generators share. Nothing here is used by gavel itself.
//!
//! - [`mix`]: a deterministic, realistic mix of tool calls (allowed reads,
//!   denied escapes, asks, hard denies, unknown tools, invalid arguments)
//!   and the workspace they run against.
//! - [`rows`]: the baselines' own rows: the same columns and indexes as
//!   gavel's `events` table, hashed with SHA-256 over length-prefixed fields
//!   and chained, written directly with rusqlite.
//!
//! See `docs/performance.md` for what each figure compares.

pub mod mix;
pub mod rows;

/// A small deterministic PRNG (SplitMix64): the same seed gives the same data
/// on every machine, without a dependency.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// Reads `--name VALUE` from `args`.
pub fn flag(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

/// Reads `--name VALUE` or exits with a usage message.
pub fn required(args: &[String], name: &str, usage: &str) -> String {
    flag(args, name).unwrap_or_else(|| {
        eprintln!("missing {name}\nusage: {usage}");
        std::process::exit(2)
    })
}
