use std::collections::BTreeMap;

use super::*;

fn cfg(v: serde_json::Value) -> KnowledgeConfig {
    serde_json::from_value(v).unwrap()
}

#[test]
fn merge_unions_arrays_merges_tags_and_takes_the_override_scalars() {
    let stored = cfg(
        serde_json::json!({"memory_store_ids": ["mem_a", "mem_b"], "tags": {"env": "prod", "team": "x"}, "min_score": 0.3, "limit": 5, "write_memory_store_id": "mem_a"}),
    );
    let over = cfg(serde_json::json!({"memory_store_ids": ["mem_b", "mem_c"], "document_ids": ["doc_1"], "tags": {"env": "dev"}, "limit": 3}));
    let m = merge(Some(&stored), Some(&over)).unwrap();
    assert_eq!(m.memory_store_ids.unwrap(), ["mem_a", "mem_b", "mem_c"]);
    assert_eq!(m.document_ids.unwrap(), ["doc_1"]);
    assert_eq!(m.document_paths, None);
    assert_eq!(m.tags.unwrap(), BTreeMap::from([("env".to_owned(), "dev".to_owned()), ("team".to_owned(), "x".to_owned())]));
    assert_eq!((m.min_score, m.limit, m.write_memory_store_id.as_deref()), (Some(0.3), Some(3), Some("mem_a")));
    assert_eq!(merge(None, None), None);
    assert_eq!(merge(Some(&stored), None).unwrap(), stored);
    assert_eq!(merge(None, Some(&over)).unwrap().memory_store_ids.unwrap(), ["mem_b", "mem_c"]);
}

#[test]
fn decay_halves_per_half_life_and_zero_turns_it_off() {
    assert_eq!(decay(0.0, 30.0), 1.0);
    assert!((decay(30.0, 30.0) - 0.5).abs() < 1e-12);
    assert!((decay(60.0, 30.0) - 0.25).abs() < 1e-12);
    assert_eq!(decay(365.0, 0.0), 1.0);
    assert_eq!(decay(-5.0, 10.0), 1.0, "a date in the future does not boost");
}

fn hit(id: &str, source: &'static str, score: f64, similarity: f64, created_at: &str) -> Match {
    Match {
        source,
        id: id.into(),
        store_id: None,
        citation: id.into(),
        text: id.into(),
        score,
        similarity: Some(similarity),
        created_at: Some(created_at.into()),
        updated_at: Some(created_at.into()),
    }
}

#[test]
fn recency_decay_reorders_memory_hits_only_and_min_score_floors_the_cosine() {
    let now = humantime::parse_rfc3339("2026-12-01T00:00:00Z").unwrap().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64;
    let all = vec![
        hit("old", "memory", 0.030, 0.8, "2026-09-02T00:00:00Z"), // 90 days: ×1/8
        hit("new", "memory", 0.020, 0.7, "2026-11-30T00:00:00Z"),
        hit("doc", "document", 0.025, 0.6, "2020-01-01T00:00:00Z"),
        hit("far", "memory", 0.040, 0.1, "2026-11-30T00:00:00Z"),
    ];
    let ids = |v: Vec<Match>| v.into_iter().map(|m| m.id).collect::<Vec<_>>();
    assert_eq!(ids(rank(all.clone(), None, 0.0, 10, now)), ["far", "old", "doc", "new"]);
    assert_eq!(ids(rank(all.clone(), Some(0.5), 0.0, 10, now)), ["old", "doc", "new"]);
    assert_eq!(ids(rank(all.clone(), Some(0.5), 30.0, 10, now)), ["doc", "new", "old"], "documents do not decay");
    assert_eq!(ids(rank(all, Some(0.5), 30.0, 2, now)), ["doc", "new"]);
}

#[test]
fn tags_are_key_value_strings_held_exactly() {
    let tags: Vec<String> = vec!["role:traffic-manager".into(), "env:prod".into(), "loose".into()];
    let want = |pairs: &[(&str, &str)]| pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<BTreeMap<_, _>>();
    assert!(holds(tags.iter(), &want(&[("env", "prod"), ("role", "traffic-manager")])));
    assert!(holds(tags.iter(), &want(&[("loose", "")])));
    assert!(holds(tags.iter(), &want(&[])));
    assert!(!holds(tags.iter(), &want(&[("env", "dev")])));
    assert!(!holds(tags.iter(), &want(&[("role", "traffic")])));
}

#[test]
fn the_context_numbers_each_match_with_its_citation() {
    let c = context(&[hit("mem_entry_1", "memory", 1.0, 1.0, "x"), hit("AL-0000001A", "document", 0.5, 0.5, "x")]);
    assert!(c.contains("1. [mem_entry_1] (memory) mem_entry_1\n") && c.contains("2. [AL-0000001A] (document)"), "{c}");
    assert_eq!(context(&[]), "");
}
