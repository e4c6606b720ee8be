//! A report as people read it: each proposal with its proof and the
//! alternatives not chosen, what was not proposed and why, the replay,
//! the held-out numbers, then the policy file's unified diff. Pure: a
//! report in, text out, the same text for the same report.

use std::fmt::Write;

use super::Report;

/// How many shapes of approved calls not proposed the text lists, most
/// calls first.
const SHOWN_NOT_PROPOSED: usize = 20;

/// How many call ids a proposal lists before "and N more".
const SHOWN_CALLS: usize = 5;

/// The report as text, ending with the policy file's diff.
pub fn text(report: &Report) -> String {
    let mut out = String::new();
    let p = &report.policy;
    let r = &report.record;
    let _ = writeln!(
        out,
        "# gavel policy suggest: `{}` (policy `{}`, sha256 {})",
        p.origin,
        p.name,
        short(&p.before)
    );
    let labels: Vec<String> = r
        .labels
        .iter()
        .map(|(label, n)| format!("{n} {label}"))
        .collect();
    let _ = writeln!(
        out,
        "# record: {} calls, {} selected in {} session{}{}{}",
        r.calls,
        r.selected,
        r.sessions,
        if r.sessions == 1 { "" } else { "s" },
        match (&r.first, &r.last) {
            (Some(first), Some(last)) => format!(", {first} .. {last}"),
            _ => String::new(),
        },
        if labels.is_empty() {
            String::new()
        } else {
            format!("; {}", labels.join(", "))
        }
    );
    let _ = writeln!(
        out,
        "# {} proposal{}, {} removal{} (--min-support {}); digest {}",
        report.proposals.len(),
        if report.proposals.len() == 1 { "" } else { "s" },
        report.removals.len(),
        if report.removals.len() == 1 { "" } else { "s" },
        report.min_support,
        short(&report.digest)
    );
    for proposal in &report.proposals {
        let proof = &proposal.proof;
        let _ = writeln!(out, "#");
        let _ = writeln!(
            out,
            "# [{}] allow {} `{}`{} ({} rung), rule `{}` before `{}`",
            proposal.index,
            proposal.tool,
            proposal.shape,
            proposal
                .rule
                .sandbox
                .as_ref()
                .map_or(String::new(), |s| format!(" in sandbox `{s}`")),
            proposal.rung.as_str(),
            proposal.id,
            proposal.before
        );
        let _ = writeln!(
            out,
            "#     proof: {} approved call{} ({} variant{}) in {} session{}, {} .. {}",
            proof.calls,
            if proof.calls == 1 { "" } else { "s" },
            proof.variants,
            if proof.variants == 1 { "" } else { "s" },
            proof.sessions.len(),
            if proof.sessions.len() == 1 { "" } else { "s" },
            proof.first_seen,
            proof.last_seen
        );
        let mut calls: Vec<String> = proof
            .call_ids
            .iter()
            .take(SHOWN_CALLS)
            .map(|c| format!("`{c}`"))
            .collect();
        if proof.call_ids.len() > SHOWN_CALLS {
            calls.push(format!("and {} more", proof.call_ids.len() - SHOWN_CALLS));
        }
        let _ = writeln!(out, "#            calls {}", calls.join(", "));
        let _ = writeln!(
            out,
            "#            checked against {} call{} it must not allow: {} covered; \
             loosens {} unapproved, loses {} denies; policy {} -> {}",
            proof.checked,
            if proof.checked == 1 { "" } else { "s" },
            proof.covered.len(),
            proof.loosened_unapproved,
            proof.denies_lost,
            short(&proof.policy_before),
            short(&proof.policy_after)
        );
        if let Some(held) = proposal.held_out_calls {
            let _ = writeln!(out, "#            held-out calls it allows: {held}");
        }
        for (i, alternative) in proposal.alternatives.iter().enumerate() {
            let _ = writeln!(
                out,
                "#     {} {} `{}` ({}): {}",
                if i == 0 { "not chosen:" } else { "           " },
                alternative.relation,
                alternative.shape,
                alternative.rung.as_str(),
                alternative.why
            );
        }
    }
    for removal in &report.removals {
        let _ = writeln!(out, "#");
        let what = if removal.kind == "rule" {
            format!("remove allow rule `{}`", removal.id)
        } else {
            format!("revoke grant `{}`", removal.id)
        };
        let _ = writeln!(
            out,
            "# [{}] {what}: decided no call in the window ({} selected call{} all told{}); \
             {} recorded call{} get{} stricter",
            removal.index,
            removal.uses,
            if removal.uses == 1 { "" } else { "s" },
            removal
                .last_used
                .as_ref()
                .map_or(String::new(), |t| format!(", last {t}")),
            removal.stricter,
            if removal.stricter == 1 { "" } else { "s" },
            if removal.stricter == 1 { "s" } else { "" },
        );
    }
    if !report.not_proposed.is_empty() {
        let _ = writeln!(out, "#");
        let _ = writeln!(
            out,
            "# approved calls the policy asks about that no proposal covers:"
        );
        for n in report.not_proposed.iter().take(SHOWN_NOT_PROPOSED) {
            let _ = writeln!(
                out,
                "#   {} `{}` ({} call{}): {}",
                n.tool,
                n.shape,
                n.calls,
                if n.calls == 1 { "" } else { "s" },
                n.why
            );
        }
    }
    if report.not_proposed.len() > SHOWN_NOT_PROPOSED {
        let _ = writeln!(
            out,
            "#   and {} more shapes (--format json lists them)",
            report.not_proposed.len() - SHOWN_NOT_PROPOSED
        );
    }
    let replay = &report.replay;
    let _ = writeln!(out, "#");
    let _ = writeln!(
        out,
        "# replay of the whole record under all of it: {} calls, {} unchanged, {} loosened \
         ({} not approved), {} tightened, {} rerouted; {} denies lost",
        replay.total,
        replay.unchanged,
        replay.loosened,
        replay.loosened_unapproved,
        replay.tightened,
        replay.rerouted,
        replay.denies_lost
    );
    if let Some(h) = &report.holdout {
        let _ = writeln!(
            out,
            "# holdout {}: learned from {} calls, measured on {}: {} of {} prompts avoided \
             on held-out approved calls; {} of {} held-out negatives allowed, {} unanswered \
             allowed; {} rule{} added for {} distinct approved; {} rule{} unused on the held-out part",
            h.fraction,
            h.train_calls,
            h.held_out_calls,
            h.prompts_avoided,
            h.held_out_approved,
            h.negatives_allowed,
            h.held_out_negatives,
            h.unanswered_allowed,
            h.rules_added,
            if h.rules_added == 1 { "" } else { "s" },
            h.distinct_approved,
            h.rules_unused,
            if h.rules_unused == 1 { "" } else { "s" },
        );
    }
    if report.proposals.is_empty() && report.removals.iter().all(|r| r.kind != "rule") {
        let _ = writeln!(out, "# nothing to change in `{}`", p.origin);
        return out;
    }
    out.push_str(&diff(
        &report.before_text,
        &report.after_text,
        &p.origin,
        &format!("{} (proposed)", p.origin),
    ));
    out
}

