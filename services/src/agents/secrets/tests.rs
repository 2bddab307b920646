use super::*;
use crate::agents::scope::testing::{a, others, scope};
use crate::agents::KeyRef;

fn service(dir: &Path) -> Secrets {
    let records = Arc::new(Records::open(dir).unwrap());
    Secrets::open(&SecretsConfig { key: None }, dir, records).unwrap()
}

#[test]
fn values_are_write_only_and_stay_in_their_project() {
    let dir = tempfile::tempdir().unwrap();
    let s = service(dir.path());
    let v = s.create(&a(), "DB_PASSWORD", Some(&Secret::new("pw-4f9c2e"))).unwrap();
    assert!(v.id.starts_with("sec_") && v.has_value);
    let json = serde_json::to_string(&s.list(&a()).unwrap()).unwrap();
    assert!(!json.contains("pw-4f9c2e") && json.contains("\"has_value\":true"), "{json}");
    assert_eq!(s.reveal(a().project(), &v.id).unwrap().expose(), "pw-4f9c2e");
    for other in others() {
        assert!(matches!(s.get(&other, &v.id), Err(SecretError::NotFound(_))));
        assert!(matches!(s.reveal(other.project(), &v.id), Err(SecretError::Unknown(_))));
        assert!(matches!(s.update(&other, &v.id, Some("x"), None), Err(SecretError::NotFound(_))));
        assert!(matches!(s.delete(&other, &v.id), Err(SecretError::NotFound(_))));
        assert!(s.list(&other).unwrap().is_empty());
    }
    let account_key = Scope { key: KeyRef::Account { prefix: "al_x".into() }, ..scope("acct_a", "proj_a2") };
    assert_eq!(s.get(&account_key, &v.id).unwrap().name, "DB_PASSWORD", "an account key sees every project of its account");
    assert!(matches!(s.reveal(account_key.project(), &v.id), Err(SecretError::Unknown(_))), "but a reference resolves in its own project only");
    assert_eq!(format!("{:?}", s.reveal(a().project(), &v.id).unwrap()), "Secret(***)");
    assert_eq!(s.delete(&a(), &v.id).unwrap().id, v.id);
    assert!(matches!(s.get(&a(), &v.id), Err(SecretError::NotFound(_))));
}

#[test]
fn references_resolve_at_call_time_to_the_current_value() {
    let dir = tempfile::tempdir().unwrap();
    let s = service(dir.path());
    let v = s.create(&a(), "TOKEN", Some(&Secret::new("t0ken-one"))).unwrap();
    let text = format!("Bearer {{{{secret:{}}}}} and {{{{context:user}}}}", v.id);
    assert_eq!(s.resolve(a().project(), &text).unwrap().expose(), "Bearer t0ken-one and {{context:user}}");
    s.update(&a(), &v.id, None, Some(&Secret::new("t0ken-two"))).unwrap();
    assert_eq!(s.resolve(a().project(), &text).unwrap().expose(), "Bearer t0ken-two and {{context:user}}");
    assert!(matches!(s.resolve(others()[0].project(), &text), Err(SecretError::Unknown(_))));
    assert!(matches!(s.resolve(a().project(), "{{secret:sec_nope}}"), Err(SecretError::Unknown(_))));
    assert_eq!(s.resolve(a().project(), "no tokens {{secret:unclosed").unwrap().expose(), "no tokens {{secret:unclosed");
    let empty = s.create(&a(), "EMPTY", None).unwrap();
    assert!(!empty.has_value);
    assert!(matches!(s.reveal(a().project(), &empty.id), Err(SecretError::NoValue(_))));
}

#[test]
fn the_value_is_not_in_any_file_of_the_data_directory() {
    let dir = tempfile::tempdir().unwrap();
    let value = "needle-93be1d7a-plaintext";
    {
        let s = service(dir.path());
        let v = s.create(&a(), "X", Some(&Secret::new(value))).unwrap();
        s.update(&a(), &v.id, Some("Y"), Some(&Secret::new(value))).unwrap();
    }
    let s = service(dir.path());
    let id = s.list(&a()).unwrap()[0].id.clone();
    assert_eq!(s.reveal(a().project(), &id).unwrap().expose(), value, "the key file is read back on restart");
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        assert!(!bytes.windows(value.len()).any(|w| w == value.as_bytes()));
    }
}
