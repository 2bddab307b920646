"""Scoring one `POST /v1/collections/{id}/research` result (ResearchResult in
../shared/specs/agentlex.openapi.json) against a question of questions.json.

Pure functions of the result, the question's expected pages and a page-text lookup, so
the harness's checks are tested on canned results (test_score.py) before any server runs.
What is measured, per question:

  recall         expected pages among `sources` (document id, page n), and among the cited ones
  citations      every [n] in the answer resolves to a source; the distinct markers in order
                 of first use are 1, 2, …, k; sources are numbered 1..N; `cited` agrees with
                 the markers; no compound marker ([1, 2], [1-3]) is left in the answer
  quotes         verification.verified / total, and whether the counts agree with the quote
                 list; each quote the server calls verified is looked up on its cited page
                 here too (independently), and each one it rejects as well
  claims         verification.counts by status; the counts against the claim list; every
                 claim's sources resolve; each evidence span is looked up on a cited page;
                 each claim's offsets point at its sentence in the answer
  facts          the question's key facts found in the answer (a loose measure: an answer
                 may state a fact in other words)

Standard library only.
"""
import re
import unicodedata

STATUSES = ("supported", "partial", "unsupported", "uncited", "unchecked")
VERIFIED = ("exact", "normalized_exact")
MARKER = re.compile(r"\[(\d+)\]")
COMPOUND = re.compile(r"\[\s*\d+\s*(?:[,;–—-]\s*\d+\s*)+\]")
# Arabic harakat, tanwin, shadda, sukun, superscript alef, Quranic marks; tatweel.
ARABIC_MARKS = re.compile("[\u0610-\u061a\u064b-\u065f\u0670\u06d6-\u06ed\u0640]")
QUOTES = str.maketrans({"“": '"', "”": '"', "„": '"', "«": '"', "»": '"', "‘": "'", "’": "'", "‚": "'"})


def norm(text):
    """The form both sides are compared in: NFKC, Arabic marks, soft hyphens and
    zero-width characters removed, line-break hyphenation joined, curly quotes straight,
    case folded, whitespace runs as one space."""
    t = unicodedata.normalize("NFKC", text or "")
    t = ARABIC_MARKS.sub("", t)
    t = re.sub("[\u00ad\u200b-\u200f\u2060\ufeff]", "", t)
    t = re.sub(r"(\w)-\s*\n\s*(\w)", r"\1\2", t)
    t = t.translate(QUOTES).casefold()
    return re.sub(r"\s+", " ", t).strip()


def strip_markers(text):
    return re.sub(r"\s*\[\d+\]", "", text or "")


def page_key(doc_id, n):
    return f"{doc_id}#{n}"


def citations(result):
    """The citation-integrity checks of one result; `valid` is all of them together."""
    answer = result.get("answer") or ""
    sources = result.get("sources") or []
    markers = [int(m) for m in MARKER.findall(answer)]
    numbers = [s.get("n") for s in sources]
    first_use = list(dict.fromkeys(markers))
    unresolved = sorted({m for m in markers if m not in numbers})
    cited_flag_wrong = [s.get("n") for s in sources if bool(s.get("cited")) != (s.get("n") in markers)]
    compound = COMPOUND.findall(answer)
    out = {
        "markers": len(markers),
        "distinct": len(first_use),
        "unresolved": unresolved,
        "dense_in_order": first_use == list(range(1, len(first_use) + 1)),
        "sources_numbered": numbers == list(range(1, len(sources) + 1)),
        "cited_flag_wrong": cited_flag_wrong,
        "compound": compound,
    }
    out["valid"] = (not unresolved and out["dense_in_order"] and out["sources_numbered"]
                    and not cited_flag_wrong and not compound)
    return out


def recall(result, expected):
    """expected: page keys (doc id # page n) that answer the question."""
    sources = result.get("sources") or []
    markers = set(int(m) for m in MARKER.findall(result.get("answer") or ""))
    found = {page_key(s["document"]["id"], s["page"]["n"]) for s in sources}
    cited = {page_key(s["document"]["id"], s["page"]["n"]) for s in sources if s.get("n") in markers}
    exp = set(expected)
    return {
        "expected": len(exp),
        "in_sources": len(exp & found),
        "in_cited": len(exp & cited),
        "recall": len(exp & found) / len(exp) if exp else None,
        "cited_recall": len(exp & cited) / len(exp) if exp else None,
    }


