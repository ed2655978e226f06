"""From a language model to an assistant: a chat format, instructions to learn, the
sequence log-probability and the DPO loss.

A pre-trained GPT continues text.  Instruction tuning (SFT) shows it conversations
written in one fixed format, here the format of a play, which the book's character
model has read a million characters of:

    USER:
    Spell tempest backwards.

    ASSISTANT:
    tsepmet

and trains it to write the assistant's line, the loss counted on the answer only.
Preference tuning then shows it pairs of answers, one preferred, and DPO (Rafailov et
al., 2023) raises the preferred one's probability relative to a frozen reference:

    loss = -log sigmoid(beta * ((log pi(y_w|x) - log ref(y_w|x))
                              - (log pi(y_l|x) - log ref(y_l|x))))

Shapes: tokens (B, T) long; logits (B, T, V); per-sequence log-probabilities (B,).
"""
from __future__ import annotations

import math
import numbers
import re
from collections import Counter
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from .utils import check_generator, check_tensor

__all__ = ["USER", "ASSISTANT", "END", "chat_prompt", "Example", "InstructionTasks",
           "NUMBER_WORDS", "PHRASINGS", "EXACT_TASKS", "encode_chat", "sft_batch",
           "sequence_logprob", "dpo_loss", "answers", "exact_match", "answer_loss",
           "finetune", "load_tuned", "word_count", "LengthJudge", "win_rate",
           "preference_pairs", "pair_batch", "sampled_kl", "preference_tune",
           "ExampleSet", "read_dolly", "DOLLY_URL", "lora_instruction_tuning"]

USER, ASSISTANT = "USER", "ASSISTANT"
END = "\n"            # an answer is one line: the new line ends the assistant's turn


def chat_prompt(instruction: str) -> str:
    """The prompt of one turn, in the format of a play (speaker, colon, new line):
    ``"USER:\\n<instruction>\\n\\nASSISTANT:\\n"``; the answer follows, ended by
    ``END``."""
    if not isinstance(instruction, str) or not instruction.strip():
        raise ValueError(f"instruction must be a non-empty string, got {instruction!r}")
    if "\n" in instruction:
        raise ValueError("instruction must be one line (a new line ends a turn), got "
                         f"{instruction!r}")
    return f"{USER}:\n{instruction}\n\n{ASSISTANT}:\n"


NUMBER_WORDS = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six",
                7: "seven", 8: "eight", 9: "nine", 10: "ten"}


@dataclass(frozen=True)
class Example:
    """One instruction and its answer (one line, without ``END``)."""
    task: str
    instruction: str
    answer: str


# task -> (phrasings used in tuning, phrasings held out); {w}: the input
PHRASINGS = {
    "upper": (["Write in capitals: {w}", "Make it upper case: {w}", "Shout: {w}"],
              ["Put in capital letters: {w}"]),
    "first": (["First letter of: {w}", "Which letter begins: {w}"],
              ["Give the first letter of: {w}"]),
    "count": (["Count the letters of: {w}", "How many letters in: {w}"],
              ["Number of letters in: {w}"]),
    "continue": (["Continue the line: {w}", "Go on: {w}"],
                 ["Finish this line: {w}"]),
}
EXACT_TASKS = ("upper", "first", "count")      # one right answer: exact match
SPLITS = ("train", "valid", "heldout")


