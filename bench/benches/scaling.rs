//! How a decision's cost grows with the size of the request: facts
//! (the shell parse, path resolution) plus `decide` under the built-in
//! policy, for inputs of 1 KiB to 1 MiB in shapes that once made the
//! analysis quadratic or that an attacker would send (long lists,
//! pipelines and and-or chains, many redirections, assignments or
//! heredocs). `scripts/shell_sizes.py` times the same and more shapes end
//! to end through `gavel hook claude-code`. Criterion reports throughput (bytes per second);
//! linear time means the same throughput at every size, so
//! `scripts/bench.sh` reports each size's time per byte as a ratio to the
//! 1 KiB time per byte of the same shape, measured in the same run.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use gavel::policy::Policy;
use gavel::{ToolRequest, Workspace};
use serde_json::json;

/// Input sizes, in bytes.
const SIZES: [usize; 4] = [1 << 10, 10 << 10, 100 << 10, 1 << 20];

/// A request of about `size` bytes in the shape `shape`.
fn request(shape: &str, size: usize) -> ToolRequest {
    let repeat = |unit: &str, head: &str, tail: &str| {
        let mut text = String::from(head);
        while text.len() + unit.len() + tail.len() <= size {
            text.push_str(unit);
        }
        text.push_str(tail);
        text
    };
    let (tool, field, text) = match shape {
        "words" => ("bash", "command", repeat(" word", "echo", "")),
        "pipeline" => ("bash", "command", repeat(" | grep x", "ls", "")),
        "pipeline_tight" => ("bash", "command", repeat("|ls", "ls", "")),
        "list_newline" => ("bash", "command", repeat("\nls", "ls", "")),
        "for_loops" => (
            "bash",
            "command",
            repeat("for i in a b; do ls; done; ", "", ""),
        ),
        "list" => ("bash", "command", repeat("; ls", "ls", "")),
        "and_or" => ("bash", "command", repeat(" && ls || ls", "ls", "")),
        "redirects" => ("bash", "command", repeat(" <a", "ls", "")),
        "assignments" => ("bash", "command", repeat("a=1 ", "", "ls")),
        "heredocs" => ("bash", "command", repeat("cat <<E\nx\nE\n", "", "")),
        "nested_arith" => ("bash", "command", repeat("$((", "echo ", "")),
        "substitutions" => ("bash", "command", repeat("$(", "echo ", "")),
        "backticks" => ("bash", "command", repeat(" `ls`", "echo", "")),
        "brace_expansion" => ("bash", "command", repeat("{a,b}", "echo ", "")),
        "case_list" => (
            "bash",
            "command",
            repeat("case x in a) ls;; esac; ", "", ""),
        ),
        "bash_path" => ("bash", "command", repeat("a/", "cat ", "f")),
        "read_path" => ("read_file", "path", repeat("a/", "", "f")),
        other => unreachable!("no shape `{other}`"),
    };
    ToolRequest::new("scaling", tool, json!({ field: text }))
}

fn scaling(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let workspace = Workspace::open(dir.path()).expect("the workspace opens");
    let policy = Policy::builtin();
    let shapes = [
        "words",
        "pipeline",
        "pipeline_tight",
        "list",
        "list_newline",
        "for_loops",
        "and_or",
        "redirects",
        "assignments",
        "heredocs",
        "nested_arith",
        "substitutions",
        "backticks",
        "brace_expansion",
        "case_list",
        "bash_path",
        "read_path",
    ];
    for shape in shapes {
        let mut group = c.benchmark_group(format!("scaling/{shape}"));
        group.sample_size(10);
        for size in SIZES {
            let request = request(shape, size);
            group.throughput(Throughput::Bytes(size as u64));
            group.bench_with_input(BenchmarkId::from_parameter(size), &request, |b, r| {
                b.iter(|| {
                    let facts = workspace.facts(black_box(r));
                    black_box(policy.decide(r, &facts))
                })
            });
        }
        group.finish();
    }
}

criterion_group!(benches, scaling);
criterion_main!(benches);
