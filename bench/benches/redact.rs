//! The redaction pass over a stored payload, by size (1 KiB, 64 KiB,
//! 1 MiB), timed now and before the trigger automaton in the same run:
//! `before` is `src/redact.rs` as it was at `fdbca26`, copied into
//! `benches/redact/old.rs`. Three payloads of log-like lines: with no
//! secret and no trigger (the common case: returned without being parsed),
//! with words that trigger detectors but no secret (parsed, the triggered
//! detectors run, nothing replaced), and with a token assignment every
//! 4 KiB; and the three payloads of a `read_file` call with no secret, as
//! one batch. `docs/performance.md` reports the ratios.
//!
//! ```sh
//! cargo bench -p gavel-bench --bench redact                 # full criterion runs
//! cargo bench -p gavel-bench --bench redact -- --quick      # a quick look
//! cargo bench -p gavel-bench --bench redact -- no_secret    # one payload
//! ```
//!
//! Each group is `redact_<payload>/<before|now>/<bytes>`; the medians are in
//! `target/criterion/redact_<payload>/<before|now>/<bytes>/new/estimates.json`.

use std::hint::black_box;

use criterion::{BatchSize, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use serde_json::json;

#[path = "redact/old.rs"]
mod old;

/// What a payload's lines hold.
#[derive(Clone, Copy)]
enum Lines {
    /// A directory listing: no trigger, no secret.
    Plain,
    /// Words holding triggers (`key`, `pass`, `token`, `auth`, `-u`, `://`)
    /// but no secret.
    TriggerWords,
    /// A directory listing with a token assignment every 4 KiB, from the
    /// first line on.
    SecretEvery4KiB,
}

/// A result payload of about `bytes` bytes of `lines`.
fn payload(bytes: usize, lines: Lines) -> Vec<u8> {
    let mut content = String::with_capacity(bytes + 128);
    let mut n = 0usize;
    while content.len() < bytes {
        n += 1;
        match lines {
            Lines::SecretEvery4KiB if (n - 1).is_multiple_of(64) => content.push_str(&format!(
                "export GITHUB_TOKEN=ghp_{:036}\n",
                n * 7919 % 1_000_000_007
            )),
            Lines::TriggerWords if n.is_multiple_of(2) => content.push_str(&format!(
                "INFO the monkey passed its token bucket check, author dev -u {n} see https://example.com/{n}\n"
            )),
            _ => content.push_str(&format!(
                "drwxr-xr-x 2 dev dev 4096 Dec  3 09:{:02} src/module_{n}/file.rs\n",
                n % 60
            )),
        }
    }
    json!({"status": "succeeded", "content": content, "exit_code": 0, "duration_ms": 3})
        .to_string()
        .into_bytes()
}

fn redact(c: &mut Criterion) {
    let now = gavel::redact::Redactor::new([7u8; 32]);
    let before = old::Redactor::new([7u8; 32]);
    for (name, lines) in [
        ("no_secret", Lines::Plain),
        ("trigger_words", Lines::TriggerWords),
        ("secret_every_4KiB", Lines::SecretEvery4KiB),
    ] {
        let mut group = c.benchmark_group(format!("redact_{name}"));
        for size in [1 << 10, 64 << 10, 1 << 20] {
            let input = payload(size, lines);
            // The two passes store the same bytes. The payload handed in
            // is copied outside the timed part: `redact_payload` owns it.
            assert_eq!(
                now.redact_payload(input.clone()),
                before.redact_payload(input.clone()),
                "{name} {size}"
            );
            group.throughput(Throughput::Bytes(input.len() as u64));
            group.bench_with_input(BenchmarkId::new("before", size), &input, |b, input| {
                b.iter_batched(
                    || input.clone(),
                    |input| before.redact_payload(black_box(input)),
                    BatchSize::LargeInput,
                )
            });
            group.bench_with_input(BenchmarkId::new("now", size), &input, |b, input| {
                b.iter_batched(
                    || input.clone(),
                    |input| now.redact_payload(black_box(input)),
                    BatchSize::LargeInput,
                )
            });
        }
        group.finish();
    }
}

/// The three payloads one `read_file` call stores (request, decision,
/// result with `content_bytes` of file), as `gavel run` and `serve` hand them
/// to the redactor: one batch.
fn read_file_call(content_bytes: usize) -> Vec<Option<Vec<u8>>> {
    let digest = "a8b815fd2552e33f75bc117b564ae8c4ade302b05c4b29cf6f7d806dad6e1b7f";
    let request = json!({"tool_use_id": "toolu_01", "arguments": {"path": "src/module_7/file.rs"},
        "principal": {"user": "dev", "uid": 1000, "host": "vm", "host_id": "b21c5c0cbc757d957d26af7fd5b000da",
            "gavel": "0.1.0", "client": "cli", "policy": {"layer": "builtin", "digest": digest}}});
    let decision = json!({"action": "allow", "rule_id": "path.read_allow",
        "reason": "read_file only reads inside the workspace",
        "policy": {"name": "gavel-default", "digest": digest},
        "facts": {"workspace": "/home/dev/project", "paths": [{"requested": "src/module_7/file.rs",
            "resolved": "/home/dev/project/src/module_7/file.rs", "inside": true,
            "relative": "src/module_7/file.rs", "access": "read"}]}});
    let result = payload(content_bytes, Lines::Plain);
    vec![
        Some(request.to_string().into_bytes()),
        Some(decision.to_string().into_bytes()),
        Some(result),
    ]
}

/// A whole `read_file` call with no secret: where `gavel serve` spent its
/// redaction time (issue 25).
fn redact_call(c: &mut Criterion) {
    let now = gavel::redact::Redactor::new([7u8; 32]);
    let before = old::Redactor::new([7u8; 32]);
    let mut group = c.benchmark_group("redact_read_file_call");
    for size in [1 << 10, 64 << 10] {
        let batch = read_file_call(size);
        assert_eq!(
            now.redact_batch(batch.clone(), &mut Vec::new()),
            before.redact_batch(batch.clone(), &mut Vec::new())
        );
        group.bench_with_input(BenchmarkId::new("before", size), &batch, |b, batch| {
            b.iter_batched(
                || batch.clone(),
                |batch| before.redact_batch(black_box(batch), &mut Vec::new()),
                BatchSize::SmallInput,
            )
        });
        group.bench_with_input(BenchmarkId::new("now", size), &batch, |b, batch| {
            b.iter_batched(
                || batch.clone(),
                |batch| now.redact_batch(black_box(batch), &mut Vec::new()),
                BatchSize::SmallInput,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, redact, redact_call);
criterion_main!(benches);
