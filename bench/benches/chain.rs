//! Chain hashing per event: the leaf hash of a stored event and its link to
//! the one before, for a typical decision event and a result carrying a
//! 4 KiB file. This is the per-row hashing cost inside append and verify.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use gavel::chain::{EventFields, Who, link};
use serde_json::json;

/// A stored event of `kind` carrying `payload`.
fn event<'a>(log_id: &'a [u8], kind: &'a str, payload: &'a str) -> EventFields<'a> {
    EventFields {
        seq: 123_456,
        log_id,
        ts_us: 1_764_676_800_000_000,
        kind,
        call_id: "toolu_123456",
        tool: Some("read_file"),
        action: Some("allow"),
        rule_id: Some("path.read_allow"),
        approval: None,
        status: None,
        payload: payload.as_bytes(),
        format: 2,
        who: Who {
            user: Some("alice"),
            host: Some("build-01"),
            client: Some("claude-code"),
            session: Some("0b1f9c52-6a0e-4d7e-9a43-2f3c1b7d8e90"),
            agent: None,
        },
    }
}

fn chain(c: &mut Criterion) {
    let log_id = [7u8; 16];
    let decision = json!({
        "action": "allow", "rule_id": "path.read_allow",
        "reason": "read_file only reads inside the workspace",
        "policy": {"name": "gavel-default", "digest": "0".repeat(64)},
        "facts": {"workspace": "/tmp/bench/ws", "paths": [{
            "requested": "src/main.rs", "resolved": "/tmp/bench/ws/src/main.rs",
            "inside": true, "relative": "src/main.rs"}]},
    })
    .to_string();
    let result =
        json!({"status": "succeeded", "content": "x".repeat(4096), "duration_ms": 0}).to_string();
    let previous = [1u8; 32];

    let mut group = c.benchmark_group("chain");
    group.throughput(Throughput::Elements(1));
    for (name, fields) in [
        ("decision_event", event(&log_id, "decision", &decision)),
        ("result_4KiB_event", event(&log_id, "result", &result)),
    ] {
        group.bench_function(name, |b| {
            b.iter(|| link(black_box(&previous), &black_box(&fields).leaf_hash()))
        });
    }
    group.finish();
}

criterion_group!(benches, chain);
criterion_main!(benches);
