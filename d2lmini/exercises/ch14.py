"""Chapter 14 (encoder-only: BERT): the exercises' judges.

Each judge draws fresh random inputs, computes the reference here (not on the page)
and compares the reader's answer with it.  The masking rule is random, so its judge
measures the answer's proportions on a million tokens (tight enough to tell 10 % from
9 % or 12 %), then pre-trains the chapter's small BERT with it.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from .core import Wrong, call, expect, forbid, forbid_loops, register
from .core import fresh_generator as _gen


def _randint(lo: int, hi: int, g: torch.Generator) -> int:
    return int(torch.randint(lo, hi + 1, (1,), generator=g))


def _pair(out, case: str, what: str = "(inputs, labels)"):
    if not (isinstance(out, (tuple, list)) and len(out) == 2
            and all(isinstance(t, torch.Tensor) for t in out)):
        raise Wrong(f"expected a pair of tensors {what} ({case}), got "
                    f"{type(out).__name__}")
    return out


# ------------------------------------------------------------------ BERT's masking rule
def _proportions(answer, g) -> str:
    for i, (V, special, mask_id, p) in enumerate([(40, [0, 1, 2, 3], 3, 0.15),
                                                   (25, [0, 1, 2, 5], 5, 0.3)]):
        case = (f"case {i}: vocabulary {V}, special ids {special}, "
                f"mask_id {mask_id}, p={p}")
        normal = torch.tensor([t for t in range(V) if t not in special])
        tokens = normal[torch.randint(len(normal), (1000, 500), generator=g)]
        lengths = torch.randint(250, 500, (1000,), generator=g)
        tokens[:, 0] = special[1]                                   # [CLS]
        tokens[torch.arange(1000), lengths - 1] = special[2]        # [SEP]
        tokens[torch.arange(500) >= lengths[:, None]] = special[0]  # padding
        inputs, labels = _pair(call(answer, tokens.clone(), mask_id, V, list(special),
                                    p, case=case), case)
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
        if abs(rate - p) > 0.003:
            raise Wrong(f"{rate:.2%} of the ordinary tokens were selected, "
                        f"expected {p:.0%} ({case})")
        per_id = torch.stack([(sel & (tokens == t)).sum() / (tokens == t).sum()
                              for t in normal.tolist()])
        if (per_id - p).abs().max() > 0.03:
            raise Wrong(f"some ids are selected far more often than others ({case}): "
                        f"every ordinary position has the same chance p")
        k = sel.sum().item()
        masked = (inputs[sel] == mask_id).sum().item() / k
        changed = (inputs[sel] != mask_id) & (inputs[sel] != tokens[sel])
        if abs(masked - 0.8) > 0.008:
            raise Wrong(f"{masked:.1%} of the selected positions became mask_id, "
                        f"expected 80 % ({case})")
        drawn = inputs[sel][changed]
        if torch.isin(drawn, torch.tensor(special)).any():
            raise Wrong(f"a random replacement was a special id ({case}): draw only "
                        f"ordinary ids")
        random = changed.sum().item() / k
        want = 0.1 * (1 - 1 / len(normal))           # a random id may be the same one
        if abs(random - want) > 0.006:
            raise Wrong(f"{random:.1%} of the selected positions got another random "
                        f"id, expected 10 % (less the draws that hit the same id) "
                        f"({case})")
        counts = torch.bincount(drawn, minlength=V)[normal]
        if counts.min() < 0.6 * counts.float().mean():
            raise Wrong(f"the random replacements are not spread over all ordinary "
                        f"ids ({case}): draw them uniformly")
    return "a million tokens"


@register("ch14_mask_tokens", "mask_tokens, pre-training with it", chapter=14,
          build=True, project=True)
def _mask_tokens(answer):
    from ..bert import (BERT, BOOK_CONFIG, book_vocab, book_windows, mask_tokens,
                        mlm_accuracy)
    from ..schedules import warmup_cosine_schedule
    forbid(answer, ["d2l.mask_tokens", "bert.mask_tokens",
                    "DataCollatorForLanguageModeling"], "write the rule yourself")
    g = _gen()
    tried = _proportions(answer, g)
    vocab, train_ids, held_ids = book_vocab()
    seed = _randint(0, 10_000, g)
    torch.manual_seed(seed)
    model = BERT(len(vocab), **BOOK_CONFIG)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, warmup_cosine_schedule(100, 4000))
    rows_g = torch.Generator().manual_seed(seed)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for step in range(150):
            rows = book_windows(train_ids, 64, rows_g)
            x, y = _pair(call(answer, rows, vocab.mask_id, len(vocab),
                              list(vocab.special_ids), 0.15, case="pre-training"),
                         "pre-training")
            loss = F.cross_entropy(model.mlm_logits(model(x)).transpose(1, 2), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
        acc = mlm_accuracy(model, held_ids, vocab, n=500)
    finally:
        torch.set_num_threads(threads)
    g1 = torch.Generator().manual_seed(1)            # the blanks mlm_accuracy draws
    top = torch.bincount(train_ids, minlength=len(vocab)).argmax()
    _, y = mask_tokens(book_windows(held_ids, 500, g1), vocab.mask_id, len(vocab),
                       vocab.special_ids, generator=g1)
    unigram = (y[y != -100] == top).float().mean().item()
    if acc < unigram + 0.03:
        raise Wrong(f"after 150 pre-training steps with your rule the model restores "
                    f"{acc:.3f} of the masked held-out characters, no better than "
                    f"always guessing the most frequent one ({unigram:.3f})")
    return (f"proportions on {tried}; 150 pre-training steps with your rule: held-out "
            f"masked accuracy {acc:.3f} (always the most frequent character "
            f"{unigram:.3f})")


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


# ------------------------------------------------------------------ NSP pairs
@register("ch14_nsp_pairs", "nsp_pairs (NSP rows)", chapter=14,
          build=True)
def _nsp_pairs(answer):
    forbid(answer, ["bert.nsp_pairs"], "build the rows yourself")
    g = _gen()
    M = _randint(3000, 6000, g)
    ids = torch.randperm(M, generator=g) + 10         # distinct: a slice says its place
    where = torch.empty(M + 10, dtype=torch.long)
    where[ids] = torch.arange(M)
    cls_id, sep_id = torch.randperm(10, generator=g)[:2].tolist()
    n, a_len, b_len = 4000, _randint(5, 14, g), _randint(5, 15, g)
    case = f"n={n}, a_len={a_len}, b_len={b_len}"
    out = call(answer, ids.clone(), n, a_len, b_len, cls_id, sep_id, case=case)
    if not (isinstance(out, (tuple, list)) and len(out) == 3
            and all(isinstance(t, torch.Tensor) for t in out)):
        raise Wrong(f"expected three tensors (tokens, segments, is_next) ({case})")
    tokens, segments, is_next = out
    T = a_len + b_len + 3
    expect(tuple(tokens.shape), (n, T), case=f"{case}, tokens")
    expect(tuple(segments.shape), (n, T), case=f"{case}, segments")
    expect(tuple(is_next.shape), (n,), case=f"{case}, is_next")
    if any(t.is_floating_point() or t.dtype == torch.bool
           for t in (tokens, segments, is_next)):
        raise Wrong("tokens, segments and is_next must be integer tensors (torch.long)")
    if not ((tokens[:, 0] == cls_id).all() and (tokens[:, a_len + 1] == sep_id).all()
            and (tokens[:, -1] == sep_id).all()):
        raise Wrong(f"each row is [CLS] A [SEP] B [SEP] ({case}): [CLS] at 0, [SEP] "
                    f"at a_len + 1 and at the end")
    want_seg = torch.cat([torch.zeros(a_len + 2), torch.ones(b_len + 1)]).long()
    if not (segments == want_seg).all():
        raise Wrong(f"segments: 0 for [CLS] A [SEP], 1 for B [SEP] ({case})")
    a, b = tokens[:, 1:a_len + 1], tokens[:, a_len + 2:-1]
    if (a < 10).any() or (b < 10).any():
        raise Wrong(f"A and B must be pieces of ids ({case})")
    pa, pb = where[a], where[b]
    steps_a = (pa[:, 1:] - pa[:, :-1] == 1).all() if a_len > 1 else torch.tensor(True)
    steps_b = (pb[:, 1:] - pb[:, :-1] == 1).all() if b_len > 1 else torch.tensor(True)
    if not (steps_a and steps_b):
        raise Wrong(f"A and B must each be consecutive ids of the stream ({case})")
    if not torch.isin(is_next, torch.tensor([0, 1])).all():
        raise Wrong("is_next holds 1 (IsNext) or 0 (NotNext)")
    share = is_next.float().mean().item()
    if abs(share - 0.5) > 0.04:
        raise Wrong(f"{share:.1%} of the rows are IsNext, expected half ({case})")
    follows = pb[:, 0] == pa[:, -1] + 1
    if not follows[is_next == 1].all():
        raise Wrong(f"an IsNext row's B must start right after A ends ({case})")
    if follows[is_next == 0].float().mean() > 0.01:
        raise Wrong(f"NotNext rows whose B follows A: label 0 means B does not "
                    f"continue A ({case})")
    if len(pa[:, 0].unique()) < n // 4:
        raise Wrong(f"A starts at only {len(pa[:, 0].unique())} places: draw A's "
                    f"start at random over the stream ({case})")
    gaps = (pb[:, 0] - pa[:, -1])[is_next == 0]
    if len(gaps.unique()) < 100:
        raise Wrong(f"a NotNext row's B sits at only {len(gaps.unique())} offsets from "
                    f"A: draw it from a random place ({case})")
    return f"{n} rows from a stream of {M} distinct ids"


# ------------------------------------------------------------------ span QA
def _best_span(s: torch.Tensor, e: torch.Tensor, max_len: int) -> torch.Tensor:
    T = s.shape[1]
    i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
    ok = (j >= i) & (j - i < max_len)
    score = (s[:, :, None] + e[:, None, :]).masked_fill(~ok, float("-inf"))
    flat = score.flatten(1).argmax(1)
    return torch.stack([flat // T, flat % T], 1)


@register("ch14_best_span", "best_span (span QA's answer)",
          chapter=14, build=True)
def _best_span_judge(answer):
    forbid_loops(answer, "the exercise asks for tensor operations over the positions, "
                         "with no Python loop")
    g = _gen()
    for i in range(4):
        B, T = _randint(2, 6, g), _randint(5, 30, g)
        max_len = [1, _randint(2, 4, g), _randint(5, T, g), T][i]
        s = torch.randn(B, T, generator=g) * 3
        e = torch.randn(B, T, generator=g) * 3
        s[0, -1], e[0, 0] = 20.0, 20.0                  # the best end before the start
        if B > 1 and T > max_len:                       # a span one longer than max_len
            s[1, 0], e[1, max_len] = 15.0, 15.0
        case = f"case {i}: {B} rows of {T} positions, max_len={max_len}"
        out = call(answer, s.clone(), e.clone(), max_len, case=case)
        if not isinstance(out, torch.Tensor):
            raise Wrong(f"{case}: expected a tensor (B, 2), got {type(out).__name__}")
        want = _best_span(s, e, max_len)
        expect(tuple(out.shape), tuple(want.shape), case=case)
        if out.is_floating_point():
            raise Wrong(f"{case}: positions are integers (torch.long)")
        if not torch.equal(out.long(), want):
            r = int((out.long() != want).any(1).nonzero()[0])
            st, en = out[r].tolist()
            why = ("the end comes before the start" if en < st else
                   f"the span has {en - st + 1} positions, more than max_len"
                   if en - st + 1 > max_len else
                   "another valid span scores higher")
            raise Wrong(f"{case}, row {r}: got ({st}, {en}): {why}")
    return "4 random batches, max_len from 1 to T, traps for both constraints"