class InstructionTasks:
    """Instructions written in words, for the character model of Shakespeare.

    Four tasks: ``upper`` (the word in capitals), ``first`` (its first letter),
    ``count`` (its number of letters, in words: "five"), on words of 3-8 letters
    of the text, and ``continue`` (the first two words of a line of verse -> the
    rest of the line: free text, where the style is the point).  Words and lines are
    split three ways, ``"train"`` (tuning), ``"valid"`` (choosing settings) and
    ``"heldout"`` (the results); the last phrasing of each task is held out too.
    ``sample(n, inputs, phrasing, generator)`` -> n random :class:`Example`;
    ``eval_set(n_per_task, inputs, phrasing, seed)`` -> a fixed list.
    """

    def __init__(self, text: str, heldout: float = 0.2, seed: int = 0):
        if not isinstance(text, str) or len(text) < 1000:
            raise ValueError("text must be a corpus string of at least 1,000 "
                             "characters")
        if isinstance(heldout, bool) or not isinstance(heldout, numbers.Real) \
                or not 0 < heldout < 0.5:
            raise ValueError(f"heldout must be a fraction in (0, 0.5), got "
                             f"{heldout!r}")
        g = torch.Generator().manual_seed(seed)
        counts = Counter(re.findall(r"[a-z]+", text.lower()))
        words = sorted(w for w, c in counts.items() if 3 <= len(w) <= 8 and c >= 2)
        chars = set(text)
        lines = [l.strip() for l in text.split("\n")]
        lines = [l for l in lines if len(l.split()) >= 5 and not l.endswith(":")
                 and len(l) <= 45 and set(l) <= chars]
        self.words, self.lines = self._split(words, heldout, g), \
            self._split(lines, heldout, g)
        self.tasks = tuple(PHRASINGS)

    @staticmethod
    def _split(items: list, heldout: float, g: torch.Generator) -> dict:
        perm = torch.randperm(len(items), generator=g).tolist()
        k = int(len(items) * heldout)
        return {"heldout": [items[i] for i in perm[:k]],
                "valid": [items[i] for i in perm[k:2 * k]],
                "train": [items[i] for i in perm[2 * k:]]}

    @staticmethod
    def make(task: str, phrasing: str, item: str) -> Example:
        """One example of ``task`` with the phrasing ``phrasing`` and input ``item``
        (a word; a line for ``continue``)."""
        if task == "continue":
            words = item.split()
            return Example(task, phrasing.format(w=" ".join(words[:2])),
                           " ".join(words[2:]))
        answer = {"upper": item.upper(), "count": NUMBER_WORDS[len(item)],
                  "first": item[0]}[task]
        return Example(task, phrasing.format(w=item), answer)

    def _check(self, inputs: str, phrasing: str, tasks) -> tuple[str, ...]:
        if inputs not in SPLITS:
            raise ValueError(f"inputs must be one of {SPLITS}, got {inputs!r}")
        if phrasing not in ("train", "heldout"):
            raise ValueError(f"phrasing must be 'train' or 'heldout', got "
                             f"{phrasing!r}")
        tasks = self.tasks if tasks is None else tuple(tasks)
        bad = [t for t in tasks if t not in PHRASINGS]
        if bad or not tasks:
            raise ValueError(f"tasks must be some of {list(PHRASINGS)}, got {tasks!r}")
        return tasks

    def sample(self, n: int, inputs: str = "train", phrasing: str = "train",
               generator: torch.Generator | None = None, tasks=None) -> list[Example]:
        """n random examples: a random task, phrasing and input each."""
        tasks = self._check(inputs, phrasing, tasks)
        check_generator(generator)
        pick = lambda seq: seq[int(torch.randint(len(seq), (1,), generator=generator))]
        out = []
        for _ in range(n):
            t = pick(tasks)
            ph = PHRASINGS[t][0 if phrasing == "train" else 1]
            pool = self.lines[inputs] if t == "continue" else self.words[inputs]
            out.append(self.make(t, pick(ph), pick(pool)))
        return out

    def eval_set(self, n_per_task: int, inputs: str = "heldout",
                 phrasing: str = "train", seed: int = 1, tasks=EXACT_TASKS
                 ) -> list[Example]:
        """A fixed list: ``n_per_task`` examples of every task in ``tasks``."""
        tasks = self._check(inputs, phrasing, tasks)
        g = torch.Generator().manual_seed(seed)
        return [e for t in tasks
                for e in self.sample(n_per_task, inputs, phrasing, g, tasks=(t,))]


# ------------------------------------------------------------------ tokens
def encode_chat(vocab, instruction: str, answer: str | None = None
                ) -> tuple[list[int], int]:
    """-> (ids of prompt [+ answer + END], length of the prompt)."""
    prompt = vocab.encode(chat_prompt(instruction))
    if answer is None:
        return prompt, len(prompt)
    if "\n" in answer:
        raise ValueError(f"answer must be one line, got {answer!r}")
    return prompt + vocab.encode(answer + END), len(prompt)


