use std::io::Write;

use super::*;

fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

#[test]
fn defaults_match_the_documented_file() {
    let c = Config::defaults();
    assert_eq!(c.listen.to_string(), "127.0.0.1:4400");
    assert_eq!(c.data, PathBuf::from("./data"));
    assert_eq!(c.shards, 0);
    assert_eq!(c.auth.signup, SignupMode::Open);
    assert_eq!(c.auth.existing_email, ExistingEmail::Refuse);
    assert_eq!(c.http.header_read_timeout, Duration::from_secs(10));
    let ids: Vec<_> = c.plans.ids().collect();
    assert_eq!(ids, ["library", "scholar", "scribe"]);
    assert_eq!(c.plans.get("library").unwrap().search, None);
    assert_eq!(c.plans.get("scribe").unwrap().rate, Rate { per_minute: 60, burst: 20 });
}

#[test]
fn layers_apply_in_order_file_env_flags() {
    let mut f = tempfile::NamedTempFile::new().unwrap();
    writeln!(f, "listen = \"127.0.0.1:1\"\nshards = 3\n[http]\nmax_body_bytes = 5").unwrap();
    let flags = Flags { shards: Some(7), ..Flags::default() };
    let c = Config::load(Some(f.path()), env(&[("QUARRY_LISTEN", "127.0.0.1:2")]), &flags).unwrap();
    assert_eq!(c.listen.to_string(), "127.0.0.1:2");
    assert_eq!(c.shards, 7);
    assert_eq!(c.http.max_body_bytes, 5);
    assert_eq!(c.http.max_headers, 100);
}

#[test]
fn unknown_key_in_file_is_named() {
    let mut f = tempfile::NamedTempFile::new().unwrap();
    writeln!(f, "[http]\nmax_body = 5").unwrap();
    let err = Config::load(Some(f.path()), env(&[]), &Flags::default()).unwrap_err();
    assert!(matches!(&err, ConfigError::UnknownKey { key, .. } if key == "http.max_body"), "{err}");
    assert!(err.to_string().contains("http.max_body"));
}

#[test]
fn unknown_env_key_is_named_by_its_variable() {
    let err = Config::load(None, env(&[("QUARRY_LISTN", "x")]), &Flags::default()).unwrap_err();
    assert!(err.to_string().contains("QUARRY_LISTN"), "{err}");
}

/// `quarry ingest` reads its key from QUARRY_API_KEY; a shell that exports it for ingest
/// must still be able to start the server, which refuses every other unknown QUARRY_*.
#[test]
fn the_ingest_key_variable_is_passed_over() {
    let c = Config::load(None, env(&[("QUARRY_API_KEY", "al_secret")]), &Flags::default()).unwrap();
    assert_eq!(c.listen, Config::load(None, env(&[]), &Flags::default()).unwrap().listen);
    let err = Config::load(None, env(&[("QUARRY_API_KEYS", "al_secret")]), &Flags::default()).unwrap_err();
    assert!(err.to_string().contains("QUARRY_API_KEYS"), "{err}");
}

#[test]
fn operators_may_add_plans_but_not_plan_keys() {
    let mut f = tempfile::NamedTempFile::new().unwrap();
    writeln!(f, "[plans.pro]\nname=\"Pro\"\nprice=9\nstored_chars=1\nsearch=1\nextract=1\nresearch=1\nrate_per_minute=1\nburst=1").unwrap();
    let c = Config::load(Some(f.path()), env(&[]), &Flags::default()).unwrap();
    assert_eq!(c.plans.get("pro").unwrap().name, "Pro");
    let mut g = tempfile::NamedTempFile::new().unwrap();
    writeln!(g, "[plans.pro]\nnam=\"Pro\"").unwrap();
    let err = Config::load(Some(g.path()), env(&[]), &Flags::default()).unwrap_err();
    assert!(err.to_string().contains("plans.pro.nam"), "{err}");
}

#[test]
fn ill_typed_values_name_the_key() {
    let err = Config::load(None, env(&[("QUARRY_HTTP__MAX_BODY_BYTES", "lots")]), &Flags::default()).unwrap_err();
    assert!(err.to_string().contains("http.max_body_bytes"), "{err}");
    let err = Config::load(None, env(&[("QUARRY_AUTH__SIGNUP", "maybe")]), &Flags::default()).unwrap_err();
    assert!(err.to_string().contains("auth.signup"), "{err}");
    let err = Config::load(None, env(&[("QUARRY_HTTP__IDLE_TIMEOUT", "soon")]), &Flags::default()).unwrap_err();
    assert!(err.to_string().contains("http.idle_timeout"), "{err}");
}