def _source_pages(result, numbers):
    by_n = {s.get("n"): s for s in result.get("sources") or []}
    return [(by_n[n]["document"]["id"], by_n[n]["page"]["n"]) for n in numbers if n in by_n]


def _on_pages(span, pages, page_text):
    needle = norm(span)
    return bool(needle) and any(needle in norm(page_text(d, n)) for d, n in pages)


def quotes(result, page_text):
    v = result.get("verification") or {}
    qs = v.get("quotes") or []
    said_verified = [q for q in qs if q.get("status") in VERIFIED]
    confirmed, not_on_page, rejected_but_on_page = 0, [], []
    for q in qs:
        pages = _source_pages(result, [q.get("source")] if q.get("source") is not None else [])
        on = _on_pages(q.get("quote"), pages, page_text) if pages else False
        if q.get("status") in VERIFIED:
            if on:
                confirmed += 1
            else:
                not_on_page.append(q.get("quote"))
        elif on and q.get("status") == "unverified":
            rejected_but_on_page.append(q.get("quote"))
    return {
        "verified": v.get("verified", 0),
        "total": v.get("total", 0),
        "listed": len(qs),
        "counts_agree": v.get("verified") == len(said_verified) and v.get("total") == len(qs),
        "confirmed": confirmed,
        "verified_not_on_page": not_on_page,
        "unverified_but_on_page": rejected_but_on_page,
        "by_status": {s: sum(1 for q in qs if q.get("status") == s) for s in {q.get("status") for q in qs}},
    }


def claims(result, page_text):
    v = result.get("verification") or {}
    cs = v.get("claims") or []
    counts = v.get("counts") or {}
    answer = result.get("answer") or ""
    numbers = {s.get("n") for s in result.get("sources") or []}
    tally = {s: sum(1 for c in cs if c.get("status") == s) for s in STATUSES}
    evidence_checked, evidence_off_page, offsets_wrong, sources_unresolved, uncited_with_sources = 0, [], [], [], []
    for c in cs:
        if any(n not in numbers for n in c.get("sources") or []):
            sources_unresolved.append(c.get("text"))
        if c.get("status") == "uncited" and c.get("sources"):
            uncited_with_sources.append(c.get("text"))
        if c.get("evidence"):
            evidence_checked += 1
            if not _on_pages(c["evidence"], _source_pages(result, c.get("sources") or []), page_text):
                evidence_off_page.append(c["evidence"])
        start, end = c.get("start"), c.get("end")
        sentence = answer[start:end] if isinstance(start, int) and isinstance(end, int) else ""
        if norm(strip_markers(sentence)) != norm(c.get("text")) and norm(c.get("text")) not in norm(strip_markers(sentence)):
            offsets_wrong.append({"text": c.get("text"), "start": start, "end": end, "at_offsets": sentence})
    return {
        "counts": {s: counts.get(s, 0) for s in STATUSES} | {"total": counts.get("total", 0)},
        "listed": len(cs),
        "counts_agree": all(counts.get(s, 0) == tally[s] for s in STATUSES) and counts.get("total") == len(cs),
        "evidence": evidence_checked,
        "evidence_off_page": evidence_off_page,
        "offsets_wrong": offsets_wrong,
        "sources_unresolved": sources_unresolved,
        "uncited_with_sources": uncited_with_sources,
    }


def facts(result, wanted):
    answer = norm(result.get("answer") or "")
    hit = [any(norm(alt) in answer for alt in alts) for alts in wanted]
    return {"wanted": len(wanted), "found": sum(hit)}


