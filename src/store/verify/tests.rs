use super::*;
use crate::audit::{Event, EventBody, LifecycleRecord};
use crate::store::Durability;

/// A file store with `n` lifecycle events, appended in batches.
fn store_with(n: usize) -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("a.db"), Durability::Normal).unwrap();
    let events: Vec<Event> = (0..n)
        .map(|i| {
            Event::now(
                &format!("s{}", i % 7),
                None,
                EventBody::Lifecycle(LifecycleRecord {
                    event: "Stop".into(),
                    data: serde_json::json!({ "i": i }),
                }),
            )
        })
        .collect();
    for batch in events.chunks(10_000) {
        store.append(batch).unwrap();
    }
    (dir, store)
}

#[test]
#[ignore = "slow: a plain `cargo test` leaves it out; `cargo test -- --ignored` (and CI) runs it"]
fn parallel_verify_finds_the_first_bad_row_in_a_long_log() {
    let (dir, store) = store_with(70_000);
    let report = store
        .verify(&VerifyOptions::default(), &mut |_| {})
        .unwrap();
    assert!(report.ok, "{report:?}");
    assert_eq!(report.rows, 70_000);

    let raw = rusqlite::Connection::open(dir.path().join("a.db")).unwrap();
    raw.execute_batch(
        "DROP TRIGGER events_no_update; DROP TRIGGER events_no_delete;
             UPDATE events SET ts_us = ts_us + 1 WHERE seq = 66666;
             UPDATE events SET ts_us = ts_us + 1 WHERE seq = 55555;",
    )
    .unwrap();
    // Read and hashed in parallel chunks: the first bad row still wins.
    let report = store
        .verify(&VerifyOptions::default(), &mut |_| {})
        .unwrap();
    assert_eq!(report.problem, Some(Problem::ContentMismatch));
    assert_eq!(report.first_bad_seq, Some(55_555));
    assert_eq!(report.rows, 55_554);
    // With a gap, rows are read in key order on one connection.
    raw.execute_batch("DELETE FROM events WHERE seq = 30000;")
        .unwrap();
    let report = store
        .verify(&VerifyOptions::default(), &mut |_| {})
        .unwrap();
    assert_eq!(report.problem, Some(Problem::SeqGap));
    assert_eq!(report.first_bad_seq, Some(30_000));
}

#[test]
fn check_recent_reads_the_newest_rows_and_those_after_the_checkpoint() {
    let n = RECENT_ROWS as usize + 2_000;
    let (dir, store) = store_with(n);
    assert!(store.check_recent().unwrap().ok);
    let raw = rusqlite::Connection::open(dir.path().join("a.db")).unwrap();
    raw.execute_batch(
        "DROP TRIGGER events_no_update; UPDATE events SET ts_us = ts_us + 1 WHERE seq = 5;",
    )
    .unwrap();
    // Older than the newest RECENT_ROWS, no checkpoint: left to `verify`.
    let report = store.check_recent().unwrap();
    assert!(report.ok, "{report:?}");
    assert_eq!(report.rows, n as u64);
    assert!(
        !store
            .verify(&VerifyOptions::default(), &mut |_| {})
            .unwrap()
            .ok
    );
    // Among the newest rows: found, by seq.
    raw.execute_batch("UPDATE events SET ts_us = ts_us + 1 WHERE seq = 11000;")
        .unwrap();
    let report = store.check_recent().unwrap();
    assert_eq!(report.problem, Some(Problem::ContentMismatch));
    assert_eq!(report.first_bad_seq, Some(11_000));
    // A checkpoint at 3: every row after it is read, however many.
    raw.execute_batch("UPDATE events SET ts_us = ts_us - 1 WHERE seq IN (5, 11000);")
        .unwrap();
    let key = crate::checkpoint::SigningKey::generate("t").unwrap();
    let mut small = Store::open(&dir.path().join("b.db"), Durability::Normal).unwrap();
    let events: Vec<Event> = (0..3)
        .map(|i| {
            Event::now(
                "s",
                None,
                EventBody::Lifecycle(LifecycleRecord {
                    event: "Stop".into(),
                    data: serde_json::json!({ "i": i }),
                }),
            )
        })
        .collect();
    small.append(&events).unwrap();
    small.checkpoint(&key).unwrap().unwrap();
    let more: Vec<Event> = (0..n).map(|_| events[0].clone()).collect();
    small.append(&more).unwrap();
    let raw_small = rusqlite::Connection::open(dir.path().join("b.db")).unwrap();
    raw_small
        .execute_batch(
            "DROP TRIGGER events_no_update; UPDATE events SET ts_us = ts_us + 1 WHERE seq = 5;",
        )
        .unwrap();
    let report = small.check_recent().unwrap();
    assert_eq!(report.first_bad_seq, Some(5), "{report:?}");
}

