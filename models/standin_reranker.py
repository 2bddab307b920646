#!/usr/bin/env python3
"""A stand-in cross-encoder for testing Quarry's reranker code path — NOT a reranker.

No cross-encoder weights can be had from the registries Quarry installs from, so the
Rust tests exercise the reranker slot with a model of the same architecture (BERT
encoder + [CLS] pooler + one-logit classifier) whose weights are seeded random
numbers. Its scores mean nothing; what the test checks is that Rust/ort computes the
same scores as an independent numpy forward pass (models/reference.py's BERT).

  python models/standin_reranker.py OUT_DIR
writes OUT_DIR/standin-reranker.onnx and OUT_DIR/expected.json
(pairs, the token ids the shipped MiniLM tokenizer gives them, expected logits).
"""
from __future__ import annotations

import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import convert  # noqa: E402
import packaged  # noqa: E402
import reference  # noqa: E402

PAIRS = [
    ("how do vaccines work", "Vaccines train the immune system to recognise a pathogen."),
    ("how do vaccines work", "The stock market closed higher on Friday."),
    ("capital of france", "Paris is the capital and largest city of France."),
    ("capital of france", "A short note."),
]


def tiny_bert(vocab: int, seed: int = 7) -> packaged.Bert:
    rng = np.random.default_rng(seed)
    H, NH, F, L = 32, 2, 64, 2
    w = lambda *s: (rng.standard_normal(s) * 0.2).astype(np.float32)
    layers = [
        packaged.Layer(q_w=w(H, H), q_b=w(H), k_w=w(H, H), k_b=w(H), v_w=w(H, H), v_b=w(H), o_w=w(H, H), o_b=w(H),
                       aln_w=1 + w(H), aln_b=w(H), fi_w=w(F, H), fi_b=w(F), fo_w=w(H, F), fo_b=w(H),
                       oln_w=1 + w(H), oln_b=w(H))
        for _ in range(L)
    ]
    return packaged.Bert(hidden=H, heads=NH, ffn=F, eps=1e-12, word=w(vocab, H), pos=w(512, H), type0=w(H),
                         eln_w=1 + w(H), eln_b=w(H), layers=layers)


def main() -> None:
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    from onnx import TensorProto, helper, numpy_helper
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(os.path.join(HERE, "all-MiniLM-L6-v2.tokenizer.json"))
    bert = tiny_bert(tok.get_vocab_size())
    rng = np.random.default_rng(11)
    H = bert.hidden
    pool_w, pool_b = (rng.standard_normal((H, H)) * 0.3).astype(np.float32), (rng.standard_normal(H) * 0.1).astype(np.float32)
    cls_w, cls_b = (rng.standard_normal((H, 1)) * 0.5).astype(np.float32), np.array([0.25], dtype=np.float32)

    model = convert.build_bert_onnx(bert, "standin-reranker")
    g = model.graph
    for name, arr in [("pooler.w", pool_w), ("pooler.b", pool_b), ("cls.w", cls_w), ("cls.b", cls_b),
                      ("cls_index", np.array(0, dtype=np.int64))]:
        g.initializer.append(numpy_helper.from_array(arr, name))
    g.node.extend([
        helper.make_node("Gather", ["last_hidden_state", "cls_index"], ["cls"], axis=1, name="head/Gather"),
        helper.make_node("MatMul", ["cls", "pooler.w"], ["pool_mm"], name="head/pool/MatMul"),
        helper.make_node("Add", ["pool_mm", "pooler.b"], ["pool_add"], name="head/pool/Add"),
        helper.make_node("Tanh", ["pool_add"], ["pooled"], name="head/pool/Tanh"),
        helper.make_node("MatMul", ["pooled", "cls.w"], ["logit_mm"], name="head/cls/MatMul"),
        helper.make_node("Add", ["logit_mm", "cls.b"], ["logits"], name="head/cls/Add"),
    ])
    del g.output[:]
    g.output.append(helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 1]))
    with open(os.path.join(out, "standin-reranker.onnx"), "wb") as f:
        f.write(model.SerializeToString())

    items = []
    for q, p in PAIRS:
        ids = tok.encode(q, p).ids
        cls = reference.bert_hidden(bert, ids)[0]
        pooled = np.tanh(cls @ pool_w.astype(np.float64) + pool_b)
        logit = float(pooled @ cls_w[:, 0].astype(np.float64) + cls_b[0])
        items.append({"query": q, "passage": p, "token_ids": ids, "logit": logit})
    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump({"about": "stand-in cross-encoder: random weights, NOT a reranker", "items": items}, f, indent=1)


if __name__ == "__main__":
    main()