def sft_batch(vocab, examples, mask_prompt: bool = True, pad_id: int = 0):
    """Examples -> (x, y), (B, T) each, right-padded: x the conversation without its
    last token, y the next token at every position.  ``mask_prompt=True`` puts
    ``pad_id`` (no loss, as ``d2l.sequence_loss`` reads it) on every target inside
    the prompt, so that only the answer and its END are learned; ``False`` learns
    the prompt too."""
    if not examples:
        raise ValueError("examples is empty: a batch needs at least one example")
    seqs, starts = zip(*(encode_chat(vocab, e.instruction, e.answer)
                         for e in examples))
    T = max(len(s) for s in seqs)
    full = torch.full((len(seqs), T), pad_id, dtype=torch.long)
    for i, s in enumerate(seqs):
        full[i, :len(s)] = torch.tensor(s)
    x, y = full[:, :-1].clone(), full[:, 1:].clone()
    if mask_prompt:
        first = torch.tensor(starts)[:, None] - 1     # y[t] = token t + 1
        y[torch.arange(T - 1) < first] = pad_id
    return x, y


# ------------------------------------------------------------------ log-probabilities
def sequence_logprob(logits: torch.Tensor, targets: torch.Tensor,
                     pad_id: int | None = 0) -> torch.Tensor:
    """log p(sequence) = the sum of log p(target_t | everything before) over the
    targets that are not ``pad_id``: logits (B, T, V), targets (B, T) -> (B,).

    With the targets of :func:`sft_batch` (``pad_id`` on the prompt and the
    padding) this is log p(answer | prompt), the number DPO compares.  ``pad_id=-100``
    reads Hugging Face's labels; ``None`` counts every position.  (``sequence_loss``
    is minus the same sum divided by the number of targets, over the batch.)"""
    check_tensor(logits, "logits", ndim=3, floating=True)
    check_tensor(targets, "targets", ndim=2)
    if logits.shape[:2] != targets.shape:
        raise ValueError(f"logits (B, T, V) and targets (B, T) disagree: logits "
                         f"{tuple(logits.shape)}, targets {tuple(targets.shape)}")
    if targets.is_floating_point() or targets.dtype == torch.bool:
        raise TypeError(f"targets must hold integer ids, got {targets.dtype}")
    if pad_id is not None and (isinstance(pad_id, bool)
                               or not isinstance(pad_id, numbers.Integral)):
        raise TypeError(f"pad_id must be an int id or None, got {pad_id!r}")
    keep = (torch.ones_like(targets, dtype=torch.bool) if pad_id is None
            else targets != pad_id)
    V = logits.shape[-1]
    bad = keep & ((targets < 0) | (targets >= V))
    if bad.any():
        raise ValueError(f"targets hold ids outside 0..{V - 1} (e.g. "
                         f"{int(targets[bad][0])}) that are not pad_id={pad_id}")
    logp = torch.log_softmax(logits.float(), dim=-1)
    picked = logp.gather(-1, targets.clamp(0, V - 1)[..., None])[..., 0]   # (B, T)
    return (picked * keep).sum(-1)


def _check_logps(*named) -> None:
    shape = None
    for name, t in named:
        check_tensor(t, name, floating=True)
        if t.dim() != 1 or t.shape[0] == 0:
            raise ValueError(f"{name} must be 1-D, one log-probability per pair (B,), "
                             f"got shape {tuple(t.shape)} (sum the token "
                             f"log-probabilities of each answer: sequence_logprob)")
        if shape is not None and t.shape != shape:
            raise ValueError(f"the four log-probabilities need one shape (B,), got "
                             f"{tuple(named[0][1].shape)} for {named[0][0]} and "
                             f"{tuple(t.shape)} for {name}")
        if torch.isnan(t).any():
            raise ValueError(f"{name} holds NaN")
        shape = t.shape


def dpo_loss(policy_chosen_logps: torch.Tensor, policy_rejected_logps: torch.Tensor,
             ref_chosen_logps: torch.Tensor, ref_rejected_logps: torch.Tensor,
             beta: float = 0.1):
    """Direct preference optimisation (Rafailov et al., 2023).

    Inputs: log p(answer | prompt) summed over the answer's tokens, (B,) each, for
    the chosen (preferred) and rejected answer of every pair, under the policy being
    trained and under the frozen reference (the SFT model).  Returns ``(loss,
    chosen_rewards, rejected_rewards)``:

        loss = mean(-logsigmoid(beta * ((pc - rc) - (pr - rr))))
        chosen_rewards = beta * (pc - rc),  rejected_rewards = beta * (pr - rr)

    The rewards are the implicit rewards beta * log(pi / ref) of each answer,
    detached (for watching training: the chosen should rise above the rejected).
    ``beta`` > 0: how strongly the policy may leave the reference (small beta: far).
    """
    _check_logps(("policy_chosen_logps", policy_chosen_logps),
                 ("policy_rejected_logps", policy_rejected_logps),
                 ("ref_chosen_logps", ref_chosen_logps),
                 ("ref_rejected_logps", ref_rejected_logps))
    if (isinstance(beta, bool) or not isinstance(beta, numbers.Real)
            or not math.isfinite(beta) or beta <= 0):
        raise ValueError(f"beta must be a finite number > 0, got {beta!r}")
    chosen = policy_chosen_logps - ref_chosen_logps
    rejected = policy_rejected_logps - ref_rejected_logps
    loss = -F.logsigmoid(beta * (chosen - rejected)).mean()
    return loss, beta * chosen.detach(), beta * rejected.detach()


