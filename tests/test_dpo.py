"""DPO from scratch (d2lmini.align): sequence_logprob, dpo_loss, the chat format and
the instruction data; and equality with TRL's DPOTrainer on a random small GPT-2."""
import inspect
import math
import pathlib
import shutil

import pytest
import torch
import torch.nn.functional as F

import d2lmini as d2l
from d2lmini import align


# ------------------------------------------------------------------ dpo_loss
def test_dpo_loss_is_the_formula():
    g = torch.Generator().manual_seed(0)
    pc, pr, rc, rr = (torch.randn(7, generator=g, dtype=torch.float64) * 5
                      for _ in range(4))
    loss, cr, rj = d2l.dpo_loss(pc, pr, rc, rr, beta=0.3)
    margin = 0.3 * ((pc - rc) - (pr - rr))
    assert torch.allclose(loss, -torch.log(torch.sigmoid(margin)).mean())
    assert torch.allclose(cr, 0.3 * (pc - rc)) and torch.allclose(rj, 0.3 * (pr - rr))
    assert loss.dtype == torch.float64 and cr.shape == (7,)


def test_dpo_loss_at_the_reference_is_log_2_and_its_gradient_pushes_apart():
    p = torch.tensor([-3.0, -5.0], requires_grad=True)
    q = torch.tensor([-4.0, -2.0], requires_grad=True)
    loss, cr, rj = d2l.dpo_loss(p, q, p.detach(), q.detach(), beta=0.5)
    assert math.isclose(loss.item(), math.log(2), rel_tol=1e-6)
    assert torch.equal(cr, torch.zeros(2)) and not cr.requires_grad
    loss.backward()
    # d loss / d pc = -beta * sigmoid(-margin) / B = -0.5 * 0.5 / 2
    assert torch.allclose(p.grad, torch.full((2,), -0.125))
    assert torch.allclose(q.grad, torch.full((2,), 0.125))


def test_dpo_loss_is_stable_for_large_margins():
    big = torch.tensor([1e4, -1e4])
    loss, _, _ = d2l.dpo_loss(big, -big, torch.zeros(2), torch.zeros(2), beta=1.0)
    assert torch.isfinite(loss) and loss.item() > 1e3       # one pair badly wrong


@pytest.mark.parametrize("args, kw, err, match", [
    ((torch.zeros(3, 4),) * 4, {}, ValueError, r"1-D.*\(3, 4\).*sequence_logprob"),
    ((torch.zeros(3), torch.zeros(3), torch.zeros(2), torch.zeros(3)), {}, ValueError,
     r"one shape.*\(2,\) for ref_chosen_logps"),
    ((torch.zeros(0),) * 4, {}, ValueError, "1-D"),
    ((torch.zeros(()),) * 4, {}, ValueError, "1-D"),
    ((torch.zeros(3, dtype=torch.long),) * 4, {}, TypeError, "floating"),
    ((torch.zeros(3),) * 4, {"beta": 0}, ValueError, "beta"),
    ((torch.zeros(3),) * 4, {"beta": -0.1}, ValueError, "beta"),
    ((torch.zeros(3),) * 4, {"beta": float("inf")}, ValueError, "beta"),
    ((torch.zeros(3),) * 4, {"beta": True}, ValueError, "beta"),
    (([0.0, 1.0],) * 4, {}, TypeError, "policy_chosen_logps"),
    ((torch.tensor([float("nan")]),) * 4, {}, ValueError, "NaN"),
])
def test_dpo_loss_errors(args, kw, err, match):
    with pytest.raises(err, match=match):
        d2l.dpo_loss(*args, **kw)


# ------------------------------------------------------------------ sequence_logprob
def test_sequence_logprob_sums_the_answer_tokens():
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(2, 5, 7, generator=g)
    targets = torch.tensor([[0, 0, 3, 4, 0], [0, 1, 2, 6, 5]])
    got = d2l.sequence_logprob(logits, targets)
    logp = logits.log_softmax(-1)
    want = [logp[0, 2, 3] + logp[0, 3, 4],
            logp[1, 1, 1] + logp[1, 2, 2] + logp[1, 3, 6] + logp[1, 4, 5]]
    assert torch.allclose(got, torch.stack(want))
    # the loss the book trains with is minus the same sum over the counted targets
    n = (targets != 0).sum()
    assert torch.allclose(-got.sum() / n, d2l.sequence_loss(logits, targets))
    hf = targets.masked_fill(targets == 0, -100)
    assert torch.allclose(d2l.sequence_logprob(logits, hf, pad_id=-100), got)
    every = d2l.sequence_logprob(logits, targets, pad_id=None)
    assert torch.allclose(every, logp.gather(-1, targets[..., None])[..., 0].sum(-1))


