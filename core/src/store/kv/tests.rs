//! What every backend must do, run against each of them: redb, and PostgreSQL on the
//! server `ops/test-engines` starts (`PGTEST_URL`; required under CI,
//! where `ops/test` starts it), each test on a schema of its own.

use super::*;

const R: Rows = Rows("t_rows");
const N: Names = Names("t_names");
const C: Counts = Counts("t_counts");
const S: Sets = Sets("t_sets");
const L: Logs = Logs("t_logs");

/// Every backend, each on a fresh store (the directory lives as long as the store).
fn backends() -> Vec<(&'static str, Kv, tempfile::TempDir)> {
    let dir = tempfile::tempdir().unwrap();
    let redb = Kv::open_redb(&dir.path().join("records.redb")).unwrap();
    let mut all = vec![("redb", redb, dir)];
    if let Some(url) = postgres_schema() {
        let settings = PostgresSettings { url, pool: 4, connect_timeout: std::time::Duration::from_secs(5), ca_pem: None };
        all.push(("postgres", Kv::open_postgres(&settings).unwrap(), tempfile::tempdir().unwrap()));
    }
    all
}

/// The URL of a new, empty schema on the test server, or `None` (said once) when
/// there is none outside CI.
pub(crate) fn postgres_schema() -> Option<String> {
    let Ok(base) = std::env::var("PGTEST_URL") else {
        assert!(std::env::var_os("CI").is_none(), "CI runs the PostgreSQL backend: start it with ops/test-engines (ops/test does)");
        eprintln!("no PGTEST_URL: the PostgreSQL backend is not tested (ops/test starts one)");
        return None;
    };
    let schema = format!("t_{:016x}", rand_u64());
    let mut client = ::postgres::Client::connect(&base, ::postgres::NoTls).expect("the test PostgreSQL answers");
    client.batch_execute(&format!("CREATE SCHEMA {schema}")).unwrap();
    let join = if base.contains('?') { '&' } else { '?' };
    Some(format!("{base}{join}options=-c%20search_path%3D{schema}"))
}

fn rand_u64() -> u64 {
    let mut b = [0u8; 8];
    getrandom::fill(&mut b).unwrap();
    u64::from_le_bytes(b)
}

#[test]
fn a_table_never_made_reads_as_empty() {
    for (name, kv, _dir) in backends() {
        let tx = kv.read().unwrap();
        assert_eq!(tx.row(R, "a").unwrap(), None, "{name}");
        assert!(tx.rows(R, Keys::All).unwrap().is_empty(), "{name}");
        assert_eq!(tx.name(N, "a").unwrap(), None, "{name}");
        assert_eq!(tx.count(C, "a").unwrap(), None, "{name}");
        assert!(tx.members(S, "a").unwrap().is_empty(), "{name}");
        assert!(tx.log(L, "a", 0).unwrap().is_empty(), "{name}");
    }
}

#[test]
fn a_write_reads_its_own_writes_and_lands_only_on_commit() {
    for (name, kv, _dir) in backends() {
        let tx = kv.write().unwrap();
        tx.put_row(R, "a", b"1").unwrap();
        tx.put_name(N, "a", "x").unwrap();
        tx.put_count(C, "a", 7).unwrap();
        tx.add_member(S, "a", "m").unwrap();
        tx.append(L, "a", [(1, "e1")]).unwrap();
        assert_eq!(tx.row(R, "a").unwrap().as_deref(), Some(&b"1"[..]), "{name}");
        assert_eq!(tx.members(S, "a").unwrap(), ["m"], "{name}");
        drop(tx);
        let read = kv.read().unwrap();
        assert_eq!(read.row(R, "a").unwrap(), None, "{name}: a dropped write leaves nothing");
        assert_eq!(read.name(N, "a").unwrap(), None, "{name}");
        drop(read);

        let tx = kv.write().unwrap();
        tx.put_row(R, "a", b"1").unwrap();
        tx.put_count(C, "a", 7).unwrap();
        tx.commit().unwrap();
        let read = kv.read().unwrap();
        assert_eq!(read.row(R, "a").unwrap().as_deref(), Some(&b"1"[..]), "{name}");
        assert_eq!(read.count(C, "a").unwrap(), Some(7), "{name}");
    }
}

#[test]
fn a_read_sees_one_state_while_a_write_commits() {
    for (name, kv, _dir) in backends() {
        let tx = kv.write().unwrap();
        tx.put_row(R, "a", b"old").unwrap();
        tx.commit().unwrap();
        let before = kv.read().unwrap();
        let tx = kv.write().unwrap();
        tx.put_row(R, "a", b"new").unwrap();
        tx.commit().unwrap();
        assert_eq!(before.row(R, "a").unwrap().as_deref(), Some(&b"old"[..]), "{name}");
        assert_eq!(kv.read().unwrap().row(R, "a").unwrap().as_deref(), Some(&b"new"[..]), "{name}");
    }
}