# ------------------------------------------------------------------ answering
@torch.no_grad()
def answers(model, vocab, instructions, max_new_tokens: int = 24,
            temperature: float = 0.0, generator: torch.Generator | None = None,
            batch_size: int = 128) -> list[str | None]:
    """The model's answer to each instruction: the prompt in the chat format,
    continued (greedy by default) until END.  -> one string per instruction, the
    answer without END, or None when no END came within ``max_new_tokens``."""
    from .gpt import generate
    from .text import pad_batch
    if isinstance(instructions, str):
        raise TypeError("instructions must be a list of strings, got one string")
    end_id = vocab.encode(END)[0]
    dev = next(model.parameters()).device
    out = []
    for b in range(0, len(instructions), batch_size):
        chunk = instructions[b:b + batch_size]
        prompts = [encode_chat(vocab, s)[0] for s in chunk]
        ids = pad_batch(prompts, 0, side="left").to(dev)
        gen = generate(model, ids, max_new_tokens, temperature=temperature,
                       eos_id=end_id, generator=generator)[:, ids.shape[1]:]
        for row in gen.tolist():
            if end_id in row:
                out.append(vocab.decode(row[:row.index(end_id)]))
            else:
                out.append(None)
    return out


def exact_match(model, vocab, examples, max_new_tokens: int | None = None,
                per_task: bool = False):
    """Share of ``examples`` whose greedy answer is exactly the answer (and ends
    there).  ``per_task=True`` -> {task: share} as well as "all"."""
    if not examples:
        raise ValueError("examples is empty")
    n = max_new_tokens or max(len(e.answer) for e in examples) + 2
    got = answers(model, vocab, [e.instruction for e in examples], n)
    right = [g == e.answer for g, e in zip(got, examples)]
    if not per_task:
        return sum(right) / len(right)
    res = {}
    for t in dict.fromkeys(e.task for e in examples):
        r = [ok for ok, e in zip(right, examples) if e.task == t]
        res[t] = sum(r) / len(r)
    res["all"] = sum(right) / len(right)
    return res


@torch.no_grad()
def answer_loss(model, vocab, examples, batch_size: int = 128) -> float:
    """Mean cross-entropy, nats per token, of the answers (and their END) of
    ``examples`` given their prompts: the held-out loss of instruction tuning."""
    if not examples:
        raise ValueError("examples is empty")
    dev = next(model.parameters()).device
    was_training = model.training
    model.eval()
    total, count = 0.0, 0
    try:
        for b in range(0, len(examples), batch_size):
            x, y = sft_batch(vocab, examples[b:b + batch_size])
            total -= sequence_logprob(model(x.to(dev)), y.to(dev)).sum().item()
            count += int((y != 0).sum())
    finally:
        model.train(was_training)
    return total / count