#[test]
fn plans_cap_active_keys_and_signups_are_limited_per_address() {
    let c = Config::defaults();
    let cap = |id: &str| c.plans.get(id).unwrap().max_keys;
    assert_eq!((cap("scribe"), cap("scholar"), cap("library")), (Some(5), Some(20), Some(100)));
    assert_eq!(c.auth.signup_per_ip, Some(crate::limits::Pace::per_hour(5, 10)));
    // A plan written before the cap existed loads with the default; "unlimited" lifts it.
    let mut f = tempfile::NamedTempFile::new().unwrap();
    writeln!(f, "[plans.pro]\nname=\"Pro\"\nprice=9\nstored_chars=1\nsearch=1\nextract=1\nresearch=1\nrate_per_minute=1\nburst=1").unwrap();
    writeln!(
        f,
        "[plans.open]\nname=\"Open\"\nprice=9\nstored_chars=1\nsearch=1\nextract=1\nresearch=1\nrate_per_minute=1\nburst=1\nmax_keys=\"unlimited\""
    )
    .unwrap();
    let c = Config::load(Some(f.path()), env(&[("QUARRY_AUTH__SIGNUP_PER_IP__BURST", "0")]), &Flags::default()).unwrap();
    assert_eq!(c.plans.get("pro").unwrap().max_keys, Some(DEFAULT_MAX_KEYS));
    assert_eq!(c.plans.get("open").unwrap().max_keys, None);
    assert_eq!(c.auth.signup_per_ip, None, "burst 0 turns it off");
    let err = Config::load(None, env(&[("QUARRY_PLANS__SCRIBE__MAX_KEYS", "0")]), &Flags::default()).unwrap_err();
    assert!(err.to_string().contains("plans.scribe.max_keys"), "{err}");
}

#[test]
fn relative_models_paths_are_taken_from_the_installation_absolute_ones_kept() {
    // The test binary is in target/debug/deps, whose installation is the repository (this
    // crate's parent).
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").canonicalize().unwrap();
    let c = Config::defaults();
    assert_eq!(c.models.installation.as_deref(), Some(root.as_path()));
    assert_eq!(c.models.dir, root.join("models"));
    assert_eq!(c.models.runtime_library, root.join("models/lib/libonnxruntime.so.1.31.1"));
    let c = Config::load(None, env(&[("QUARRY_MODELS__DIR", "/srv/m")]), &Flags::default()).unwrap();
    assert_eq!(c.models.dir, PathBuf::from("/srv/m"));
}

#[test]
fn the_local_model_is_on_by_default_off_by_env_and_may_not_be_shadowed() {
    let c = Config::load(None, env(&[]), &Flags::default()).unwrap();
    let local = c.llm.local.expect("enabled by default");
    assert_eq!(local.name, "qwen2.5-coder-1.5b-instruct");
    assert!(local.model.starts_with(&c.models.dir) && local.launcher.ends_with("llm.py"));
    assert!(local.threads >= 1 && local.port == 0 && local.nice == 10);
    let off = Config::load(None, env(&[("QUARRY_LLM__LOCAL__ENABLED", "false")]), &Flags::default()).unwrap();
    assert!(off.llm.local.is_none());

    let mut f = tempfile::NamedTempFile::new().unwrap();
    write!(f, "[llm.providers.local]\nmanifest = \"openai-compatible\"\n").unwrap();
    let e = Config::load(Some(f.path()), env(&[]), &Flags::default()).unwrap_err();
    assert!(e.to_string().contains("llm.providers.local"), "{e}");
    let ok = Config::load(Some(f.path()), env(&[("QUARRY_LLM__LOCAL__ENABLED", "false")]), &Flags::default()).unwrap();
    assert_eq!(ok.llm.providers[0].id, "local");
    let e = Config::load(None, env(&[("QUARRY_LLM__LOCAL__NICE", "25")]), &Flags::default()).unwrap_err();
    assert!(e.to_string().contains("llm.local.nice"), "{e}");
    // An alias may name the local model.
    let mut f = tempfile::NamedTempFile::new().unwrap();
    write!(f, "[llm.aliases]\nfast = \"local/qwen2.5-coder-1.5b-instruct\"\n").unwrap();
    assert!(Config::load(Some(f.path()), env(&[]), &Flags::default()).is_ok());
}

