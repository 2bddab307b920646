//! The engine's text analysis, the same analyser at index and query time: BM25 terms of
//! 100-word English passages (SciFact), of an Arabic paragraph plain and vocalised, and of
//! queries; the query parser (phrases, intent); and the lighter match normalisation that
//! phrase checks run over whole pages.
//!
//!     cargo bench -p quarry-bench --bench tokenize
//!
//! Throughput is in bytes of input text. The embedding models' own tokenizers are in
//! `embed.rs` (group `tokenize`).

#[path = "../common/mod.rs"]
mod common;

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use quarry_index::text;

/// A paragraph about diabetes written for this bench (about 100 words).
const ARABIC: &str = "مرض السكري حالة مزمنة تحدث عندما لا ينتج البنكرياس كمية كافية من الإنسولين \
أو عندما لا يستطيع الجسم استخدام الإنسولين الذي ينتجه بفعالية. ومن أعراضه الشائعة العطش الشديد \
وكثرة التبول والتعب وفقدان الوزن دون سبب واضح وتشوش الرؤية وبطء التئام الجروح. ويؤدي ارتفاع \
السكر في الدم على المدى الطويل إلى أضرار في القلب والأوعية الدموية والكلى والأعصاب والعينين. \
ويمكن الوقاية من النوع الثاني أو تأخيره باتباع نظام غذائي صحي وممارسة النشاط البدني بانتظام \
والحفاظ على وزن طبيعي وتجنب التدخين. ويعتمد العلاج على قياس مستوى السكر بانتظام وتناول الأدوية \
أو الإنسولين حسب توجيهات الطبيب المختص.";

/// The first sentences of the same paragraph with their vowel marks, as classical and
/// religious texts are written: every mark is one more character the analyser drops.
const ARABIC_VOCALISED: &str = "مَرَضُ السُّكَّرِيِّ حَالَةٌ مُزْمِنَةٌ تَحْدُثُ عِنْدَمَا لَا يُنْتِجُ البَنْكِرْيَاسُ \
كَمِّيَّةً كَافِيَةً مِنَ الإِنْسُولِينِ، أَوْ عِنْدَمَا لَا يَسْتَطِيعُ الجِسْمُ اسْتِخْدَامَ الإِنْسُولِينِ الَّذِي \
يُنْتِجُهُ بِفَعَّالِيَّةٍ. وَمِنْ أَعْرَاضِهِ الشَّائِعَةِ العَطَشُ الشَّدِيدُ وَكَثْرَةُ التَّبَوُّلِ وَالتَّعَبُ وَفُقْدَانُ \
الوَزْنِ دُونَ سَبَبٍ وَاضِحٍ وَتَشَوُّشُ الرُّؤْيَةِ وَبُطْءُ الْتِئَامِ الجُرُوحِ.";

/// Paragraphs in scripts written without spaces, written for this bench: each run becomes
/// overlapping bigrams of its grapheme clusters (`text/unspaced.rs`).
const JAPANESE: &str = "糖尿病は、膵臓が十分なインスリンを作れないか、体がインスリンをうまく使えないときに起こる慢性の病気です。\
よくある症状は、強いのどの渇き、頻尿、疲れやすさ、原因のはっきりしない体重減少、目のかすみです。\
長く血糖値が高いままだと、心臓や血管、腎臓、神経、目が傷つきます。";
const THAI: &str = "โรคเบาหวานเป็นโรคเรื้อรังที่เกิดขึ้นเมื่อตับอ่อนสร้างอินซูลินได้ไม่เพียงพอ \
หรือร่างกายไม่สามารถใช้อินซูลินได้อย่างมีประสิทธิภาพ อาการที่พบบ่อยคือกระหายน้ำมากและปัสสาวะบ่อย";

fn analyse(c: &mut Criterion) {
    let english = common::passages(32, 100);
    let mut g = c.benchmark_group("analyse");
    let bytes: usize = english.iter().map(String::len).sum();
    g.throughput(Throughput::Bytes(bytes as u64));
    g.bench_function("english-32x100w", |b| b.iter(|| english.iter().map(|p| text::terms(black_box(p)).len()).sum::<usize>()));
    for (name, arabic) in [("arabic-plain", ARABIC), ("arabic-vocalised", ARABIC_VOCALISED), ("japanese", JAPANESE), ("thai", THAI)] {
        g.throughput(Throughput::Bytes(arabic.len() as u64));
        g.bench_function(name, |b| b.iter(|| text::terms(black_box(arabic))));
    }
    g.finish();
}

fn queries(c: &mut Criterion) {
    let mut g = c.benchmark_group("query");
    for (i, q) in common::QUERIES.iter().enumerate() {
        g.throughput(Throughput::Bytes(q.len() as u64));
        g.bench_function(BenchmarkId::new("terms", i), |b| b.iter(|| text::terms(black_box(q))));
        g.bench_function(BenchmarkId::new("parse", i), |b| b.iter(|| text::parse(black_box(q))));
    }
    g.finish();
}

/// What a quoted phrase costs per page: the page normalised, then searched.
fn match_normalisation(c: &mut Criterion) {
    let english = common::passages(1, 250).remove(0);
    let mut g = c.benchmark_group("normalize-for-match");
    for (name, page) in [("english-250w", english.as_str()), ("arabic-vocalised", ARABIC_VOCALISED)] {
        g.throughput(Throughput::Bytes(page.len() as u64));
        g.bench_function(name, |b| b.iter(|| text::normalize_for_match(black_box(page))));
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
    targets = analyse, queries, match_normalisation
}
criterion_main!(benches);
