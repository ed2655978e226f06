"""Chapter 16 (from GPT to ChatGPT): the exercises' judges.

Each judge draws fresh random inputs and computes its reference here, not on the
page.  The two projects run the reader's piece on the chapter's task: their LoRA
layer adapts the character GPT to the instructions (judged on the held-out answer
loss, then merged), their DPO loss tunes the instruction-tuned model toward the
chapter's rater (judged on the win rate against the SFT model).
"""
from __future__ import annotations

import copy
import math

import torch
import torch.nn.functional as F
from torch import nn

from .core import Wrong, call, expect, forbid, register
from .core import fresh_generator as _gen

_FORBIDDEN_LORA = ["LoRALinear", "add_lora", "merge_lora", "merged_weight", "peft",
                   "d2lmini.lora"]
_FORBIDDEN_DPO = ["dpo_loss", "trl", "DPOTrainer", "preference_tune"]


# ------------------------------------------------------------------ the optimum
def _optimal(ref_probs, rewards, beta):
    return torch.softmax(ref_probs.log() + rewards / beta, dim=-1)


@register("ch16_optimal_policy", "optimal_policy, the RLHF optimum",
          chapter=16, build=True)
def _optimal_policy(answer):
    g = _gen()
    cases = [(1, 4, 0.1, torch.float64, 1.0), (3, 6, 1.0, torch.float32, 1.0),
             (2, 5, 10.0, torch.float32, 3.0), (4, 3, 0.01, torch.float64, 50.0)]
    for i, (B, K, beta, dtype, scale) in enumerate(cases):
        ref = torch.softmax(torch.randn(B, K, generator=g, dtype=torch.float64) * 2,
                            -1).to(dtype)
        r = (torch.randn(B, K, generator=g, dtype=torch.float64) * scale).to(dtype)
        case = f"case {i}: {B} prompts, {K} answers, beta={beta}, {dtype}"
        if i == 3:
            case += " (rewards / beta up to thousands)"
        got = call(answer, ref.clone(), r.clone(), beta, case=case)
        want = _optimal(ref, r, beta)
        if isinstance(got, torch.Tensor) and torch.isnan(got).any():
            raise Wrong(f"your answer has NaN ({case}): exp(r / beta) overflows; work "
                        f"with logarithms (softmax or logsumexp)")
        expect(got, want, case=case, rtol=1e-4, atol=1e-7)
        if i == 0:
            first = (got, ref, r, beta)
    # the implicit reward of DPO: beta log(pi*/ref) is r up to a constant per prompt
    got, ref, r, beta = first
    implied = beta * (got.double().log() - ref.double().log())
    spread = (implied - r - (implied - r).mean(-1, keepdim=True)).abs().max()
    return (f"{len(cases)} random cases, large rewards included; beta log(pi*/ref) "
            f"gives back r up to one constant per prompt (max deviation "
            f"{float(spread):.1e})")


# ------------------------------------------------------------------ multi-turn targets
def _conversation(turns) -> str:
    from ..align import END, chat_prompt
    return "\n".join(chat_prompt(q) + a + END for q, a in turns)


def _targets(vocab, turns):
    from ..align import END, chat_prompt
    ids, keep = [], []
    for k, (q, a) in enumerate(turns):
        if k:
            ids += vocab.encode("\n")
            keep += [False]
        p = vocab.encode(chat_prompt(q))
        ans = vocab.encode(a + END)
        ids += p + ans
        keep += [False] * len(p) + [True] * len(ans)
    ids, keep = torch.tensor(ids), torch.tensor(keep)
    y = ids[1:].masked_fill(~keep[1:], 0)
    return ids[:-1], y


@register("ch16_chat_targets", "chat_targets, several turns",
          chapter=16, build=True)
