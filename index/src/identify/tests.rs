use super::*;

fn spans(t: &str, kinds: Kinds) -> Vec<(IdentifierKind, &str)> {
    scan(t, kinds).into_iter().map(|s| (s.kind, &t[s.start..s.end])).collect()
}

#[test]
fn the_specs_example_masks_all_but_the_date() {
    let t = "Call 555-123-4567 or write to ada@example.com about the 2024-01-15 visit.";
    let m = mask(t, Kinds::default_mask());
    assert_eq!(m.text, "Call [PHONE-1] or write to [EMAIL-1] about the 2024-01-15 visit.");
    let all = Counts::of(&scan(t, Kinds::ALL));
    assert_eq!(all.by_count(), [(IdentifierKind::Phone, 1), (IdentifierKind::Email, 1), (IdentifierKind::Date, 1)]);
}

#[test]
fn one_value_keeps_one_placeholder() {
    let t = "Ring (415) 555-0132, then 212-555-0188, then +1 415 555 0132 again. SSN 078-05-1123 or 078 05 1123.";
    let m = mask(t, Kinds::ALL);
    assert_eq!(m.text, "Ring [PHONE-1], then [PHONE-2], then [PHONE-1] again. SSN [SSN-1] or [SSN-1].");
    assert_eq!((m.counts.get(IdentifierKind::Phone), m.counts.total()), (3, 5));
}

#[test]
fn an_email_inside_a_url_is_masked_when_the_url_is_not() {
    let t = "See https://example.org/unsubscribe?email=ada@example.com today";
    assert_eq!(
        spans(t, Kinds::ALL),
        [(IdentifierKind::Url, "https://example.org/unsubscribe?email=ada@example.com"), (IdentifierKind::Email, "ada@example.com")]
    );
    assert_eq!(mask(t, Kinds::default_mask()).text, "See https://example.org/unsubscribe?email=[EMAIL-1] today");
    assert_eq!(mask(t, Kinds::ALL).text, "See [URL-1] today");
}

#[test]
fn kinds_limit_what_is_found_without_changing_it() {
    let t = "DOB: 03/14/1962, seen 2024-01-15 by Dr. Okafor";
    assert_eq!(spans(t, Kinds::NONE.with(IdentifierKind::Date)), [(IdentifierKind::Date, "2024-01-15")]);
    assert_eq!(spans(t, Kinds::NONE.with(IdentifierKind::Dob)), [(IdentifierKind::Dob, "03/14/1962")]);
    assert_eq!(spans(t, Kinds::NONE.with(IdentifierKind::Person)), [(IdentifierKind::Person, "Okafor")]);
    assert!(scan(t, Kinds::NONE).is_empty());
}

#[test]
fn a_preview_is_cut_after_masking() {
    let t = "Reach me at 415-555-0132 please";
    let spans = scan(t, Kinds::ALL);
    assert_eq!(mask_spans(t, &spans, Kinds::ALL, 15), "Reach me at [PH");
    assert_eq!(mask_spans(t, &spans, Kinds::ALL, 5), "Reach");
}

#[test]
fn kinds_have_the_specs_names_and_placeholders() {
    let names: Vec<&str> = IdentifierKind::ALL.iter().map(|k| k.name()).collect();
    assert_eq!(names, ["ssn", "phone", "email", "mrn", "dob", "credit_card", "ip", "url", "passport", "npi", "address", "person", "date"]);
    assert_eq!(IdentifierKind::parse("credit_card").map(IdentifierKind::placeholder), Some("CARD"));
    assert_eq!(IdentifierKind::Person.placeholder(), "NAME");
    assert_eq!(IdentifierKind::parse("zip"), None);
    assert_eq!(Kinds::default_mask().iter().count(), 11);
}

mod whole_words {
    use proptest::prelude::*;

    use super::*;
    use crate::text::unicode::is_word_char;

