"""The benchmark's own checks, run without a server:

    python3 -m unittest discover -s bench/research -p 'test_*.py'

score.py on canned ResearchResult bodies shaped per the spec (testdata/good.json passes
every check; testdata/bad.json breaks each one once), and questions.json against the
bundled documents (every named document exists, every page is in range, every key fact is
on a named page in at least one accepted form)."""
import json
import re
import unittest
from pathlib import Path

import score

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

PAGES = {
    ("doc_ssa", 0): "4.3 Breach Notice. The Provider shall notify the Customer of any unauthorised access to Customer Data: "
                    "(i) without undue delay and in any event within seventy-two hours of discovery; and",
    ("doc_ssa", 1): "6.1 Governing Law. This Agreement is governed by the laws of the State of Oregon, without regard to",
    ("doc_msa", 1): "2.1 Provider shall permit one audit per year on reasonable notice.",
    ("doc_msa", 2): "3.1 Records are kept for three years.",
}


def page_text(doc, n):
    return PAGES.get((doc, n), "")


def load(name):
    return json.loads((HERE / "testdata" / name).read_text())


class GoodResult(unittest.TestCase):
    def setUp(self):
        self.s = score.score(load("good.json"), ["doc_ssa#0", "doc_ssa#2"], [["72 hours", "seventy-two hours"], ["Oregon"], ["Delaware"]], page_text)

    def test_every_check_passes(self):
        self.assertEqual(score.problems(self.s), [])
        self.assertTrue(self.s["citations"]["valid"])

    def test_recall_counts_the_expected_pages_among_sources_and_cited(self):
        r = self.s["recall"]
        self.assertEqual((r["expected"], r["in_sources"], r["in_cited"]), (2, 1, 1))
        self.assertEqual(r["recall"], 0.5)

    def test_quotes_are_confirmed_on_the_cited_page(self):
        q = self.s["quotes"]
        self.assertEqual((q["verified"], q["total"], q["confirmed"]), (1, 1, 1))

    def test_claims_counts_and_evidence(self):
        c = self.s["claims"]
        self.assertEqual(c["counts"]["supported"], 1)
        self.assertEqual(c["counts"]["uncited"], 1)
        self.assertEqual(c["evidence"], 2)
        self.assertEqual(c["offsets_wrong"], [])

    def test_facts_match_in_any_accepted_form(self):
        self.assertEqual(self.s["facts"], {"wanted": 3, "found": 2})


class BadResult(unittest.TestCase):
    def setUp(self):
        self.s = score.score(load("bad.json"), ["doc_msa#1"], [], page_text)
        self.p = " | ".join(score.problems(self.s))

    def test_a_marker_past_the_sources_is_unresolved(self):
        self.assertEqual(self.s["citations"]["unresolved"], [7])
        self.assertIn("markers [7] resolve to no source", self.p)

    def test_numbering_that_starts_at_2_is_not_dense_in_order(self):
        self.assertFalse(self.s["citations"]["dense_in_order"])
        self.assertFalse(self.s["citations"]["sources_numbered"])  # 1, 2, 4

    def test_cited_flags_and_compound_markers(self):
        self.assertEqual(self.s["citations"]["cited_flag_wrong"], [1])
        self.assertEqual(self.s["citations"]["compound"], ["[1, 2]"])
        self.assertFalse(self.s["citations"]["valid"])

    def test_a_verified_quote_not_on_its_page_and_a_rejected_one_that_is(self):
        q = self.s["quotes"]
        self.assertFalse(q["counts_agree"])  # verified 2, but one quote is exact
        self.assertEqual(q["verified_not_on_page"], ["audits may happen at any time"])
        self.assertEqual(q["unverified_but_on_page"], ["permit one audit per year"])

    def test_claims_that_disagree_with_their_counts_offsets_and_sources(self):
        c = self.s["claims"]
        self.assertFalse(c["counts_agree"])
        self.assertEqual(c["evidence_off_page"], ["audit once a year"])
        self.assertEqual(len(c["offsets_wrong"]), 1)
        self.assertEqual(len(c["sources_unresolved"]), 1)
        self.assertEqual(len(c["uncited_with_sources"]), 1)
        self.assertIn("evidence span(s) not on a cited page", self.p)


class Normalise(unittest.TestCase):
    def test_case_whitespace_quotes_harakat_and_hyphenation_are_set_aside(self):
        self.assertEqual(score.norm("  “Be  it\nENACTED”  "), '"be it enacted"')
        self.assertEqual(score.norm("الْعِلْمِ"), "العلم")
        self.assertEqual(score.norm("hyphen-\nation"), "hyphenation")

    def test_a_paraphrase_does_not_match(self):
        self.assertNotIn(score.norm("audits at any time"), score.norm(PAGES[("doc_msa", 1)]))


def sample_pages(corpus, title):
    """The pages of a bundled document as the server splits them: its `pages`, else its
    text split at form feeds (no sample text uses `--- page N ---` lines)."""
    for f in sorted((ROOT / "samples" / corpus).glob("*.json")):
        d = json.loads(f.read_text())
        if d.get("title") == title:
            if d.get("pages"):
                return [p["text"] if isinstance(p, dict) else p for p in d["pages"]]
            return d["text"].split("\f")
    return None


