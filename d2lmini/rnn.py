"""Before the Transformer: a GRU encoder-decoder with additive (Bahdanau) attention, and
a stack of 1-D convolutions.  Chapter 10 measures both against self-attention.

``GRUSeq2Seq`` has the Transformer's interface (``forward(src, tgt)``, ``encode``,
``decode``, ``pad_id``, ``decoder.vocab_size``), so :func:`d2lmini.greedy_decode`
translates with it unchanged.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .attention import AdditiveAttention
from .transformer import check_token_ids
from .utils import check_bool, check_device, check_positive_int, check_tensor


def _check_tokens(tokens: torch.Tensor, name: str, vocab_size: int) -> None:
    check_tensor(tokens, name, ndim=2)
    if tokens.is_floating_point() or tokens.dtype == torch.bool:
        raise TypeError(f"{name} must hold integer ids, got {tokens.dtype}")
    if tokens.numel() == 0:
        raise ValueError(f"empty batch: {name} of shape {tuple(tokens.shape)}")
    # on an accelerator: on the device, no host sync
    check_token_ids(tokens, vocab_size)


def _check_sizes(**sizes) -> None:
    for name, v in sizes.items():
        check_positive_int(v, name)


class GRUEncoder(nn.Module):
    """Embedding, then a GRU read left to right over the real tokens only.

    forward(src (B, S) right-padded ids) -> (outputs (B, S, H), state (L, B, H),
    mask bool (B, 1, S) True on real tokens).  The GRU runs on a packed sequence,
    so each row's state is the one after its *last real* token and pads change nothing;
    outputs at pad positions are 0.
    """

    def __init__(self, vocab_size: int, embed_size: int, num_hiddens: int,
                 num_layers: int = 1, pad_id: int = 0):
        super().__init__()
        _check_sizes(vocab_size=vocab_size, embed_size=embed_size,
                     num_hiddens=num_hiddens, num_layers=num_layers)
        if (not isinstance(pad_id, int) or isinstance(pad_id, bool)
                or not 0 <= pad_id < vocab_size):
            raise ValueError(f"pad_id must be an id in 0..{vocab_size - 1}, got "
                             f"{pad_id!r}")
        self.vocab_size, self.pad_id = vocab_size, pad_id
        self.embedding = nn.Embedding(vocab_size, embed_size)
        self.rnn = nn.GRU(embed_size, num_hiddens, num_layers, batch_first=True)

    def forward(self, src: torch.Tensor):
        check_tensor(src, "src", ndim=2)
        check_device(src, self.embedding.weight, "src")
        _check_tokens(src, "src", self.vocab_size)
        real = src != self.pad_id                                     # (B, S)
        lengths = real.sum(1)                                         # (B,)
        if int(lengths.min()) == 0:
            raise ValueError("every source row needs at least one real (non-pad) token")
        if (real[:, 1:] & ~real[:, :-1]).any():
            raise ValueError("src must be right-padded: found a real token after a pad")
        packed = nn.utils.rnn.pack_padded_sequence(self.embedding(src), lengths.cpu(),
                                                   batch_first=True,
                                                   enforce_sorted=False)
        outputs, state = self.rnn(packed)
        outputs, _ = nn.utils.rnn.pad_packed_sequence(outputs, batch_first=True,
                                                      total_length=src.shape[1])
        return outputs, state, real[:, None, :]


class AttentionGRUDecoder(nn.Module):
    """Bahdanau decoder: at step t the previous top-layer state s_{t-1} queries the
    encoder outputs with additive attention; [embedding(y_{t-1}), context] is the GRU's
    input; a linear layer reads the new state.

    forward(tgt (B, T) ids, enc_outputs (B, S, H), state (L, B, H), mask (B, 1, S))
    -> logits (B, T, V).  Keeps the weights of every step, (B, T, S), in
    ``.attention_weights``.
    """

    def __init__(self, vocab_size: int, embed_size: int, num_hiddens: int,
                 num_layers: int = 1):
        super().__init__()
        _check_sizes(vocab_size=vocab_size, embed_size=embed_size,
                     num_hiddens=num_hiddens, num_layers=num_layers)
        self.vocab_size = vocab_size
        self.embedding = nn.Embedding(vocab_size, embed_size)
        self.attention = AdditiveAttention(num_hiddens, num_hiddens, num_hiddens)
        self.rnn = nn.GRU(embed_size + num_hiddens, num_hiddens, num_layers,
                          batch_first=True)
        self.dense = nn.Linear(num_hiddens, vocab_size)
        self.attention_weights: torch.Tensor | None = None

    def forward(self, tgt, enc_outputs, state, mask):
        check_tensor(tgt, "tgt", ndim=2)
        check_device(tgt, self.embedding.weight, "tgt")
        _check_tokens(tgt, "tgt", self.vocab_size)
        emb = self.embedding(tgt)                                     # (B, T, E)
        outputs, weights = [], []
        for t in range(tgt.shape[1]):  # one step at a time
            query = state[-1][:, None]                                # (B, 1, H)
            context = self.attention(query, enc_outputs, enc_outputs, mask)  # (B, 1, H)
            weights.append(self.attention.attention_weights)          # (B, 1, S)
            out, state = self.rnn(torch.cat([emb[:, t:t + 1], context], -1), state)
            outputs.append(out)                                       # (B, 1, H)
        self.attention_weights = torch.cat(weights, 1)                # (B, T, S)
        return self.dense(torch.cat(outputs, 1))                      # (B, T, V)


class GRUSeq2Seq(nn.Module):
    """GRU encoder-decoder with additive attention (Bahdanau et al., 2015).

    forward(src (B, S), tgt (B, T)) -> logits (B, T, V_tgt), teacher-forced like the
    Transformer.  ``encode``/``decode`` mirror :class:`d2lmini.Transformer`'s, so
    :func:`d2lmini.greedy_decode` works with either model.
    """

    def __init__(self, src_vocab_size: int, tgt_vocab_size: int, embed_size: int = 32,
                 num_hiddens: int = 64, num_layers: int = 1, pad_id: int = 0):
        super().__init__()
        for name, v in (("src_vocab_size", src_vocab_size),
                        ("tgt_vocab_size", tgt_vocab_size),
                        ("embed_size", embed_size), ("num_hiddens", num_hiddens),
                        ("num_layers", num_layers)):
            check_positive_int(v, name)
        V = min(src_vocab_size, tgt_vocab_size)
        if (not isinstance(pad_id, int) or isinstance(pad_id, bool)
                or not 0 <= pad_id < V):
            raise ValueError(f"pad_id must be an id in both vocabularies, 0..{V - 1}, "
                             f"got {pad_id!r}")
        # the constructor's arguments: d2l.save stores them, d2l.load rebuilds the model
        self.config = dict(src_vocab_size=src_vocab_size, tgt_vocab_size=tgt_vocab_size,
                           embed_size=embed_size, num_hiddens=num_hiddens,
                           num_layers=num_layers, pad_id=pad_id)
        self.pad_id = pad_id
        self.encoder = GRUEncoder(src_vocab_size, embed_size, num_hiddens, num_layers,
                                  pad_id)
        self.decoder = AttentionGRUDecoder(tgt_vocab_size, embed_size, num_hiddens,
                                           num_layers)

    def encode(self, src: torch.Tensor):
        """src (B, S) -> (memory = (outputs (B, S, H), state (L, B, H)),
        mask (B, 1, S))"""
        outputs, state, mask = self.encoder(src)
        return (outputs, state), mask

    def decode(self, tgt, memory, src_mask):
        """tgt (B, T) -> logits (B, T, V); re-reads the whole prefix from the encoder
        state."""
        outputs, state = memory
        return self.decoder(tgt, outputs, state, src_mask)

    def forward(self, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
        check_tensor(src, "src", ndim=2), check_tensor(tgt, "tgt", ndim=2)
        if src.shape[0] != tgt.shape[0]:
            raise ValueError(f"src and tgt batch sizes differ: {src.shape[0]} vs "
                             f"{tgt.shape[0]}")
        return self.decode(tgt, *self.encode(src))


class ConvStack(nn.Module):
    """``num_layers`` causal 1-D convolutions, each followed by GELU:
    (B, T, d) -> (B, T, d).

    Causal: output t sees inputs t - (k-1)*dilation .. t (left zero padding).  Each
    layer widens the view by (k-1)*dilation positions: with ``dilated=False`` after L
    layers output t sees L*(k-1) positions back, so reaching n-1 back takes
    ceil((n-1)/(k-1)) layers, O(n/k); with ``dilated=True`` layer l has dilation k**l, L
    layers see k**L - 1 back, and ceil(log_k n) layers suffice, O(log_k n).  (GELU
    rather than ReLU: its slope is never exactly 0, so a gradient can always tell which
    inputs an output sees.)
    """

    def __init__(self, d_model: int, num_layers: int = 1, kernel_size: int = 3,
                 dilated: bool = False):
        super().__init__()
        (check_positive_int(d_model, "d_model"),
         check_positive_int(num_layers, "num_layers"))
        (check_positive_int(kernel_size, "kernel_size", minimum=2),
         check_bool(dilated, "dilated"))
        self.d_model, self.kernel_size = d_model, kernel_size
        self.convs = nn.ModuleList(
            nn.Conv1d(d_model, d_model, kernel_size,
                      dilation=kernel_size ** l if dilated else 1)
            for l in range(num_layers))

    def forward(self, x: torch.Tensor, return_all: bool = False):
        """x (B, T, d) -> (B, T, d); with ``return_all`` the list of every layer's
        output."""
        check_tensor(x, "x", ndim=3, floating=True)
        if x.shape[-1] != self.d_model:
            raise ValueError(f"expected (B, T, d_model={self.d_model}), got shape "
                             f"{tuple(x.shape)}")
        h, outs = x.transpose(1, 2), []  # (B, d, T): channels first
        for conv in self.convs:
            pad = (conv.kernel_size[0] - 1) * conv.dilation[0]
            h = F.gelu(conv(F.pad(h, (pad, 0))))                      # (B, d, T)
            outs.append(h.transpose(1, 2))
        return outs if return_all else outs[-1]