    /// Letters of the scripts the analyser knows (Latin with its diacritics, Greek,
    /// Cyrillic, Arabic with harakat, Hebrew, Devanagari with its signs, CJK, Thai), a
    /// combining acute, and ASCII.
    const LETTERS: &[&str] = &[
        "abcdefghijklmnopqrstuvwxyz",
        "ABCDEFGHIJKLMNOPQRSTUVWXYZ",
        "ćčđšžáéíóúñøåæßłőűçğışÇĞİŞ",
        "ĆČĐŠŽÁÉÍÓÚÑØÅÆŁŐŰ",
        "αβγδεζηθικλμνξοπρστυφχψωΑΒΓΔ",
        "абвгдежзийклмнопрстуфхцчшщыэюяАБВГДЖЗИКЛМ",
        "ابتثجحخدذرزسشصضطظعغفقكلمنهوي\u{64e}\u{650}\u{652}",
        "אבגדהוזחטיכלמנסעפצקרשת",
        "कखगघचछजझटठडढतथदधनपफबभमयरलवशसह\u{93e}\u{93f}\u{94d}",
        "王李张刘陈杨黄赵周吴",
        "กขคงจฉชซญดตถทธนบปผพฟภมยรลวศษสหอฮ",
        "e\u{301}",
    ];

    /// What a name may be written beside: cues, words and numbers of each kind.
    const PIECES: &[&str] = &[
        "Mr. ",
        "Mrs. ",
        "Dr. ",
        "Patient: ",
        "Name: ",
        " and ",
        ", ",
        ". ",
        " ",
        "\n",
        "call ",
        "SSN ",
        "DOB: ",
        "at ",
        "Apt. ",
        "Barbara",
        "Smith",
        "John",
        "Maria",
        "Garcia",
        "McCray",
        "O'Brien",
        "Street",
        "Avenue",
        "u. ",
        "12",
        "415-555-0132",
        "078-05-1123",
        "2000-04-16",
        "11:34:35",
        "ada@example.com",
        "4012-8888-8888-1881",
    ];

    fn word() -> impl Strategy<Value = String> {
        (0..LETTERS.len(), proptest::collection::vec(any::<prop::sample::Index>(), 1..8)).prop_map(|(script, picks)| {
            let letters: Vec<char> = LETTERS[script].chars().collect();
            picks.iter().map(|i| letters[i.index(letters.len())]).collect()
        })
    }

    fn piece() -> impl Strategy<Value = String> {
        prop_oneof![word(), (0..PIECES.len()).prop_map(|i| PIECES[i].to_owned())]
    }

    /// The placeholders of a masked text (`[NAME-1]`), with their byte offsets.
    fn placeholders(masked: &str) -> Vec<(usize, &str)> {
        let re = regex::Regex::new(r"\[(?:SSN|PHONE|EMAIL|MRN|DOB|CARD|IP|URL|PASSPORT|NPI|ADDRESS|NAME|DATE)-\d+\]").unwrap();
        re.find_iter(masked).map(|m| (m.start(), m.as_str())).collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// No letter of a detected value survives next to its placeholder: every span
        /// starts and ends at a word's edge, in every script, and the masked text has
        /// no word character glued to a placeholder that the text had glued to the value.
        #[test]
        fn a_mask_covers_whole_words(pieces in proptest::collection::vec(piece(), 1..24)) {
            let text: String = pieces.concat();
            let spans = scan(&text, Kinds::ALL);
            for s in &spans {
                let before = text[..s.start].chars().next_back();
                let after = text[s.end..].chars().next();
                prop_assert!(!before.is_some_and(is_word_char), "{:?} starts inside a word of {:?}", &text[s.start..s.end], text);
                prop_assert!(!after.is_some_and(is_word_char), "{:?} ends inside a word of {:?}", &text[s.start..s.end], text);
            }
            let masked = mask(&text, Kinds::ALL).text;
            for (at, placeholder) in placeholders(&masked) {
                let before = masked[..at].chars().next_back();
                let after = masked[at + placeholder.len()..].chars().next();
                prop_assert!(!before.is_some_and(is_word_char) && !after.is_some_and(is_word_char), "{placeholder} glued to a letter in {masked:?} (from {text:?})");
            }
        }
    }
}
