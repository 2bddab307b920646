"""A long-query evaluation set built from a BEIR-layout set (SciFact by default).

Each judged query becomes a long natural-language request of 30 to 60 words, in several
sentences, with one or two of its content words in "double quotes", the way people write
to a search assistant: an opening about who asks and why, the original query, what is
wanted, and sometimes a closing. The qrels are the original ones (the request asks for
the same thing), the corpus is the same file (linked, not copied). Seeded and
deterministic: the same input and seed give the same file, byte for byte.

    python3 bench/quality/long_queries.py $EVAL_DIR/scifact OUT_DIR [--seed 22] [--split test]

OUT_DIR gets corpus.jsonl (a symlink), queries.jsonl and qrels/<split>.tsv: a BEIR-layout
directory quarry-quality and bm25s_peer.py read like any other.
"""
import argparse
import json
import os
import random
import re
import shutil

OPENINGS = [
    "I am writing a literature review for my lab and I need some help finding the right papers.",
    "Hello, I am a medical student preparing a presentation for our journal club next week.",
    "My supervisor asked me to check the evidence behind a statement we saw in a grant proposal.",
    "I'm a science journalist and I would like to verify a claim before we publish the article.",
    "We are updating the reading list for a graduate course and I am looking for good sources.",
    "Hi there, I have been trying to find research on this for a while without much luck.",
    "As part of a systematic review I am collecting studies on a fairly specific question.",
    "Our team is designing a new experiment and we want to know what has already been shown.",
]
LEADS = [
    "The statement is: {q}",
    "The claim I am interested in is the following: {q}",
    "Specifically, someone told me that {q}",
    "Here is what I want to check: {q}",
    "The question is whether it is true that {q}",
    "The paper we discussed says that {q}",
]
ASKS = [
    "Could you find the studies that support or contradict this, especially ones that talk about {w}?",
    "Please show me the articles with direct experimental evidence, ideally those that mention {w}.",
    "I would like abstracts that address this directly, in particular anything about {w}.",
    "Which publications report results on this, and what did they find regarding {w}?",
    "Can you list the papers that tested this and tell me which ones discuss {w} in detail?",
    "I need the most relevant research, preferably studies where {w} is measured.",
]
CLOSINGS = [
    "Thanks a lot in advance for your help.",
    "Recent work is preferred but older classic studies are fine too.",
    "Human studies would be best, though animal models are also useful.",
    "Please skip opinion pieces and focus on original research if possible.",
    "I only need a handful of good references to get started.",
    "Any help would be much appreciated, this is rather urgent for us.",
]
# Words never quoted: they say little on their own.
PLAIN = set(
    "about above after again against among because been before being below between both could does doing during each from further have having here into more most other over same should some such than that their them then there these they this those through under until very were what when where which while with would show shows shown lack lacks cause causes associated increase increases increased decrease decreases decreased reduce reduces reduced higher lower level levels".split()
)


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def judged_ids(qrels_path):
    ids = []
    with open(qrels_path, encoding="utf-8") as f:
        for i, line in enumerate(f):
            parts = line.rstrip("\n").split("\t")
            if i == 0 and not parts[-1].lstrip("-").isdigit():
                continue
            if parts[0] not in ids:
                ids.append(parts[0])
    return ids


def content_words(text):
    words = re.findall(r"[A-Za-z][A-Za-z0-9-]{4,}", text)
    seen = []
    for w in words:
        if w.lower() not in PLAIN and w not in seen:
            seen.append(w)
    return seen


def quoted(words):
    return " and ".join(f'"{w}"' for w in words)


def request(query, rng):
    """One long request for `query`: 30 to 60 words, one or two words quoted."""
    q = query.strip()
    if not q.endswith((".", "?", "!")):
        q += "."
    candidates = content_words(q)
    picks = rng.sample(candidates, min(len(candidates), rng.choice([1, 1, 2]))) if candidates else []
    # Quote the picked words where the query says them too, half the time.
    lead_q = q
    if picks and rng.random() < 0.5:
        lead_q = re.sub(r"\b%s\b" % re.escape(picks[0]), f'"{picks[0]}"', q, count=1)
        ask_words = quoted(picks[1:]) if len(picks) > 1 else f'"{picks[0]}"'
    else:
        ask_words = quoted(picks) if picks else "the main outcome"
    parts = [rng.choice(OPENINGS), rng.choice(LEADS).format(q=lead_q), rng.choice(ASKS).format(w=ask_words)]
    closings = rng.sample(CLOSINGS, len(CLOSINGS))
    while len(" ".join(parts).split()) < 30 and closings:
        parts.append(closings.pop())
    if rng.random() < 0.4 and closings and len(" ".join(parts + closings[-1:]).split()) <= 60:
        parts.append(closings.pop())
    text = " ".join(parts)
    if len(text.split()) > 60:  # a long query: drop the opening rather than exceed 60 words
        text = " ".join(parts[1:])
    return text


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dataset")
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=22)
    ap.add_argument("--split", default="test")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    queries = {q["_id"]: q["text"] for q in read_jsonl(os.path.join(args.dataset, "queries.jsonl"))}
    qrels = os.path.join(args.dataset, "qrels", f"{args.split}.tsv")
    os.makedirs(os.path.join(args.out, "qrels"), exist_ok=True)
    with open(os.path.join(args.out, "queries.jsonl"), "w", encoding="utf-8") as f:
        for qid in judged_ids(qrels):
            if qid in queries:
                f.write(json.dumps({"_id": qid, "text": request(queries[qid], rng)}, ensure_ascii=False) + "\n")
    shutil.copyfile(qrels, os.path.join(args.out, "qrels", f"{args.split}.tsv"))
    corpus = os.path.join(args.out, "corpus.jsonl")
    if os.path.lexists(corpus):
        os.remove(corpus)
    os.symlink(os.path.abspath(os.path.join(args.dataset, "corpus.jsonl")), corpus)


if __name__ == "__main__":
    main()