def _chat_targets(answer):
    from ..align import InstructionTasks
    from ..checkpoints import load_pretrained, split_text
    from ..gpt import load_corpus
    _, vocab = load_pretrained("shakespeare")
    tasks = InstructionTasks(split_text(load_corpus("tinyshakespeare.txt"))[0])
    g = _gen()
    for i, n in enumerate([1, 2, 3, 4]):
        turns = [(e.instruction, e.answer) for e in tasks.sample(n, generator=g)]
        case = f"a conversation of {n} turn{'s' * (n > 1)}"
        out = call(answer, vocab, [tuple(t) for t in turns], case=case)
        if not (isinstance(out, (tuple, list)) and len(out) == 2
                and all(isinstance(t, torch.Tensor) for t in out)):
            raise Wrong(f"expected a pair of tensors (x, y) ({case}), got "
                        f"{type(out).__name__}")
        x, y = out
        wx, wy = _targets(vocab, turns)
        if x.dim() != 1 or y.dim() != 1:
            raise Wrong(f"x and y must be 1-D ({case}), got shapes {tuple(x.shape)} "
                        f"and {tuple(y.shape)}")
        if (y < 0).any():
            raise Wrong(f"y holds negative ids ({case}): a target without a loss is "
                        f"the pad id 0 here, as d2l.sequence_loss reads it")
        if len(x) == len(wx) + 1:
            raise Wrong(f"x must leave out the last token ({case}): the last one is "
                        f"only ever a target")
        expect(tuple(x.shape), tuple(wx.shape), case=f"{case}, x")
        if not torch.equal(x, wx):
            raise Wrong(f"x is not the conversation's ids ({case}): turns are joined "
                        f"by one blank line, each as chat_prompt(instruction) + "
                        f"answer + END")
        expect(tuple(y.shape), tuple(wy.shape), case=f"{case}, y")
        if torch.equal(y, x.masked_fill(wy == 0, 0)) and not torch.equal(y, wy):
            raise Wrong(f"y[t] must be the token after x[t] ({case}): shift by one")
        if not torch.equal(y, wy):
            learned = vocab.decode(y[y != 0])
            want = vocab.decode(wy[wy != 0])
            raise Wrong(f"the targets with a loss ({case}) spell {learned!r}; they "
                        f"should be each answer and its END, {want!r}, and 0 "
                        f"everywhere else")
    return "4 random conversations of 1 to 4 turns"


# ------------------------------------------------------------------ LoRA (project)
def _forbid_anywhere(answer, names, why) -> None:
    """forbid() for a function, or for every method of a class (a class's own source
    is not readable in a notebook; its methods' is); a class built on the package's
    or PEFT's layer is refused too."""
    if not isinstance(answer, type):
        return forbid(answer, names, why)
    for klass in answer.__mro__:
        mod = getattr(klass, "__module__", "") or ""
        if mod.startswith(("d2lmini.lora", "peft")):
            raise Wrong(f"your class builds on {klass.__name__}: {why}")
    for klass in answer.__mro__:
        if klass in (nn.Module, object) or (klass.__module__ or "").startswith(
                "torch"):
            continue
        for v in vars(klass).values():
            fn = getattr(v, "__func__", v)
            if callable(fn) and hasattr(fn, "__code__"):
                forbid(fn, names, why)


class _Host(nn.Module):
    """Puts the reader's layer where an nn.Linear was, with the attributes the model
    reads (in_features, out_features, and weight for a device check)."""

    def __init__(self, layer, base: nn.Linear):
        super().__init__()
        self.layer = layer
        self.in_features, self.out_features = base.in_features, base.out_features
        self._weight = base.weight

    @property
    def weight(self):
        return self._weight

    def forward(self, x):
        return self.layer(x)


