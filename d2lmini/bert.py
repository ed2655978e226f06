"""An encoder-only Transformer (BERT): masked-language pre-training, then fine-tuning.

BERT is the Transformer's encoder on its own.  No causal mask: every position sees every
real token, left and right, so it reads a whole sentence at once (bidirectional) but
cannot write one token after another.  It is pre-trained to fill in blanks
(:func:`mask_tokens`, the masked language model), then fine-tuned: a small head on the
``[CLS]`` position (:meth:`BERT.pooled`) learns a task from few labels.

Shapes: tokens and segments (B, T) long ids; hidden (B, T, d_model); MLM logits
(B, T, vocab_size); pooled (B, d_model).
"""
from __future__ import annotations

import functools
import numbers
from importlib import resources

import torch
import torch.nn.functional as F
from torch import nn

from .checkpoints import read_checkpoint
from .maps import AttentionMaps
from .norms import LayerNorm
from .transformer import EncoderBlock, _compiling, check_token_ids
from .utils import check_device, check_generator, check_positive_int, check_tensor

__all__ = ["BERT", "mask_tokens", "bert_from_hf", "CharVocab", "book_vocab",
           "book_windows", "mlm_accuracy", "load_book_bert", "nsp_pairs",
           "pseudo_log_likelihood", "bert_param_count"]

# the FFN's activation; BERT uses the exact GELU (Hugging Face's hidden_act "gelu")
ACTIVATIONS = {"gelu": F.gelu,
               "gelu_tanh": functools.partial(F.gelu, approximate="tanh"),
               "relu": F.relu}
HF_ACTIVATIONS = {"gelu": "gelu", "gelu_new": "gelu_tanh",
                  "gelu_pytorch_tanh": "gelu_tanh", "relu": "relu"}


def _check_id(value, name: str, vocab_size: int, allow_none: bool = False) -> None:
    if value is None and allow_none:
        return
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) \
            or not 0 <= value < vocab_size:
        raise ValueError(f"{name} must be an id in 0..{vocab_size - 1}"
                         f"{' or None' if allow_none else ''}, got {value!r}")


def _check_ids(x, name: str, size: int, what: str) -> None:
    """x: a 2-D integer tensor with ids in 0..size-1 (clear errors otherwise)."""
    check_tensor(x, name, ndim=2)
    if x.is_floating_point() or x.is_complex() or x.dtype == torch.bool:
        raise TypeError(f"{name} must hold integer ids (torch.long), got {x.dtype}")
    if x.shape[0] == 0 or x.shape[1] == 0:
        raise ValueError(f"{name} must hold at least one token per row, got shape "
                         f"{tuple(x.shape)}")
    # an assertion on the device, no host sync
    if x.device.type == "cuda" or _compiling():
        return check_token_ids(x, size)
    lo, hi = int(x.min()), int(x.max())
    if lo < 0 or hi >= size:
        raise ValueError(f"{name}: id {lo if lo < 0 else hi} is out of range for "
                         f"{what} (expected ids 0..{size - 1})")