#[test]
fn the_loaded_embedders_hold_the_default_once_each() {
    // By default: the multilingual model, and MiniLM loaded beside it for English collections.
    let c = Config::load(None, env(&[]), &Flags::default()).unwrap();
    assert_eq!((c.embedder.as_deref(), c.english_embedder.as_deref()), (Some("multilingual-e5-small"), Some("all-MiniLM-L6-v2")));
    assert_eq!(c.embedders, ["multilingual-e5-small", "all-MiniLM-L6-v2"]);
    let c = Config::load(None, env(&[("QUARRY_ENGLISH_EMBEDDER", "")]), &Flags::default()).unwrap();
    assert_eq!((c.english_embedder.as_deref(), c.embedders.as_slice()), (None, &["multilingual-e5-small".to_owned()][..]));
    // A list written without it keeps loading just what it names; the same model as the default is no choice.
    let c = Config::load(None, env(&[("QUARRY_EMBEDDERS", r#"["multilingual-e5-small"]"#)]), &Flags::default()).unwrap();
    assert_eq!((c.english_embedder.as_deref(), c.embedders.as_slice()), (None, &["multilingual-e5-small".to_owned()][..]));
    let c = Config::load(None, env(&[("QUARRY_EMBEDDER", "all-MiniLM-L6-v2")]), &Flags::default()).unwrap();
    assert_eq!((c.english_embedder.as_deref(), c.embedders.as_slice()), (None, &["all-MiniLM-L6-v2".to_owned()][..]));
    let both = r#"["all-MiniLM-L6-v2", "multilingual-e5-small"]"#;
    let c = Config::load(None, env(&[("QUARRY_EMBEDDERS", both)]), &Flags::default()).unwrap();
    assert_eq!(
        (c.embedders.as_slice(), c.english_embedder.as_deref()),
        (&["all-MiniLM-L6-v2".to_owned(), "multilingual-e5-small".to_owned()][..], Some("all-MiniLM-L6-v2"))
    );
    let c = Config::load(None, env(&[("QUARRY_EMBEDDER", "none")]), &Flags::default()).unwrap();
    assert!(c.embedder.is_none() && c.english_embedder.is_none() && c.embedders.is_empty());
    let err = Config::load(None, env(&[("QUARRY_EMBEDDERS", r#"["all-MiniLM-L6-v2"]"#)]), &Flags::default()).unwrap_err();
    assert!(err.to_string().contains("must hold the default embedder `multilingual-e5-small`"), "{err}");
    let twice = r#"["multilingual-e5-small", "multilingual-e5-small"]"#;
    let err = Config::load(None, env(&[("QUARRY_EMBEDDERS", twice)]), &Flags::default()).unwrap_err();
    assert!(err.to_string().contains("twice"), "{err}");
    let err = Config::load(None, env(&[("QUARRY_EMBEDDERS", r#"["none", "multilingual-e5-small"]"#)]), &Flags::default()).unwrap_err();
    assert!(matches!(&err, ConfigError::Invalid { key, .. } if key == "embedders"), "{err}");
}

#[test]
fn egress_is_closed_by_default_and_allow_rules_are_checked() {
    assert!(Config::defaults().egress.allow.is_empty(), "nothing beyond the public internet by default");
    let mut f = tempfile::NamedTempFile::new().unwrap();
    writeln!(f, "[egress]\nallow = [\"10.0.0.5:8000\", \"192.168.0.0/16\"]").unwrap();
    let c = Config::load(Some(f.path()), env(&[]), &Flags::default()).unwrap();
    assert_eq!(c.egress.allow.iter().map(|r| r.to_string()).collect::<Vec<_>>(), ["10.0.0.5/32:8000", "192.168.0.0/16"]);
    let c = Config::load(None, env(&[("QUARRY_EGRESS__ALLOW", r#"["127.0.0.0/8", "::1"]"#)]), &Flags::default()).unwrap();
    assert_eq!(c.egress.allow.len(), 2, "the environment gives a list as TOML writes it");
    let err = Config::load(None, env(&[("QUARRY_EGRESS__ALLOW", r#"["10.0.0.5", "vllm.internal:8000"]"#)]), &Flags::default()).unwrap_err();
    assert!(matches!(&err, ConfigError::Invalid { key, .. } if key == "egress.allow[1]"), "{err}");
    assert!(err.to_string().contains("names are not accepted"), "{err}");
}