def _lora_unit(answer, g) -> None:
    cases = [(64, 48, 8, 16.0, True, torch.float32),
             (256, 32, 64, 32.0, False, torch.float32),
             (16, 24, 2, 3.0, True, torch.float64)]
    for i, (d_in, d_out, r, alpha, bias, dtype) in enumerate(cases):
        case = f"case {i}: nn.Linear({d_in}, {d_out}, bias={bias}), rank {r}, " \
               f"alpha {alpha:g}, {dtype}"
        base = nn.Linear(d_in, d_out, bias=bias).to(dtype)
        w0 = base.weight.detach().clone()
        layer = call(answer, base, r, alpha, case=case)
        if not isinstance(layer, nn.Module):
            raise Wrong(f"LoRA(...) must build an nn.Module ({case}), got "
                        f"{type(layer).__name__}")
        x = torch.randn(5, 3, d_in, generator=g, dtype=torch.float64).to(dtype)
        with torch.no_grad():
            call(layer, x, case=case)                  # a placeholder: no answer yet
        for name in ("A", "B"):
            if not isinstance(getattr(layer, name, None), nn.Parameter):
                raise Wrong(f"the layer needs a parameter {name} ({case})")
        A, B = layer.A, layer.B
        expect(tuple(A.shape), (r, d_in), case=f"{case}, A")
        expect(tuple(B.shape), (d_out, r), case=f"{case}, B")
        if A.dtype != dtype or B.dtype != dtype:
            raise Wrong(f"A and B must have the base layer's dtype {dtype} ({case})")
        if not torch.equal(B.detach(), torch.zeros_like(B)):
            raise Wrong(f"B must start at zero ({case}), so that the layer starts "
                        f"as the base layer")
        bound = 1 / math.sqrt(d_in)
        a = A.detach().abs().flatten()
        if a.max() > bound * (1 + 1e-6):
            raise Wrong(f"A has entries of size {float(a.max()):.3g} > "
                        f"1/sqrt(in_features) = {bound:.3g} ({case}): Kaiming-uniform "
                        f"with a=sqrt(5) draws from U(-1/sqrt(in), 1/sqrt(in))")
        if a.numel() >= 1000 and not 0.07 < float((a > 0.9 * bound).float().mean()) \
                < 0.13:
            raise Wrong(f"A does not look uniform on (-1/sqrt(in), 1/sqrt(in)) "
                        f"({case}): use Kaiming-uniform with a=sqrt(5)")
        if a.numel() >= 1000 and float(a.mean()) < 0.4 * bound:
            raise Wrong(f"A is too small ({case}): Kaiming-uniform with a=sqrt(5) "
                        f"spreads it over (-1/sqrt(in), 1/sqrt(in))")
        with torch.no_grad():
            expect(layer(x), base(x), case=f"{case}, at the start (B = 0)", rtol=1e-6)
            B.copy_(torch.randn(B.shape, generator=g, dtype=torch.float64).to(dtype))
        trainable = sorted(n for n, p in layer.named_parameters() if p.requires_grad)
        if trainable != ["A", "B"]:
            raise Wrong(f"only A and B may train ({case}); trainable: {trainable} "
                        f"(freeze the base layer)")
        out = layer(x)
        Ar = A.detach().clone().requires_grad_()
        Br = B.detach().clone().requires_grad_()
        want = base(x).detach() + (alpha / r) * x @ Ar.T @ Br.T
        expect(out, want, case=f"{case}, after training has moved B", rtol=1e-5,
               atol=1e-5)
        u = torch.randn(want.shape, generator=g, dtype=torch.float64).to(dtype)
        (out * u).sum().backward()
        (want * u).sum().backward()
        expect(A.grad, Ar.grad, case=f"{case}, gradient of A", rtol=1e-4, atol=1e-5)
        expect(B.grad, Br.grad, case=f"{case}, gradient of B", rtol=1e-4, atol=1e-5)
        if not torch.equal(base.weight.detach(), w0):
            raise Wrong(f"the base layer's weight changed ({case})")
        merged = call(getattr(layer, "merge", None), case=f"{case}, merge()")
        if type(merged) is not nn.Linear:
            raise Wrong(f"merge() must return a plain nn.Linear ({case}), got "
                        f"{type(merged).__name__}")
        if (merged.bias is None) != (base.bias is None):
            raise Wrong(f"the merged layer must keep the base layer's bias ({case})")
        with torch.no_grad():
            expect(merged(x), layer(x), case=f"{case}, merged layer", rtol=1e-5,
                   atol=1e-5, dtype=False)


def _adapt(model, make, rank, alpha, targets=("W_q", "W_v")):
    for p in model.parameters():
        p.requires_grad_(False)
    layers = []
    for block in model.blocks:
        for name in targets:
            base = getattr(block.self_attn, name)
            layer = call(make, base, rank, alpha, case="in the model")
            setattr(block.self_attn, name, _Host(layer, base))
            layers.append((block.self_attn, name, layer))
    return layers


