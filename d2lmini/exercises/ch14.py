"""Chapter 14 (encoder-only: BERT): the exercises' judges.

Each judge draws fresh random inputs, computes the reference here (not on the page)
and compares the reader's answer with :func:`expect`.  The masking rule is random, so
its judge measures the answer's proportions on many tokens instead of comparing ids.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from .core import Wrong, call, expect, register
from .core import fresh_generator as _gen


def _pair(out, case: str):
    if not (isinstance(out, (tuple, list)) and len(out) == 2
            and all(isinstance(t, torch.Tensor) for t in out)):
        raise Wrong(f"expected a pair of tensors (inputs, labels) ({case}), got "
                    f"{type(out).__name__}")
    return out


# ------------------------------------------------------------------ BERT's masking rule
@register("ch14_mask_tokens", "mask_tokens (BERT's 80/10/10 rule)", chapter=14,
          build=True)
def _mask_tokens(answer):
    g = _gen()
    cases = [(40, [0, 1, 2, 3], 3, 0.15), (25, [0, 1, 2, 5], 5, 0.3)]
    for i, (V, special, mask_id, p) in enumerate(cases):
        case = (f"case {i}: vocabulary {V}, special ids {special}, "
                f"mask_id {mask_id}, p={p}")
        normal = torch.tensor([t for t in range(V) if t not in special])
        tokens = normal[torch.randint(len(normal), (300, 200), generator=g)]
        tokens[:, 0], tokens[:, -1] = special[1], special[2]        # [CLS] ... [SEP]
        lengths = torch.randint(100, 200, (300,), generator=g)
        tokens[torch.arange(200) >= lengths[:, None]] = special[0]  # padding
        out = _pair(call(answer, tokens.clone(), mask_id, V, list(special), p,
                         case=case), case)
        inputs, labels = out
        expect(tuple(inputs.shape), tuple(tokens.shape), case=f"{case}, inputs")
        expect(tuple(labels.shape), tuple(tokens.shape), case=f"{case}, labels")
        if inputs.is_floating_point() or labels.is_floating_point():
            raise Wrong(f"inputs and labels must hold integer ids ({case})")
        sel = labels != -100
        eligible = ~torch.isin(tokens, torch.tensor(special))
        if (sel & ~eligible).any():
            raise Wrong(f"a special token or a pad was selected ({case}): select only "
                        f"ordinary tokens")
        if not torch.equal(labels[sel], tokens[sel]):
            raise Wrong(f"labels must hold the original id where a position is "
                        f"selected ({case})")
        if not torch.equal(inputs[~sel], tokens[~sel]):
            raise Wrong(f"positions that are not selected must keep their token, and "
                        f"their label must be -100 ({case})")
        rate = sel.sum().item() / eligible.sum().item()
        if abs(rate - p) > 0.02:
            raise Wrong(f"{rate:.1%} of the ordinary tokens were selected, "
                        f"expected about {p:.0%} ({case})")
        k = sel.sum().item()
        masked = (inputs[sel] == mask_id).sum().item() / k
        changed = ((inputs[sel] != mask_id) & (inputs[sel] != tokens[sel]))
        if abs(masked - 0.8) > 0.03:
            raise Wrong(f"{masked:.1%} of the selected positions became mask_id, "
                        f"expected 80 % ({case})")
        if torch.isin(inputs[sel][changed], torch.tensor(special)).any():
            raise Wrong(f"a random replacement was a special id ({case}): draw only "
                        f"ordinary ids")
        random = changed.sum().item() / k
        want = 0.1 * (1 - 1 / len(normal))           # a random id may be the same one
        if abs(random - want) > 0.025:
            raise Wrong(f"{random:.1%} of the selected positions got another random "
                        f"id, expected about 10 % ({case})")
    return "60,000 random tokens twice, pads included"


# ------------------------------------------------------------------ segment ids
def _segments(tokens: torch.Tensor, sep_id: int) -> torch.Tensor:
    is_sep = (tokens == sep_id).long()
    return (is_sep.cumsum(1) - is_sep).clamp(max=1)


@register("ch14_segment_ids", "segment_ids (sentences A and B)", chapter=14,
          build=True)
def _segment_ids(answer):
    g = _gen()
    for i, (B, T) in enumerate([(1, 7), (4, 12), (6, 20)]):
        sep = 2
        tokens = torch.randint(4, 30, (B, T), generator=g)
        tokens[:, 0] = 1                                              # [CLS]
        for r in range(B):
            a = int(torch.randint(1, T - 1, (1,), generator=g))       # first [SEP]
            tokens[r, a] = sep
            if r % 3 == 1 and a + 2 < T:
                tokens[r, -1] = sep                                   # second [SEP]
            if r % 3 == 2:
                tokens[r, a] = 5                                      # no [SEP] at all
        case = f"case {i}: tokens {tuple(tokens.shape)}"
        out = call(answer, tokens.clone(), sep, case=case)
        expect(out, _segments(tokens, sep), case=case, rtol=0, atol=0, dtype=False)
        if out.is_floating_point():
            raise Wrong(f"segment ids must be integers (torch.long) ({case})")
    return "3 random batches; one, two or no [SEP]"


# ------------------------------------------------------------------ the MLM loss
@register("ch14_mlm_loss", "mlm_loss (the masked-LM loss)",
          chapter=14, build=True)
def _mlm_loss(answer):
    g = _gen()
    for i, (B, T, V) in enumerate([(2, 5, 7), (4, 16, 30), (3, 9, 11)]):
        logits = torch.randn(B, T, V, generator=g) * 2
        labels = torch.randint(V, (B, T), generator=g)
        labels[torch.rand(B, T, generator=g) > 0.3] = -100
        labels[0, 0] = 1                                # at least one selected position
        case = f"case {i}: logits {tuple(logits.shape)}"
        want = F.cross_entropy(logits.reshape(-1, V), labels.reshape(-1),
                               ignore_index=-100)
        out = call(answer, logits.clone(), labels.clone(), case=case)
        if isinstance(out, torch.Tensor) and out.numel() != 1:
            raise Wrong(f"expected one number, the mean loss ({case}), got shape "
                        f"{tuple(out.shape)}")
        expect(out.reshape(()) if isinstance(out, torch.Tensor) else out, want,
               case=case, rtol=1e-5, atol=1e-6, dtype=False)
    return "3 random batches, 30 % of positions chosen"
