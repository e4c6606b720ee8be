//! The redaction pass over a stored payload, by size: a payload of 1 KiB to
//! 1 MiB of shell-like text with a secret every 4 KiB, and the same size
//! with no secret (the common case). Linear means the time per byte stays
//! flat as the size grows; `docs/performance.md` reports it.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use gavel::redact::Redactor;
use serde_json::json;

/// A result payload of about `bytes` bytes of log-like lines; with
/// `secrets`, every 4 KiB carries an assignment of a token.
fn payload(bytes: usize, secrets: bool) -> Vec<u8> {
    let mut content = String::with_capacity(bytes + 128);
    let mut n = 0usize;
    while content.len() < bytes {
        n += 1;
        if secrets && n.is_multiple_of(64) {
            content.push_str(&format!(
                "export GITHUB_TOKEN=ghp_{:036}\n",
                n * 7919 % 1_000_000_007
            ));
        } else {
            content.push_str(&format!(
                "drwxr-xr-x 2 dev dev 4096 Dec  3 09:{:02} src/module_{n}/file.rs\n",
                n % 60
            ));
        }
    }
    json!({"status": "succeeded", "content": content, "exit_code": 0, "duration_ms": 3})
        .to_string()
        .into_bytes()
}

fn redact(c: &mut Criterion) {
    let redactor = Redactor::new([7u8; 32]);
    let mut group = c.benchmark_group("redact");
    for (name, secrets) in [("no_secret", false), ("secret_every_4KiB", true)] {
        for size in [1 << 10, 10 << 10, 100 << 10, 1 << 20] {
            let input = payload(size, secrets);
            group.throughput(Throughput::Bytes(input.len() as u64));
            group.bench_with_input(BenchmarkId::new(name, size), &input, |b, input| {
                b.iter(|| redactor.redact_payload(black_box(input.clone())))
            });
        }
    }
    group.finish();
}

criterion_group!(benches, redact);
criterion_main!(benches);