#[test]
fn a_row_with_a_huge_seq_is_a_gap_not_a_hang() {
    let (dir, store) = store_with(9);
    let raw = rusqlite::Connection::open(dir.path().join("a.db")).unwrap();
    raw.execute_batch(
        "INSERT INTO events (seq, log_id, ts_us, kind, call_id, tool, action, rule_id,
                                 approval, status, payload, leaf, chain)
             SELECT 4611686018427387904, log_id, ts_us, kind, call_id, tool, action, rule_id,
                    approval, status, payload, leaf, chain FROM events WHERE seq = 9;",
    )
    .unwrap();
    let report = store
        .verify(&VerifyOptions::default(), &mut |_| {})
        .unwrap();
    assert_eq!(report.problem, Some(Problem::SeqGap));
    assert_eq!(report.first_bad_seq, Some(10));
}

#[test]
#[ignore = "slow: a plain `cargo test` leaves it out; `cargo test -- --ignored` (and CI) runs it"]
fn parallel_merkle_root_equals_the_reference() {
    let (_dir, store) = store_with(52_000);
    let options = VerifyOptions {
        root: true,
        ..VerifyOptions::default()
    };
    let report = store.verify(&options, &mut |_| {}).unwrap();
    let mut leaves = Vec::new();
    store
        .for_each_event(|e| {
            leaves.push(<Hash>::try_from(e.leaf.as_slice()).unwrap());
            Ok::<_, StoreError>(())
        })
        .unwrap();
    assert_eq!(report.root, Some(crate::checkpoint::merkle_root(&leaves)));
}

#[test]
fn incremental_checkpoints_equal_a_full_one_whoever_appended_the_rows() {
    let (dir, mut store) = store_with(5);
    let key = crate::checkpoint::SigningKey::generate("t").unwrap();
    let root = |store: &Store| {
        let options = VerifyOptions {
            root: true,
            ..VerifyOptions::default()
        };
        store.verify(&options, &mut |_| {}).unwrap().root.unwrap()
    };
    let event = |i: usize| {
        Event::now(
            "x",
            None,
            EventBody::Lifecycle(LifecycleRecord {
                event: "Stop".into(),
                data: serde_json::json!({ "i": i }),
            }),
        )
    };
    // The first checkpoint of a log this store wrote whole: from its leaves.
    let (first, _) = store
        .checkpoint_since_last(&key, 1)
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!((first.size, first.root), (5, root(&store)));
    // Rows this store appended: signed from the leaves it kept.
    store.append(&[event(1), event(2)]).unwrap();
    store.append(&[event(3)]).unwrap();
    let (second, _) = store
        .checkpoint_since_last(&key, 1)
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!((second.size, second.root), (8, root(&store)));
    assert!(store.checkpoint_since_last(&key, 1).unwrap().is_none());
    // Rows another writer appended in between: read back and checked.
    let mut other = Store::open(&dir.path().join("a.db"), Durability::Normal).unwrap();
    store.append(&[event(4)]).unwrap();
    other.append(&[event(5)]).unwrap();
    store.append(&[event(6)]).unwrap();
    let (third, _) = store
        .checkpoint_since_last(&key, 1)
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!((third.size, third.root), (11, root(&store)));
    // And a forged row among them is found, not signed.
    other.append(&[event(7)]).unwrap();
    store.append(&[event(8)]).unwrap();
    let raw = rusqlite::Connection::open(dir.path().join("a.db")).unwrap();
    raw.execute_batch(
        "DROP TRIGGER events_no_update; UPDATE events SET ts_us = ts_us + 1 WHERE seq = 12;",
    )
    .unwrap();
    let refused = store.checkpoint_since_last(&key, 1).unwrap().unwrap();
    assert_eq!(refused.unwrap_err().first_bad_seq, Some(12));
}

/// The first checkpoint of a log that another writer also wrote reads the
/// whole log back, so a row forged before it is found, not signed.
#[test]
fn a_first_checkpoint_over_rows_of_another_writer_checks_them_all() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.db");
    let mut other = Store::open(&path, Durability::Normal).unwrap();
    let mut store = Store::open(&path, Durability::Normal).unwrap();
    let stop = |i: i32| {
        Event::now(
            "x",
            None,
            EventBody::Lifecycle(LifecycleRecord {
                event: "Stop".into(),
                data: serde_json::json!({ "i": i }),
            }),
        )
    };
    other.append(&[stop(1)]).unwrap();
    store.append(&[stop(2), stop(3)]).unwrap();
    let raw = rusqlite::Connection::open(&path).unwrap();
    raw.execute_batch(
        "DROP TRIGGER events_no_update; UPDATE events SET ts_us = ts_us + 1 WHERE seq = 1;",
    )
    .unwrap();
    let key = crate::checkpoint::SigningKey::generate("t").unwrap();
    let refused = store.checkpoint_since_last(&key, 1).unwrap().unwrap();
    assert_eq!(refused.unwrap_err().first_bad_seq, Some(1));
}
