//! Every script searchable: pages in Japanese, Chinese, Korean, Thai, Hindi, Russian and
//! Arabic, each found through the API by a short query in its own script, its
//! highlights at the right character offsets of the page text.
//!
//! The pages were written for this test. Unspaced scripts (CJK, Thai) are indexed as
//! bigrams of their characters, so two to four characters from the middle of a clause
//! find the page; the others are words with their marks.

use serde_json::{json, Value};

use super::collections::{add, create_collection, post};
use super::plans::RAISED;
use super::server::TestServer;

/// (title, page text, queries: each with the words a highlight must mark).
const PAGES: &[(&str, &str, &[&str])] = &[
    ("ja", "🗼 東京は日本の首都で、多くの美術館と古い寺があります。春には桜が咲き、多くの人が花見に出かけます。", &["美術館", "花見", "首都"]),
    ("zh", "长城是中国古代的伟大建筑，绵延数千公里。每年都有许多游客来参观长城。", &["长城", "游客", "伟大建筑"]),
    ("ko", "부산은 한국의 남쪽에 있는 항구 도시입니다. 해운대 해수욕장은 여름에 사람들로 붐빕니다.", &["부산", "해수욕장", "항구"]),
    ("th", "เชียงใหม่เป็นเมืองใหญ่ทางภาคเหนือของประเทศไทย มีวัดเก่าแก่มากมายและอากาศเย็นในฤดูหนาว", &["วัด", "เชียงใหม่", "อากาศ"]),
    ("hi", "गंगा भारत की सबसे पवित्र नदी है। लाखों लोग हर साल इसके किनारे स्नान करने आते हैं।", &["नदी", "पवित्र", "स्नान"]),
    ("ru", "Байкал — самое глубокое озеро на планете. Зимой его поверхность покрывается толстым льдом.", &["озеро", "Байкал"]),
    ("ar", "القاهرة هي عاصمة مصر وأكبر مدنها. يمر نهر النيل عبر المدينة ويقسمها إلى ضفتين.", &["النيل", "عاصمة"]),
];

fn search(s: &TestServer, key: &str, col: &str, body: Value) -> Value {
    let r = post(s, &format!("/v1/collections/{col}/search"), key, &body);
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()
}

#[test]
fn pages_in_every_script_are_found_by_short_queries_with_exact_highlights() {
    // Some thirty searches in a second: more than the default plan's burst.
    let s = TestServer::with_config(RAISED);
    let (_, key) = s.signup("scripts@example.com");
    let col = create_collection(&s, &key, "scripts");
    for (title, text, _) in PAGES {
        add(&s, &key, &col, &json!({"title": title, "text": text}));
    }
    for (title, text, queries) in PAGES {
        let page: Vec<char> = text.chars().collect();
        for q in *queries {
            let r = search(&s, &key, &col, json!({"query": q, "mode": "keyword", "expand": false}));
            let results = r["results"].as_array().unwrap();
            let titles: Vec<&str> = results.iter().map(|x| x["document"]["title"].as_str().unwrap_or("")).collect();
            assert_eq!(titles, [*title], "{q:?} finds its page alone: {r}");
            // The stored page text is the text given, so offsets index `page`.
            let doc = results[0]["document"]["id"].as_str().unwrap();
            let stored = s.get(&format!("/v1/collections/{col}/documents/{doc}/pages/0"), Some(&key)).json();
            assert_eq!(stored["page"]["text"].as_str(), Some(*text));
            let p = &results[0]["passages"][0];
            let (from, to) = (p["offsets"]["start"].as_u64().unwrap(), p["offsets"]["end"].as_u64().unwrap());
            let marked: Vec<String> = p["highlights"]
                .as_array()
                .unwrap()
                .iter()
                .map(|h| {
                    let (a, b) = (h["start"].as_u64().unwrap(), h["end"].as_u64().unwrap());
                    assert!(from <= a && a < b && b <= to, "{h} outside the passage {from}..{to}");
                    page[a as usize..b as usize].iter().collect()
                })
                .collect();
            assert!(marked.iter().any(|m| m == q), "{q:?} is marked in {title}: {marked:?} ({p})");
        }
    }
    // A phrase of an unspaced script is found inside its clause, and only in order.
    let r = search(&s, &key, &col, json!({"query": "\"美術館\"", "mode": "keyword", "expand": false}));
    assert_eq!(r["results"][0]["document"]["title"], "ja", "{r}");
    assert_eq!(r["warnings"], json!([]), "the page holds the phrase: {r}");
    let r = search(&s, &key, &col, json!({"query": "\"首都美術館\"", "mode": "keyword", "expand": false}));
    let warned = r["warnings"].as_array().unwrap().iter().any(|w| w.as_str().unwrap().contains("No page holds the quoted phrase"));
    assert!(warned, "首都 and 美術館 are on the page, not side by side: {r}");
}