class BERT(nn.Module):
    """Encoder-only Transformer, as BERT (Devlin et al., 2019).

    Embedding: LayerNorm(token + segment + learned position), then dropout; N post-norm
    :class:`~d2lmini.EncoderBlock`s with GELU in the FFN.  No causal mask; the model
    builds its padding mask itself (no query attends to a ``pad_id`` token;
    ``pad_id=None``: no id is padding).  Pads go at the end of a row, as BERT's
    tokenizer puts them; a token's position counts the real tokens before it, so extra
    pads, on either side, change nothing for the real tokens.

    * ``forward(tokens (B, T), segments=None (B, T) in 0..num_segments-1)`` -> hidden
      (B, T, d_model); segments default to 0 (one sentence).
    * ``mlm_logits(hidden)`` -> (B, T, vocab_size): dense, GELU, LayerNorm, then the
      token embedding's matrix (tied) plus a bias: BERT's masked-language-model head.
    * ``pooled(hidden)`` -> (B, d_model): tanh(dense(hidden[:, 0])), the ``[CLS]``
      summary a classifier reads.
    * ``attention_maps(tokens, segments=None)`` -> ``AttentionMaps``
      {"self": (L, B, h, T, T)}.

    ``self.config``: the constructor's arguments (plain values), enough to rebuild it.
    ``activation`` ("gelu", "gelu_tanh", "relu") and ``norm_eps`` (BERT: 1e-12) are
    there so that Hugging Face models port exactly (:func:`bert_from_hf`).
    """

    def __init__(self, vocab_size: int, d_model: int, num_heads: int, num_layers: int,
                 d_ff: int, max_len: int, num_segments: int = 2, dropout: float = 0.0,
                 pad_id: int | None = 0, activation: str = "gelu",
                 norm_eps: float = 1e-12):
        super().__init__()
        for name, v in (("vocab_size", vocab_size), ("d_model", d_model),
                        ("num_heads", num_heads), ("num_layers", num_layers),
                        ("d_ff", d_ff), ("max_len", max_len),
                        ("num_segments", num_segments)):
            check_positive_int(v, name)
        if d_model % num_heads:
            raise ValueError(f"d_model={d_model} is not divisible by "
                             f"num_heads={num_heads}")
        if isinstance(dropout, bool) or not isinstance(dropout, numbers.Real) \
                or not 0 <= dropout < 1:
            raise ValueError(f"dropout must be a number in [0, 1), got {dropout!r}")
        _check_id(pad_id, "pad_id", vocab_size, allow_none=True)
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {sorted(ACTIVATIONS)}, "
                             f"got {activation!r}")
        if isinstance(norm_eps, bool) or not isinstance(norm_eps, numbers.Real) \
                or not norm_eps > 0:
            raise ValueError(f"norm_eps must be a positive number, got {norm_eps!r}")
        self.config = dict(vocab_size=vocab_size, d_model=d_model, num_heads=num_heads,
                           num_layers=num_layers, d_ff=d_ff, max_len=max_len,
                           num_segments=num_segments, dropout=float(dropout),
                           pad_id=pad_id, activation=activation,
                           norm_eps=float(norm_eps))
        self.vocab_size, self.d_model, self.max_len = vocab_size, d_model, max_len
        self.num_segments, self.pad_id = num_segments, pad_id
        act = ACTIVATIONS[activation]
        self.token_embedding = nn.Embedding(vocab_size, d_model)
        self.segment_embedding = nn.Embedding(num_segments, d_model)
        self.position_embedding = nn.Embedding(max_len, d_model)
        self.embed_norm = LayerNorm(d_model, norm_eps, fused=True)
        self.dropout = nn.Dropout(dropout)
        self.blocks = nn.ModuleList()
        for _ in range(num_layers):                      # chapter 8's block, post-norm
            blk = EncoderBlock(d_model, num_heads, d_ff, dropout)
            blk.ffn.activation = act                     # GELU instead of ReLU, as BERT
            blk.norm1.eps = blk.norm2.eps = float(norm_eps)
            self.blocks.append(blk)
        self.pooler = nn.Linear(d_model, d_model)        # [CLS] -> tanh(dense)
        self.mlm_dense = nn.Linear(d_model, d_model)  # MLM head: dense, act, norm, E^T
        self.mlm_norm = LayerNorm(d_model, norm_eps, fused=True)
        self.mlm_bias = nn.Parameter(torch.zeros(vocab_size))
        self._act = act
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Embeddings N(0, 1/d_model), linear layers Xavier-uniform (as the book's other
        models), biases 0, LayerNorm gains 1.  BERT draws everything from N(0, 0.02²),
        about these scales at d_model = 768; at d_model = 64, 0.02 would make the tied
        output matrix, and with it the gradient into the encoder, 6x too small."""
        for m in self.modules():
            if isinstance(m, nn.Embedding):
                nn.init.normal_(m.weight, std=self.d_model ** -0.5)
            elif isinstance(m, nn.Linear):
                nn.init.xavier_uniform_(m.weight)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
            elif isinstance(m, LayerNorm):
                nn.init.ones_(m.weight), nn.init.zeros_(m.bias)
        nn.init.zeros_(self.mlm_bias)

    # ------------------------------------------------------------------ inputs
    def check_inputs(self, tokens: torch.Tensor,
                     segments: torch.Tensor | None = None) -> None:
        """Clear errors for bad ids, dtypes, shapes or lengths (``d2l.train`` calls it
        on each batch on the CPU before moving it)."""
        _check_ids(tokens, "tokens", self.vocab_size,
                   f"a vocabulary of size {self.vocab_size}")
        if tokens.shape[1] > self.max_len:
            raise ValueError(f"sequence of {tokens.shape[1]} tokens is longer than the "
                             f"model's max_len={self.max_len}")
        if segments is not None:
            if not isinstance(segments, torch.Tensor) or segments.shape != tokens.shape:
                got = tuple(segments.shape) if isinstance(segments, torch.Tensor) \
                    else type(segments).__name__
                raise ValueError(f"segments must be a tensor of the tokens' shape "
                                 f"{tuple(tokens.shape)}, got {got}")
            _check_ids(segments, "segments", self.num_segments,
                       f"num_segments={self.num_segments}")

    def padding(self, tokens: torch.Tensor) -> torch.Tensor:
        """tokens (B, T) -> bool (B, T), True on real tokens (all True if pad_id is
        None)."""
        if self.pad_id is None:
            return torch.ones_like(tokens, dtype=torch.bool)
        return tokens != self.pad_id

    # ------------------------------------------------------------------ the model
    def embed(self, tokens: torch.Tensor,
              segments: torch.Tensor | None = None) -> torch.Tensor:
        """LayerNorm(token + segment + position) -> (B, T, d_model), after dropout."""
        real = self.padding(tokens)                                       # (B, T)
        cols = torch.arange(tokens.shape[1], device=tokens.device).expand_as(tokens)
        pos = torch.where(real, real.cumsum(1) - 1, cols)                 # (B, T)
        seg = torch.zeros_like(tokens) if segments is None else segments
        x = self.token_embedding(tokens) + self.segment_embedding(seg) \
            + self.position_embedding(pos)
        return self.dropout(self.embed_norm(x))

    def forward(self, tokens: torch.Tensor,
                segments: torch.Tensor | None = None) -> torch.Tensor:
        check_tensor(tokens, "tokens", ndim=2)
        check_device(tokens, self.token_embedding.weight, "tokens")
        if isinstance(segments, torch.Tensor):
            check_device(segments, self.token_embedding.weight, "segments")
        self.check_inputs(tokens, segments)
        mask = self.padding(tokens)[:, None, None, :]                     # (B, 1, 1, T)
        x = self.embed(tokens, segments)                                  # (B, T, d)
        for blk in self.blocks:
            x = blk(x, mask)                                          # no causal mask
        return x

    def _check_hidden(self, hidden) -> None:
        check_tensor(hidden, "hidden", ndim=3, floating=True)
        if hidden.shape[-1] != self.d_model:
            raise ValueError(f"hidden must be (B, T, d_model={self.d_model}), got "
                             f"shape {tuple(hidden.shape)}")

    def mlm_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """hidden (B, T, d) -> logits (B, T, vocab_size), the output matrix tied to the
        token embedding."""
        self._check_hidden(hidden)
        h = self.mlm_norm(self._act(self.mlm_dense(hidden)))             # (B, T, d)
        return h @ self.token_embedding.weight.T + self.mlm_bias          # (B, T, V)

    def pooled(self, hidden: torch.Tensor) -> torch.Tensor:
        """hidden (B, T, d) -> (B, d): tanh(dense(hidden at [CLS], position 0))."""
        self._check_hidden(hidden)
        return torch.tanh(self.pooler(hidden[:, 0]))

    @torch.no_grad()
    def attention_maps(self, tokens: torch.Tensor,
                       segments: torch.Tensor | None = None):
        """Self-attention weights of every block and head -> ``AttentionMaps``
        {"self": (L, B, h, T, T)}, masks False on pad keys and pad queries (no causal
        part: BERT looks both ways).  Runs in eval mode."""
        was_training = self.training
        attns = [(b.self_attn, b.self_attn.fast) for b in self.blocks]
        self.eval()
        try:
            for attn, _ in attns:
                attn.fast = False  # the from-scratch path keeps the weights
            dev = self.token_embedding.weight.device
            self(tokens.to(dev), None if segments is None else segments.to(dev))
        finally:
            self.train(was_training)
            for attn, fast in attns:
                attn.fast = fast
        w = torch.stack([b.self_attn.attention_weights.detach().float().cpu()
                         for b in self.blocks])                       # (L, B, h, T, T)
        real = self.padding(tokens).cpu()
        mask = real[:, None, None, :] & real[:, None, :, None]            # (B, 1, T, T)
        return AttentionMaps({"self": w}, {"self": mask.expand(w.shape[1:])})


# ------------------------------------------------------------------ pre-training data
def mask_tokens(tokens: torch.Tensor, mask_id: int, vocab_size: int, special_ids,
                p: float = 0.15, generator: torch.Generator | None = None,
                pad_id: int | None = 0):
    """BERT's masking rule -> (inputs, labels), both shaped like ``tokens``.

    Each position that holds neither a special id (``special_ids``, ``mask_id``) nor the
    pad id is selected with probability ``p``.  Of the selected positions 80 % become
    ``mask_id``, 10 % a random id that is not special, 10 % keep their token.
    ``labels`` hold the original id at the selected positions and -100 (ignored by
    ``F.cross_entropy``) elsewhere.  A seeded ``generator`` makes it reproducible
    (the draws happen on the generator's device).  ``pad_id=None``: no id is padding.
    """
    if not isinstance(tokens, torch.Tensor):
        raise TypeError(f"tokens must be a torch.Tensor of ids, "
                        f"got {type(tokens).__name__}")
    if tokens.is_floating_point() or tokens.is_complex() or tokens.dtype == torch.bool:
        raise TypeError(f"tokens must hold integer ids, got {tokens.dtype}")
    check_positive_int(vocab_size, "vocab_size")
    _check_id(mask_id, "mask_id", vocab_size)
    _check_id(pad_id, "pad_id", vocab_size, allow_none=True)
    if isinstance(special_ids, torch.Tensor):
        special_ids = special_ids.flatten().tolist()
    try:
        special = set(special_ids)
    except TypeError:
        raise TypeError(f"special_ids must be a collection of ids, got "
                        f"{type(special_ids).__name__}") from None
    for s in special:
        _check_id(s, "every special id", vocab_size)
    if isinstance(p, bool) or not isinstance(p, numbers.Real) or not 0 <= p <= 1:
        raise ValueError(f"p must be a probability in [0, 1], got {p!r}")
    check_generator(generator)
    if tokens.numel() and (int(tokens.min()) < 0 or int(tokens.max()) >= vocab_size):
        bad = int(tokens.min()) if int(tokens.min()) < 0 else int(tokens.max())
        raise ValueError(f"tokens: id {bad} is out of range for a vocabulary of size "
                         f"{vocab_size} (expected 0..{vocab_size - 1})")
    special |= {mask_id} | ({pad_id} if pad_id is not None else set())
    normal = torch.tensor(sorted(set(range(vocab_size)) - special), dtype=torch.long)
    if len(normal) == 0:
        raise ValueError(f"every id of the vocabulary (size {vocab_size}) is special: "
                         f"there is no token to mask or to draw at random")
    where = generator.device if generator is not None else tokens.device
    t = tokens.to(where).long()
    eligible = ~torch.isin(t, torch.tensor(sorted(special), device=where))
    u = torch.rand(t.shape, generator=generator, device=where)
    selected = eligible & (u < p)                                       # ~p of eligible
    v = torch.rand(t.shape, generator=generator, device=where)          # 80 / 10 / 10
    to_mask, to_random = selected & (v < 0.8), selected & (v >= 0.8) & (v < 0.9)
    pick = torch.randint(len(normal), t.shape, generator=generator, device=where)
    inputs = torch.where(to_mask, torch.full_like(t, mask_id), t)
    inputs = torch.where(to_random, normal.to(where)[pick], inputs)
    labels = torch.where(selected, t, torch.full_like(t, -100))
    return inputs.to(tokens.device), labels.to(tokens.device)


# ----------------------------------------------------------------- Hugging Face weights
def bert_from_hf(model) -> BERT:
    """A :class:`BERT` holding the weights of a Hugging Face ``BertModel`` or
    ``BertForMaskedLM`` (also ``BertForPreTraining`` and other ``BertFor*`` models
    with a ``.bert``), its configuration read from ``model.config``.  Hidden states
    (and, with a masked-LM head, its logits) equal Hugging Face's to float rounding.
    Hugging Face attends to every token unless given an ``attention_mask``; this model
    never attends to ``config.pad_token_id``: compare with
    ``attention_mask=(ids != pad_id)``.  A model without a pooler or MLM head leaves
    ours at its initial values.
    """
    cfg = getattr(model, "config", None)
    base = getattr(model, "bert", model)
    if cfg is None or not hasattr(base, "embeddings") or not hasattr(base, "encoder"):
        raise TypeError(f"expected a transformers BertModel or BertForMaskedLM, got "
                        f"{type(model).__name__}")
    kind = getattr(cfg, "position_embedding_type", None) or "absolute"
    if kind != "absolute":
        raise ValueError(f"only absolute position embeddings port to d2l.BERT, "
                         f"got {kind!r}")
    if getattr(cfg, "is_decoder", False):
        raise ValueError("config.is_decoder=True is a causal model; "
                         "BERT has no causal mask")
    act = cfg.hidden_act if isinstance(cfg.hidden_act, str) else None
    if act not in HF_ACTIVATIONS:
        raise ValueError(f"hidden_act must be one of {sorted(HF_ACTIVATIONS)}, "
                         f"got {cfg.hidden_act!r}")
    pad = getattr(cfg, "pad_token_id", None)
    ours = BERT(cfg.vocab_size, cfg.hidden_size, cfg.num_attention_heads,
                cfg.num_hidden_layers, cfg.intermediate_size,
                cfg.max_position_embeddings, num_segments=cfg.type_vocab_size,
                dropout=float(cfg.hidden_dropout_prob),
                pad_id=pad if pad is not None and 0 <= pad < cfg.vocab_size else None,
                activation=HF_ACTIVATIONS[act], norm_eps=float(cfg.layer_norm_eps))
    sd = {k: v.detach() for k, v in base.state_dict().items()}
    new = {"token_embedding.weight": sd["embeddings.word_embeddings.weight"],
           "position_embedding.weight": sd["embeddings.position_embeddings.weight"],
           "segment_embedding.weight": sd["embeddings.token_type_embeddings.weight"],
           "embed_norm.weight": sd["embeddings.LayerNorm.weight"],
           "embed_norm.bias": sd["embeddings.LayerNorm.bias"]}
    names = {"attention.self.query": "self_attn.W_q",
             "attention.self.key": "self_attn.W_k",
             "attention.self.value": "self_attn.W_v",
             "attention.output.dense": "self_attn.W_o",
             "attention.output.LayerNorm": "norm1", "intermediate.dense": "ffn.linear1",
             "output.dense": "ffn.linear2", "output.LayerNorm": "norm2"}
    for i in range(cfg.num_hidden_layers):
        for theirs, mine in names.items():
            for p in ("weight", "bias"):
                new[f"blocks.{i}.{mine}.{p}"] = sd[f"encoder.layer.{i}.{theirs}.{p}"]
    if "pooler.dense.weight" in sd:
        new["pooler.weight"], new["pooler.bias"] = (sd["pooler.dense.weight"],
                                                    sd["pooler.dense.bias"])
    head = getattr(getattr(model, "cls", None), "predictions", None)
    if head is not None:
        hd = {k: v.detach() for k, v in head.state_dict().items()}
        if not torch.equal(hd["decoder.weight"], new["token_embedding.weight"]):
            raise ValueError("the MLM decoder's matrix differs from the word "
                             "embedding: d2l.BERT ties them "
                             "(config.tie_word_embeddings=True)")
        new.update({"mlm_dense.weight": hd["transform.dense.weight"],
                    "mlm_dense.bias": hd["transform.dense.bias"],
                    "mlm_norm.weight": hd["transform.LayerNorm.weight"],
                    "mlm_norm.bias": hd["transform.LayerNorm.bias"],
                    "mlm_bias": hd.get("bias", hd.get("decoder.bias"))})
    missing, unexpected = ours.load_state_dict(new, strict=False)
    left = [k for k in missing if not k.startswith(("pooler.", "mlm_"))]
    if left or unexpected:
        raise RuntimeError(f"weights left unset: {left}; unexpected: {unexpected}")
    dtype = sd["embeddings.word_embeddings.weight"].dtype
    return ours.to(dtype).train(model.training)


# ------------------------------------------------------------------ chapter 14's corpus
BOOK_CONFIG = {"d_model": 64, "num_heads": 4, "num_layers": 2, "d_ff": 256,
               "max_len": 32}


class CharVocab:
    """Characters <-> ids with BERT's special tokens first: ``<pad>`` 0, ``[CLS]`` 1,
    ``[SEP]`` 2, ``[MASK]`` 3, then the characters, sorted."""

    SPECIALS = ("<pad>", "[CLS]", "[SEP]", "[MASK]")
    pad_id, cls_id, sep_id, mask_id = 0, 1, 2, 3
    special_ids = [0, 1, 2, 3]

    def __init__(self, chars):
        self.chars = sorted(set(chars))
        self.itos = list(self.SPECIALS) + self.chars
        self.stoi = {c: i for i, c in enumerate(self.itos)}

    def __len__(self) -> int:
        return len(self.itos)

    def encode(self, text: str) -> list[int]:
        bad = sorted(set(text) - set(self.chars))
        if bad:
            raise ValueError(f"characters {bad!r} are not in the vocabulary")
        return [self.stoi[c] for c in text]

    def decode(self, ids) -> str:
        ids = ids.tolist() if isinstance(ids, torch.Tensor) else ids
        return "".join(self.itos[i] if i >= 4 else "_" if i == self.mask_id else ""
                       for i in ids)


def book_vocab(name: str = "book.txt"):
    """-> (CharVocab, train ids, held-out ids): the shipped corpus as character ids, its
    first 90 % for training, the last 10 % held out."""
    text = (resources.files("d2lmini") / "corpus" / name).read_text(encoding="utf-8")
    vocab = CharVocab(text)
    ids = torch.tensor(vocab.encode(text))
    cut = int(0.9 * len(ids))
    return vocab, ids[:cut], ids[cut:]


def book_windows(ids: torch.Tensor, batch_size: int,
                 generator: torch.Generator | None = None,
                 length: int = 32) -> torch.Tensor:
    """batch_size random rows ``[CLS]`` + ``length - 1`` consecutive characters of
    ``ids`` -> (batch_size, length) long."""
    start = torch.randint(len(ids) - length + 1, (batch_size,), generator=generator)
    rows = torch.stack([ids[s:s + length - 1] for s in start.tolist()])
    return torch.cat([torch.full((batch_size, 1), CharVocab.cls_id), rows], 1)


@torch.no_grad()
def mlm_accuracy(model: BERT, ids: torch.Tensor, vocab: CharVocab, n: int = 1000,
                 seed: int = 1) -> float:
    """Fraction of masked characters the model restores, on ``n`` random windows of
    ``ids`` masked by :func:`mask_tokens` (seeded: the same blanks for every model)."""
    g = torch.Generator().manual_seed(seed)
    x, y = mask_tokens(book_windows(ids, n, g, model.max_len), vocab.mask_id,
                       len(vocab), vocab.special_ids, generator=g)
    was_training = model.training
    model.eval()
    dev = model.token_embedding.weight.device
    pred = model.mlm_logits(model(x.to(dev))).argmax(-1).cpu()
    model.train(was_training)
    sel = y != -100
    return (pred[sel] == y[sel]).float().mean().item()


def load_book_bert(path=None):
    """The shipped BERT pre-trained on ``book.txt`` by
    ``d2lmini/checkpoints/make_bert.py`` -> (model in eval mode, CharVocab, info dict:
    steps, seconds, machine, log)."""
    ckpt = read_checkpoint("bert_book.pt", path)
    model = BERT(**ckpt["config"])
    model.load_state_dict(ckpt["state_dict"])
    return model.eval(), CharVocab(ckpt["chars"]), dict(ckpt["train"])


# ------------------------------------------------------------------ chapter 14's tasks
def nsp_pairs(ids: torch.Tensor, n: int, generator: torch.Generator | None = None,
              a_len: int = 14, b_len: int = 15):
    """Next-sentence-prediction rows from a stream of character ids, as BERT builds
    them from sentences: ``[CLS] A [SEP] B [SEP]`` where A is ``a_len`` consecutive
    characters at a random place and, for a random half of the rows (label 1,
    IsNext), B is the ``b_len`` characters that follow A; for the other half (label 0,
    NotNext), B is taken from another random place.  Segments: 0 for ``[CLS] A
    [SEP]``, 1 for ``B [SEP]``.  -> (tokens, segments, is_next): (n, a_len + b_len + 3)
    long twice and (n,) long."""
    check_positive_int(n, "n")
    check_positive_int(a_len, "a_len")
    check_positive_int(b_len, "b_len")
    check_generator(generator)
    if not isinstance(ids, torch.Tensor) or ids.dim() != 1 \
            or len(ids) < 2 * (a_len + b_len):
        raise ValueError(f"ids must be a 1-D tensor of at least {2 * (a_len + b_len)} "
                         f"character ids")
    span = a_len + b_len
    start = torch.randint(len(ids) - span + 1, (n,), generator=generator)
    is_next = torch.randint(2, (n,), generator=generator)
    other = torch.randint(len(ids) - b_len + 1, (n,), generator=generator)
    other = torch.where(other == start + a_len, (other + b_len) % (len(ids) - b_len),
                        other)                          # never the true next piece
    b_start = torch.where(is_next == 1, start + a_len, other)
    a = torch.stack([ids[s:s + a_len] for s in start.tolist()])
    b = torch.stack([ids[s:s + b_len] for s in b_start.tolist()])
    cls = torch.full((n, 1), CharVocab.cls_id)
    sep = torch.full((n, 1), CharVocab.sep_id)
    tokens = torch.cat([cls, a, sep, b, sep], 1)
    segments = torch.cat([torch.zeros(n, a_len + 2, dtype=torch.long),
                          torch.ones(n, b_len + 1, dtype=torch.long)], 1)
    return tokens, segments, is_next


@torch.no_grad()
def pseudo_log_likelihood(model: BERT, tokens: torch.Tensor, mask_id: int,
                          special_ids=(), positions=None,
                          batch_size: int = 2048) -> torch.Tensor:
    """The masked LM's pseudo-log-likelihood of each row (Salazar et al., 2020): mask
    one position at a time, read the log-probability the model gives the hidden token
    there, and sum over the row's positions that hold no special id (only over
    ``positions``, a list of columns, when given).  Needs no label.  tokens (B, T) ->
    (B,) float, in nats (higher: the text looks more like what the model was trained
    on)."""
    check_tensor(tokens, "tokens", ndim=2)
    tokens = tokens.cpu()                       # the copies are made here, run there
    B, T = tokens.shape
    special = torch.tensor(sorted(set(special_ids) | {mask_id}), dtype=torch.long)
    scored = ~torch.isin(tokens, special)
    if positions is not None:
        cols = torch.zeros(T, dtype=torch.bool)
        cols[torch.as_tensor(positions, dtype=torch.long)] = True
        scored &= cols
    rows, cols = scored.nonzero(as_tuple=True)
    dev = model.token_embedding.weight.device
    was_training = model.training
    model.eval()
    scores = torch.zeros(len(rows))
    try:
        for k in range(0, len(rows), batch_size):
            r, c = rows[k:k + batch_size], cols[k:k + batch_size]
            x = tokens[r].clone()
            x[torch.arange(len(r)), c] = mask_id               # one blank per copy
            x = x.to(dev)
            hidden = model(x)[torch.arange(len(r), device=dev), c.to(dev)]   # (n, d)
            logp = model.mlm_logits(hidden[:, None])[:, 0].float().log_softmax(-1)
            scores[k:k + len(r)] = logp.gather(
                1, tokens[r, c].to(dev)[:, None])[:, 0].cpu()
    finally:
        model.train(was_training)
    return torch.zeros(B).index_add_(0, rows, scores)


def bert_param_count(config, pooler: bool = True, mlm_head: bool = False) -> int:
    """Parameters of a BERT from its configuration: a :class:`BERT`, its ``config``
    dict, or a Hugging Face ``BertConfig``.  Embeddings (token, position, segment and
    their LayerNorm) + L blocks (4 attention matrices, the FFN, 2 LayerNorms) + the
    pooler (``pooler``) + the masked-LM head without its tied matrix
    (``mlm_head``)."""
    if isinstance(config, BERT):
        config = config.config
    if isinstance(config, dict):
        V, d, L, f = (config["vocab_size"], config["d_model"], config["num_layers"],
                      config["d_ff"])
        P, S = config["max_len"], config.get("num_segments", 2)
    else:
        try:
            V, d, L, f = (config.vocab_size, config.hidden_size,
                          config.num_hidden_layers, config.intermediate_size)
            P, S = config.max_position_embeddings, config.type_vocab_size
        except AttributeError:
            raise TypeError(f"config must be a d2l.BERT, its config dict or a "
                            f"BertConfig, got {type(config).__name__}") from None
    embeddings = (V + P + S) * d + 2 * d
    block = 4 * (d * d + d) + (d * f + f) + (f * d + d) + 2 * 2 * d
    return (embeddings + L * block + (d * d + d if pooler else 0)
            + (d * d + d + 2 * d + V if mlm_head else 0))
