use super::*;

fn intent_of(q: &str) -> &'static str {
    parse(q).intent.as_str()
}

#[test]
fn extracts_phrases_from_straight_and_curly_quotes() {
    let q = parse(r#"aspirin "heart  attack" risk “blood thinner”"#);
    assert_eq!(q.phrases, ["heart attack", "blood thinner"]);
    assert_eq!(q.text, "aspirin heart attack risk blood thinner");
    assert_eq!(q.intent, Intent::Phrase);
}

#[test]
fn unbalanced_and_empty_quotes_give_no_phrase() {
    let q = parse(r#"aspirin "heart attack"#);
    assert!(q.phrases.is_empty());
    assert_eq!(q.text, "aspirin heart attack");
    assert_eq!(parse(r#"a "b" c "d"#).phrases, ["b"]);
    assert!(parse(r#"x "" y " , ""#).phrases.is_empty());
    assert_eq!(parse(r#"x "" y " , ""#).intent, Intent::Keyword);
}

#[test]
fn recognises_lists() {
    for q in [
        "list the side effects of metformin",
        "What are the symptoms of anemia?",
        "all contracts with a termination clause",
        "top 10 rivers in Africa",
        "types of diabetes",
        "أذكر أركان الإسلام",
    ] {
        assert_eq!(intent_of(q), "list", "{q}");
    }
}

#[test]
fn recognises_questions() {
    for q in [
        "what is the dose of amoxicillin",
        "What's a tort",
        "how do I renew a passport",
        "does metformin cause weight loss",
        "aspirin dose for children?",
        "explain the doctrine of estoppel",
        "ما هو الحديث الحسن",
        "أين ولد البخاري",
        "حكم صلاة الجماعة؟",
        "東京の美術館はどこ？",
    ] {
        assert_eq!(intent_of(q), "question", "{q}");
    }
}

#[test]
fn recognises_entities() {
    for q in ["Barack Obama", "Bank of America", "Paris", "ICD-10 E11.9", "HbA1c", "WHO"] {
        assert_eq!(intent_of(q), "entity", "{q}");
    }
}

#[test]
fn everything_else_is_keyword() {
    for q in [
        "aspirin dose children",
        "barack obama",
        "Heart failure treatment in elderly patients with kidney disease",
        "Will Smith",
        "حكم صلاة الجماعة",
        "",
    ] {
        let want = if q == "Will Smith" { "entity" } else { "keyword" };
        assert_eq!(intent_of(q), want, "{q}");
    }
}

#[test]
fn intent_names_are_stable() {
    let all = [Intent::Phrase, Intent::List, Intent::Question, Intent::Entity, Intent::Keyword];
    let names: Vec<&str> = all.iter().map(|i| i.as_str()).collect();
    assert_eq!(names, ["phrase", "list", "question", "entity", "keyword"]);
}

#[test]
fn single_quoted_words_of_long_requests_are_emphasis() {
    let long = r#"Hello, I am preparing a talk for our journal club and need the papers on "apoptosis" in "tumour cells", please."#;
    let q = parse(long);
    assert_eq!(q.emphasis, ["apoptosis"]);
    assert_eq!(q.phrases, ["tumour cells"]);
    assert_eq!(q.intent, Intent::Phrase);
    let q = parse(r#"Hello, I am preparing a talk for our journal club and I need the papers on "apoptosis" please."#);
    assert_eq!((q.emphasis.len(), q.phrases.len(), q.intent), (1, 0, Intent::Keyword));
    // Twelve words or fewer: the quoted word is the query's constraint.
    let q = parse(r#"papers on "apoptosis" in tumour cells of the liver and the lung"#);
    assert_eq!(q.text.split(' ').count(), EMPHASIS_MIN_WORDS - 1);
    assert_eq!((q.phrases, q.emphasis), (vec!["apoptosis".to_owned()], vec![]));
}
