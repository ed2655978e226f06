"""A bad-input probe of d2lmini's public API: what a learner gets back when their own data,
sizes or settings are wrong.

    python benchmarks/probe_api.py            # the table and the counts
    python benchmarks/probe_api.py -q         # the counts and the cases that are not fine

Every case calls one public name with one bad (or valid edge-case) input and gets one
outcome:

* ``ok-error-clear``      an error raised on purpose by d2lmini (a ``raise`` in the
                          package, or a library message that names what it expected and
                          got), whose message names what the case is about;
* ``unclear-error``       an error from deep inside torch/numpy/Python (``mat1 and mat2
                          shapes cannot be multiplied``, ``negative dimension``,
                          ``AttributeError``, ``ZeroDivisionError``, ...), or a deliberate
                          one whose message does not name the argument;
* ``silent-wrong``        no error, but the result is wrong or meaningless (broadcast,
                          truncated, NaN, an option silently ignored);
* ``crash``               a valid input that raised, or an error that is a bug
                          (``NameError``, ``RecursionError``, ...);
* ``accepted-correctly``  a valid (edge-case) input that gave the right result.

Exit status 1 when a case is silent-wrong or crashes, or when more than 5 % of the cases
are unclear errors.  Runs on the CPU in well under a minute; nothing is downloaded (the
Hugging Face cases build tiny random models from local configs).
"""
from __future__ import annotations

import contextlib
import math
import io
import os
import re
import sys
import tempfile
import traceback
import warnings

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import d2lmini as d2l  # noqa: E402
from d2lmini.maps import as_attention_maps  # noqa: E402

PKG = os.path.dirname(os.path.abspath(d2l.__file__))
NAN, INF = float("nan"), float("inf")
META = torch.device("meta")

# Messages of other libraries that name what was expected and what was given.
CLEAR_LIBRARY = (r"device type at start of device string", r"must be Tensor, not",
                 r"is not a valid value for", r"Parent directory .* does not exist",
                 r"No such file or directory")
# Raw messages from deep inside: never clear, whoever raised them.
RAW = (r"mat1 and mat2", r"negative dimension", r"index out of range in self",
       r"size of tensor a", r"object has no attribute", r"not supported between instances",
       r"unsupported operand", r"division by zero", r"can't multiply sequence",
       r"'NoneType'", r"is not iterable", r"not subscriptable", r"invalid literal",
       r"could not convert", r"Expected all tensors", r"expected scalar type",
       r"out of bounds", r"Cannot choose from an empty")
BUG = (NameError, UnboundLocalError, RecursionError, SystemError, ImportError)

CASES: list[tuple] = []


def err(name, call, names=None):
    """A bad input: a clear error is expected.  ``names``: a regex the message must match
    (what the error is about), checked case-insensitively."""
    CASES.append((name, call, "error", names, None))


def ok(name, call, check=lambda r: True, error_ok=False):
    """A valid (edge-case) input: ``check(result)`` must hold.  ``error_ok``: a clear error
    is an acceptable answer too (either is fine)."""
    CASES.append((name, call, "accept", None, (check, error_ok)))


def warns(name, call, names=None):
    """Bad input where a clear warning (or a clear error) is the right answer."""
    CASES.append((name, call, "warn", names, None))


# ------------------------------------------------------------------ fixtures
torch.manual_seed(0)
V = 12


def tfm(**kw):
    cfg = dict(d_model=8, num_heads=2, num_layers=1, d_ff=16, dropout=0.0, max_len=20)
    cfg.update(kw)
    return d2l.Transformer(V, V, **cfg)


def gpt(**kw):
    cfg = dict(d_model=8, num_heads=2, num_layers=1, d_ff=16, max_len=16)
    cfg.update(kw)
    return d2l.GPT(V, **cfg).eval()


def bert(**kw):
    cfg = dict(vocab_size=V, d_model=8, num_heads=2, num_layers=1, d_ff=16, max_len=16)
    cfg.update(kw)
    return d2l.BERT(**cfg).eval()


TR, GP, BE = tfm().eval(), gpt(), bert()
GRU = d2l.GRUSeq2Seq(V, V, embed_size=4, num_hiddens=8).eval()
MHA = d2l.MultiHeadAttention(8, 2).eval()
X = torch.randn(2, 3, 8)
SRC = torch.tensor([[4, 5, 6, 0], [7, 8, 0, 0]])
TGT = torch.tensor([[1, 4, 5], [1, 6, 0]])
VOC = d2l.Vocab("hello world")
BPE = d2l.BPE.train("hello world, hello there " * 4, 270)
ADD = d2l.AdditiveAttention(4, 6, 8).eval()
Q4, K6, V5 = torch.randn(2, 3, 4), torch.randn(2, 5, 6), torch.randn(2, 5, 7)
TMP = tempfile.mkdtemp(prefix="d2l_probe_")


def tmp(name):
    return os.path.join(TMP, name)


def long(*rows):
    return torch.tensor(rows, dtype=torch.long)


def finite(t):
    return isinstance(t, torch.Tensor) and bool(torch.isfinite(t).all())


def shape_is(*shape):
    return lambda t: isinstance(t, torch.Tensor) and tuple(t.shape) == shape