def test_sequence_logprob_errors():
    with pytest.raises(ValueError, match="disagree"):
        d2l.sequence_logprob(torch.zeros(2, 5, 7), torch.zeros(2, 4, dtype=torch.long))
    with pytest.raises(ValueError, match="outside 0..6"):
        d2l.sequence_logprob(torch.zeros(1, 2, 7), torch.tensor([[1, 9]]))
    with pytest.raises(TypeError, match="integer ids"):
        d2l.sequence_logprob(torch.zeros(1, 2, 7), torch.zeros(1, 2))
    with pytest.raises(TypeError, match="pad_id"):
        d2l.sequence_logprob(torch.zeros(1, 2, 7), torch.zeros(1, 2, dtype=torch.long),
                             pad_id=0.5)
    with pytest.raises(ValueError, match="3-D"):
        d2l.sequence_logprob(torch.zeros(2, 7), torch.zeros(2, dtype=torch.long))


# ------------------------------------------------------------------ chat format and data
@pytest.fixture(scope="module")
def tasks():
    from d2lmini.checkpoints import split_text
    return align.InstructionTasks(split_text(d2l.load_corpus("tinyshakespeare.txt"))[0])


def test_chat_format_and_the_masked_targets(tasks):
    _, vocab = d2l.load_pretrained("shakespeare")
    ex = align.Example("reverse", "Spell tempest backwards.", "tsepmet")
    assert align.chat_prompt(ex.instruction) == \
        "USER:\nSpell tempest backwards.\n\nASSISTANT:\n"
    x, y = align.sft_batch(vocab, [ex, align.Example("first", "First of a?", "a")])
    prompt = len(align.chat_prompt(ex.instruction))
    assert vocab.decode(x[0]) + "\n" == align.chat_prompt(ex.instruction) + "tsepmet\n"
    assert vocab.decode(y[0]) == "tsepmet\n"          # the prompt's targets are pads
    assert (y[0, :prompt - 1] == 0).all() and (y[0, prompt - 1:] != 0).all()
    _, y_all = align.sft_batch(vocab, [ex], mask_prompt=False)
    assert vocab.decode(y_all[0]) == align.chat_prompt(ex.instruction)[1:] + "tsepmet\n"
    with pytest.raises(ValueError, match="one line"):
        align.chat_prompt("two\nlines")


def test_instruction_sets_keep_inputs_and_phrasings_apart(tasks):
    assert not set(tasks.words["train"]) & set(tasks.words["heldout"])
    g = torch.Generator().manual_seed(0)
    seen = {e.instruction for e in tasks.sample(2000, generator=g)}
    held = tasks.eval_set(20, inputs="heldout", phrasing="heldout")
    assert not seen & {e.instruction for e in held}
    for e in tasks.eval_set(10):
        if e.task == "reverse":
            assert e.answer[::-1] in e.instruction
        if e.task == "count":
            assert e.answer in align.NUMBER_WORDS.values()
    with pytest.raises(ValueError, match="inputs"):
        tasks.sample(3, inputs="test")


def test_answers_read_up_to_the_end_of_the_line(monkeypatch):
    """answers/exact_match read what generate writes up to END; no END is None."""
    import d2lmini.gpt as gpt
    model, vocab = d2l.load_pretrained("shakespeare")
    written = {"Shout ab.": "AB\n", "Shout cd.": "CDX", "Shout ef.": "E\nF"}

    def fake_generate(model, ids, n, **kw):
        rows = []
        for row in ids.tolist():
            prompt = vocab.decode(row)
            instruction = prompt.split("\n")[1]
            rows.append(row + (vocab.encode(written[instruction]) + [0] * n)[:n])
        return torch.tensor(rows)

    monkeypatch.setattr(gpt, "generate", fake_generate)
    got = align.answers(model, vocab, list(written), max_new_tokens=4)
    assert got == ["AB", None, "E"]
    ex = [align.Example("upper", k, k[6:8].upper()) for k in written]
    assert align.exact_match(model, vocab, ex, per_task=True) == {"upper": 1 / 3,
                                                                   "all": 1 / 3}


# ------------------------------------------------------------------ the same as TRL
trl = pytest.importorskip("trl")
transformers = pytest.importorskip("transformers")
datasets = pytest.importorskip("datasets")

TOKENIZER = pathlib.Path(d2l.__file__).parent / "gpt2_tokenizer"