def score(result, expected, wanted_facts, page_text):
    """Everything measured on one result. page_text(doc_id, n) → the page's text."""
    return {
        "recall": recall(result, expected),
        "citations": citations(result),
        "quotes": quotes(result, page_text),
        "claims": claims(result, page_text),
        "facts": facts(result, wanted_facts),
        "steps": (result.get("timings") or {}).get("steps"),
        "server_ms": (result.get("timings") or {}).get("totalMs"),
        "sources": len(result.get("sources") or []),
        "answer_chars": len(result.get("answer") or ""),
        "answer_text_chars": len(MARKER.sub("", result.get("answer") or "").strip()),
        "queries": len(result.get("queries") or []),
    }


def problems(s):
    """The checks a result failed, as short strings: what the report lists as possible bugs."""
    out = []
    c, q, k = s["citations"], s["quotes"], s["claims"]
    if not s.get("answer_chars"):
        out.append("the answer is empty")
    elif not s.get("answer_text_chars"):
        out.append("the answer is only citation markers")
    elif not k["listed"]:
        out.append("a non-empty answer with no claims")
    if c["unresolved"]:
        out.append(f"markers {c['unresolved']} resolve to no source")
    if not c["dense_in_order"]:
        out.append("markers not dense in order of first use")
    if not c["sources_numbered"]:
        out.append("sources not numbered 1..N")
    if c["cited_flag_wrong"]:
        out.append(f"cited flag disagrees with the answer for sources {c['cited_flag_wrong']}")
    if c["compound"]:
        out.append(f"compound markers left in the answer: {c['compound'][:3]}")
    if not q["counts_agree"]:
        out.append(f"quote counts ({q['verified']}/{q['total']}) disagree with the quote list ({q['listed']} listed, {q['by_status']})")
    if q["verified_not_on_page"]:
        out.append(f"{len(q['verified_not_on_page'])} verified quote(s) not found on the cited page: {q['verified_not_on_page'][:2]}")
    if q["unverified_but_on_page"]:
        out.append(f"{len(q['unverified_but_on_page'])} quote(s) marked unverified are on the cited page: {q['unverified_but_on_page'][:2]}")
    if not k["counts_agree"]:
        out.append(f"claim counts {k['counts']} disagree with the {k['listed']} claims listed")
    if k["evidence_off_page"]:
        out.append(f"{len(k['evidence_off_page'])} evidence span(s) not on a cited page: {k['evidence_off_page'][:2]}")
    if k["offsets_wrong"]:
        out.append(f"{len(k['offsets_wrong'])} claim(s) whose start/end do not point at the sentence: {k['offsets_wrong'][:1]}")
    if k["sources_unresolved"]:
        out.append(f"{len(k['sources_unresolved'])} claim(s) cite a source that does not exist")
    if k["uncited_with_sources"]:
        out.append(f"{len(k['uncited_with_sources'])} uncited claim(s) list sources")
    return out


# The research stream's phases in the spec's order (Event): each event kind with the phase
# it belongs to; a status event's phase is its stage's.
PHASE = {("status", "searching"): 0, "query": 1, "sources": 1, ("status", "deepening"): 1,
         ("status", "answering"): 2, "delta": 3, "answer": 4, ("status", "verifying"): 5,
         "claims": 6, "done": 7}


def stream_order(events):
    """Whether NDJSON events come in the spec's order: status searching first; queries,
    sources and deepening steps; answering; deltas; the answer; verifying; claims; done
    last, or an error as the last line. Returns a list of what is out of order."""
    out, last = [], -1
    if not events:
        return ["no events"]
    if events[0].get("type") != "status" or events[0].get("stage") != "searching":
        out.append(f"first event is {events[0].get('type')} {events[0].get('stage', '')}".strip())
    for i, e in enumerate(events):
        kind = e.get("type")
        if kind == "error":
            if i != len(events) - 1:
                out.append("an error event is not the last line")
            return out
        phase = PHASE.get((kind, e.get("stage")) if kind == "status" else kind)
        if phase is None:
            out.append(f"unknown event {kind} {e.get('stage', '')}".strip())
            continue
        if phase < last:
            out.append(f"event {i} ({(kind + ' ' + e.get('stage', '')).strip()}) after a later phase")
        last = max(last, phase)
    if events[-1].get("type") != "done":
        out.append(f"the last event is {events[-1].get('type')}, not done or error")
    return out