def _train(model, vocab, tasks, steps, lr, seed, batch_size=8):
    from ..align import sft_batch
    from ..transformer import sequence_loss
    g = torch.Generator().manual_seed(seed)
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        raise Wrong("after wrapping W_q and W_v with your layer nothing trains: A and "
                    "B must require a gradient")
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.0)
    model.train()
    for _ in range(steps):
        x, y = sft_batch(vocab, tasks.sample(batch_size, generator=g))
        loss = sequence_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()


def _threads(n=1):
    class _T:
        def __enter__(self):
            self.n = torch.get_num_threads()
            torch.set_num_threads(n)

        def __exit__(self, *a):
            torch.set_num_threads(self.n)
    return _T()


@register("ch16_lora", "LoRA layer, tuning the character GPT", chapter=16,
          build=True, project=True)
def _lora(answer):
    from ..align import InstructionTasks, answer_loss
    from ..checkpoints import load_pretrained, split_text
    from ..gpt import load_corpus
    _forbid_anywhere(answer, _FORBIDDEN_LORA, "build the layer yourself")
    g = _gen()
    _lora_unit(answer, g)
    model, vocab = load_pretrained("shakespeare")
    tasks = InstructionTasks(split_text(load_corpus("tinyshakespeare.txt"))[0])
    held = tasks.eval_set(15, tasks=tasks.tasks)
    with _threads(1):
        before = answer_loss(model, vocab, held)
        layers = _adapt(model, answer, rank=4, alpha=8)
        trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
        if trainable != len(model.blocks) * 2 * 4 * 2 * model.d_model:
            raise Wrong(f"{trainable:,} parameters train in the model; rank-4 adapters "
                        f"on W_q and W_v of {len(model.blocks)} blocks have "
                        f"{len(model.blocks) * 2 * 4 * 2 * model.d_model:,}")
        seed = int(torch.randint(1000, (1,), generator=g))
        _train(model, vocab, tasks, 30, 5e-3, seed)
        after = answer_loss(model, vocab, held)
        x = torch.tensor([vocab.encode("USER:\nShout: hello\n\nASSISTANT:\n")])
        with torch.no_grad():
            adapted = model(x)
            for parent, name, layer in layers:
                setattr(parent, name, call(layer.merge, case="merge() in the model"))
            merged = model(x)
    if before - after < 0.7:
        raise Wrong(f"30 steps with your adapters on W_q and W_v moved the held-out "
                    f"answer loss from {before:.2f} to {after:.2f} nats per token "
                    f"only: check the scale alpha / rank and that A and B train")
    gap = (merged - adapted).abs().max().item()
    if gap > 1e-5 * adapted.abs().max().item():
        raise Wrong(f"the merged model's logits differ from the adapted model's by "
                    f"{gap:.2g}")
    return (f"3 random layers (init, forward, gradients, merge); in the character "
            f"GPT, rank-4 adapters on W_q and W_v ({trainable:,} parameters) took the "
            f"held-out answer loss from {before:.2f} to {after:.2f} nats per token in "
            f"30 steps; merged logits equal to {gap:.1e}")


# ------------------------------------------------------------------ DPO (project)
def _dpo_ref(pc, pr, rc, rr, beta):
    c, r = pc - rc, pr - rr
    return -F.logsigmoid(beta * (c - r)).mean(), beta * c, beta * r


def _triple(out, case):
    if not (isinstance(out, (tuple, list)) and len(out) == 3
            and all(isinstance(t, torch.Tensor) for t in out)):
        raise Wrong(f"expected three tensors (loss, chosen_rewards, rejected_rewards) "
                    f"({case}), got {type(out).__name__}")
    return out


