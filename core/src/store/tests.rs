use super::*;

fn account(id: &str, email: &str) -> AccountRecord {
    AccountRecord { id: id.into(), email: email.into(), plan: "scribe".into(), created_at: "2026-11-01T00:00:00.000Z".into() }
}

fn keys(prefixes: &[&str]) -> impl FnMut() -> NewKey {
    let mut list: Vec<NewKey> = prefixes.iter().map(|p| NewKey { prefix: p.to_string(), hash: format!("h{p}") }).collect();
    list.reverse();
    move || list.pop().expect("enough candidate keys")
}

#[test]
fn accounts_and_keys_survive_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let r = Records::open(dir.path()).unwrap();
        r.create_account(&account("acct_a", "a@x.org"), &mut keys(&["al_aaaaaaa"]), "t1").unwrap();
        r.add_key("acct_a", None, &mut keys(&["al_bbbbbbb"]), "t2").unwrap();
    }
    let r = Records::open(dir.path()).unwrap();
    assert_eq!(r.account_by_email("a@x.org").unwrap().unwrap().id, "acct_a");
    let prefixes: Vec<_> = r.keys_of("acct_a").unwrap().into_iter().map(|k| k.prefix).collect();
    assert_eq!(prefixes, ["al_aaaaaaa", "al_bbbbbbb"]);
}

#[test]
fn a_taken_email_is_a_conflict_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let r = Records::open(dir.path()).unwrap();
    r.create_account(&account("acct_a", "a@x.org"), &mut keys(&["al_aaaaaaa"]), "t").unwrap();
    let err = r.create_account(&account("acct_b", "a@x.org"), &mut keys(&["al_ccccccc"]), "t").unwrap_err();
    assert!(matches!(err, StoreError::Conflict { .. }));
    assert!(r.account("acct_b").unwrap().is_none());
    assert!(r.key("al_ccccccc").unwrap().is_none());
}

#[test]
fn a_taken_prefix_is_drawn_again() {
    let dir = tempfile::tempdir().unwrap();
    let r = Records::open(dir.path()).unwrap();
    r.create_account(&account("acct_a", "a@x.org"), &mut keys(&["al_same000"]), "t").unwrap();
    let k = r.create_account(&account("acct_b", "b@x.org"), &mut keys(&["al_same000", "al_other00"]), "t").unwrap();
    assert_eq!(k.prefix, "al_other00");
    assert_eq!(r.key("al_same000").unwrap().unwrap().account_id, "acct_a");
}

#[test]
fn revoke_is_scoped_to_the_account() {
    let dir = tempfile::tempdir().unwrap();
    let r = Records::open(dir.path()).unwrap();
    r.create_account(&account("acct_a", "a@x.org"), &mut keys(&["al_aaaaaaa"]), "t").unwrap();
    r.create_account(&account("acct_b", "b@x.org"), &mut keys(&["al_bbbbbbb"]), "t").unwrap();
    assert!(r.revoke_key("acct_b", "al_aaaaaaa", "t9").unwrap().is_none());
    assert!(r.key("al_aaaaaaa").unwrap().unwrap().revoked_at.is_none());
    let k = r.revoke_key("acct_a", "al_aaaaaaa", "t9").unwrap().unwrap();
    assert_eq!(k.revoked_at.as_deref(), Some("t9"));
    let again = r.revoke_key("acct_a", "al_aaaaaaa", "t10").unwrap().unwrap();
    assert_eq!(again.revoked_at.as_deref(), Some("t9"));
}

#[test]
fn a_newer_schema_is_refused_with_a_clear_message() {
    let dir = tempfile::tempdir().unwrap();
    {
        let r = Records::open(dir.path()).unwrap();
        let txn = r.kv.write().unwrap();
        txn.put_count(META, "schema_version", SCHEMA_VERSION + 1).unwrap();
        txn.commit().unwrap();
    }
    let err = Records::open(dir.path()).err().expect("refused");
    let text = err.to_string();
    assert!(text.contains("schema version 2") && text.contains("newer"), "{text}");
}

#[test]
fn a_second_opener_is_told_the_store_is_in_use() {
    let dir = tempfile::tempdir().unwrap();
    let _first = Records::open(dir.path()).unwrap();
    let err = Records::open(dir.path()).err().expect("refused");
    assert!(matches!(err, StoreError::Locked { .. }), "{err}");
}

#[test]
fn meters_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let r = Records::open(dir.path()).unwrap();
    let counts = MonthCounts { search: 3, pages_indexed: 7, ..MonthCounts::default() };
    r.save_meters(&[MeterSnapshot { account_id: "acct_a".into(), month: "2026-11".into(), counts, stored_chars: 99 }], false).unwrap();
    assert_eq!(r.meters("acct_a", "2026-11").unwrap(), (counts, 99));
    assert_eq!(r.meters("acct_a", "2026-12").unwrap(), (MonthCounts::default(), 99));
}

#[test]
fn the_key_cap_counts_only_active_keys() {
    let dir = tempfile::tempdir().unwrap();
    let r = Records::open(dir.path()).unwrap();
    r.create_account(&account("acct_a", "a@x.org"), &mut keys(&["al_aaaaaaa"]), "t").unwrap();
    r.add_key("acct_a", Some(2), &mut keys(&["al_bbbbbbb"]), "t").unwrap();
    let err = r.add_key("acct_a", Some(2), &mut keys(&["al_ccccccc"]), "t").unwrap_err();
    assert!(matches!(err, StoreError::TooManyKeys { active: 2, max: 2 }), "{err}");
    assert!(r.key("al_ccccccc").unwrap().is_none(), "nothing was written");
    r.revoke_key("acct_a", "al_bbbbbbb", "t").unwrap();
    r.add_key("acct_a", Some(2), &mut keys(&["al_ccccccc"]), "t").unwrap();
}