def _rows(batch):
    """(token ids, completion flags) of each sequence of a DPOTrainer batch, chosen
    rows first, then rejected, whatever the TRL version's batch layout."""
    if "completion_mask" in batch:                       # TRL >= 0.20: one sequence
        rows = []
        for ids, att, comp in zip(batch["input_ids"], batch["attention_mask"],
                                  batch["completion_mask"]):
            keep = att.bool()
            rows.append((ids[keep], comp[keep].bool()))
        return rows
    rows = []
    if "chosen_labels" in batch:       # TRL <= 0.11: full sequences, -100 on the prompt
        for kind in ("chosen", "rejected"):
            for ids, att, lab in zip(batch[f"{kind}_input_ids"],
                                     batch[f"{kind}_attention_mask"],
                                     batch[f"{kind}_labels"]):
                keep = att.bool()
                rows.append((ids[keep], lab[keep] != -100))
        return rows
    for kind in ("chosen", "rejected"):  # TRL 0.12-0.19: prompt and completion apart
        for i in range(len(batch["prompt_input_ids"])):
            p = batch["prompt_input_ids"][i][batch["prompt_attention_mask"][i].bool()]
            c = batch[f"{kind}_input_ids"][i][batch[f"{kind}_attention_mask"][i].bool()]
            rows.append((torch.cat([p, c]), torch.cat([torch.zeros(len(p)),
                                                       torch.ones(len(c))]).bool()))
    return rows


def _ours(model, rows):
    """log p(completion | prompt) of every row with our GPT port and sequence_logprob,
    one unpadded sequence at a time."""
    ours = d2l.gpt2_from_hf(model)
    out = []
    for ids, comp in rows:
        targets = ids[1:].masked_fill(~comp[1:], -100)
        out.append(d2l.sequence_logprob(ours(ids[None, :-1]), targets[None],
                                        pad_id=-100)[0])
    out = torch.stack(out)
    return out.chunk(2)


def _metric(trainer, name):
    for store in ("_metrics", "_stored_metrics"):
        m = getattr(trainer, store, None)
        if m and "train" in m and m["train"].get(name):
            return float(m["train"][name][-1])
    return None


@pytest.mark.parametrize("beta", [0.1, 0.5])
def test_dpo_loss_equals_trl_dpo_trainer(tmp_path, beta):
    from datasets import Dataset
    from transformers import GPT2Config, GPT2LMHeadModel, GPT2TokenizerFast
    from trl import DPOConfig, DPOTrainer
    transformers.logging.set_verbosity_error()
    # GPT-2's tokenizer offline, from the files the package ships (the names
    # from_pretrained expects work in transformers 4 and 5 alike)
    shutil.copy(TOKENIZER / "encoder.json", tmp_path / "vocab.json")
    shutil.copy(TOKENIZER / "vocab.bpe", tmp_path / "merges.txt")
    tok = GPT2TokenizerFast.from_pretrained(str(tmp_path))
    assert tok("Hello world").input_ids == [15496, 995]
    tok.pad_token = tok.eos_token

    def gpt2(seed):
        torch.manual_seed(seed)
        cfg = GPT2Config(vocab_size=len(tok), n_embd=16, n_head=2, n_layer=2,
                         n_positions=64, resid_pdrop=0.0, embd_pdrop=0.0,
                         initializer_range=0.3,
                         attn_pdrop=0.0, bos_token_id=tok.eos_token_id,
                         eos_token_id=tok.eos_token_id)
        return GPT2LMHeadModel(cfg)

    policy, ref = gpt2(0), gpt2(1)
    # prompts end in punctuation and answers start with a space: no BPE merge across
    data = Dataset.from_dict({
        "prompt": ["Is the sky blue?", "Name a colour.", "Say hello.", "Count to two."],
        "chosen": [" Yes, it is.", " Red", " Hello there!", " One, two."],
        "rejected": [" No.", " Seven and a half", " Go away", " Three."]})
    kw = dict(output_dir=str(tmp_path / "out"), per_device_train_batch_size=4, beta=beta,
              report_to=[], remove_unused_columns=False, max_length=64, bf16=False,
              fp16=False, seed=0)
    names = inspect.signature(DPOConfig).parameters
    if "max_prompt_length" in names:
        kw["max_prompt_length"] = 32
    if "use_cpu" in names:
        kw["use_cpu"] = True
    args = DPOConfig(**kw)
    tk = ("processing_class" if "processing_class" in
          inspect.signature(DPOTrainer).parameters else "tokenizer")
    trainer = DPOTrainer(model=policy, ref_model=ref, args=args, train_dataset=data,
                         **{tk: tok})
    batch = next(iter(trainer.get_train_dataloader()))
    batch = {k: v.cpu() if isinstance(v, torch.Tensor) else v for k, v in batch.items()}
    theirs = trainer.compute_loss(trainer.model, batch)
    rows = _rows(batch)
    assert len(rows) == 8
    with torch.no_grad():
        pc, pr = _ours(trainer.model, rows)
        rc, rr = _ours(ref, rows)
    loss, cr, rj = d2l.dpo_loss(pc, pr, rc, rr, beta=beta)
    assert abs(loss.item() - math.log(2)) > 1e-3           # policy != reference
    assert abs(theirs.item() - loss.item()) <= 1e-5, (theirs.item(), loss.item())
    for name, ours in [("rewards/chosen", cr.mean()), ("rewards/rejected", rj.mean())]:
        logged = _metric(trainer, name)
        if logged is not None:
            assert abs(logged - ours.item()) <= 1e-5, (name, logged, ours.item())