class Questions(unittest.TestCase):
    spec = json.loads((HERE / "questions.json").read_text())

    def test_at_least_30_sample_questions_and_every_kind(self):
        qs = self.spec["questions"]
        self.assertGreaterEqual(sum(q["corpus"] != "scifact" for q in qs), 30)
        self.assertEqual({q["kind"] for q in qs}, {"single", "multi", "partial"})
        self.assertEqual(len({q["id"] for q in qs}), len(qs))
        self.assertTrue(all(q.get("absent") for q in qs if q["kind"] == "partial"))

    def test_every_named_page_exists_and_every_fact_is_on_one(self):
        for q in self.spec["questions"]:
            if q["corpus"] == "scifact":
                continue
            texts = []
            for p in q["pages"]:
                pages = sample_pages(self.spec["corpora"][q["corpus"]]["sample"], p["document"])
                self.assertIsNotNone(pages, f"{q['id']}: no document {p['document']!r}")
                self.assertLess(p["page"], len(pages), f"{q['id']}: {p['document']} has {len(pages)} pages")
                texts.append(score.norm(pages[p["page"]]))
            for alts in q.get("facts") or []:
                self.assertTrue(any(score.norm(a) in t for a in alts for t in texts), f"{q['id']}: {alts} is on none of its pages")

    def test_scifact_claims_name_their_judged_abstracts(self):
        data = ROOT / self.spec["corpora"]["scifact"]["dataset"]
        titles = {json.loads(line)["_id"]: json.loads(line)["title"] for line in (data / "corpus.jsonl").read_text().splitlines()}
        claims = {json.loads(line)["_id"]: json.loads(line)["text"] for line in (data / "queries.jsonl").read_text().splitlines()}
        qrels = {}
        for line in (data / "qrels/test.tsv").read_text().splitlines()[1:]:
            qid, doc, _ = line.split("\t")
            qrels.setdefault(qid, set()).add(titles[doc])
        for q in (q for q in self.spec["questions"] if q["corpus"] == "scifact"):
            self.assertIn(claims[q["claim"]], q["question"])
            self.assertEqual({p["document"] for p in q["pages"]}, qrels[q["claim"]], q["id"])


if __name__ == "__main__":
    unittest.main()


class Report(unittest.TestCase):
    """run.py's summary and report on records made from the canned results."""

    def test_the_report_sums_each_tier_and_lists_the_failed_checks(self):
        import run
        records = []
        for i, (name, tier) in enumerate([("good.json", "fast"), ("bad.json", "fast"), ("good.json", "deep")]):
            result = load(name)
            expected = ["doc_ssa#0"] if name == "good.json" else ["doc_msa#1"]
            s = score.score(result, expected, [["Oregon"]], page_text)
            records.append({"id": f"q{i}", "corpus": "legal", "kind": "single", "tier": tier, "outcome": "ok", "seconds": 10.0 + i,
                            "result": result, "expected": expected, "search_hits": 1, "score": s, "problems": score.problems(s)})
        records.append({"id": "q9", "corpus": "medical", "kind": "partial", "tier": "fast", "outcome": "timeout", "seconds": 600.0, "search_hits": 0})
        fast = run.summarize([r for r in records if r["tier"] == "fast"])
        self.assertEqual((fast["questions"], fast["ok"], fast["timeouts"]), (3, 2, 1))
        self.assertEqual(fast["citations_valid"], 1)
        self.assertEqual((fast["quotes_verified"], fast["quotes_total"]), (3, 3))
        self.assertEqual(fast["claims"]["supported"], 3)
        self.assertEqual(fast["page_recall"], 1.0)
        meta = {"date": "2026-12-01", "command": "x", "commit": "abc", "cpus": 2, "load_before": "1", "load_after": "1",
                "binary": "b", "local_model": "m", "embedder": "e", "selected": 4, "in_set": 53, "timeout": 600, "k": 8,
                "collections": {"legal": {"documents": 7, "seconds": 1.0}}}
        md = run.report(meta, records)
        self.assertIn("| fast | 3 | 2 | 2 | 0 | 1 |", md)
        self.assertIn("| deep | 1 | 1 |", md)
        self.assertIn("- q1 (fast): markers [7] resolve to no source", md)
        self.assertIn("- q9 (fast): timeout after 600.0 s", md)


class StreamOrder(unittest.TestCase):
    def test_the_spec_order_passes(self):
        ev = [{"type": "status", "stage": "searching"}, {"type": "query", "query": "q", "mode": "hybrid", "results": 3},
              {"type": "sources", "sources": []}, {"type": "status", "stage": "deepening", "step": 1},
              {"type": "query", "query": "q2", "mode": "hybrid", "results": 1}, {"type": "sources", "sources": []},
              {"type": "status", "stage": "answering"}, {"type": "delta", "text": "a"}, {"type": "delta", "text": "b"},
              {"type": "answer", "text": "ab"}, {"type": "status", "stage": "verifying"},
              {"type": "claims", "counts": {}, "summary": ""}, {"type": "done", "result": {}}]
        self.assertEqual(score.stream_order(ev), [])
        self.assertEqual(score.stream_order(ev[:3] + [{"type": "error", "code": "llm_failed", "message": "x"}]), [])

    def test_out_of_order_and_unfinished_streams_are_reported(self):
        ev = [{"type": "status", "stage": "searching"}, {"type": "answer", "text": "a"}, {"type": "delta", "text": "a"}]
        self.assertEqual(score.stream_order(ev), ["event 2 (delta) after a later phase", "the last event is delta, not done or error"])
        ev = [{"type": "query"}, {"type": "error"}, {"type": "done"}]
        self.assertEqual(score.stream_order(ev), ["first event is query", "an error event is not the last line"])


class DegenerateAnswers(unittest.TestCase):
    def test_an_answer_of_markers_alone_is_reported(self):
        r = load("good.json")
        r["answer"], r["verification"]["claims"], r["verification"]["quotes"] = "[1]", [], []
        r["verification"].update(verified=0, total=0, counts={s: 0 for s in score.STATUSES} | {"total": 0})
        for s in r["sources"]:
            s["cited"] = s["n"] == 1
        p = score.problems(score.score(r, [], [], page_text))
        self.assertEqual(p, ["the answer is only citation markers"])
