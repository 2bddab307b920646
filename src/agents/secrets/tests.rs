use super::*;

fn service(dir: &Path) -> Secrets {
    let records = Arc::new(Records::open(dir).unwrap());
    Secrets::open(&SecretsConfig { key: None }, dir, records).unwrap()
}

const A: Project<'static> = Project { account_id: "acct_a", project_id: "proj_a" };
const A2: Project<'static> = Project { account_id: "acct_a", project_id: "proj_a2" };
const B: Project<'static> = Project { account_id: "acct_b", project_id: "proj_a" };

#[test]
fn values_are_write_only_and_stay_in_their_project() {
    let dir = tempfile::tempdir().unwrap();
    let s = service(dir.path());
    let v = s.create(A, "DB_PASSWORD", Some(&Secret::new("pw-4f9c2e"))).unwrap();
    assert!(v.id.starts_with("sec_") && v.has_value);
    let json = serde_json::to_string(&s.list(A).unwrap()).unwrap();
    assert!(!json.contains("pw-4f9c2e") && json.contains("\"has_value\":true"), "{json}");
    assert_eq!(s.reveal(A, &v.id).unwrap().expose(), "pw-4f9c2e");
    for other in [A2, B] {
        assert!(matches!(s.get(other, &v.id), Err(SecretError::NotFound(_))));
        assert!(matches!(s.reveal(other, &v.id), Err(SecretError::Unknown(_))));
        assert!(matches!(s.update(other, &v.id, Some("x"), None), Err(SecretError::NotFound(_))));
        assert!(matches!(s.delete(other, &v.id), Err(SecretError::NotFound(_))));
        assert!(s.list(other).unwrap().is_empty());
    }
    assert_eq!(format!("{:?}", s.reveal(A, &v.id).unwrap()), "Secret(***)");
}

#[test]
fn references_resolve_at_call_time_to_the_current_value() {
    let dir = tempfile::tempdir().unwrap();
    let s = service(dir.path());
    let v = s.create(A, "TOKEN", Some(&Secret::new("t0ken-one"))).unwrap();
    let text = format!("Bearer {{{{secret:{}}}}} and {{{{context:user}}}}", v.id);
    assert_eq!(s.resolve(A, &text).unwrap().expose(), "Bearer t0ken-one and {{context:user}}");
    s.update(A, &v.id, None, Some(&Secret::new("t0ken-two"))).unwrap();
    assert_eq!(s.resolve(A, &text).unwrap().expose(), "Bearer t0ken-two and {{context:user}}");
    assert!(matches!(s.resolve(A2, &text), Err(SecretError::Unknown(_))));
    assert!(matches!(s.resolve(A, "{{secret:sec_nope}}"), Err(SecretError::Unknown(_))));
    assert_eq!(s.resolve(A, "no tokens {{secret:unclosed").unwrap().expose(), "no tokens {{secret:unclosed");
    let empty = s.create(A, "EMPTY", None).unwrap();
    assert!(!empty.has_value);
    assert!(matches!(s.reveal(A, &empty.id), Err(SecretError::NoValue(_))));
}

#[test]
fn the_value_is_not_in_any_file_of_the_data_directory() {
    let dir = tempfile::tempdir().unwrap();
    let value = "needle-93be1d7a-plaintext";
    {
        let s = service(dir.path());
        let v = s.create(A, "X", Some(&Secret::new(value))).unwrap();
        s.update(A, &v.id, Some("Y"), Some(&Secret::new(value))).unwrap();
    }
    let s = service(dir.path());
    let id = s.list(A).unwrap()[0].id.clone();
    assert_eq!(s.reveal(A, &id).unwrap().expose(), value, "the key file is read back on restart");
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        assert!(!bytes.windows(value.len()).any(|w| w == value.as_bytes()));
    }
}