# ------------------------------------------------------------------ tuning
def finetune(model, vocab, tasks, steps: int, lr: float,
             batch_size: int = 16, seed: int = 0, mask_prompt: bool = True,
             warmup: int = 30, eval_every: int = 0, eval_fn=None, mix=None,
             stop_after: int | None = None, pad_id: int = 0) -> dict:
    """Supervised fine-tuning on random training examples of ``tasks``.

    AdamW (no weight decay) on the parameters that require a gradient (all of them,
    or the adapters after ``add_lora``), a linear warm-up of ``warmup`` steps and a
    cosine decay to a tenth; each step a batch of ``batch_size`` examples drawn with
    a generator seeded ``seed`` (the same seed gives the same batches).  The loss
    is ``d2l.sequence_loss`` over the answers (``mask_prompt=True``) or over
    everything after the first token.  ``tasks``: an :class:`InstructionTasks` or an
    :class:`ExampleSet` of your own pairs; ``mix``: the tasks to draw from (default:
    all).  ``pad_id``: the id that pads and marks "no loss" (50256 for GPT-2, whose
    id 0 is a real token).  Every ``eval_every`` steps ``eval_fn()`` -> dict is logged.
    ``stop_after``: stop after that many steps of the ``steps``-step schedule (the
    first steps of a longer run, exactly).  Returns
    ``{"loss": [per step], "evals": [{"step": s, ...}], "seconds": ...}``; the
    model is left in eval mode."""
    import time

    from .attention import set_fused_attention
    from .schedules import warmup_cosine_schedule
    from .transformer import sequence_loss
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        raise ValueError("the model has no parameter that requires a gradient")
    g = torch.Generator().manual_seed(seed)
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.0)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, warmup_cosine_schedule(warmup, steps, final=0.1))
    dev = next(model.parameters()).device
    log = {"loss": [], "evals": []}
    start = time.perf_counter()
    set_fused_attention(model, True)
    model.train()
    try:
        for step in range(1, (stop_after or steps) + 1):
            x, y = sft_batch(vocab, tasks.sample(batch_size, generator=g, tasks=mix),
                             mask_prompt=mask_prompt, pad_id=pad_id)
            loss = sequence_loss(model(x.to(dev)), y.to(dev), pad_id=pad_id)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            log["loss"].append(loss.item())
            if eval_every and eval_fn is not None and step % eval_every == 0:
                set_fused_attention(model, False)
                model.eval()
                log["evals"].append({"step": step, **eval_fn()})
                model.train()
                set_fused_attention(model, True)
    finally:
        set_fused_attention(model, False)
        model.eval()
    log["seconds"] = time.perf_counter() - start
    return log


class ExampleSet:
    """Your own instruction pairs as something :func:`finetune` can draw batches from:
    ``ExampleSet([("instruction", "answer"), ...])`` (or :class:`Example` objects);
    ``sample(n, generator)`` draws ``n`` with replacement."""

    def __init__(self, pairs):
        self.examples = [p if isinstance(p, Example) else Example("own", *p)
                         for p in pairs]
        if not self.examples:
            raise ValueError("pairs is empty: give at least one (instruction, answer)")
        for e in self.examples:
            if not (isinstance(e.instruction, str) and isinstance(e.answer, str)):
                raise TypeError(f"a pair is two strings, got {e!r}")
            if "\n" in e.answer:
                raise ValueError(f"an answer must be one line, got {e.answer!r}")

    def __len__(self):
        return len(self.examples)

    def sample(self, n: int, generator: torch.Generator | None = None, tasks=None):
        if tasks is not None:
            raise ValueError("an ExampleSet has no tasks to choose from; pass mix=None")
        idx = torch.randint(len(self.examples), (n,), generator=generator)
        return [self.examples[i] for i in idx.tolist()]


# Databricks' Dolly-15k: 15,000 instructions written by people (CC BY-SA 3.0)
DOLLY_URL = ("https://huggingface.co/datasets/databricks/databricks-dolly-15k/"
             "resolve/main/databricks-dolly-15k.jsonl")


def read_dolly(lines, max_chars: int = 120) -> list[tuple[str, str]]:
    """Dolly-15k's JSON lines -> (instruction, answer) pairs that fit the chat format
    of this chapter: no context passage, a one-line answer of at most ``max_chars``
    characters."""
    import json
    pairs = []
    for line in lines:
        if not line.strip():
            continue
        r = json.loads(line)
        ins, ans = r["instruction"].strip(), r["response"].strip()
        if (r.get("context") or "").strip() or not ins or not ans:
            continue
        if "\n" in ins or "\n" in ans or len(ans) > max_chars:
            continue
        pairs.append((ins, ans))
    return pairs