#[test]
fn scans_are_in_key_order_and_ranges_are_half_open() {
    for (name, kv, _dir) in backends() {
        let tx = kv.write().unwrap();
        for k in ["b/2", "a/1", "b/1", "b0", "c"] {
            tx.put_row(R, k, k.as_bytes()).unwrap();
        }
        tx.commit().unwrap();
        let keys = |rows: Vec<(String, Vec<u8>)>| rows.into_iter().map(|(k, _)| k).collect::<Vec<_>>();
        let read = kv.read().unwrap();
        assert_eq!(keys(read.rows(R, Keys::All).unwrap()), ["a/1", "b/1", "b/2", "b0", "c"], "{name}");
        assert_eq!(keys(read.rows(R, Keys::Between("b/", "b0")).unwrap()), ["b/1", "b/2"], "{name}");
        drop(read);
        let tx = kv.write().unwrap();
        tx.delete_rows(R, "b/", "b0").unwrap();
        assert!(tx.delete_row(R, "c").unwrap(), "{name}");
        assert!(!tx.delete_row(R, "c").unwrap(), "{name}: already gone");
        tx.commit().unwrap();
        assert_eq!(keys(kv.read().unwrap().rows(R, Keys::All).unwrap()), ["a/1", "b0"], "{name}");
    }
}

#[test]
fn sets_logs_names_and_counts_keep_what_was_written() {
    for (name, kv, _dir) in backends() {
        let tx = kv.write().unwrap();
        for m in ["z", "a", "m", "a"] {
            tx.add_member(S, "k", m).unwrap();
        }
        tx.add_member(S, "other", "q").unwrap();
        tx.append(L, "g1", [(1, "one"), (2, "two"), (3, "three")]).unwrap();
        tx.append(L, "g2", [(1, "else")]).unwrap();
        tx.put_name(N, "b", "2").unwrap();
        tx.put_name(N, "a", "1").unwrap();
        tx.put_count(C, "x", u64::MAX).unwrap();
        tx.commit().unwrap();
        let read = kv.read().unwrap();
        assert_eq!(read.members(S, "k").unwrap(), ["a", "m", "z"], "{name}: a set, in order");
        assert_eq!(read.log(L, "g1", 1).unwrap(), [(2, "two".to_owned()), (3, "three".to_owned())], "{name}");
        assert!(read.log(L, "g1", u64::MAX).unwrap().is_empty(), "{name}");
        assert_eq!(read.names(N).unwrap(), [("a".to_owned(), "1".to_owned()), ("b".to_owned(), "2".to_owned())], "{name}");
        assert_eq!(read.counts(C).unwrap(), [("x".to_owned(), u64::MAX)], "{name}");
        drop(read);
        let tx = kv.write().unwrap();
        tx.remove_member(S, "k", "m").unwrap();
        tx.drop_log(L, "g1").unwrap();
        tx.delete_name(N, "a").unwrap();
        tx.commit().unwrap();
        let read = kv.read().unwrap();
        assert_eq!(read.members(S, "k").unwrap(), ["a", "z"], "{name}");
        assert!(read.log(L, "g1", 0).unwrap().is_empty(), "{name}");
        assert_eq!(read.log(L, "g2", 0).unwrap(), [(1, "else".to_owned())], "{name}: another key's log stays");
        assert_eq!(read.name(N, "a").unwrap(), None, "{name}");
    }
}

#[test]
fn a_write_counts_the_characters_it_stores_and_removes() {
    for (name, kv, _dir) in backends() {
        let tx = kv.write().unwrap();
        tx.put_row(R, "ab", "ünï".as_bytes()).unwrap(); // 2 + 3 characters, not bytes
        assert_eq!(tx.written(), 5, "{name}");
        tx.put_row(R, "ab", b"x").unwrap(); // replaced: the key stays, the value shrinks
        assert_eq!(tx.written(), 3, "{name}");
        tx.append(L, "g", [(1, "four"), (2, "five!")]).unwrap();
        assert_eq!(tx.written(), 12, "{name}");
        tx.put_name(N, "n", "names and counts are indexes, not counted").unwrap();
        tx.put_count(C, "c", 1).unwrap();
        assert_eq!(tx.written(), 12, "{name}");
        tx.commit().unwrap();

        let tx = kv.write().unwrap();
        tx.put_row(R, "b/1", b"12").unwrap();
        tx.put_row(R, "b/2", b"34").unwrap();
        tx.delete_rows(R, "b/", "b0").unwrap();
        assert_eq!(tx.written(), 0, "{name}: made and removed in one transaction");
        assert!(tx.delete_row(R, "ab").unwrap());
        assert!(!tx.delete_row(R, "ab").unwrap());
        tx.drop_log(L, "g").unwrap();
        assert_eq!(tx.written(), -12, "{name}: everything the first one stored");
        tx.delete_count(C, "c").unwrap();
        assert_eq!(tx.count(C, "c").unwrap(), None, "{name}");
    }
}