fn short(digest: &str) -> &str {
    digest.get(..12).unwrap_or(digest)
}

/// One edit of a line diff.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Keep,
    Remove,
    Add,
}

/// The edits from `a` to `b`, shortest first (Myers).
fn edits(a: &[&str], b: &[&str]) -> Vec<Op> {
    let (n, m) = (a.len() as isize, b.len() as isize);
    let max = (n + m) as usize;
    let offset = max as isize;
    let mut v = vec![0isize; 2 * max + 2];
    let mut trace: Vec<Vec<isize>> = Vec::new();
    'outer: for d in 0..=max as isize {
        trace.push(v.clone());
        let mut k = -d;
        while k <= d {
            let at = (k + offset) as usize;
            let mut x = if k == -d || (k != d && v[at - 1] < v[at + 1]) {
                v[at + 1]
            } else {
                v[at - 1] + 1
            };
            let mut y = x - k;
            while x < n && y < m && a[x as usize] == b[y as usize] {
                x += 1;
                y += 1;
            }
            v[at] = x;
            if x >= n && y >= m {
                break 'outer;
            }
            k += 2;
        }
    }
    // Back through the trace, from the end.
    let mut ops = Vec::new();
    let (mut x, mut y) = (n, m);
    for (d, v) in trace.iter().enumerate().rev() {
        let d = d as isize;
        let k = x - y;
        let at = |k: isize| (k + offset) as usize;
        let previous = if k == -d || (k != d && v[at(k - 1)] < v[at(k + 1)]) {
            k + 1
        } else {
            k - 1
        };
        let px = v[at(previous)];
        let py = px - previous;
        while x > px && y > py {
            ops.push(Op::Keep);
            x -= 1;
            y -= 1;
        }
        if d > 0 {
            if x == px {
                ops.push(Op::Add);
            } else {
                ops.push(Op::Remove);
            }
        }
        x = px;
        y = py;
    }
    while x > 0 && y > 0 {
        ops.push(Op::Keep);
        x -= 1;
        y -= 1;
    }
    ops.reverse();
    ops
}