/// Issue 1/9: 2,945 keys on one account. Many threads adding at once must not pass
/// the cap between a count and an insert.
#[test]
fn concurrent_key_adds_cannot_pass_the_cap() {
    let dir = tempfile::tempdir().unwrap();
    let r = std::sync::Arc::new(Records::open(dir.path()).unwrap());
    r.create_account(&account("acct_a", "a@x.org"), &mut keys(&["al_first00"]), "t").unwrap();
    let added: usize = (0..8)
        .map(|t| {
            let r = r.clone();
            std::thread::spawn(move || {
                (0..10)
                    .filter(|i| {
                        let prefix = format!("al_t{t}i{i}xxxx");
                        r.add_key("acct_a", Some(5), &mut keys(&[&prefix]), "t").is_ok()
                    })
                    .count()
            })
        })
        .map(|h| h.join().unwrap())
        .sum();
    assert_eq!(added, 4, "the first key and four more");
    assert_eq!(r.keys_of("acct_a").unwrap().len(), 5);
}

#[test]
fn stored_chars_are_reconciled_to_the_truth() {
    let dir = tempfile::tempdir().unwrap();
    let r = Records::open(dir.path()).unwrap();
    let snap =
        |id: &str, stored_chars| MeterSnapshot { account_id: id.into(), month: "2026-11".into(), counts: MonthCounts::default(), stored_chars };
    r.save_meters(&[snap("acct_a", 177_003), snap("acct_b", 50), snap("acct_c", 9)], false).unwrap();
    let truth: BTreeMap<String, u64> = [("acct_a".to_owned(), 168_620), ("acct_c".to_owned(), 9), ("acct_d".to_owned(), 4)].into();
    let changed = r.reconcile_stored_chars(&truth).unwrap();
    assert_eq!(changed, [("acct_a".to_owned(), 177_003, 168_620), ("acct_b".to_owned(), 50, 0), ("acct_d".to_owned(), 0, 4)]);
    let stored = |id: &str| r.meters(id, "2026-11").unwrap().1;
    assert_eq!((stored("acct_a"), stored("acct_b"), stored("acct_c"), stored("acct_d")), (168_620, 0, 9, 4));
    assert!(r.reconcile_stored_chars(&truth).unwrap().is_empty(), "nothing left to change");
}

fn audit_entry(account: &str, project: &str, created_at: &str) -> AuditEntry {
    AuditEntry {
        id: String::new(),
        account_id: account.into(),
        project_id: Some(project.into()),
        principal_type: None,
        principal_id: None,
        action: "secrets:CreateSecret".into(),
        resource_srn: None,
        resource_public_id: None,
        status: 201,
        request_id: None,
        ip: None,
        user_agent: None,
        detail: None,
        created_at: created_at.into(),
    }
}

#[test]
fn the_audit_log_pages_newest_first_in_the_store_and_its_retention_removes_only_the_old() {
    let dir = tempfile::tempdir().unwrap();
    let r = Records::open(dir.path()).unwrap();
    // Three accounts, interleaved: 2020 entries then 2026 ones (the log is in time order).
    for (i, year) in ["2020", "2020", "2020", "2026", "2026"].iter().enumerate() {
        for acct in ["acct_a", "acct_b", "acct_c"] {
            let project = if i % 2 == 0 { "proj_even" } else { "proj_odd" };
            r.append_audit(&mut audit_entry(acct, project, &format!("{year}-01-0{}T00:00:00.000Z", i + 1))).unwrap();
        }
    }
    let created = |e: &AuditEntry| e.created_at.clone();
    let even = |e: &AuditEntry| e.project_id.as_deref() == Some("proj_even");
    let page = r.audit_page("acct_b", &LogQuery { keep: &even, past: &|_| false, offset: 1, limit: 1, count_all: true }).unwrap();
    assert_eq!((page.entries.iter().map(created).collect::<Vec<_>>(), page.total), (vec!["2020-01-03T00:00:00.000Z".to_owned()], 3));
    // `past` ends the walk: only the 2026 entries are looked at.
    let recent = |e: &AuditEntry| e.created_at.as_str() < "2021";
    let page = r.audit_page("acct_a", &LogQuery { keep: &|_| true, past: &recent, offset: 0, limit: 10, count_all: true }).unwrap();
    assert_eq!(page.entries.iter().map(created).collect::<Vec<_>>(), ["2026-01-05T00:00:00.000Z", "2026-01-04T00:00:00.000Z"]);
    // Retention: every account's 2020 entries go, the 2026 ones stay, ids unchanged.
    let before: Vec<String> = r.audit_entries("acct_c").unwrap().iter().map(|e| e.id.clone()).collect();
    assert_eq!(r.sweep_audit(&|e| e.created_at.as_str() < "2021").unwrap(), 9);
    for acct in ["acct_a", "acct_b", "acct_c"] {
        let left: Vec<String> = r.audit_entries(acct).unwrap().iter().map(created).collect();
        assert_eq!(left, ["2026-01-04T00:00:00.000Z", "2026-01-05T00:00:00.000Z"], "{acct}");
    }
    assert_eq!(r.audit_entries("acct_c").unwrap().iter().map(|e| e.id.clone()).collect::<Vec<_>>(), before[3..]);
    assert_eq!(r.sweep_audit(&|e| e.created_at.as_str() < "2021").unwrap(), 0, "a second sweep finds nothing");
    // A new entry's id still grows.
    let mut e = audit_entry("acct_a", "proj_even", "2026-02-01T00:00:00.000Z");
    r.append_audit(&mut e).unwrap();
    assert!(e.id > before[4], "{} after {}", e.id, before[4]);
}