def _dpo_unit(answer, g) -> None:
    cases = [(4, 0.1, torch.float32, 5.0), (16, 0.5, torch.float64, 20.0),
             (8, 1.0, torch.float32, 1e4)]
    for i, (B, beta, dtype, scale) in enumerate(cases):
        case = f"case {i}: {B} pairs, beta={beta}, {dtype}" + \
            (", margins of thousands of nats" if scale > 100 else "")
        args = [(torch.randn(B, generator=g, dtype=torch.float64) * scale - 30)
                .to(dtype).requires_grad_(k < 2) for k in range(4)]
        out = _triple(call(answer, *args, beta, case=case), case)
        ref_args = [a.detach().clone().requires_grad_(k < 2)
                    for k, a in enumerate(args)]
        want = _dpo_ref(*ref_args, beta)
        loss = out[0]
        if loss.dim() != 0:
            raise Wrong(f"the loss must be one number, the mean over pairs ({case}), "
                        f"got shape {tuple(loss.shape)}")
        if not torch.isfinite(loss):
            raise Wrong(f"the loss is {loss.item()} ({case}): log(sigmoid(z)) "
                        f"underflows for very negative z; use F.logsigmoid")
        expect(loss, want[0], case=f"{case}, loss", rtol=1e-5, atol=1e-6)
        expect(out[1], want[1], case=f"{case}, chosen rewards", rtol=1e-5, atol=1e-5,
               dtype=False)
        expect(out[2], want[2], case=f"{case}, rejected rewards", rtol=1e-5,
               atol=1e-5, dtype=False)
        loss.backward()
        want[0].backward()
        for k, name in enumerate(("policy_chosen_logps", "policy_rejected_logps")):
            if args[k].grad is None:
                raise Wrong(f"no gradient reaches {name} ({case})")
            expect(args[k].grad, ref_args[k].grad, case=f"{case}, gradient of {name}",
                   rtol=1e-4, atol=1e-7)


@register("ch16_dpo_loss", "DPO loss, tuning toward the rater", chapter=16,
          build=True, project=True)
def _dpo(answer):
    from ..align import (InstructionTasks, LengthJudge, answers, load_tuned,
                         preference_pairs, preference_tune, win_rate)
    from ..checkpoints import split_text
    from ..gpt import load_corpus
    forbid(answer, _FORBIDDEN_DPO, "write the loss yourself")
    g = _gen()
    _dpo_unit(answer, g)
    sft, vocab = load_tuned("sft")
    tasks = InstructionTasks(split_text(load_corpus("tinyshakespeare.txt"))[0])
    ask = lambda line: tasks.make("continue", _DPO_PHRASING, line).instruction
    judge = LengthJudge(3)
    with _threads(1):
        asks = [ask(line) for line in tasks.lines["train"][:128]]
        pairs = preference_pairs(sft, vocab, asks, torch.Generator().manual_seed(0),
                                 judge)
    prompts = [ask(line) for line in tasks.lines["heldout"][:64]]
    wrapped = lambda pc, pr, rc, rr, beta: _triple(
        call(answer, pc, pr, rc, rr, beta, case="in training"), "in training")
    with _threads(1):
        policy = copy.deepcopy(sft)
        preference_tune(policy, sft, vocab, pairs, _DPO_STEPS, _DPO_LR, 0.1, 8,
                        seed=0, loss_fn=wrapped)
        base = answers(sft, vocab, prompts, 40, 1.0, torch.Generator().manual_seed(1))
        tuned = answers(policy, vocab, prompts, 40, 1.0,
                        torch.Generator().manual_seed(2))
        again = answers(sft, vocab, prompts, 40, 1.0, torch.Generator().manual_seed(2))
    wr, chance = win_rate(tuned, base, judge), win_rate(again, base, judge)
    if wr < _DPO_WIN:
        raise Wrong(f"after {_DPO_STEPS} steps with your loss the tuned model wins "
                    f"{wr:.2f} of 64 held-out prompts against the SFT model (the SFT "
                    f"model against itself: {chance:.2f}): the preference did not take")
    return (f"3 random cases (values, rewards, gradients, margins of thousands); "
            f"{_DPO_STEPS} DPO steps with your loss: win rate against the SFT model "
            f"{wr:.2f} on 64 held-out prompts (the SFT model against itself "
            f"{chance:.2f})")


_DPO_WIN = 0.6
_DPO_STEPS, _DPO_LR = 30, 3e-4           # the chapter's settings
_DPO_PHRASING = "Finish the line in three words: {w}"