def lora_instruction_tuning(model, tokenizer, train_pairs, show, steps: int = 100,
                            lr: float = 1e-3, rank: int = 8, batch_size: int = 8,
                            seed: int = 0, pad_id: int = 50256,
                            max_new_tokens: int = 40) -> dict:
    """LoRA instruction tuning of a GPT (e.g. ``d2l.gpt2_from_hf`` of GPT-2) with a
    BPE ``tokenizer``: adapters of ``rank`` on every linear layer of every block,
    ``steps`` of :func:`finetune` on ``train_pairs`` with the loss on the answers,
    and the greedy answers to the instructions ``show`` before and after (None: no
    end of turn within ``max_new_tokens``).  The model is changed in place (merged
    back with ``merge_lora``).  -> {"before", "after", "loss", "trainable", "total"}."""
    from .lora import ALL_LINEAR, add_lora, count_parameters, merge_lora
    ask = lambda m: [answers(m, tokenizer, [s], max_new_tokens)[0] for s in show]
    before = ask(model)                 # one prompt at a time: GPT-2 has no pad token
    torch.manual_seed(seed)
    add_lora(model, rank=rank, alpha=2 * rank, targets=ALL_LINEAR)
    trainable, total = count_parameters(model)
    log = finetune(model, tokenizer, ExampleSet(train_pairs), steps, lr, batch_size,
                   seed, warmup=max(1, steps // 10), pad_id=pad_id)
    merge_lora(model)
    return {"before": before, "after": ask(model), "loss": log["loss"],
            "trainable": trainable, "total": total}


# ------------------------------------------------------------------ preferences
def word_count(answer: str | None) -> float:
    """Words in an answer; an answer that never ended (None) counts as infinite."""
    return math.inf if answer is None else len(answer.split())


class LengthJudge:
    """The rater of this chapter: asked for an answer of ``words`` words, it prefers
    the answer whose word count is closer to that (an answer that never ended is the
    worst).  ``judge(a, b)`` -> 1 if it prefers ``a``, 0 if ``b``, 0.5 for a tie."""

    def __init__(self, words: int = 3):
        if isinstance(words, bool) or not isinstance(words, int) or words < 1:
            raise ValueError(f"words must be a positive int, got {words!r}")
        self.words = words

    def distance(self, answer: str | None) -> float:
        return abs(word_count(answer) - self.words)

    def __call__(self, a: str | None, b: str | None) -> float:
        da, db = self.distance(a), self.distance(b)
        return 1.0 if da < db else 0.0 if da > db else 0.5

    def __repr__(self) -> str:
        return f"LengthJudge(words={self.words})"


def win_rate(answers_a, answers_b, judge) -> float:
    """Share of prompts where the judge prefers ``answers_a[i]`` to ``answers_b[i]``
    (ties count one half)."""
    if len(answers_a) != len(answers_b) or not answers_a:
        raise ValueError(f"need two equally long, non-empty lists of answers, got "
                         f"{len(answers_a)} and {len(answers_b)}")
    return sum(judge(a, b) for a, b in zip(answers_a, answers_b)) / len(answers_a)


@torch.no_grad()
def preference_pairs(model, vocab, instructions, generator: torch.Generator,
                     judge, max_new_tokens: int = 40) -> list[tuple]:
    """Two answers sampled (temperature 1) from ``model`` for every instruction,
    judged: -> ``(instruction, chosen, rejected)`` for each prompt whose answers
    the judge tells apart (ties and answers that never end are left out)."""
    a = answers(model, vocab, instructions, max_new_tokens, 1.0, generator)
    b = answers(model, vocab, instructions, max_new_tokens, 1.0, generator)
    pairs = []
    for s, x, y in zip(instructions, a, b):
        if x is None or y is None or not x.strip() or not y.strip():
            continue
        p = judge(x, y)
        if p != 0.5:
            pairs.append((s, x, y) if p == 1.0 else (s, y, x))
    return pairs


def pair_batch(vocab, pairs):
    """Preference pairs -> (x, y) of :func:`sft_batch`: the B chosen conversations,
    then the B rejected ones (2B rows), the loss masked on the prompts."""
    ex = [Example("pair", s, c) for s, c, _ in pairs] + \
        [Example("pair", s, r) for s, _, r in pairs]
    return sft_batch(vocab, ex)


@torch.no_grad()
def sampled_kl(policy, reference, vocab, instructions, generator: torch.Generator,
               max_new_tokens: int = 40):
    """Sample one answer per instruction from ``policy`` (temperature 1) and estimate
    KL(policy || reference) per answer as the mean of log policy(y|x) - log
    reference(y|x) over the samples that ended.  -> (kl in nats, answers)."""
    got = answers(policy, vocab, instructions, max_new_tokens, 1.0, generator)
    done = [Example("kl", s, a) for s, a in zip(instructions, got) if a is not None]
    if not done:
        return math.nan, got
    dev = next(policy.parameters()).device
    diff = 0.0
    for b in range(0, len(done), 128):
        x, y = sft_batch(vocab, done[b:b + 128])
        x, y = x.to(dev), y.to(dev)
        diff += (sequence_logprob(policy(x), y)
                 - sequence_logprob(reference(x), y)).sum().item()
    return diff / len(done), got


def preference_tune(policy, reference, vocab, pairs, steps: int, lr: float,
                    beta: float = 0.1, batch_size: int = 16, seed: int = 0,
                    method: str = "dpo", loss_fn=None, eval_every: int = 0,
                    eval_fn=None) -> dict:
    """Tune ``policy`` on preference ``pairs`` (instruction, chosen, rejected).

    ``method="dpo"``: :func:`dpo_loss` (or ``loss_fn``, same signature) against the
    frozen ``reference``, whose log-probabilities are computed once;
    ``method="sft"``: plain supervised tuning on the chosen answers alone (the
    rejected ones unused).  AdamW (no weight decay), constant ``lr`` after a 10-step
    warm-up, batches of ``batch_size`` pairs drawn with a generator seeded ``seed``.
    Returns ``{"loss", "margin" (chosen minus rejected reward, DPO only),
    "evals", "seconds"}``."""
    import time

    from .attention import set_fused_attention
    if method not in ("dpo", "sft"):
        raise ValueError(f"method must be 'dpo' or 'sft', got {method!r}")
    if not pairs:
        raise ValueError("pairs is empty")
    loss_fn = dpo_loss if loss_fn is None else loss_fn
    dev = next(policy.parameters()).device
    if method == "dpo":
        ref_logps = []
        for b in range(0, len(pairs), 64):
            x, y = pair_batch(vocab, pairs[b:b + 64])
            with torch.no_grad():
                ref_logps.append(sequence_logprob(reference.eval()(x.to(dev)),
                                                  y.to(dev)).view(2, -1).cpu())
        ref_logps = torch.cat(ref_logps, 1)                          # (2, N)
    g = torch.Generator().manual_seed(seed)
    params = [p for p in policy.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.0)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 10))
    log = {"loss": [], "margin": [], "evals": []}
    start = time.perf_counter()
    set_fused_attention(policy, True)
    policy.train()
    try:
        for step in range(1, steps + 1):
            idx = torch.randint(len(pairs), (batch_size,), generator=g)
            batch = [pairs[i] for i in idx.tolist()]
            if method == "sft":
                x, y = sft_batch(vocab, [Example("pair", s, c) for s, c, _ in batch])
                from .transformer import sequence_loss
                loss = sequence_loss(policy(x.to(dev)), y.to(dev))
            else:
                x, y = pair_batch(vocab, batch)
                pc, pr = sequence_logprob(policy(x.to(dev)), y.to(dev)).chunk(2)
                rc, rr = (ref_logps[:, idx]).to(dev)
                loss, cr, rj = loss_fn(pc, pr, rc, rr, beta)
                log["margin"].append((cr - rj).mean().item())
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            log["loss"].append(loss.item())
            if eval_every and eval_fn is not None and step % eval_every == 0:
                set_fused_attention(policy, False)
                policy.eval()
                log["evals"].append({"step": step, **eval_fn()})
                policy.train()
                set_fused_attention(policy, True)
    finally:
        set_fused_attention(policy, False)
        policy.eval()
    log["seconds"] = time.perf_counter() - start
    return log


# ------------------------------------------------------------------ shipped models
TUNED = {"sft": "ch16_sft.pt"}


def load_tuned(name: str, device=None):
    """Chapter 16's tuned character GPTs -> ``(model in eval mode, CharVocab)``:
    ``"sft"`` (the shipped Shakespeare model after instruction tuning,
    ``benchmarks/ch16_tuning.py``; the chapter tunes it further with DPO itself).
    Stored in float16, returned in float32."""
    from .checkpoints import CharVocab, read_checkpoint
    from .gpt import GPT
    if name not in TUNED:
        raise ValueError(f"name must be one of {sorted(TUNED)}, got {name!r}")
    ckpt = read_checkpoint(TUNED[name])
    model = GPT(**ckpt["config"])
    model.load_state_dict({k: v.float() for k, v in ckpt["state_dict"].items()})
    return model.to(device if device is not None else "cpu").eval(), \
        CharVocab(chars=ckpt["chars"])