/// Moves each run of added (or removed) lines up while the line kept just
/// above it equals the run's last line and is not blank: a new `[[rules]]`
/// table then reads as one block with its header, not as lines around the
/// next table's.
fn slide(ops: &mut [Op], a: &[&str], b: &[&str]) {
    loop {
        let mut moved = false;
        let (mut i, mut j) = (0usize, 0usize);
        let mut at = 0;
        while at < ops.len() {
            let op = ops[at];
            if op == Op::Keep {
                i += 1;
                j += 1;
                at += 1;
                continue;
            }
            let start = at;
            while at < ops.len() && ops[at] == op {
                at += 1;
            }
            let (lines, first) = if op == Op::Add { (b, j) } else { (a, i) };
            let len = at - start;
            if start > 0
                && ops[start - 1] == Op::Keep
                && first > 0
                && !lines[first - 1].trim().is_empty()
                && lines[first - 1] == lines[first + len - 1]
            {
                ops[start - 1] = op;
                ops[at - 1] = Op::Keep;
                moved = true;
                break;
            }
            if op == Op::Add {
                j += len;
            } else {
                i += len;
            }
        }
        if !moved {
            return;
        }
    }
}

/// A unified diff of `before` and `after` (3 lines of context).
pub fn diff(before: &str, after: &str, from: &str, to: &str) -> String {
    let a: Vec<&str> = before.lines().collect();
    let b: Vec<&str> = after.lines().collect();
    let mut ops = edits(&a, &b);
    slide(&mut ops, &a, &b);
    let mut out = format!("--- {from}\n+++ {to}\n");
    // Each op with the line numbers it sits at.
    let mut rows = Vec::with_capacity(ops.len());
    let (mut i, mut j) = (0usize, 0usize);
    for op in &ops {
        rows.push((*op, i, j));
        match op {
            Op::Keep => {
                i += 1;
                j += 1;
            }
            Op::Remove => i += 1,
            Op::Add => j += 1,
        }
    }
    let changed: Vec<usize> = rows
        .iter()
        .enumerate()
        .filter(|(_, (op, _, _))| *op != Op::Keep)
        .map(|(at, _)| at)
        .collect();
    let mut at = 0;
    while at < changed.len() {
        let start = changed[at].saturating_sub(3);
        let mut end = changed[at];
        while at < changed.len() && changed[at] <= end + 6 {
            end = changed[at];
            at += 1;
        }
        let end = (end + 3).min(rows.len() - 1);
        let hunk = &rows[start..=end];
        let (old_start, new_start) = (hunk[0].1, hunk[0].2);
        let old_len = hunk.iter().filter(|(op, _, _)| *op != Op::Add).count();
        let new_len = hunk.iter().filter(|(op, _, _)| *op != Op::Remove).count();
        let _ = writeln!(
            out,
            "@@ -{},{} +{},{} @@",
            old_start + usize::from(old_len > 0),
            old_len,
            new_start + usize::from(new_len > 0),
            new_len
        );
        for (op, i, j) in hunk {
            match op {
                Op::Keep => {
                    let _ = writeln!(out, " {}", a[*i]);
                }
                Op::Remove => {
                    let _ = writeln!(out, "-{}", a[*i]);
                }
                Op::Add => {
                    let _ = writeln!(out, "+{}", b[*j]);
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_inserted_table_reads_as_one_block() {
        let before = "x\n\n[[rules]]\nid = 1\n";
        let after = "x\n\n# new\n[[rules]]\nid = 0\n\n[[rules]]\nid = 1\n";
        let out = diff(before, after, "p", "q");
        assert!(
            out.contains("+# new\n+[[rules]]\n+id = 0\n+\n [[rules]]\n id = 1\n"),
            "{out}"
        );
    }

    #[test]
    fn the_diff_shows_insertions_and_removals_with_context() {
        let before = "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n";
        let after = "a\nb\nc\nd\nX\nY\ne\nf\ng\nh\nj\n";
        let out = diff(before, after, "p", "p (proposed)");
        assert_eq!(
            out,
            "--- p\n+++ p (proposed)\n@@ -2,9 +2,10 @@\n b\n c\n d\n+X\n+Y\n e\n f\n g\n h\n-i\n j\n"
        );
        assert_eq!(diff("x\n", "x\n", "p", "q"), "--- p\n+++ q\n");
        let out = diff("", "a\n", "p", "q");
        assert_eq!(out, "--- p\n+++ q\n@@ -0,0 +1,1 @@\n+a\n");
    }
}
