use super::*;
use crate::text::terms;

fn texts(q: &str, d: Domain) -> Vec<String> {
    expand(q, d, None).into_iter().map(|e| e.text).collect()
}

#[test]
fn the_lexicons_have_the_sizes_the_docs_give() {
    let s = sizes();
    assert!((150..=300).contains(&s[0].1), "{s:?}");
    assert!(s[1].1 < 100, "{s:?}");
    assert!(s[2].1 > 150, "reporters-db's list, less the single letters: {s:?}");
    assert!(s[3].1 >= 20, "{s:?}");
}

#[test]
fn clinical_short_forms_are_spelled_out_and_long_forms_shortened() {
    let t = texts("HTN and DM2 s/p CABG", Domain::Medical);
    for want in [
        "hypertension and DM2 s/p CABG",
        "HTN and type 2 diabetes mellitus s/p CABG",
        "HTN and DM2 status post CABG",
        "HTN and DM2 s/p coronary artery bypass graft",
    ] {
        assert!(t.contains(&want.to_owned()), "{want} not in {t:?}");
    }
    assert_eq!(texts("history of myocardial infarction", Domain::Medical), ["history of MI"]);
    // Lower case is fine where the short form is no word; not where it is one.
    assert_eq!(texts("copd", Domain::Medical), ["chronic obstructive pulmonary disease"]);
    assert!(texts("sob story", Domain::Medical).is_empty());
    assert_eq!(texts("SOB at night", Domain::Medical), ["shortness of breath at night"]);
    // Whole words only.
    assert!(texts("MIRACLE HTNX", Domain::Medical).is_empty());
}

#[test]
fn general_collections_get_contracts_and_only_the_unambiguous_clinical_forms() {
    assert_eq!(texts("HTN treatment", Domain::General), ["hypertension treatment"]);
    assert!(texts("hypertension treatment", Domain::General).is_empty(), "spelled out only");
    assert!(texts("MI in the OR", Domain::General).is_empty());
    assert_eq!(texts("breach of the NDA", Domain::General)[0], "breach of the non-disclosure agreement");
    assert_eq!(texts("the statement of work", Domain::General), ["the SOW"]);
}

#[test]
fn legal_collections_get_case_names_both_ways() {
    let t = texts("Smith v. Nat'l Ass'n of Realtors", Domain::Legal);
    assert!(t.contains(&"Smith v. National Ass'n of Realtors".to_owned()), "{t:?}");
    assert!(t.contains(&"Smith v. Nat'l Association of Realtors".to_owned()), "{t:?}");
    let t = texts("Department of Transportation", Domain::Legal);
    assert!(t.contains(&"Dep't of Transportation".to_owned()), "{t:?}");
    assert!(t.contains(&"Department of Transp.".to_owned()), "{t:?}");
    // "No." matches only as written: "no." is a word.
    assert!(texts("there is no.", Domain::Legal).is_empty());
}

#[test]
fn a_glossary_comes_first_and_both_ways() {
    let g = Glossary::new([("SSA", vec!["Software Services Agreement"]), ("DPA", vec!["Data Protection Addendum", "privacy addendum"])]);
    let t: Vec<String> = expand("SSA termination", Domain::General, Some(&g)).into_iter().map(|e| e.text).collect();
    assert_eq!(t, ["Software Services Agreement termination"]);
    let e = expand("the DPA", Domain::General, Some(&g));
    // The glossary's meanings, not the contract list's "data processing agreement".
    assert_eq!(e.iter().map(|e| e.text.as_str()).collect::<Vec<_>>(), ["the Data Protection Addendum", "the privacy addendum"]);
    assert!(e.iter().all(|e| e.kind == Kind::Abbreviation && e.weight == GLOSSARY_WEIGHT));
    assert_eq!(expand("software services agreement", Domain::General, Some(&g))[0].text, "SSA");
    assert!(Glossary::new([("", vec!["x"]), ("A", vec![" "])]).is_empty());
}