def lin_data(n=16, d=2, dtype=torch.float32):
    g = torch.Generator().manual_seed(0)
    Xd = torch.randn(n, d, generator=g, dtype=dtype)
    y = Xd.sum(1, keepdim=True)
    return [(Xd[:n // 2], y[:n // 2]), (Xd[n // 2:], y[n // 2:])]


def train(**kw):
    net = kw.pop("net", None) or nn.Linear(2, 1)
    data = kw.pop("data", None)
    data = lin_data() if data is None else data
    loss = kw.pop("loss", nn.MSELoss())
    opt = kw.pop("opt", None) or torch.optim.SGD(net.parameters(), lr=0.05)
    return d2l.train(net, loss, opt, data, progress=False, **kw)


def grad_w():
    w = torch.zeros(2, 1, requires_grad=True)
    (w.sum() * 2).backward()
    return w


# ================================================================== cases
# ------------------------------------------------------------------ utils
err("set_seed(1.5)", lambda: d2l.set_seed(1.5), "seed")
err("set_seed('1')", lambda: d2l.set_seed("1"), "seed")
err("set_seed(True)", lambda: d2l.set_seed(True), "seed")
err("set_seed(None)", lambda: d2l.set_seed(None), "seed")
ok("set_seed(-1)", lambda: d2l.set_seed(-1), error_ok=True)
err("set_seed(2**70)", lambda: d2l.set_seed(2 ** 70), "seed")
err("show_source(5)", lambda: d2l.show_source(5), "int")

# ------------------------------------------------------------------ masks
err("padding_mask(list)", lambda: d2l.padding_mask([[1, 2]], 0), "tokens")
err("padding_mask(float ids)", lambda: d2l.padding_mask(torch.ones(2, 3), 0), "tokens")
err("padding_mask(bool ids)", lambda: d2l.padding_mask(torch.ones(2, 3, dtype=torch.bool), 0),
    "tokens")
err("padding_mask(1-D)", lambda: d2l.padding_mask(long(1, 2, 0), 0), "tokens")
err("padding_mask(3-D)", lambda: d2l.padding_mask(torch.ones(2, 3, 4, dtype=torch.long), 0),
    "tokens")
err("padding_mask(pad_id=-1)", lambda: d2l.padding_mask(SRC, -1), "pad_id")
err("padding_mask(pad_id=1.5)", lambda: d2l.padding_mask(SRC, 1.5), "pad_id")
err("padding_mask(pad_id=None)", lambda: d2l.padding_mask(SRC, None), "pad_id")
ok("padding_mask(B=0)", lambda: d2l.padding_mask(torch.zeros(0, 3, dtype=torch.long), 0),
   shape_is(0, 1, 1, 3))
err("causal_mask(0)", lambda: d2l.causal_mask(0), "T")
err("causal_mask(-3)", lambda: d2l.causal_mask(-3), "T")
err("causal_mask(2.5)", lambda: d2l.causal_mask(2.5), "T")
err("causal_mask(True)", lambda: d2l.causal_mask(True), "T")
err("causal_mask('4')", lambda: d2l.causal_mask("4"), "T")
err("causal_mask(tensor(4))", lambda: d2l.causal_mask(torch.tensor(4)), "T")
err("causal_mask(3, device='nope')", lambda: d2l.causal_mask(3, device="nope"), "nope")
ok("causal_mask(np.int64(3))", lambda: d2l.causal_mask(np.int64(3)), shape_is(1, 1, 3, 3))
err("length_mask(list)", lambda: d2l.length_mask([1, 2], 3), "lengths")
err("length_mask(float)", lambda: d2l.length_mask(torch.tensor([1.0, 2.0]), 3), "lengths")
err("length_mask(len > T)", lambda: d2l.length_mask(long(1, 4), 3), "lengths")
err("length_mask(negative)", lambda: d2l.length_mask(long(-1, 2), 3), "lengths")
err("length_mask(2-D)", lambda: d2l.length_mask(long([1], [2]), 3), "lengths")
err("length_mask(T=0)", lambda: d2l.length_mask(long(0, 0), 0), "T")

# ------------------------------------------------------------------ masked_softmax / sdpa
S = torch.randn(2, 3, 4)
err("masked_softmax(int scores)", lambda: d2l.masked_softmax(torch.ones(2, 3, dtype=torch.long)),
    "scores")
err("masked_softmax(list)", lambda: d2l.masked_softmax([[1.0, 2.0]]), "scores")
err("masked_softmax(int mask)", lambda: d2l.masked_softmax(S, torch.ones(2, 1, 4, dtype=torch.long)),
    "mask")
err("masked_softmax(float additive mask)", lambda: d2l.masked_softmax(S, torch.zeros(2, 1, 4)),
    "mask")
err("masked_softmax(2-D mask for 3-D scores)",
    lambda: d2l.masked_softmax(S, torch.ones(2, 4, dtype=torch.bool)), "mask")
err("masked_softmax(mask T_k+1)", lambda: d2l.masked_softmax(S, torch.ones(2, 1, 5, dtype=torch.bool)),
    "mask")
err("masked_softmax(mask 4-D for 3-D)",
    lambda: d2l.masked_softmax(S, torch.ones(2, 1, 1, 4, dtype=torch.bool)), "mask")
ok("masked_softmax(row fully masked) -> zeros",
   lambda: d2l.masked_softmax(S, torch.zeros(2, 1, 4, dtype=torch.bool)),
   lambda r: bool((r == 0).all()))
ok("masked_softmax(fp16, masked)",
   lambda: d2l.masked_softmax(S.half(), torch.tensor([True, True, False, False])[None, None].expand(2, 1, 4)),
   lambda r: finite(r) and bool((r[..., 2:] == 0).all()))
ok("masked_softmax(bf16)", lambda: d2l.masked_softmax(S.bfloat16()), finite)
err("masked_softmax(mask on meta)",
    lambda: d2l.masked_softmax(S, torch.ones(2, 1, 4, dtype=torch.bool, device=META)), "mask|device")
err("sdpa(q 1-D)", lambda: d2l.scaled_dot_product_attention(torch.randn(4), torch.randn(4), torch.randn(4)),
    r"\bq\b")
err("sdpa(d_k differ)", lambda: d2l.scaled_dot_product_attention(Q4, torch.randn(2, 5, 3), torch.randn(2, 5, 3)),
    "d_k")
err("sdpa(T_k of k and v differ)",
    lambda: d2l.scaled_dot_product_attention(Q4, torch.randn(2, 5, 4), torch.randn(2, 6, 4)), "T_k")
err("sdpa(int q)", lambda: d2l.scaled_dot_product_attention(Q4.long(), Q4.long(), Q4.long()), r"\bq\b")
err("sdpa(q float64, k float32)", lambda: d2l.scaled_dot_product_attention(Q4.double(), Q4, Q4), "dtype")
err("sdpa(batch 2 vs 3)",
    lambda: d2l.scaled_dot_product_attention(Q4, torch.randn(3, 5, 4), torch.randn(3, 5, 4)), "leading")
err("sdpa(dropout_p=1.0)", lambda: d2l.scaled_dot_product_attention(Q4, Q4, Q4, dropout_p=1.0), "dropout_p")
err("sdpa(dropout_p='0.1')", lambda: d2l.scaled_dot_product_attention(Q4, Q4, Q4, dropout_p="0.1"),
    "dropout_p")
err("sdpa(dropout_p=nan)", lambda: d2l.scaled_dot_product_attention(Q4, Q4, Q4, dropout_p=NAN), "dropout_p")
err("sdpa(dropout_p=None)", lambda: d2l.scaled_dot_product_attention(Q4, Q4, Q4, dropout_p=None),
    "dropout_p")
err("sdpa(mask (B, T))", lambda: d2l.scaled_dot_product_attention(Q4, Q4, Q4, torch.ones(2, 3, dtype=torch.bool)),
    "mask")
err("sdpa(q on meta)", lambda: d2l.scaled_dot_product_attention(Q4.to(META), Q4, Q4), "device")
ok("sdpa(3-D, mask (B,1,T_k))",
   lambda: d2l.scaled_dot_product_attention(Q4, Q4, Q4, torch.ones(2, 1, 3, dtype=torch.bool))[0],
   shape_is(2, 3, 4))

# ------------------------------------------------------------------ AdditiveAttention
err("AdditiveAttention(0, 4, 8)", lambda: d2l.AdditiveAttention(0, 4, 8), "query_size")
err("AdditiveAttention(4, 4, 2.5)", lambda: d2l.AdditiveAttention(4, 4, 2.5), "num_hiddens")
err("AdditiveAttention(dropout=-0.1)", lambda: d2l.AdditiveAttention(4, 4, 8, dropout=-0.1), "dropout")
err("AdditiveAttention fwd(q 2-D)", lambda: ADD(Q4[0], K6, V5), r"\bq\b")
err("AdditiveAttention fwd(query size 5)", lambda: ADD(torch.randn(2, 3, 5), K6, V5), "query size")
err("AdditiveAttention fwd(k/v lengths differ)", lambda: ADD(Q4, K6, V5[:, :4]), "length")
err("AdditiveAttention fwd(batch differ)", lambda: ADD(Q4, K6[:1], V5[:1]), "batch")
err("AdditiveAttention fwd(float64 inputs)", lambda: ADD(Q4.double(), K6.double(), V5.double()),
    "float64|dtype")
err("AdditiveAttention fwd(mask (B, T_k))",
    lambda: ADD(Q4, K6, V5, torch.ones(2, 5, dtype=torch.bool)), "mask")
err("AdditiveAttention fwd(int mask)", lambda: ADD(Q4, K6, V5, torch.ones(2, 1, 5, dtype=torch.long)),
    "mask")
err("AdditiveAttention fwd(inputs on meta)",
    lambda: ADD(Q4.to(META), K6.to(META), V5.to(META)), "meta|device")
ok("AdditiveAttention fwd(mask (B,1,T_k))",
   lambda: ADD(Q4, K6, V5, torch.ones(2, 1, 5, dtype=torch.bool)), shape_is(2, 3, 7))

# ------------------------------------------------------------------ MultiHeadAttention
err("MHA(d_model=0)", lambda: d2l.MultiHeadAttention(0, 1), "d_model")
err("MHA(d_model=-8)", lambda: d2l.MultiHeadAttention(-8, 2), "d_model")
err("MHA(d_model=8.0)", lambda: d2l.MultiHeadAttention(8.0, 2), "d_model")
err("MHA(num_heads=0)", lambda: d2l.MultiHeadAttention(8, 0), "num_heads")
err("MHA(num_heads=3)", lambda: d2l.MultiHeadAttention(8, 3), "num_heads=3")
err("MHA(num_heads=True)", lambda: d2l.MultiHeadAttention(8, True), "num_heads")
err("MHA(dropout=nan)", lambda: d2l.MultiHeadAttention(8, 2, dropout=NAN), "dropout")
err("MHA(dropout='0.1')", lambda: d2l.MultiHeadAttention(8, 2, dropout="0.1"), "dropout")
err("MHA(bias='no')", lambda: d2l.MultiHeadAttention(8, 2, bias="no"), "bias")
err("MHA(fast='no')", lambda: d2l.MultiHeadAttention(8, 2, fast="no"), "fast")
err("MHA fwd(query 2-D)", lambda: MHA(X[0], X[0], X[0]), "query")
err("MHA fwd(d=6 features)", lambda: MHA(torch.randn(2, 3, 6), X, X), "d_model")
err("MHA fwd(int inputs)", lambda: MHA(X.long(), X.long(), X.long()), "query")
err("MHA fwd(key batch 1)", lambda: MHA(X, X[:1], X[:1]), "batch")
err("MHA fwd(key/value lengths differ)", lambda: MHA(X, X, torch.randn(2, 4, 8)), "value")
err("MHA fwd(float64 all)", lambda: MHA(X.double(), X.double(), X.double()), "float64")
err("MHA fwd(value float64)", lambda: MHA(X, X, X.double()), "dtype")
err("MHA fwd(list)", lambda: MHA(X.tolist(), X, X), "query")
err("MHA fwd(mask (B, T), B == T)", lambda: MHA(torch.randn(3, 3, 8), torch.randn(3, 3, 8),
                                                 torch.randn(3, 3, 8), torch.ones(3, 3, dtype=torch.bool)),
    "mask")
err("MHA fwd(mask float 0/1)", lambda: MHA(X, X, X, torch.ones(2, 1, 1, 3)), "mask")
err("MHA fwd(mask (B,1,1,T+1))", lambda: MHA(X, X, X, torch.ones(2, 1, 1, 4, dtype=torch.bool)), "mask")
err("MHA fwd(mask batch 3 for B=2)", lambda: MHA(X, X, X, torch.ones(3, 1, 1, 3, dtype=torch.bool)), "mask")
err("MHA fwd(mask 5-D)", lambda: MHA(X, X, X, torch.ones(1, 2, 1, 1, 3, dtype=torch.bool)), "mask")
err("MHA fwd(mask list)", lambda: MHA(X, X, X, [[True, True, False]]), "mask")
err("MHA fwd(inputs on meta)", lambda: MHA(X.to(META), X.to(META), X.to(META)), "meta")
err("MHA fwd(mask on meta)", lambda: MHA(X, X, X, torch.ones(2, 1, 1, 3, dtype=torch.bool, device=META)),
    "mask|device")
ok("MHA fwd(cross-attention T_q != T_k)", lambda: MHA(X, torch.randn(2, 5, 8), torch.randn(2, 5, 8)),
   shape_is(2, 3, 8))
ok("MHA fwd(T=0)", lambda: MHA(torch.randn(2, 0, 8), torch.randn(2, 0, 8), torch.randn(2, 0, 8)),
   shape_is(2, 0, 8), error_ok=True)
ok("MHA fwd(3-D mask)", lambda: MHA(X, X, X, torch.ones(2, 1, 3, dtype=torch.bool)), finite)
ok("MHA fast == slow with a pad mask",
   lambda: (lambda m: (MHA(X, X, X, m), d2l.set_fused_attention(MHA)(X, X, X, m),
                       d2l.set_fused_attention(MHA, False)))(d2l.padding_mask(long([1, 2, 0], [0, 0, 0]), 0)),
   lambda r: torch.allclose(r[0], r[1], atol=1e-6))
err("set_fused_attention(5)", lambda: d2l.set_fused_attention(5), "model")
err("set_fused_attention(nn.Linear)", lambda: d2l.set_fused_attention(nn.Linear(2, 2)), "MultiHeadAttention")
err("set_fused_attention(enabled='no')", lambda: d2l.set_fused_attention(tfm(), enabled="no"), "enabled")
err("mha_state_dict_from_torch(list)", lambda: d2l.mha_state_dict_from_torch([1, 2]), "state_dict")
err("mha_state_dict_from_torch(prefix=5)",
    lambda: d2l.mha_state_dict_from_torch(nn.MultiheadAttention(8, 2).state_dict(), prefix=5), "prefix")
err("state_dict_from_torch(None)", lambda: d2l.state_dict_from_torch(None), "state_dict")

# ------------------------------------------------------------------ norms
err("LayerNorm(0)", lambda: d2l.LayerNorm(0), "normalized_shape")
err("LayerNorm(2.5)", lambda: d2l.LayerNorm(2.5), "normalized_shape")
err("LayerNorm(True)", lambda: d2l.LayerNorm(True), "normalized_shape")
err("LayerNorm(())", lambda: d2l.LayerNorm(()), "normalized_shape")
err("LayerNorm((3, 0))", lambda: d2l.LayerNorm((3, 0)), "normalized_shape")
err("LayerNorm('8')", lambda: d2l.LayerNorm("8"), "normalized_shape")
err("LayerNorm(eps=0)", lambda: d2l.LayerNorm(8, eps=0), "eps")
err("LayerNorm(eps=nan)", lambda: d2l.LayerNorm(8, eps=NAN), "eps")
err("LayerNorm(eps=inf)", lambda: d2l.LayerNorm(8, eps=INF), "eps")
err("LayerNorm(eps='1e-5')", lambda: d2l.LayerNorm(8, eps="1e-5"), "eps")
err("LayerNorm fwd(last dim 6)", lambda: d2l.LayerNorm(8)(torch.randn(2, 6)), "8")
err("LayerNorm fwd(int x)", lambda: d2l.LayerNorm(8)(torch.ones(2, 8, dtype=torch.long)), "x")
err("LayerNorm fwd(list)", lambda: d2l.LayerNorm(2)([[1.0, 2.0]]), "x")
ok("LayerNorm fwd(1-D)", lambda: d2l.LayerNorm(4)(torch.randn(4)), shape_is(4))
ok("LayerNorm fwd(float64) == nn.LayerNorm",
   lambda: d2l.LayerNorm(4)(torch.arange(8.).reshape(2, 4).double()),
   lambda r: torch.allclose(r.float(), nn.LayerNorm(4)(torch.arange(8.).reshape(2, 4)), atol=1e-5),
   error_ok=True)
err("BatchNorm(0)", lambda: d2l.BatchNorm(0), "num_features")
err("BatchNorm(momentum=1.5)", lambda: d2l.BatchNorm(4, momentum=1.5), "momentum")
err("BatchNorm(momentum='0.1')", lambda: d2l.BatchNorm(4, momentum="0.1"), "momentum")
err("BatchNorm(momentum=None)", lambda: d2l.BatchNorm(4, momentum=None), "momentum")
err("BatchNorm(momentum=nan)", lambda: d2l.BatchNorm(4, momentum=NAN), "momentum")
err("BatchNorm(eps=-1)", lambda: d2l.BatchNorm(4, eps=-1), "eps")
err("BatchNorm fwd(4-D)", lambda: d2l.BatchNorm(4)(torch.randn(2, 3, 5, 4)), "x")
err("BatchNorm fwd(features 3)", lambda: d2l.BatchNorm(4)(torch.randn(5, 3)), "4")
err("BatchNorm fwd(1 row in training)", lambda: d2l.BatchNorm(4)(torch.randn(1, 4)), "1 value")
err("BatchNorm fwd(int)", lambda: d2l.BatchNorm(4)(torch.ones(5, 4, dtype=torch.long)), "x")
ok("BatchNorm eval fwd(1 row)", lambda: d2l.BatchNorm(4).eval()(torch.randn(1, 4)), finite)

# ------------------------------------------------------------------ positional encoding, FFN, blocks
err("PositionalEncoding(0)", lambda: d2l.PositionalEncoding(0), "d_model")
err("PositionalEncoding(max_len=0)", lambda: d2l.PositionalEncoding(8, max_len=0), "max_len")
err("PositionalEncoding(max_len=-5)", lambda: d2l.PositionalEncoding(8, max_len=-5), "max_len")
err("PositionalEncoding(dropout=1)", lambda: d2l.PositionalEncoding(8, dropout=1), "dropout")
err("PositionalEncoding fwd(T > max_len)", lambda: d2l.PositionalEncoding(8, max_len=4)(torch.randn(1, 5, 8)),
    "max_len")
err("PositionalEncoding fwd(d=6)", lambda: d2l.PositionalEncoding(8)(torch.randn(1, 3, 6)), "d_model")
err("PositionalEncoding fwd(2-D)", lambda: d2l.PositionalEncoding(8)(torch.randn(3, 8)), "x")
err("PositionalEncoding fwd(int ids)", lambda: d2l.PositionalEncoding(8)(torch.ones(1, 3, 8, dtype=torch.long)),
    "x")
ok("PositionalEncoding(odd d_model=7)", lambda: d2l.PositionalEncoding(7)(torch.zeros(1, 3, 7)), finite)
err("PositionWiseFFN(8, 0)", lambda: d2l.PositionWiseFFN(8, 0), "d_ff")
err("PositionWiseFFN(activation='swish')", lambda: d2l.PositionWiseFFN(8, 16, activation="swish"),
    "activation")
err("PositionWiseFFN(activation=None)", lambda: d2l.PositionWiseFFN(8, 16, activation=None), "activation")
err("PositionWiseFFN fwd(d=6)", lambda: d2l.PositionWiseFFN(8, 16)(torch.randn(2, 3, 6)), "d_model|8")
err("PositionWiseFFN fwd(int)", lambda: d2l.PositionWiseFFN(8, 16)(torch.ones(2, 3, 8, dtype=torch.long)),
    "x")
err("EncoderBlock(num_heads=3)", lambda: d2l.EncoderBlock(8, 3, 16), "num_heads")
err("EncoderBlock(d_ff=-1)", lambda: d2l.EncoderBlock(8, 2, -1), "d_ff")
err("EncoderBlock(norm_first='no')", lambda: d2l.EncoderBlock(8, 2, 16, norm_first="no"), "norm_first")
err("DecoderBlock(norm_first=1)", lambda: d2l.DecoderBlock(8, 2, 16, norm_first=1), "norm_first")
err("EncoderBlock fwd(d=6)", lambda: d2l.EncoderBlock(8, 2, 16)(torch.randn(2, 3, 6)), "d_model")
err("EncoderBlock fwd(mask (B, T))",
    lambda: d2l.EncoderBlock(8, 2, 16)(X, torch.ones(2, 3, dtype=torch.bool)), "mask")
err("DecoderBlock fwd(memory batch 1)", lambda: d2l.DecoderBlock(8, 2, 16)(X, X[:1]), "batch")
err("DecoderBlock fwd(memory d=6)", lambda: d2l.DecoderBlock(8, 2, 16)(X, torch.randn(2, 3, 6)), "d_model")
err("DecoderBlock fwd(memory 2-D)", lambda: d2l.DecoderBlock(8, 2, 16)(X, X[0]), "key")
ok("EncoderBlock(d_ff=0) fwd", lambda: d2l.EncoderBlock(8, 2, 0)(X), shape_is(2, 3, 8))

# ------------------------------------------------------------------ Transformer
err("Transformer(0, 12)", lambda: d2l.Transformer(0, 12), "src_vocab_size")
err("Transformer(12, -1)", lambda: d2l.Transformer(12, -1), "tgt_vocab_size")
err("Transformer(12.0, 12)", lambda: d2l.Transformer(12.0, 12), "src_vocab_size")
err("Transformer(d_model=30, num_heads=4)", lambda: tfm(d_model=30, num_heads=4), "num_heads=4")
err("Transformer(num_heads=0)", lambda: tfm(num_heads=0), "num_heads")
err("Transformer(num_layers=0)", lambda: tfm(num_layers=0), "num_layers")
err("Transformer(num_layers=-1)", lambda: tfm(num_layers=-1), "num_layers")
err("Transformer(d_ff=-4)", lambda: tfm(d_ff=-4), "d_ff")
err("Transformer(dropout=1.0)", lambda: tfm(dropout=1.0), "dropout")
err("Transformer(pad_id=12)", lambda: tfm(pad_id=12), "pad_id")
err("Transformer(pad_id=None)", lambda: tfm(pad_id=None), "pad_id")
err("Transformer(max_len=0)", lambda: tfm(max_len=0), "max_len")
err("Transformer(pos_encoding='rotary')", lambda: tfm(pos_encoding="rotary"), "pos_encoding")
err("Transformer(scale_embedding=1)", lambda: tfm(scale_embedding=1), "scale_embedding")
err("Transformer(norm_first='yes')", lambda: tfm(norm_first="yes"), "norm_first")
err("Transformer fwd(float src)", lambda: TR(SRC.float(), TGT), "src|tokens")
err("Transformer fwd(bool tgt)", lambda: TR(SRC, TGT.bool()), "tokens|tgt")
err("Transformer fwd(1-D src)", lambda: TR(SRC[0], TGT), "src")
err("Transformer fwd(batch 2 vs 1)", lambda: TR(SRC, TGT[:1]), "batch")
err("Transformer fwd(src id 12)", lambda: TR(long([4, 12]), TGT[:1]), "12")
err("Transformer fwd(tgt id -1)", lambda: TR(SRC[:1], long([1, -1])), "-1")
err("Transformer fwd(src longer than max_len)", lambda: TR(torch.ones(1, 25, dtype=torch.long), TGT[:1]),
    "max_len")
err("Transformer fwd(empty src (2, 0))", lambda: TR(torch.zeros(2, 0, dtype=torch.long), TGT), "empty|src")
err("Transformer fwd(list)", lambda: TR([[4, 5]], [[1, 4]]), "src")
err("Transformer fwd(src on meta)", lambda: TR(SRC.to(META), TGT), "meta|device")
ok("Transformer fwd(int32 ids)", lambda: TR(SRC.int(), TGT.int()), shape_is(2, 3, V))
ok("Transformer fwd(a source row of only pads)", lambda: TR(long([4, 5], [0, 0]), TGT), finite)
ok("Transformer fwd(right padding changes nothing)",
   lambda: (TR(long([4, 5, 6]), long([1, 4])), TR(long([4, 5, 6, 0, 0]), long([1, 4, 0]))[:, :2]),
   lambda r: torch.allclose(r[0], r[1], atol=1e-5))
err("Transformer fwd(left-padded src)", lambda: TR(long([0, 0, 4, 5]), TGT[:1]), "right-padded")
err("Transformer fwd(pad inside tgt)", lambda: TR(SRC[:1], long([1, 0, 4])), "right-padded")
err("greedy_decode(left-padded src)", lambda: d2l.greedy_decode(TR, long([0, 4, 5]), 4, 1, 2), "right-padded")
ok("Transformer.check_inputs(ok)", lambda: TR.check_inputs(SRC, TGT), lambda r: r is None)
err("Transformer.check_inputs(id 99)", lambda: TR.check_inputs(long([99]), TGT), "99")

# ------------------------------------------------------------------ greedy_decode
err("greedy_decode(GPT)", lambda: d2l.greedy_decode(GP, SRC, 4, 1, 2), "GPT")
err("greedy_decode(None)", lambda: d2l.greedy_decode(None, SRC, 4, 1, 2), "NoneType")
err("greedy_decode(max_len=0)", lambda: d2l.greedy_decode(TR, SRC, 0, 1, 2), "max_len")
err("greedy_decode(max_len=2.5)", lambda: d2l.greedy_decode(TR, SRC, 2.5, 1, 2), "max_len")
err("greedy_decode(bos_id=12)", lambda: d2l.greedy_decode(TR, SRC, 4, 12, 2), "bos_id")
err("greedy_decode(eos_id=-1)", lambda: d2l.greedy_decode(TR, SRC, 4, 1, -1), "eos_id")
err("greedy_decode(eos_id=pad)", lambda: d2l.greedy_decode(TR, SRC, 4, 1, 0), "pad")
ok("greedy_decode(eos_id=None) decodes max_len", lambda: d2l.greedy_decode(TR, SRC, 4, 1, None),
   lambda r: r.shape == (SRC.shape[0], 4))
err("greedy_decode(src 1-D)", lambda: d2l.greedy_decode(TR, SRC[0], 4, 1, 2), "src")
err("greedy_decode(src float)", lambda: d2l.greedy_decode(TR, SRC.float(), 4, 1, 2), "src|tokens")
err("greedy_decode(src id 50)", lambda: d2l.greedy_decode(TR, long([4, 50]), 4, 1, 2), "50")
err("greedy_decode(max_len past the model's)", lambda: d2l.greedy_decode(TR, SRC, 40, 1, 3), "max_len")
ok("greedy_decode(GRUSeq2Seq)", lambda: d2l.greedy_decode(GRU, SRC, 4, 1, 2),
   lambda r: r.shape[0] == 2 and r.shape[1] <= 4)
err("greedy_decode(GRU, left-padded src)", lambda: d2l.greedy_decode(GRU, long([0, 4, 5]), 4, 1, 2),
    "right-padded")

# ------------------------------------------------------------------ losses
L3, T2 = torch.randn(2, 3, 5), long([1, 2, 0], [3, 0, 0])
err("sequence_loss(2-D logits)", lambda: d2l.sequence_loss(torch.randn(6, 5), T2.flatten()), "logits")
err("sequence_loss(T differ)", lambda: d2l.sequence_loss(L3, long([1, 2, 3, 4], [1, 2, 3, 4])), "disagree")
err("sequence_loss(float targets)", lambda: d2l.sequence_loss(L3, T2.float()), "target")
err("sequence_loss(int logits)", lambda: d2l.sequence_loss(L3.long(), T2), "logits")
err("sequence_loss(target id 5)", lambda: d2l.sequence_loss(L3, long([1, 5, 0], [1, 0, 0])), "0..4")
err("sequence_loss(target id -3)", lambda: d2l.sequence_loss(L3, long([1, -3, 0], [1, 0, 0])), "0..4")
err("sequence_loss(pad_id=1.5)", lambda: d2l.sequence_loss(L3, T2, pad_id=1.5), "pad_id")
err("sequence_loss(pad_id=True)", lambda: d2l.sequence_loss(L3, T2, pad_id=True), "pad_id")
err("sequence_loss(label_smoothing='0.1')", lambda: d2l.sequence_loss(L3, T2, label_smoothing="0.1"),
    "label_smoothing")
err("sequence_loss(label_smoothing=-0.1)", lambda: d2l.sequence_loss(L3, T2, label_smoothing=-0.1),
    "smoothing")
err("sequence_loss(targets list)", lambda: d2l.sequence_loss(L3, T2.tolist()), "targets")
ok("sequence_loss ignores pads",
   lambda: (d2l.sequence_loss(L3, T2), nn.functional.cross_entropy(L3.reshape(-1, 5), T2.flatten(),
                                                                    ignore_index=0)),
   lambda r: torch.allclose(r[0], r[1], atol=1e-6))
ok("sequence_loss(all pads) is nan, as torch", lambda: d2l.sequence_loss(L3, torch.zeros(2, 3, dtype=torch.long)),
   lambda r: bool(torch.isnan(r)), error_ok=True)
ok("sequence_loss(fp16 logits)", lambda: d2l.sequence_loss(L3.half(), T2), finite)
err("label_smoothing_ce(smoothing=1.5)",
    lambda: d2l.label_smoothing_cross_entropy(L3, T2, smoothing=1.5), "smoothing")
err("label_smoothing_ce(smoothing=nan)",
    lambda: d2l.label_smoothing_cross_entropy(L3, T2, smoothing=NAN), "smoothing")
err("label_smoothing_ce(shape)", lambda: d2l.label_smoothing_cross_entropy(L3, T2[:, :2]), "disagree")
err("label_smoothing_ce(bool target)", lambda: d2l.label_smoothing_cross_entropy(L3, T2.bool()), "target")
err("label_smoothing_ce(ignore_index=1.5)",
    lambda: d2l.label_smoothing_cross_entropy(L3, T2, ignore_index=1.5), "ignore_index")
ok("label_smoothing_ce == torch",
   lambda: (d2l.label_smoothing_cross_entropy(L3, T2, 0.1, ignore_index=0),
            nn.functional.cross_entropy(L3.reshape(-1, 5), T2.flatten(), label_smoothing=0.1,
                                        ignore_index=0)),
   lambda r: torch.allclose(r[0], r[1], atol=1e-6))

# ------------------------------------------------------------------ regression (chapter 3)
err("linreg(w 1-D)", lambda: d2l.linreg(torch.randn(4, 2), torch.randn(2), torch.zeros(1)), r"\bw\b")
err("linreg(features differ)", lambda: d2l.linreg(torch.randn(4, 3), torch.randn(2, 1), torch.zeros(1)),
    "features")
err("linreg(b of shape (3,))", lambda: d2l.linreg(torch.randn(3, 2), torch.randn(2, 1), torch.zeros(3)),
    r"\bb\b")
err("linreg(int X)", lambda: d2l.linreg(torch.ones(4, 2, dtype=torch.long), torch.randn(2, 1), 0.0), "X")
err("linreg(X float64)", lambda: d2l.linreg(torch.randn(4, 2).double(), torch.randn(2, 1), 0.0), "float64")
ok("linreg(b a number)", lambda: d2l.linreg(torch.ones(4, 2), torch.ones(2, 1), 0.5),
   lambda r: torch.allclose(r, torch.full((4, 1), 2.5)))
err("squared_loss(numel differ)", lambda: d2l.squared_loss(torch.randn(4, 1), torch.randn(3)), "y")
err("squared_loss((4, 1) vs (2, 2))", lambda: d2l.squared_loss(torch.randn(4, 1), torch.randn(2, 2)), "y")
err("squared_loss(list)", lambda: d2l.squared_loss(torch.randn(2, 1), [1.0, 2.0]), "y")
ok("squared_loss((4, 1) vs (4,))", lambda: d2l.squared_loss(torch.ones(4, 1), torch.zeros(4)),
   lambda r: r.shape == (4, 1) and torch.allclose(r, torch.full((4, 1), 0.5)))
err("sgd(lr=nan)", lambda: d2l.sgd([grad_w()], NAN), "lr")
err("sgd(lr=0)", lambda: d2l.sgd([grad_w()], 0), "lr")
err("sgd(lr='0.1')", lambda: d2l.sgd([grad_w()], "0.1"), "lr")
err("sgd(batch_size=0)", lambda: d2l.sgd([grad_w()], 0.1, 0), "batch_size")
err("sgd(params=a tensor, not a list)", lambda: d2l.sgd(grad_w(), 0.1), "params|list")
err("sgd(no grad)", lambda: d2l.sgd([torch.zeros(2, requires_grad=True)], 0.1), "gradient")
err("softmax(int)", lambda: d2l.softmax(torch.ones(2, 3, dtype=torch.long)), "X")
err("softmax(dim=5)", lambda: d2l.softmax(torch.randn(2, 3), dim=5), "dim")
ok("softmax(large logits)", lambda: d2l.softmax(torch.tensor([[1000.0, 0.0]])), finite)
err("cross_entropy(y out of range)", lambda: d2l.cross_entropy(torch.randn(2, 3), long(0, 3)), "3")
err("cross_entropy(y negative)", lambda: d2l.cross_entropy(torch.randn(2, 3), long(0, -1)), "-1")
err("cross_entropy(y bool)", lambda: d2l.cross_entropy(torch.randn(2, 3), torch.tensor([True, False])), "y")
err("cross_entropy(y (n, 1))", lambda: d2l.cross_entropy(torch.randn(2, 3), long([0], [1])), "y")
err("cross_entropy(y float)", lambda: d2l.cross_entropy(torch.randn(2, 3), torch.tensor([0.0, 1.0])), "y")
err("accuracy(y list)", lambda: d2l.accuracy(torch.randn(2, 3), [0, 1]), "y")
err("accuracy(y (n, 1))", lambda: d2l.accuracy(torch.randn(2, 3), long([0], [1])), "y")
err("accuracy(logits 1-D)", lambda: d2l.accuracy(torch.randn(3), long(0)), "logits")
err("synthetic_data(w 2-D)", lambda: d2l.synthetic_data(torch.ones(2, 1), 0.0, 4), r"\bw\b")
err("synthetic_data(n=0)", lambda: d2l.synthetic_data(torch.ones(2), 0.0, 0), "num_examples")
err("synthetic_data(b of shape (2,))", lambda: d2l.synthetic_data(torch.ones(2), torch.ones(2), 2), r"\bb\b")
err("synthetic_data(b of shape (3,))", lambda: d2l.synthetic_data(torch.ones(2), torch.ones(3), 5), r"\bb\b")
err("synthetic_data(noise=nan)", lambda: d2l.synthetic_data(torch.ones(2), 0.0, 4, noise=NAN), "noise")
err("synthetic_data(noise='0.1')", lambda: d2l.synthetic_data(torch.ones(2), 0.0, 4, noise="0.1"), "noise")
err("data_iter(batch_size=0)", lambda: next(d2l.data_iter(0, torch.ones(4, 2), torch.ones(4))), "batch_size")
err("data_iter(rows differ)", lambda: next(d2l.data_iter(2, torch.ones(4, 2), torch.ones(3))), "rows")
err("data_iter(X list)", lambda: next(d2l.data_iter(2, [[1.0]], torch.ones(1))), "X")
err("data_iter(generator='x')", lambda: next(d2l.data_iter(2, torch.ones(4, 2), torch.ones(4), generator="x")),
    "generator")
ok("data_iter(every row once)", lambda: torch.cat([x for x, _ in d2l.data_iter(3, torch.arange(7.)[:, None],
                                                                             torch.arange(7.))]),
   lambda r: sorted(r.flatten().tolist()) == list(range(7)))

# ------------------------------------------------------------------ Vocab
err("Vocab(5)", lambda: d2l.Vocab(5), "tokens")
err("Vocab(None)", lambda: d2l.Vocab(None), "tokens")
err("Vocab([1, 2])", lambda: d2l.Vocab([1, 2]), "strings")
err("Vocab(nested lists)", lambda: d2l.Vocab([["a"], ["b"]]), "flat")
err("Vocab(tensor)", lambda: d2l.Vocab(torch.arange(3)), "tokens")
err("Vocab(min_freq=0)", lambda: d2l.Vocab("ab", min_freq=0), "min_freq")
err("Vocab(min_freq=1.5)", lambda: d2l.Vocab("ab", min_freq=1.5), "min_freq")
ok("Vocab(set) same ids every run", lambda: d2l.Vocab(set("hello")).idx_to_token[4:],
   lambda r: r == sorted(set("hello")))
ok("vocab['zzz'] -> <unk>", lambda: VOC["zzz"], lambda r: r == VOC.unk_id)
err("vocab[5] (an id, not a token)", lambda: VOC[5], "token|str")
err("vocab.encode(5)", lambda: VOC.encode(5), "tokens")
err("vocab.encode([['h']])", lambda: VOC.encode([["h"]]), "one sequence")
err("vocab.encode(tensor)", lambda: VOC.encode(torch.arange(3)), "tokens")
err("vocab.encode(bos='yes')", lambda: VOC.encode("he", bos="yes"), "bos")
err("vocab.encode(eos=2)", lambda: VOC.encode("he", eos=2), "eos")
err("vocab.decode(5)", lambda: VOC.decode(5), "ids")
err("vocab.decode('abc')", lambda: VOC.decode("abc"), "ids")
err("vocab.decode([4, 5.0])", lambda: VOC.decode([4, 5.0]), "float")
err("vocab.decode([-1])", lambda: VOC.decode([-1]), "-1")
err("vocab.decode([999])", lambda: VOC.decode([999]), "999")
err("vocab.decode(3-D tensor)", lambda: VOC.decode(torch.zeros(1, 1, 2, dtype=torch.long)), "ids")
err("vocab.decode(float tensor)", lambda: VOC.decode(torch.zeros(3)), "ids")
err("vocab.decode(sep=1)", lambda: VOC.decode([4], sep=1), "sep")
err("vocab.decode([[4, 5], 6])", lambda: VOC.decode([[4, 5], 6]), "ids|integer")
ok("vocab.decode(2-D numpy)", lambda: VOC.decode(np.array([[4, 5], [6, 7]]), sep=""),
   lambda r: isinstance(r, list) and len(r) == 2 and all(isinstance(s, str) for s in r), error_ok=True)
ok("vocab.decode(batch tensor, sep='')", lambda: VOC.decode(long(VOC.encode("hel"), VOC.encode("low")), sep=""),
   lambda r: r == ["hel", "low"])
err("Vocab.from_tokens(['a'])", lambda: d2l.Vocab.from_tokens(["a"]), "idx_to_token")
err("Vocab.from_tokens(5)", lambda: d2l.Vocab.from_tokens(5), "idx_to_token")

# ------------------------------------------------------------------ pad_batch, pairs_to_tensors, lm_windows
err("pad_batch([])", lambda: d2l.pad_batch([]), "empty")
err("pad_batch(strings)", lambda: d2l.pad_batch(["ab", "c"]), "vocab.encode")
err("pad_batch(float ids)", lambda: d2l.pad_batch([[1, 2.5]]), "float")
err("pad_batch(None inside)", lambda: d2l.pad_batch([[1, None]]), "NoneType")
err("pad_batch(7)", lambda: d2l.pad_batch(7), "seqs")
err("pad_batch(one flat list)", lambda: d2l.pad_batch([1, 2, 3]), "sequence")
err("pad_batch(2-D tensor row)", lambda: d2l.pad_batch([torch.ones(2, 2, dtype=torch.long)]), "1-D")
err("pad_batch(float tensor row)", lambda: d2l.pad_batch([torch.ones(2)]), "integer")
err("pad_batch(pad_id=-1)", lambda: d2l.pad_batch([[1]], pad_id=-1), "pad_id")
err("pad_batch(pad_id=0.0)", lambda: d2l.pad_batch([[1]], pad_id=0.0), "pad_id")
err("pad_batch(side='middle')", lambda: d2l.pad_batch([[1]], side="middle"), "side")
err("pad_batch(side=None)", lambda: d2l.pad_batch([[1]], side=None), "side")
ok("pad_batch(left)", lambda: d2l.pad_batch([[1, 2], [3]], side="left"), lambda r: r.tolist() == [[1, 2], [0, 3]])
ok("pad_batch(an empty row)", lambda: d2l.pad_batch([[1, 2], []]), lambda r: r.tolist() == [[1, 2], [0, 0]])
ok("pad_batch(tensor rows)", lambda: d2l.pad_batch([long(1, 2), long(3)]),
   lambda r: r.tolist() == [[1, 2], [3, 0]])
ok("pad_batch(numpy rows)", lambda: d2l.pad_batch([np.array([1, 2]), np.array([3])]),
   lambda r: r.tolist() == [[1, 2], [3, 0]])
err("pairs_to_tensors('ab')", lambda: d2l.pairs_to_tensors("ab"), "pairs")
err("pairs_to_tensors([])", lambda: d2l.pairs_to_tensors([]), "empty")
err("pairs_to_tensors([('a',)])", lambda: d2l.pairs_to_tensors([("a",)]), "pair 0")
err("pairs_to_tensors([('ab', 5)])", lambda: d2l.pairs_to_tensors([("ab", 5)]), "pair 0|target")
err("pairs_to_tensors([('ab', None)])", lambda: d2l.pairs_to_tensors([("ab", None)]), "pair 0|target")
err("pairs_to_tensors(tokenize=5)", lambda: d2l.pairs_to_tensors([("a", "b")], tokenize=5), "tokenize")
err("pairs_to_tensors(src_vocab=dict)", lambda: d2l.pairs_to_tensors([("a", "b")], src_vocab={}), "src_vocab")
err("pairs_to_tensors(device='nope')", lambda: d2l.pairs_to_tensors([("a", "b")], device="nope"), "nope")
ok("pairs_to_tensors(words)", lambda: d2l.pairs_to_tensors(d2l.toy_translation(), tokenize=str.split),
   lambda r: r[0].shape == (2, 4) and r[1].shape == r[2].shape == (2, 6)
   and r[1][0, 0].item() == 1 and r[2][0, 5].item() == 2)
ok("pairs_to_tensors(empty target)", lambda: d2l.pairs_to_tensors([("ab", "")]),
   lambda r: r[1].tolist() == [[1]] and r[2].tolist() == [[2]])
err("lm_windows(block_size=0)", lambda: d2l.lm_windows(list(range(10)), 0), "block_size")
err("lm_windows(stride=0)", lambda: d2l.lm_windows(list(range(10)), 3, 0), "stride")
err("lm_windows(too short)", lambda: d2l.lm_windows([1, 2, 3], 3), "block_size")
err("lm_windows(float tensor)", lambda: d2l.lm_windows(torch.ones(10), 3), "ids")
err("lm_windows(2-D tensor)", lambda: d2l.lm_windows(torch.ones(2, 10, dtype=torch.long), 3), "ids")
err("lm_windows(a string)", lambda: d2l.lm_windows("hello world", 3), "ids|encode")
err("lm_windows(list of str)", lambda: d2l.lm_windows(list("hello world"), 3), "ids|encode")
ok("lm_windows(targets shifted by 1)", lambda: d2l.lm_windows(list(range(10)), 3, 2),
   lambda r: torch.equal(r[1], r[0] + 1) and r[0].shape == (4, 3))
err("bucket_batches(lists)", lambda: d2l.bucket_batches([[1]], [[1]], [[1]], 2), "src")
err("bucket_batches(float src)", lambda: d2l.bucket_batches(SRC.float(), TGT, TGT, 2), "src")
err("bucket_batches(n differ)", lambda: d2l.bucket_batches(SRC, TGT[:1], TGT[:1], 2), "disagree")
err("bucket_batches(tgt_in/out T differ)", lambda: d2l.bucket_batches(SRC, TGT, TGT[:, :2], 2), "disagree")
err("bucket_batches(batch_size=0)", lambda: d2l.bucket_batches(SRC, TGT, TGT, 0), "batch_size")
err("bucket_batches(pool=-1)", lambda: d2l.bucket_batches(SRC, TGT, TGT, 2, pool=-1), "pool")
err("bucket_batches(pad_id=0.5)", lambda: d2l.bucket_batches(SRC, TGT, TGT, 2, pad_id=0.5), "pad_id")
err("bucket_batches(generator='x')", lambda: list(d2l.bucket_batches(SRC, TGT, TGT, 2, generator="x")),
    "generator")
err("bucket_batches(0 examples)", lambda: list(d2l.bucket_batches(SRC[:0], TGT[:0], TGT[:0], 2)), "empty|0")
ok("bucket_batches(every example once)",
   lambda: sum(b[0].shape[0] for b in d2l.bucket_batches(SRC, TGT, TGT, 1)), lambda r: r == 2)
err("DateTranslation(0)", lambda: d2l.DateTranslation(0), r"\bn\b")
err("DateTranslation(-5)", lambda: d2l.DateTranslation(-5), r"\bn\b")
err("DateTranslation(2.5)", lambda: d2l.DateTranslation(2.5), r"\bn\b")
err("DateTranslation(10**6)", lambda: d2l.DateTranslation(10 ** 6), r"\bn\b")
err("DateTranslation(seed=1.5)", lambda: d2l.DateTranslation(5, seed=1.5), "seed")
err("DateTranslation(formats=[])", lambda: d2l.DateTranslation(5, formats=[]), "formats")
err("DateTranslation(formats=['bogus'])", lambda: d2l.DateTranslation(5, formats=["bogus"]), "bogus")
err("DateTranslation(formats='dd/mm/yy')", lambda: d2l.DateTranslation(5, formats="dd/mm/yy"), "formats")
err("DateTranslation(exclude=list)", lambda: d2l.DateTranslation(5, exclude=[]), "exclude")
ok("DateTranslation(exclude=train) disjoint",
   lambda: (lambda tr_: set(tr_.dates) & set(d2l.DateTranslation(50, seed=1, exclude=tr_).dates))(
       d2l.DateTranslation(50)), lambda r: r == set())

# ------------------------------------------------------------------ BPE
err("BPE.train(5, 300)", lambda: d2l.BPE.train(5, 300), "text")
err("BPE.train(vocab_size=100)", lambda: d2l.BPE.train("abc", 100), "vocab_size")
err("BPE.train(vocab_size=300.0)", lambda: d2l.BPE.train("abc", 300.0), "vocab_size")
err("BPE.train(pattern=5)", lambda: d2l.BPE.train("abc", 300, pattern=5), "pattern")
ok("BPE.train('')", lambda: d2l.BPE.train("", 300), lambda r: r.vocab_size == 256)
err("BPE(merges=5)", lambda: d2l.BPE(merges=5), "merges")
err("BPE(merges out of order)", lambda: d2l.BPE(merges={(1, 2): 300}), "merge")
err("bpe.encode(5)", lambda: BPE.encode(5), "text")
err("bpe.encode(None)", lambda: BPE.encode(None), "text")
err("bpe.encode(['a'])", lambda: BPE.encode(["a"]), "text")
err("bpe.decode([9999])", lambda: BPE.decode([9999]), "9999")
err("bpe.decode([-1])", lambda: BPE.decode([-1]), "-1")
err("bpe.decode(['a'])", lambda: BPE.decode(["a"]), "ids|str")
err("bpe.decode([1.7])", lambda: BPE.decode([104.7]), "ids|float")
err("bpe.decode(5)", lambda: BPE.decode(5), "ids")
err("bpe.decode('hi')", lambda: BPE.decode("hi"), "ids")
err("bpe.decode(float tensor)", lambda: BPE.decode(torch.tensor([104.0, 105.0])), "ids|float")
err("bpe.decode(2-D tensor)", lambda: BPE.decode(long([104, 105])), "ids|1-D")
ok("bpe round trip (unicode)", lambda: BPE.decode(BPE.encode("héllo 世界 🙂")), lambda r: r == "héllo 世界 🙂")
ok("bpe.decode(1-D long tensor)", lambda: BPE.decode(torch.tensor(BPE.encode("hello"))), lambda r: r == "hello")

# ------------------------------------------------------------------ GPT
err("GPT(vocab_size=0)", lambda: d2l.GPT(0), "vocab_size")
err("GPT(d_model=30, num_heads=4)", lambda: d2l.GPT(V, d_model=30, num_heads=4), "num_heads=4")
err("GPT(num_layers=0)", lambda: gpt(num_layers=0), "num_layers")
err("GPT(d_ff=0)", lambda: gpt(d_ff=0), "d_ff")
err("GPT(max_len=-1)", lambda: gpt(max_len=-1), "max_len")
err("GPT(pad_id=12)", lambda: gpt(pad_id=12), "pad_id")
err("GPT(pad_id=1.0)", lambda: gpt(pad_id=1.0), "pad_id")
err("GPT(pos_encoding='rotary')", lambda: gpt(pos_encoding="rotary"), "pos_encoding")
err("GPT(activation='swish')", lambda: gpt(activation="swish"), "activation")
err("GPT(dropout=nan)", lambda: gpt(dropout=NAN), "dropout")
err("GPT(tie_weights='yes')", lambda: gpt(tie_weights="yes"), "tie_weights")
err("GPT(norm_eps=0)", lambda: gpt(norm_eps=0), "eps")
err("GPT(norm_eps='x')", lambda: gpt(norm_eps="x"), "eps")
err("GPT fwd(float tokens)", lambda: GP(torch.ones(1, 3)), "tokens")
err("GPT fwd(1-D)", lambda: GP(long(1, 2, 3)), "tokens")
err("GPT fwd(id 12)", lambda: GP(long([1, 12])), "12")
err("GPT fwd(id -1)", lambda: GP(long([1, -1])), "-1")
err("GPT fwd(T=17 > max_len)", lambda: GP(torch.ones(1, 17, dtype=torch.long)), "max_len")
err("GPT fwd(empty (1, 0))", lambda: GP(torch.zeros(1, 0, dtype=torch.long)), "tokens")
err("GPT fwd(attention_mask shape)", lambda: GP(long([1, 2, 3]), attention_mask=torch.ones(1, 2)),
    "attention_mask")
err("GPT fwd(attention_mask 0.5)", lambda: GP(long([1, 2, 3]), attention_mask=torch.full((1, 3), 0.5)),
    "attention_mask")
err("GPT fwd(attention_mask list)", lambda: GP(long([1, 2, 3]), attention_mask=[[1, 1, 1]]), "attention_mask")
err("GPT fwd(cache='x')", lambda: GP(long([1, 2]), cache="x"), "cache")
err("GPT fwd(cache for 3 rows)", lambda: GP(long([1, 2]), cache=GP.new_cache(3)), "cache")
err("GPT fwd(tokens on meta)", lambda: GP(long([1, 2]).to(META)), "meta|device")
err("GPT.new_cache(0)", lambda: GP.new_cache(0), "batch_size")
ok("GPT fwd(left padding changes nothing)",
   lambda: (GP(long([4, 5, 6]))[:, -1], GP(long([0, 0, 4, 5, 6]))[:, -1]),
   lambda r: torch.allclose(r[0], r[1], atol=1e-5))
ok("GPT fwd(attention_mask float 0/1)", lambda: GP(long([1, 2, 3]), attention_mask=torch.ones(1, 3)),
   shape_is(1, 3, V))
err("KVCache(num_layers=-1)", lambda: d2l.KVCache(-1, 1, 2, 8, 4), "num_layers")
err("KVCache(d_k=2.5)", lambda: d2l.KVCache(1, 1, 2, 8, 2.5), "d_k")
err("kv_cache_bytes(Transformer)", lambda: d2l.kv_cache_bytes(TR, 1, 10), "GPT|model")
err("kv_cache_bytes(batch_size=-1)", lambda: d2l.kv_cache_bytes(GP, -1, 10), "batch_size")
err("kv_cache_bytes(dtype='float')", lambda: d2l.kv_cache_bytes(GP, 1, 10, dtype="float"), "dtype")
ok("kv_cache_bytes == cache.nbytes", lambda: (d2l.kv_cache_bytes(GP, 2, 16), GP.new_cache(2, 16).nbytes),
   lambda r: r[0] == r[1])
err("kv_cache_benchmark(lengths=[])", lambda: d2l.kv_cache_benchmark(lengths=[]), "lengths")
err("kv_cache_benchmark(repeats=0)", lambda: d2l.kv_cache_benchmark(lengths=(2,), model=GP, repeats=0),
    "repeats")
err("gelu_tanh(list)", lambda: d2l.gelu_tanh([1.0]), "Tensor")
err("load_corpus('nope.txt')", lambda: d2l.load_corpus("nope.txt"), "nope")
err("load_corpus(5)", lambda: d2l.load_corpus(5), "name|corpus")

# ------------------------------------------------------------------ generate
P = long([4, 5, 6], [0, 7, 8])
err("generate(Transformer)", lambda: d2l.generate(TR, P, 2), "GPT")
err("generate(prompt list)", lambda: d2l.generate(GP, [[4, 5]], 2), "prompt")
err("generate(prompt 1-D)", lambda: d2l.generate(GP, long(4, 5), 2), r"prompt\[None\]")
err("generate(prompt float)", lambda: d2l.generate(GP, P.float(), 2), "prompt")
err("generate(prompt id 12)", lambda: d2l.generate(GP, long([4, 12]), 2), "12")
err("generate(right-padded)", lambda: d2l.generate(GP, long([4, 5, 6], [7, 8, 0]), 2), "LEFT")
err("generate(a row of pads)", lambda: d2l.generate(GP, long([4, 5], [0, 0]), 2), "all padding")
err("generate(pad inside a row)", lambda: d2l.generate(GP, long([4, 0, 6]), 2), "padding")
err("generate(max_new_tokens=-1)", lambda: d2l.generate(GP, P, -1), "max_new_tokens")
err("generate(max_new_tokens=2.5)", lambda: d2l.generate(GP, P, 2.5), "max_new_tokens")
err("generate(past max_len)", lambda: d2l.generate(GP, P, 20), "max_len")
err("generate(temperature=-1)", lambda: d2l.generate(GP, P, 2, temperature=-1), "temperature")
err("generate(temperature=nan)", lambda: d2l.generate(GP, P, 2, temperature=NAN), "temperature")
err("generate(temperature='1')", lambda: d2l.generate(GP, P, 2, temperature="1"), "temperature")
err("generate(top_k=0)", lambda: d2l.generate(GP, P, 2, temperature=1.0, top_k=0), "top_k")
err("generate(top_k=13)", lambda: d2l.generate(GP, P, 2, temperature=1.0, top_k=13), "top_k")
err("generate(eos_id=12)", lambda: d2l.generate(GP, P, 2, eos_id=12), "eos_id")
err("generate(eos_id = pad id)", lambda: d2l.generate(GP, P, 2, eos_id=0), "eos_id|pad")
err("generate(generator=0)", lambda: d2l.generate(GP, P, 2, temperature=1.0, generator=0), "generator")
err("generate(attention_mask shape)", lambda: d2l.generate(GP, P, 2, attention_mask=torch.ones(2, 2)),
    "attention_mask")
err("generate(sliding_window='yes')", lambda: d2l.generate(GP, P, 2, sliding_window="yes"), "sliding_window")
ok("generate(temperature=1e-30) ~ greedy",
   lambda: (d2l.generate(GP, P, 3, temperature=1e-30, generator=torch.Generator().manual_seed(0)),
            d2l.generate(GP, P, 3)),
   lambda r: torch.equal(r[0], r[1]))
ok("generate(batched left-padded == one at a time)",
   lambda: (d2l.generate(GP, P, 4)[1, 1:], d2l.generate(GP, long([7, 8]), 4)[0]),
   lambda r: torch.equal(r[0], r[1]))
ok("generate(cache == no cache)", lambda: (d2l.generate(GP, P, 5), d2l.generate(GP, P, 5, use_cache=False)),
   lambda r: torch.equal(r[0], r[1]))
ok("generate(max_new_tokens=0)", lambda: d2l.generate(GP, P, 0), lambda r: torch.equal(r, P))
ok("generate(sliding_window=True past max_len)", lambda: d2l.generate(GP, P, 20, sliding_window=True),
   shape_is(2, 23))


def _nan_gpt():
    m = gpt()
    with torch.no_grad():
        m.lm_head.weight.fill_(NAN)
    return m


err("generate(NaN weights)", lambda: d2l.generate(_nan_gpt(), P, 2), "NaN")
err("generate(NaN weights, sampling)", lambda: d2l.generate(_nan_gpt(), P, 2, temperature=1.0), "NaN")

# ------------------------------------------------------------------ BERT, mask_tokens
err("BERT(d_model=30, num_heads=4)", lambda: bert(d_model=30, num_heads=4), "num_heads=4")
err("BERT(num_segments=0)", lambda: bert(num_segments=0), "num_segments")
err("BERT(pad_id=12)", lambda: bert(pad_id=12), "pad_id")
err("BERT(activation='swish')", lambda: bert(activation="swish"), "activation")
err("BERT(norm_eps=nan)", lambda: bert(norm_eps=NAN), "norm_eps")
err("BERT(max_len=0)", lambda: bert(max_len=0), "max_len")
err("BERT fwd(float tokens)", lambda: BE(torch.ones(1, 3)), "tokens")
err("BERT fwd(id 12)", lambda: BE(long([1, 12])), "12")
err("BERT fwd(T > max_len)", lambda: BE(torch.ones(1, 17, dtype=torch.long)), "max_len")
err("BERT fwd(segments shape)", lambda: BE(long([1, 2, 3]), long([0, 1])), "segments")
err("BERT fwd(segment id 2)", lambda: BE(long([1, 2, 3]), long([0, 1, 2])), "segment")
err("BERT fwd(segments float)", lambda: BE(long([1, 2, 3]), torch.zeros(1, 3)), "segments")
err("BERT fwd(tokens on meta)", lambda: BE(long([1, 2]).to(META)), "meta|device")
err("BERT.mlm_logits(d=6)", lambda: BE.mlm_logits(torch.randn(1, 3, 6)), "hidden")
err("BERT.pooled(2-D)", lambda: BE.pooled(torch.randn(1, 8)), "hidden")
ok("BERT fwd(right pads change nothing)",
   lambda: (BE(long([4, 5, 6])), BE(long([4, 5, 6, 0, 0]))[:, :3]), lambda r: torch.allclose(r[0], r[1], atol=1e-5))
err("mask_tokens(list)", lambda: d2l.mask_tokens([[4, 5]], 3, V, [0, 1, 2, 3]), "tokens")
err("mask_tokens(float)", lambda: d2l.mask_tokens(torch.ones(1, 3), 3, V, [0, 1, 2, 3]), "tokens")
err("mask_tokens(mask_id=12)", lambda: d2l.mask_tokens(long([4, 5]), 12, V, [0]), "mask_id")
err("mask_tokens(special_ids=5)", lambda: d2l.mask_tokens(long([4, 5]), 3, V, 5), "special_ids")
err("mask_tokens(special id 99)", lambda: d2l.mask_tokens(long([4, 5]), 3, V, [99]), "special")
err("mask_tokens(p=1.5)", lambda: d2l.mask_tokens(long([4, 5]), 3, V, [0], p=1.5), r"\bp\b")
err("mask_tokens(p=nan)", lambda: d2l.mask_tokens(long([4, 5]), 3, V, [0], p=NAN), r"\bp\b")
err("mask_tokens(token id 12)", lambda: d2l.mask_tokens(long([4, 12]), 3, V, [0]), "12")
err("mask_tokens(vocab_size=0)", lambda: d2l.mask_tokens(long([4, 5]), 3, 0, [0]), "vocab_size")
err("mask_tokens(generator='x')", lambda: d2l.mask_tokens(long([4, 5]), 3, V, [0], generator="x"), "generator")
err("mask_tokens(every id special)", lambda: d2l.mask_tokens(long([1]), 1, 2, [0, 1]), "special")
ok("mask_tokens(p=1): every normal token selected",
   lambda: d2l.mask_tokens(long([1, 4, 5, 0]), 3, V, [1, 2, 3], p=1.0),
   lambda r: r[1].tolist() == [[-100, 4, 5, -100]])

# ------------------------------------------------------------------ GRUSeq2Seq, ConvStack
err("GRUSeq2Seq(embed_size=0)", lambda: d2l.GRUSeq2Seq(V, V, embed_size=0), "embed_size")
err("GRUSeq2Seq(num_layers=1.5)", lambda: d2l.GRUSeq2Seq(V, V, num_layers=1.5), "num_layers")
err("GRUSeq2Seq(pad_id=-1)", lambda: d2l.GRUSeq2Seq(V, V, pad_id=-1), "pad_id")
err("GRUEncoder(vocab_size=-1)", lambda: d2l.GRUEncoder(-1, 4, 8), "vocab_size")
err("GRUEncoder(num_hiddens=0)", lambda: d2l.GRUEncoder(V, 4, 0), "num_hiddens")
err("AttentionGRUDecoder(embed_size=2.5)", lambda: d2l.AttentionGRUDecoder(V, 2.5, 8), "embed_size")
err("GRUSeq2Seq fwd(float src)", lambda: GRU(SRC.float(), TGT), "src")
err("GRUSeq2Seq fwd(batch differ)", lambda: GRU(SRC, TGT[:1]), "batch")
err("GRUSeq2Seq fwd(src id 12)", lambda: GRU(long([4, 12]), TGT[:1]), "12")
err("GRUSeq2Seq fwd(src row all pad)", lambda: GRU(long([4, 5], [0, 0]), TGT), "real")
err("GRUSeq2Seq fwd(left-padded src)", lambda: GRU(long([0, 4, 5]), TGT[:1]), "right-padded")
err("GRUSeq2Seq fwd(src on meta)", lambda: GRU(SRC.to(META), TGT.to(META)), "meta|device")
ok("GRUSeq2Seq fwd(pads change nothing)",
   lambda: (GRU(long([4, 5]), long([1, 4])), GRU(long([4, 5, 0]), long([1, 4]))),
   lambda r: torch.allclose(r[0], r[1], atol=1e-5))
err("ConvStack(kernel_size=1)", lambda: d2l.ConvStack(8, kernel_size=1), "kernel_size")
err("ConvStack(d_model=0)", lambda: d2l.ConvStack(0), "d_model")
err("ConvStack(dilated='no')", lambda: d2l.ConvStack(8, dilated="no"), "dilated")
err("ConvStack fwd(d=6)", lambda: d2l.ConvStack(8)(torch.randn(1, 3, 6)), "d_model")
err("ConvStack fwd(int)", lambda: d2l.ConvStack(8)(torch.ones(1, 3, 8, dtype=torch.long)), "x")

# ------------------------------------------------------------------ schedules
err("noam_schedule(d_model=0)", lambda: d2l.noam_schedule(0, 10), "d_model")
err("noam_schedule(warmup=0)", lambda: d2l.noam_schedule(64, 0), "warmup")
err("noam_schedule(warmup=2.5)", lambda: d2l.noam_schedule(64, 2.5), "warmup")
err("noam_schedule(factor=-1)", lambda: d2l.noam_schedule(64, 10, factor=-1), "factor")
err("noam_schedule(...)(-1)", lambda: d2l.noam_schedule(64, 10)(-1), "step")
err("warmup_cosine(warmup > total)", lambda: d2l.warmup_cosine_schedule(20, 10), "warmup")
err("warmup_cosine(final=nan)", lambda: d2l.warmup_cosine_schedule(2, 10, final=NAN), "final")
err("warmup_cosine(total=0)", lambda: d2l.warmup_cosine_schedule(1, 0), "total")
err("warmup_cosine(...)(-2)", lambda: d2l.warmup_cosine_schedule(2, 10)(-2), "step")
ok("warmup_cosine ends at final", lambda: d2l.warmup_cosine_schedule(2, 10, final=0.1)(9),
   lambda r: abs(r - 0.1) < 1e-9)

# ------------------------------------------------------------------ train
err("train(net=5)", lambda: d2l.train(5, nn.MSELoss(), lambda: None, lin_data(), progress=False), "net")
err("train(loss=5)", lambda: train(loss=5), "loss")
err("train(updater=5)", lambda: d2l.train(nn.Linear(2, 1), nn.MSELoss(), 5, lin_data(), progress=False),
    "updater")
err("train(data=None)", lambda: d2l.train(nn.Linear(2, 1), nn.MSELoss(), lambda: None, None, progress=False),
    "data")
err("train(data=5)", lambda: train(data=5), "data")
err("train(data=a tensor)", lambda: train(data=torch.ones(4, 2)), "data")
err("train(data=[])", lambda: train(data=[]), "batches")
err("train(single-tensor batches)", lambda: train(data=[x for x, _ in lin_data()]), "tuple")
err("train(1-item batches)", lambda: train(data=[(x,) for x, _ in lin_data()]), "2 items")
err("train(float64 data, float32 model)", lambda: train(data=lin_data(dtype=torch.float64)), "float64")
err("train(target (8,) vs output (8, 1))", lambda: train(data=[(x, y.flatten()) for x, y in lin_data()]),
    "target")
err("train(target batch 6 vs output 8)", lambda: train(data=[(x, y[:6]) for x, y in lin_data()]),
    "target|output")
err("train(input features 3, model 2)", lambda: train(data=[(torch.randn(8, 3), torch.randn(8, 1))]),
    "input|shape")
err("train(num_epochs=0)", lambda: train(num_epochs=0), "num_epochs")
err("train(num_epochs=1.5)", lambda: train(num_epochs=1.5), "num_epochs")
err("train(max_steps=0)", lambda: train(max_steps=0), "max_steps")
err("train(max_steps=-5)", lambda: train(max_steps=-5), "max_steps")
err("train(max_seconds=-1)", lambda: train(max_seconds=-1), "max_seconds")
err("train(max_seconds=nan)", lambda: train(max_seconds=NAN), "max_seconds")
err("train(grad_clip=-1)", lambda: train(grad_clip=-1), "grad_clip")
err("train(grad_clip=inf)", lambda: train(grad_clip=INF), "grad_clip")
err("train(sync_every=0)", lambda: train(sync_every=0), "sync_every")
err("train(callbacks=a function)", lambda: train(callbacks=lambda n, h: None), "callbacks")
err("train(callbacks=[3])", lambda: train(callbacks=[3]), "callback")
err("train(scheduler=3)", lambda: train(scheduler=3), "scheduler")
err("train(eval_fn=5)", lambda: train(eval_fn=5), "eval_fn")
err("train(eval_fn returns a list)", lambda: train(eval_fn=lambda: [1.0]), "eval_fn")
err("train(compile=5)", lambda: train(compile=5), "compile")
err("train(device='nope')", lambda: train(device="nope"), "nope")
err("train(lr=nan in the optimizer)", lambda: train(opt=(lambda n: (n, torch.optim.SGD(n.parameters(), lr=NAN))[1])(
    nn.Linear(2, 1))), "lr|learning rate")
err("train(sgd updater with lr=nan)",
    lambda: (lambda w: d2l.train(lambda X: X @ w, d2l.squared_loss, lambda: d2l.sgd([w], NAN), lin_data(),
                                 progress=False))(torch.zeros(2, 1, requires_grad=True)), "lr")
err("train(schedule fn with an sgd function)",
    lambda: (lambda w: d2l.train(lambda X: X @ w, d2l.squared_loss, lambda: d2l.sgd([w], 0.1), lin_data(),
                                 progress=False, scheduler=d2l.noam_schedule(8, 2)))(
        torch.zeros(2, 1, requires_grad=True)), "optimizer")
warns("train(the loss becomes NaN)", lambda: train(data=[(torch.full((8, 2), NAN), torch.ones(8, 1))]),
      "nan|NaN")
ok("train(max_steps=5) runs 5 steps over epochs", lambda: train(max_steps=5).steps, lambda r: r == 5)
ok("train(max_steps=3, num_epochs=1) stops after the epoch", lambda: train(max_steps=3, num_epochs=1).steps,
   lambda r: r == 2)
ok("train(schedule function)", lambda: train(scheduler=d2l.warmup_cosine_schedule(1, 4), num_epochs=2).steps,
   lambda r: r == 4)
ok("train(data is a function)", lambda: train(data=lambda: iter(lin_data()), num_epochs=2).steps,
   lambda r: r == 4)
err("train(one-shot iterator, 2 epochs)", lambda: train(data=iter(lin_data()), num_epochs=2), "iterator")

# ------------------------------------------------------------------ check, claim, exercise
def quiet(f):
    def run():
        with contextlib.redirect_stdout(io.StringIO()):
            return f()
    return run


ok("check(tensor vs list)", quiet(lambda: d2l.check("x", torch.tensor([1, 2, 3]), [1, 2, 3])), bool)
ok("check(equal dicts)", quiet(lambda: d2l.check("x", {"a": 1, "b": [1, 2]}, {"a": 1, "b": [1, 2]})), bool)
ok("check(numpy vs tensor)", quiet(lambda: d2l.check("x", np.array([1.0, 2.0]), torch.tensor([1.0, 2.0]))),
   bool)
ok("check(torch.Size vs tuple)", quiet(lambda: d2l.check("x", torch.Size([2, 3]), (2, 3))), bool)
ok("check(wrong value) -> False", quiet(lambda: d2l.check("x", [1, 2], [1, 3])), lambda r: not r)
ok("check(shape differs) -> False", quiet(lambda: d2l.check("x", torch.zeros(2), [0, 0, 0])), lambda r: not r)
ok("check(got raises) -> False", quiet(lambda: d2l.check("x", lambda: 1 / 0, 1)), lambda r: not r)
ok("check(got=None) -> False", quiet(lambda: d2l.check("x", None, 1)), lambda r: not r)
ok("check(got=nan) -> False", quiet(lambda: d2l.check("x", NAN, 1.0)), lambda r: not r)
ok("check(str vs number) -> False", quiet(lambda: d2l.check("x", "1", 1)), lambda r: not r)
ok("check(1 vs True) -> False", quiet(lambda: d2l.check("x", 1, True)), lambda r: not r)
ok("check(numpy array vs bool) never raises", quiet(lambda: d2l.check("x", np.array([True, False]), True)),
   lambda r: not r)
err("check(what='')", lambda: d2l.check("", 1, 1), "what")
err("check(what=5)", lambda: d2l.check(5, 1, 1), "what")
err("claim(op='=~')", quiet(lambda: d2l.claim("x", 1.0, "=~", 1.0)), r"\bop\b")
err("claim(value of 2 numbers)", quiet(lambda: d2l.claim("x", torch.ones(2), "<=", 1.0)), "value")
err("claim(value='x')", quiet(lambda: d2l.claim("x", "x", "<=", 1.0)), "value")
err("claim(value=None)", quiet(lambda: d2l.claim("x", None, "<=", 1.0)), "value")
err("claim(in, bound=3)", quiet(lambda: d2l.claim("x", 1.0, "in", 3)), "bound")
err("claim(in, lo > hi)", quiet(lambda: d2l.claim("x", 1.0, "in", (2, 1))), "bound")
err("claim(what='')", quiet(lambda: d2l.claim("", 1.0, "<=", 2.0)), "what")
err("claim(nan value) fails", quiet(lambda: d2l.claim("x", NAN, "<=", 1.0)), "no longer holds")
err("claim(nan bound)", quiet(lambda: d2l.claim("x", 0.5, "<=", NAN)), "bound")
err("exercise('nope')", lambda: d2l.exercise("nope", lambda: 1), "nope")

# ------------------------------------------------------------------ plots and views
W4 = torch.softmax(torch.randn(2, 2, 3, 3), -1)   # (B, h, T, T)


def fig(f):
    def run():
        try:
            return f()
        finally:
            plt.close("all")
    return run


err("show_heatmaps(5-D)", fig(lambda: d2l.show_heatmaps(torch.rand(1, 1, 1, 2, 2, 2))), "matrices")
err("show_heatmaps(empty)", fig(lambda: d2l.show_heatmaps(torch.rand(0, 3))), "empty")
err("show_heatmaps(1-D)", fig(lambda: d2l.show_heatmaps(torch.rand(3))), "matrices")
err("show_heatmaps(xlabels 2 for 3 keys)", fig(lambda: d2l.show_heatmaps(torch.rand(3, 3), xlabels=["a", "b"])),
    "xlabels")
err("show_heatmaps(ylabels)", fig(lambda: d2l.show_heatmaps(torch.rand(3, 3), ylabels=list("abcd"))), "ylabels")
err("show_heatmaps(titles)", fig(lambda: d2l.show_heatmaps(torch.rand(4, 3, 3), titles=["a"] * 3)), "titles")
err("show_heatmaps(mask shape)", fig(lambda: d2l.show_heatmaps(torch.rand(3, 3), mask=torch.ones(2, 2))), "mask")
err("show_heatmaps(ncols=0)", fig(lambda: d2l.show_heatmaps(torch.rand(4, 3, 3), ncols=0)), "ncols")
err("show_heatmaps(ncols=2.5)", fig(lambda: d2l.show_heatmaps(torch.rand(4, 3, 3), ncols=2.5)), "ncols")
err("show_heatmaps(strings)", fig(lambda: d2l.show_heatmaps([["a", "b"]])), "matrices")
err("show_heatmaps(cmap='nope')", fig(lambda: d2l.show_heatmaps(torch.rand(3, 3), cmap="nope")), "nope")
ok("show_heatmaps(NaN shown as masked)", fig(lambda: d2l.show_heatmaps(torch.tensor([[NAN, 1.0]]))),
   lambda r: r is not None)
err("plot(x 3, y 4)", fig(lambda: d2l.plot([1, 2, 3], [1, 2, 3, 4])), "x")
err("plot(2-D y)", fig(lambda: d2l.plot(np.ones((2, 3)))), "1-D")
err("plot(None)", fig(lambda: d2l.plot(None)), "Y")
err("plot(fmts=[])", fig(lambda: d2l.plot([1, 2], fmts=[])), "fmts")
err("plot(legend 1 name, 2 curves)", fig(lambda: d2l.plot([1, 2], [[1, 2], [2, 1]], legend=["a"])), "legend")
err("plot(xscale='bogus')", fig(lambda: d2l.plot([1, 2], xscale="bogus")), "bogus")
err("head_view(5)", lambda: d2l.head_view(5), "attention")
err("head_view({})", lambda: d2l.head_view({}), "attention")
err("head_view(empty weights)", lambda: d2l.head_view(torch.zeros(1, 1, 0, 0)), "empty")
err("head_view(6-D)", lambda: d2l.head_view(torch.rand(1, 1, 1, 1, 2, 2)), "weights")
err("head_view(layer=5)", lambda: d2l.head_view(W4, layer=5), "layer")
err("head_view(example=9)", lambda: d2l.head_view(W4, example=9), "example")
err("head_view(kind='nope')", lambda: d2l.head_view(W4, kind="nope"), "kind")
err("head_view(heads=[5])", lambda: d2l.head_view(W4, heads=[5]), "heads")
err("head_view(heads='all')", lambda: d2l.head_view(W4, heads="all"), "heads")
err("head_view(src_tokens too many)", lambda: d2l.head_view(W4, src_tokens=list("abcd")), "labels|tokens")
err("head_view(masks for unknown kind)", lambda: d2l.head_view(W4, masks={"nope": None}), "kind")
err("head_view(mask int)", lambda: d2l.head_view(W4, masks=torch.ones(2, 1, 1, 3, dtype=torch.long)), "mask")
err("model_view(open=(9, 0))", lambda: d2l.model_view(W4, open=(9, 0)), "open")
err("model_view(open=5)", lambda: d2l.model_view(W4, open=5), "open")
ok("head_view(valid)", lambda: d2l.head_view(W4, src_tokens=list("abc")).html(), lambda r: "d2l" in r)
err("attention_figure(head=9)", fig(lambda: d2l.attention_figure(W4, head=9)), "head")
err("attention_figure(head=True)", fig(lambda: d2l.attention_figure(W4, head=True)), "head")
err("attention_explorer(5)", lambda: d2l.attention_explorer(5), "attention")
err("pe_figure(d_model=1)", fig(lambda: d2l.pe_figure(d_model=1)), "d_model")
err("pe_figure(dims=[40])", fig(lambda: d2l.pe_figure(d_model=32, dims=[40])), "dims")
err("pe_figure(dims=['a'])", fig(lambda: d2l.pe_figure(dims=["a"])), "dims")
err("pe_explorer(num_positions=0)", lambda: d2l.pe_explorer(num_positions=0), "num_positions")
err("diagram('nope')", fig(lambda: d2l.diagram("nope")), "nope")
err("as_attention_maps({})", lambda: as_attention_maps({}), "attention")
err("as_attention_maps(masks=5 for 2 kinds)",
    lambda: as_attention_maps({"a": W4, "b": W4}, masks={"c": None}), "kind")
err("AttentionMaps(5)", lambda: d2l.AttentionMaps(5), "weights")
err("collect_attention(GPT)", lambda: d2l.collect_attention(GP, long([1, 2])), "GPT")
err("collect_attention(Transformer, src float)", lambda: d2l.collect_attention(TR, SRC.float()), "src")
err("collect_attention(Transformer, src None)", lambda: d2l.collect_attention(TR), "src")
err("collect_attention(Transformer, tgt batch 1)", lambda: d2l.collect_attention(TR, SRC, TGT[:1]), "batch")
err("collect_attention(Transformer, tgt float)", lambda: d2l.collect_attention(TR, SRC, TGT.float()), "tgt")
err("collect_attention(fresh MHA, no forward)", lambda: d2l.collect_attention(d2l.MultiHeadAttention(8, 2)),
    "forward")
err("collect_attention(MHA, mask int)", lambda: d2l.collect_attention(MHA, X, mask=torch.ones(2, 1, 1, 3)),
    "mask")
ok("collect_attention(Transformer) shapes", lambda: d2l.collect_attention(TR, SRC, TGT),
   lambda r: tuple(r["cross"].shape) == (1, 2, 2, 3, 4) and tuple(r.masks["cross"].shape) == (2, 2, 3, 4))
err("TrainingMonitor(every=0)", lambda: d2l.TrainingMonitor(every=0), "every")
err("TrainingMonitor(probe=5)", lambda: d2l.TrainingMonitor(probe=5), "probe")

# ------------------------------------------------------------------ save / load
err("save(path=5)", lambda: d2l.save(5, TR), "path")
err("save(nn.Linear)", lambda: d2l.save(tmp("a.pt"), nn.Linear(2, 2)), "Linear")
err("save(model=None)", lambda: d2l.save(tmp("a.pt"), None), "model")
err("save(vocab=5)", lambda: d2l.save(tmp("a.pt"), TR, vocab=5), "vocab")
err("save(vocab=['a'])", lambda: d2l.save(tmp("a.pt"), TR, vocab=["a"]), "vocab")
err("save(into a missing folder)", lambda: d2l.save(os.path.join(TMP, "no", "such", "a.pt"), TR), "no")
err("load(missing file)", lambda: d2l.load(tmp("missing.pt")), "missing")
err("load(path=None)", lambda: d2l.load(None), "path")


def _text_file():
    with open(tmp("text.pt"), "w") as f:
        f.write("not a checkpoint")
    return d2l.load(tmp("text.pt"))


def _bare_state_dict():
    torch.save(TR.state_dict(), tmp("sd.pt"))
    return d2l.load(tmp("sd.pt"))


err("load(a text file)", _text_file, "checkpoint")
err("load(a bare state dict)", _bare_state_dict, "checkpoint")
err("load(device='nope')", lambda: (d2l.save(tmp("t.pt"), TR), d2l.load(tmp("t.pt"), device="nope")), "nope")


def _round_trip(model, vocab, x):
    d2l.save(tmp("rt.pt"), model, vocab=vocab)
    m2, v2 = d2l.load(tmp("rt.pt"))
    y1 = model.eval()(*x)
    y2 = m2(*x)
    return torch.allclose(y1, y2, atol=1e-6) and v2 == vocab and torch.load(tmp("rt.pt"), weights_only=True)


ok("save/load Transformer + vocabs", lambda: _round_trip(TR, (VOC, VOC), (SRC, TGT)), bool)
ok("save/load GPT", lambda: _round_trip(GP, VOC, (P,)), bool)
ok("save/load BERT", lambda: _round_trip(BE, None, (long([4, 5]),)), bool)
ok("save/load GRUSeq2Seq", lambda: _round_trip(GRU, None, (SRC, TGT)), bool)

# ------------------------------------------------------------------ Hugging Face ports (local, tiny)
try:
    import transformers
    from transformers import BertConfig, BertForMaskedLM, GPT2Config, GPT2LMHeadModel
    transformers.logging.set_verbosity_error()
    HF = True
except ImportError:  # the HF cases need transformers
    HF = False

if HF:
    def hf_gpt2(**kw):
        torch.manual_seed(0)
        cfg = dict(vocab_size=V, n_embd=8, n_head=2, n_layer=1, n_positions=16)
        cfg.update(kw)
        return GPT2LMHeadModel(GPT2Config(**cfg)).eval()

    def hf_bert(**kw):
        torch.manual_seed(0)
        cfg = dict(vocab_size=V, hidden_size=8, num_attention_heads=2, num_hidden_layers=1,
                   intermediate_size=16, max_position_embeddings=16)
        cfg.update(kw)
        return BertForMaskedLM(BertConfig(**cfg)).eval()

    err("gpt2_from_hf('gpt2')", lambda: d2l.gpt2_from_hf("gpt2"), "GPT2")
    err("gpt2_from_hf(BertForMaskedLM)", lambda: d2l.gpt2_from_hf(hf_bert()), "GPT2")
    err("gpt2_from_hf(nn.Linear)", lambda: d2l.gpt2_from_hf(nn.Linear(2, 2)), "GPT2")
    err("gpt2_from_hf(activation silu)", lambda: d2l.gpt2_from_hf(hf_gpt2(activation_function="silu")),
        "activation")
    err("gpt2_from_hf(scale_attn_weights=False)",
        lambda: d2l.gpt2_from_hf(hf_gpt2(scale_attn_weights=False)), "scale")
    ok("gpt2_from_hf == HF logits", lambda: (lambda hf: (d2l.gpt2_from_hf(hf)(long([1, 2, 3])),
                                                         hf(long([1, 2, 3])).logits))(hf_gpt2()),
       lambda r: torch.allclose(r[0], r[1], atol=1e-5))
    ok("gpt2_from_hf(float64 model)", lambda: (lambda hf: (d2l.gpt2_from_hf(hf)(long([1, 2, 3])),
                                                           hf(long([1, 2, 3])).logits))(hf_gpt2().double()),
       lambda r: r[0].dtype == torch.float64 and torch.allclose(r[0], r[1], atol=1e-8))
    err("bert_from_hf('bert')", lambda: d2l.bert_from_hf("bert"), "Bert")
    err("bert_from_hf(GPT2LMHeadModel)", lambda: d2l.bert_from_hf(hf_gpt2()), "Bert")
    err("bert_from_hf(relative positions)",
        lambda: d2l.bert_from_hf(hf_bert(position_embedding_type="relative_key")), "position")
    err("bert_from_hf(hidden_act silu)", lambda: d2l.bert_from_hf(hf_bert(hidden_act="silu")), "hidden_act")
    ok("bert_from_hf == HF hidden states",
       lambda: (lambda hf: (d2l.bert_from_hf(hf)(long([4, 5, 6])),
                            hf.bert(long([4, 5, 6])).last_hidden_state))(hf_bert()),
       lambda r: torch.allclose(r[0], r[1], atol=1e-5))
    err("gpt_param_count('gpt5')", lambda: d2l.gpt_param_count("gpt5"), "gpt5")
    err("gpt_param_count(5)", lambda: d2l.gpt_param_count(5), "config")
    err("gpt_param_count({'vocab_size': 10})", lambda: d2l.gpt_param_count({"vocab_size": 10}), "n_embd|d_model")
    ok("gpt_param_count(GPT) == its parameters", lambda: (d2l.gpt_param_count(GP),
                                                          sum(p.numel() for p in GP.parameters())),
       lambda r: r[0] == r[1])
    ok("gpt_param_count(HF config) == HF parameters",
       lambda: (lambda hf: (d2l.gpt_param_count(hf.config), sum(p.numel() for p in hf.parameters())))(hf_gpt2()),
       lambda r: r[0] == r[1])
    err("gpt_train_flops(tokens=-5)", lambda: d2l.gpt_train_flops("gpt2", -5), "tokens")
    err("gpt_train_flops(tokens=nan)", lambda: d2l.gpt_train_flops("gpt2", NAN), "tokens")
    err("gpt_kv_cache_bytes_per_token('nope')", lambda: d2l.gpt_kv_cache_bytes_per_token("nope"), "nope")
    err("gpt_kv_cache_bytes_per_token(bytes=0)", lambda: d2l.gpt_kv_cache_bytes_per_token("gpt2", 0),
        "bytes_per_number")


# ------------------------------------------------------------------ own data: files, splits, batches
def _file(name, text, mode="w"):
    path = tmp(name)
    with open(path, mode) as f:
        f.write(text)
    return path


err("read_pairs(missing file)", lambda: d2l.read_pairs(tmp("nope.tsv")), "nope.tsv")
err("read_pairs(a list)", lambda: d2l.read_pairs(["a\tb"]), "path")
err("read_pairs(csv read as tsv)", lambda: d2l.read_pairs(_file("p.tsv", "a,b\n")), "delimiter")
err("read_pairs(empty target)", lambda: d2l.read_pairs(_file("e.tsv", "a\t\n")), "target")
err("read_pairs(one column)", lambda: d2l.read_pairs(_file("o.tsv", "a\nb\n")), "line 1")
err("read_pairs(empty file)", lambda: d2l.read_pairs(_file("z.tsv", "")), "no pairs")
err("read_pairs(binary)", lambda: d2l.read_pairs(_file("b.tsv", b"\xff\xfe\x00", "wb")),
    "encoding")
err("read_pairs(columns=(0, 0))", lambda: d2l.read_pairs(_file("c.tsv", "a\tb\n"), columns=(0, 0)),
    "columns")
err("read_pairs(delimiter='ab')", lambda: d2l.read_pairs(_file("d.tsv", "a\tb\n"), delimiter="ab"),
    "delimiter")
ok("read_pairs(csv with quotes)", lambda: d2l.read_pairs(_file("q.csv", '"a, b",c\n')),
   lambda r: r == [("a, b", "c")])
ok("read_pairs(tsv, 3 columns)", lambda: d2l.read_pairs(_file("t.tsv", "a\tb\tCC\n")),
   lambda r: r == [("a", "b")])
err("split_heldout(fraction=0)", lambda: d2l.split_heldout("abcdef", 0), "fraction")
err("split_heldout(fraction=1.5)", lambda: d2l.split_heldout([1, 2, 3], 1.5), "fraction")
err("split_heldout(fraction=nan)", lambda: d2l.split_heldout([1, 2, 3], NAN), "fraction")
err("split_heldout(tensor)", lambda: d2l.split_heldout(torch.arange(5)), "text|list")
err("split_heldout(3 chars, 0.1)", lambda: d2l.split_heldout("abc", 0.1), "characters")
err("split_heldout(one group)", lambda: d2l.split_heldout([("a", "b")] * 4, 0.5,
                                                          key=lambda p: p[0]), "group")
err("split_heldout(key='src')", lambda: d2l.split_heldout([1, 2], 0.5, key="src"), "key")
err("split_heldout(text, key=)", lambda: d2l.split_heldout("abcd", 0.5, key=len), "key")
err("split_heldout(seed=-1)", lambda: d2l.split_heldout([1, 2], 0.5, seed=-1), "seed")
ok("split_heldout(list) keeps every item once",
   lambda: d2l.split_heldout(list(range(10)), 0.3),
   lambda r: sorted(r[0] + r[1]) == list(range(10)) and len(r[1]) == 3)
ok("split_heldout(key) no group on both sides",
   lambda: d2l.split_heldout([(i % 3, i) for i in range(30)], 0.3, key=lambda p: p[0]),
   lambda r: not {a for a, _ in r[0]} & {a for a, _ in r[1]})
err("random_batches(0, x)", lambda: d2l.random_batches(0, torch.zeros(3)), "batch_size")
err("random_batches(4)", lambda: d2l.random_batches(4), "tensor")
err("random_batches(rows differ)", lambda: d2l.random_batches(4, torch.zeros(3), torch.zeros(2)),
    "rows")
err("random_batches(a list)", lambda: d2l.random_batches(4, [1, 2, 3]), "tensor")
err("random_batches(start=-1)", lambda: d2l.random_batches(4, torch.zeros(3), start=-1), "start")
ok("random_batches(start=2) == batch 2",
   lambda: (list(zip(range(3), d2l.random_batches(2, torch.arange(9))))[2][1][0],
            next(d2l.random_batches(2, torch.arange(9), start=2))[0]),
   lambda r: torch.equal(r[0], r[1]))


# ------------------------------------------------------------------ chapter 16: LoRA, DPO, chat
from d2lmini import align as _align  # noqa: E402


def _lora_gpt(**kw):
    return d2l.add_lora(gpt(), **kw)


def _merged_equal():
    m = _lora_gpt(rank=2, alpha=4)
    with torch.no_grad():
        for lin in m.modules():
            if isinstance(lin, d2l.LoRALinear):
                lin.lora_B.normal_()
    before = m(long([1, 2, 3]))
    return (d2l.merge_lora(m)(long([1, 2, 3])) - before).abs().max().item()


Z3 = torch.zeros(3)
err("LoRALinear(LayerNorm)", lambda: d2l.LoRALinear(nn.LayerNorm(4), 2, 4), "Linear")
err("LoRALinear(a string)", lambda: d2l.LoRALinear("W_q", 2, 4), "Linear")
err("LoRALinear(rank=0)", lambda: d2l.LoRALinear(nn.Linear(4, 4), 0, 4), "rank")
err("LoRALinear(rank=2.5)", lambda: d2l.LoRALinear(nn.Linear(4, 4), 2.5, 4), "rank")
err("LoRALinear(alpha=0)", lambda: d2l.LoRALinear(nn.Linear(4, 4), 2, 0), "alpha")
err("LoRALinear(alpha=nan)", lambda: d2l.LoRALinear(nn.Linear(4, 4), 2, NAN), "alpha")
err("LoRALinear(of a LoRALinear)",
    lambda: d2l.LoRALinear(d2l.LoRALinear(nn.Linear(4, 4), 2, 4), 2, 4), "LoRALinear")
err("LoRALinear(x of the wrong width)",
    lambda: d2l.LoRALinear(nn.Linear(4, 3), 2, 4)(torch.randn(2, 5)), "in_features")
ok("LoRALinear starts as its base", lambda: (lambda b: (d2l.LoRALinear(b, 2, 4)(X[..., :4]),
                                                         b(X[..., :4])))(nn.Linear(4, 3)),
   lambda r: torch.equal(r[0], r[1]))
ok("LoRALinear(rank > in_features)", lambda: d2l.LoRALinear(nn.Linear(2, 2), 8, 8)(torch.ones(1, 2)),
   shape_is(1, 2))
err("add_lora(targets that match nothing)", lambda: _lora_gpt(targets=("W_z",)), "W_z")
err("add_lora(target is a LayerNorm)", lambda: _lora_gpt(targets=("norm1",)), "nn.Linear")
err("add_lora(target is a MultiHeadAttention)", lambda: _lora_gpt(targets=("self_attn",)),
    "nn.Linear")
err("add_lora(targets=())", lambda: _lora_gpt(targets=()), "targets")
err("add_lora(targets=[5])", lambda: _lora_gpt(targets=[5]), "targets")
err("add_lora(rank=-1)", lambda: _lora_gpt(rank=-1), "rank")
err("add_lora(alpha='16')", lambda: _lora_gpt(alpha="16"), "alpha")
err("add_lora(model=a dict)", lambda: d2l.add_lora({"W_q": nn.Linear(2, 2)}), "model")
err("add_lora twice on the same layers", lambda: d2l.add_lora(_lora_gpt()), "already")
ok("add_lora freezes all but lora_A/lora_B",
   lambda: sorted({n.rsplit(".", 1)[-1] for n, p in _lora_gpt().named_parameters()
                   if p.requires_grad}), lambda r: r == ["lora_A", "lora_B"])
ok("add_lora(targets='W_q') (one name)", lambda: _lora_gpt(targets="W_q"),
   lambda m: isinstance(m.blocks[0].self_attn.W_q, d2l.LoRALinear))
err("merge_lora(no adapter)", lambda: d2l.merge_lora(gpt()), "nothing to merge")
err("merge_lora(5)", lambda: d2l.merge_lora(5), "model")
ok("merge_lora keeps the outputs", _merged_equal, lambda r: r <= 1e-6)
err("dpo_loss(per-token log-probs (B, T))", lambda: d2l.dpo_loss(*[torch.zeros(3, 4)] * 4), "1-D")
err("dpo_loss(shapes differ)", lambda: d2l.dpo_loss(Z3, Z3, torch.zeros(2), Z3), "shape")
err("dpo_loss(int tensors)", lambda: d2l.dpo_loss(*[torch.zeros(3, dtype=torch.long)] * 4),
    "floating")
err("dpo_loss(lists)", lambda: d2l.dpo_loss(*[[0.0, 1.0]] * 4), "policy_chosen_logps")
err("dpo_loss(empty)", lambda: d2l.dpo_loss(*[torch.zeros(0)] * 4), "1-D")
err("dpo_loss(beta=0)", lambda: d2l.dpo_loss(Z3, Z3, Z3, Z3, beta=0), "beta")
err("dpo_loss(beta=-1)", lambda: d2l.dpo_loss(Z3, Z3, Z3, Z3, beta=-1), "beta")
err("dpo_loss(beta=inf)", lambda: d2l.dpo_loss(Z3, Z3, Z3, Z3, beta=INF), "beta")
err("dpo_loss(NaN log-prob)", lambda: d2l.dpo_loss(Z3 * NAN, Z3, Z3, Z3), "NaN")
ok("dpo_loss at the reference = ln 2", lambda: d2l.dpo_loss(Z3, Z3, Z3, Z3)[0].item(),
   lambda r: abs(r - 0.6931471805599453) < 1e-6)
ok("dpo_loss(huge margin) finite", lambda: d2l.dpo_loss(Z3 + 1e6, Z3 - 1e6, Z3, Z3)[0], finite)
err("sequence_logprob(targets one short)",
    lambda: d2l.sequence_logprob(torch.zeros(2, 5, 7), torch.zeros(2, 4, dtype=torch.long)),
    "disagree")
err("sequence_logprob(target id 9 of 7)",
    lambda: d2l.sequence_logprob(torch.zeros(1, 2, 7), long([1, 9])), "outside")
err("sequence_logprob(float targets)",
    lambda: d2l.sequence_logprob(torch.zeros(1, 2, 7), torch.zeros(1, 2)), "integer")
err("sequence_logprob(2-D logits)",
    lambda: d2l.sequence_logprob(torch.zeros(2, 7), torch.zeros(2, dtype=torch.long)), "3-D")
err("sequence_logprob(int logits)",
    lambda: d2l.sequence_logprob(torch.zeros(1, 2, 7, dtype=torch.long), long([1, 2])),
    "floating")
ok("sequence_logprob(all pads) = 0", lambda: d2l.sequence_logprob(torch.zeros(1, 2, 7), long([0, 0])),
   lambda r: r.shape == (1,) and r.item() == 0.0)
ok("sequence_logprob(pad_id=-100)",
   lambda: d2l.sequence_logprob(torch.zeros(1, 2, 4), long([-100, 3]), pad_id=-100),
   lambda r: abs(r.item() + math.log(4)) < 1e-6)
err("chat_prompt('')", lambda: _align.chat_prompt(""), "instruction")
err("chat_prompt(two lines)", lambda: _align.chat_prompt("a\nb"), "one line")
err("chat_prompt(5)", lambda: _align.chat_prompt(5), "instruction")
err("sft_batch(no examples)", lambda: _align.sft_batch(VOC, []), "empty")
err("InstructionTasks(short text)", lambda: _align.InstructionTasks("abc"), "text")
err("InstructionTasks(heldout=1.5)",
    lambda: _align.InstructionTasks(d2l.load_corpus("book.txt"), heldout=1.5), "heldout")

# ================================================================== run
def origin(exc: BaseException):
    """(file, line text) of the innermost frame of the traceback, and whether the
    statement there (or just above it) is a ``raise``."""
    tb = traceback.extract_tb(exc.__traceback__)
    if not tb:
        return "", False
    frame = tb[-1]
    try:
        with open(frame.filename, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError:
        return frame.filename, False
    i = (frame.lineno or 1) - 1
    stmt = lines[i].strip() if i < len(lines) else ""
    near = " ".join(lines[max(0, i - 3):i + 1])
    deliberate = stmt.startswith("raise ") or ("raise " in near and not stmt.startswith(("def ", "return ")))
    return frame.filename, deliberate


def judge_error(exc: BaseException, names) -> str:
    msg = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, BUG):
        return "crash"
    if any(re.search(p, msg) for p in CLEAR_LIBRARY):
        return "ok-error-clear"
    filename, deliberate = origin(exc)
    ours = os.path.abspath(filename).startswith(PKG) and deliberate
    # a raw message is unclear, unless d2lmini raised it again with what it was given
    if any(re.search(p, msg) for p in RAW) and not (ours and (" got " in msg or "(its " in msg)):
        return "unclear-error"
    if not ours or not isinstance(exc, (ValueError, TypeError, RuntimeError)):
        return "unclear-error"
    if names and not re.search(names, str(exc), re.IGNORECASE):
        return "unclear-error"
    return "ok-error-clear"


def run_case(case):
    name, call, kind, names, accept = case
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = call()
        except Exception as exc:  # noqa: BLE001 - every error is what the probe judges
            msg = f"{type(exc).__name__}: {exc}"
            verdict = judge_error(exc, names)
            if kind == "accept":
                check, error_ok = accept
                if not (error_ok and verdict == "ok-error-clear"):
                    verdict = "crash"
            return verdict, msg
    if kind == "accept":
        check = accept[0]
        try:
            good = bool(check(result))
        except Exception as exc:  # noqa: BLE001
            return "silent-wrong", f"check failed: {type(exc).__name__}: {exc}"
        return ("accepted-correctly" if good else "silent-wrong"), "" if good else f"returned {result!r:.80}"
    ours = [w for w in caught if os.path.abspath(w.filename).startswith(PKG)
            or re.match(r"d2l(mini)?\.", str(w.message))]
    if kind == "warn" and ours:
        msg = str(ours[0].message)
        ok_ = not names or re.search(names, msg, re.IGNORECASE)
        return ("ok-error-clear" if ok_ else "unclear-error"), f"warning: {msg}"
    return "silent-wrong", f"returned {type(result).__name__} {str(result)[:70]!r}"


OUTCOMES = ("ok-error-clear", "accepted-correctly", "unclear-error", "silent-wrong", "crash")


def main(argv) -> int:
    quiet_table = "-q" in argv
    rows = []
    for case in CASES:
        torch.manual_seed(0)
        verdict, msg = run_case(case)
        rows.append((case[0], verdict, " ".join(msg.split())))
    plt.close("all")
    w = max(len(r[0]) for r in rows)
    print(f"{'case':<{w}}  {'outcome':<18}  message")
    for name, verdict, msg in rows:
        if quiet_table and verdict in ("ok-error-clear", "accepted-correctly"):
            continue
        print(f"{name:<{w}}  {verdict:<18}  {msg[:110]}")
    counts = {o: sum(r[1] == o for r in rows) for o in OUTCOMES}
    n = len(rows)
    print()
    print(f"{n} cases: " + ", ".join(f"{counts[o]} {o}" for o in OUTCOMES))
    unclear = counts["unclear-error"] / n
    print(f"unclear errors: {100 * unclear:.1f} % (at most 5 %); silent wrong: "
          f"{counts['silent-wrong']}; crashes: {counts['crash']}")
    bad = counts["silent-wrong"] or counts["crash"] or unclear > 0.05
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