#[test]
fn walks_page_through_long_ranges_both_ways_and_stop_when_told() {
    for (name, kv, _dir) in backends() {
        let tx = kv.write().unwrap();
        for i in 0..150 {
            tx.put_row(R, &format!("w/{i:03}"), b"v").unwrap();
        }
        tx.put_row(R, "x", b"outside").unwrap();
        tx.commit().unwrap();
        let read = kv.read().unwrap();
        let mut seen = Vec::new();
        read.walk(R, "w/", "w0", false, &mut |k, _| {
            seen.push(k.to_owned());
            true
        })
        .unwrap();
        assert_eq!(seen, (0..150).map(|i| format!("w/{i:03}")).collect::<Vec<_>>(), "{name}: every row, in order, past one page");
        seen.clear();
        read.walk(R, "w/", "w0", true, &mut |k, _| {
            seen.push(k.to_owned());
            seen.len() < 70
        })
        .unwrap();
        assert_eq!(seen.len(), 70, "{name}: stops when told");
        assert_eq!(seen[0], "w/149", "{name}");
        assert_eq!(seen[69], "w/080", "{name}: backwards across a page");
    }
}

#[test]
fn keys_order_by_their_bytes_whatever_the_database_locale() {
    for (name, kv, _dir) in backends() {
        let tx = kv.write().unwrap();
        for k in ["a", "B", "é", "Z", "_", "a b", "ab"] {
            tx.put_row(R, k, b"").unwrap();
        }
        tx.commit().unwrap();
        let keys: Vec<String> = kv.read().unwrap().rows(R, Keys::All).unwrap().into_iter().map(|(k, _)| k).collect();
        assert_eq!(keys, ["B", "Z", "_", "a", "a b", "ab", "é"], "{name}");
    }
}

#[test]
fn concurrent_writers_never_lose_an_update() {
    for (name, kv, _dir) in backends() {
        let kv = std::sync::Arc::new(kv);
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let kv = kv.clone();
                std::thread::spawn(move || {
                    for _ in 0..25 {
                        // Read, then write what was read plus one: lost updates show as a short count.
                        let tx = kv.write().unwrap();
                        let n = tx.count(C, "n").unwrap().unwrap_or(0);
                        tx.put_count(C, "n", n + 1).unwrap();
                        tx.commit().unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(kv.read().unwrap().count(C, "n").unwrap(), Some(100), "{name}");
    }
}

#[test]
fn every_entry_reads_each_shape_back_and_put_entries_copies_them_between_backends() {
    let stores = backends();
    let (_, source, _dir) = &stores[0];
    let tx = source.write().unwrap();
    tx.put_row(R, "r1", b"{\"a\":1}").unwrap();
    tx.put_row(R, "r2", &[0, 255, 7]).unwrap();
    tx.put_name(N, "n1", "x").unwrap();
    tx.put_count(C, "c1", u64::MAX).unwrap();
    tx.add_member(S, "s1", "b").unwrap();
    tx.add_member(S, "s1", "a").unwrap();
    tx.append(L, "l1", [(1, "first"), (2, "second")]).unwrap();
    tx.commit().unwrap();
    let mut written = Vec::new();
    source.every_entry(&mut |e| written.push(e)).unwrap();
    written.sort();
    let shapes: Vec<&str> = written.iter().map(Entry::shape).collect();
    assert_eq!(shapes, ["rows", "rows", "names", "counts", "set members", "set members", "log entries", "log entries"], "{written:?}");
    // Into a fresh redb, and the PostgreSQL store when there is one.
    let dir = tempfile::tempdir().unwrap();
    let fresh = Kv::open_redb(&dir.path().join("copy.redb")).unwrap();
    let mut targets = vec![("redb", &fresh)];
    targets.extend(stores.iter().skip(1).map(|(name, kv, _)| (*name, kv)));
    for (name, kv) in targets {
        kv.put_entries(&written).unwrap();
        // Twice: the copy is the same, not doubled.
        kv.put_entries(&written).unwrap();
        let mut back = Vec::new();
        kv.every_entry(&mut |e| back.push(e)).unwrap();
        back.sort();
        assert_eq!(back, written, "{name}");
    }
}