#[test]
fn section_forms_are_expansions_whose_terms_differ() {
    let e = expand("notice under § 2.1", Domain::Legal, None);
    assert!(e.iter().all(|e| e.kind == Kind::Section), "{e:?}");
    let t: Vec<&str> = e.iter().map(|e| e.text.as_str()).collect();
    assert!(t.contains(&"notice under Section 2.1"), "{t:?}");
    for x in &e {
        assert_ne!(terms(&x.text), terms("notice under § 2.1"));
    }
}

/// The analyser folds hamza and alef forms, alef maqsura, ta marbuta, harakat and
/// tatweel itself: those spellings are one term already, so no expansion is made for
/// them. Name spellings it does not fold are expansions.
#[test]
fn arabic_variants_are_only_what_the_analyser_does_not_fold() {
    for (a, b) in
        [("أحمد", "احمد"), ("أسامة", "اسامه"), ("آمن", "امن"), ("مدرسة", "مدرسه"), ("مصطفى", "مصطفي"), ("مُحَمَّد", "محمد"), ("محـــمد", "محمد")]
    {
        assert_eq!(terms(a), terms(b), "{a} / {b}");
        assert!(expand(a, Domain::General, None).is_empty(), "{a}");
    }
    let e = expand("حدثنا إسمعيل بن أبي خالد", Domain::General, None);
    assert_eq!(e.len(), 1, "{e:?}");
    assert_eq!((e[0].kind, e[0].text.as_str()), (Kind::Variant, "حدثنا اسماعيل بن ابي خالد"));
    assert_ne!(terms(&e[0].text), terms("حدثنا إسمعيل بن أبي خالد"));
    // Either direction, with harakat, and after a one-letter proclitic.
    assert_eq!(expand("إِسْحَاق", Domain::General, None)[0].text, "اسحق");
    assert_eq!(expand("والرحمن", Domain::General, None)[0].text, "والرحمان");
    assert!(expand("مسئولية", Domain::General, None).is_empty(), "whole words only");
}

#[test]
fn expansions_are_distinct_and_capped() {
    let q = "HTN DM2 CHF COPD CKD AKI DVT TIA UTI ICU";
    let e = expand(q, Domain::Medical, None);
    assert_eq!(e.len(), MAX_EXPANSIONS);
    let d = distinct(
        "heart attack",
        vec![
            Expansion { text: "Heart  ATTACK".into(), kind: Kind::Llm, weight: 0.5 },
            Expansion { text: "myocardial infarction".into(), kind: Kind::Llm, weight: 0.5 },
            Expansion { text: "the myocardial infarction".into(), kind: Kind::Llm, weight: 0.5 },
            Expansion { text: "the of".into(), kind: Kind::Llm, weight: 0.5 },
        ],
        5,
    );
    assert_eq!(d.iter().map(|e| e.text.as_str()).collect::<Vec<_>>(), ["myocardial infarction"]);
}

/// Found on SciFact's claims: a form the query defines in parentheses ("reactive oxygen
/// species (ROS)") or already spells out is not rewritten, a hyphen joins words
/// ("G-CSF" is no CSF), and a one-word long form does not add an ambiguous short form
/// ("cancer" never becomes "CA", "treatment" never "Rx").
#[test]
fn defined_spelled_out_joined_and_ambiguous_forms_are_left_alone() {
    assert!(texts("mediated by reactive oxygen species (ROS)", Domain::Medical).is_empty());
    assert!(texts("Thigh-length stockings (GCS) in stroke", Domain::General).is_empty());
    let t = texts("Deleting Raptor reduces G-CSF levels", Domain::Medical);
    assert!(t.is_empty(), "{t:?}");
    assert!(texts("HTN-related", Domain::Medical).is_empty());
    assert!(texts("breast cancer treatment outcomes", Domain::Medical).is_empty());
    assert_eq!(texts("systemic lupus erythematosus (SLE)", Domain::Medical), Vec::<String>::new());
    assert_eq!(texts("hypertension in pregnancy", Domain::Medical), ["HTN in pregnancy"], "HTN is no word: the short form is added");
    assert_eq!(texts("HTN/DM2", Domain::Medical).len(), 2);
}
