"""Vocab, padding, the toy pairs, DateTranslation and length-bucketed batches (d2lmini.text)."""
import datetime as dt
import re

import pytest
import torch

import d2lmini as d2l

# ---------------------------------------------------------------- Vocab


def test_vocab_specials_come_first_with_fixed_ids():
    v = d2l.Vocab("hello")
    assert v.idx_to_token[:4] == ["<pad>", "<bos>", "<eos>", "<unk>"]
    assert (v.pad_id, v.bos_id, v.eos_id, v.unk_id) == (0, 1, 2, 3)
    assert [v[t] for t in ("<pad>", "<bos>", "<eos>", "<unk>")] == [0, 1, 2, 3]


def test_vocab_orders_by_frequency_then_first_seen_and_min_freq():
    v = d2l.Vocab(["b", "a", "c", "a", "c", "a", "d"])
    assert v.idx_to_token[4:] == ["a", "c", "b", "d"]
    assert len(v) == 8
    v2 = d2l.Vocab(["b", "a", "a", "c", "c"], min_freq=2)
    assert v2.idx_to_token[4:] == ["a", "c"]
    # specials in the data are not added twice
    assert d2l.Vocab(["<pad>", "x"]).idx_to_token == ["<pad>", "<bos>", "<eos>", "<unk>", "x"]


def test_unknown_token_maps_to_unk_documented():
    v = d2l.Vocab("abc")
    assert "<unk>" in d2l.Vocab.__doc__
    assert v["z"] == v.unk_id == 3
    assert v.encode(["a", "z"]) == [v["a"], 3]


def test_encode_with_bos_and_eos():
    v = d2l.Vocab(["x", "y"])
    assert v.encode(["x", "y"]) == [4, 5]
    assert v.encode(["x", "y"], bos=True) == [1, 4, 5]
    assert v.encode(["x", "y"], eos=True) == [4, 5, 2]
    assert v.encode(["x", "y"], bos=True, eos=True) == [1, 4, 5, 2]
    assert v.encode([], bos=True, eos=True) == [1, 2]


def test_decode_strips_specials_and_stops_at_eos():
    v = d2l.Vocab(["x", "y"])
    ids = [1, 4, 5, 2, 4, 0]
    assert v.decode(ids) == ["x", "y"]
    assert v.decode(torch.tensor(ids)) == ["x", "y"]
    assert v.decode(ids, strip=False) == ["<bos>", "x", "y", "<eos>", "x", "<pad>"]
    assert v.decode(v.encode(["y", "x"], bos=True, eos=True)) == ["y", "x"]


@pytest.mark.parametrize("bad", [6, 100, -1])
def test_decode_out_of_range_raises(bad):
    v = d2l.Vocab(["x", "y"])
    with pytest.raises(ValueError, match=rf"id {bad} is out of range for a vocabulary of size 6"):
        v.decode([4, bad])


# ---------------------------------------------------------------- pad_batch, toy pairs


def test_pad_batch():
    out = d2l.pad_batch([[5, 6, 7], [8], [9, 10]])
    assert out.dtype == torch.long
    assert out.tolist() == [[5, 6, 7], [8, 0, 0], [9, 10, 0]]
    assert d2l.pad_batch([[5], [6, 7]], pad_id=9).tolist() == [[5, 9], [6, 7]]
    with pytest.raises(ValueError, match="empty batch"):
        d2l.pad_batch([])


def test_toy_translation_is_the_notes_pairs():
    pairs = d2l.toy_translation()
    assert pairs == [("ich mochte ein bier", "i want a beer ."),
                     ("ich mochte ein cola", "i want a coke .")]


# ---------------------------------------------------------------- DateTranslation

MONTHS_EN = ["January", "February", "March", "April", "May", "June", "July", "August",
             "September", "October", "November", "December"]
MONTHS_DE = ["Januar", "Februar", "März", "April", "Mai", "Juni", "Juli", "August",
             "September", "Oktober", "November", "Dezember"]
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]


def _year2(yy: str) -> int:
    y = int(yy)
    return 2000 + y if y < 50 else 1900 + y


def parse_date(s: str) -> dt.date:
    """An independent reader of every format DateTranslation writes."""
    en = {m: i + 1 for i, m in enumerate(MONTHS_EN)}
    short = {m[:3]: i + 1 for i, m in enumerate(MONTHS_EN)}
    de = {m: i + 1 for i, m in enumerate(MONTHS_DE)}
    if m := re.fullmatch(r"(\d{1,2}) ([A-Z][a-z]+) (\d{4})", s):
        return dt.date(int(m[3]), en[m[2]], int(m[1]))
    if m := re.fullmatch(r"(\d{2})/(\d{2})/(\d{2})", s):
        return dt.date(_year2(m[3]), int(m[2]), int(m[1]))
    if m := re.fullmatch(r"([A-Z][a-z]+), ([A-Z][a-z]+) (\d{1,2}), (\d{4})", s):
        d = dt.date(int(m[4]), en[m[2]], int(m[3]))
        assert WEEKDAYS[d.weekday()] == m[1], f"wrong weekday in {s!r}"
        return d
    if m := re.fullmatch(r"(\d{1,2})\. (\w+) (\d{4})", s):
        return dt.date(int(m[3]), de[m[2]], int(m[1]))
    if m := re.fullmatch(r"(\d{4})年(\d{1,2})月(\d{1,2})日", s):
        return dt.date(int(m[1]), int(m[2]), int(m[3]))
    if m := re.fullmatch(r"([A-Z][a-z]{2}) (\d{1,2}), (\d{4})", s):
        return dt.date(int(m[3]), short[m[1]], int(m[2]))
    if m := re.fullmatch(r"(\d{1,2}) ([a-z]{3}) (\d{2})", s):
        return dt.date(_year2(m[3]), short[m[2].capitalize()], int(m[1]))
    if m := re.fullmatch(r"(\d{2})\.(\d{2})\.(\d{4})", s):
        return dt.date(int(m[3]), int(m[2]), int(m[1]))
    raise AssertionError(f"unparseable date {s!r}")


def test_deterministic_per_seed_and_seeds_differ():
    a, b = d2l.DateTranslation(300, seed=7), d2l.DateTranslation(300, seed=7)
    assert a.pairs == b.pairs and a.dates == b.dates
    assert d2l.DateTranslation(300, seed=8).pairs != a.pairs
    assert len(a) == 300 and len(set(a.dates)) == 300


def test_targets_are_iso_and_equal_the_source_date():
    ds = d2l.DateTranslation(3000, seed=0)
    seen_formats = set()
    for (src, tgt), date in zip(ds.pairs, ds.dates):
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", tgt)
        assert dt.date.fromisoformat(tgt) == date
        assert parse_date(src) == date, (src, tgt)
        assert dt.date(1950, 1, 1) <= date <= dt.date(2049, 12, 31)
        seen_formats.add(next(name for name, f in d2l.text.FORMATS.items() if f(date) == src))
    assert seen_formats == set(d2l.text.FORMATS)   # every format is drawn


def test_held_out_set_does_not_overlap():
    train = d2l.DateTranslation(5000, seed=0)
    test = d2l.DateTranslation(1000, seed=1, exclude=train)
    assert not set(train.dates) & set(test.dates)
    assert not {t for _, t in train.pairs} & {t for _, t in test.pairs}
    # the same seed without exclude would have overlapped: exclude does the work
    assert len(d2l.DateTranslation(1000, seed=1, exclude=train).dates) == 1000


def test_tensors_shapes_and_layout():
    ds = d2l.DateTranslation(50, seed=3)
    src, tgt_in, tgt_out = ds.tensors()
    S = max(len(s) for s, _ in ds.pairs)
    assert src.shape == (50, S) and tgt_in.shape == (50, 11) and tgt_out.shape == (50, 11)
    assert src.dtype == tgt_in.dtype == torch.long
    assert (tgt_in[:, 0] == ds.tgt_vocab.bos_id).all()
    assert (tgt_out[:, -1] == ds.tgt_vocab.eos_id).all()
    assert torch.equal(tgt_in[:, 1:], tgt_out[:, :-1])       # teacher forcing: shifted by one
    for row, (s, t) in zip(src, ds.pairs):
        assert "".join(ds.src_vocab.decode(row)) == s
        assert (row[len(s):] == ds.src_vocab.pad_id).all() and (row[:len(s)] != 0).all()
    for row, (_, t) in zip(tgt_out, ds.pairs):
        assert "".join(ds.tgt_vocab.decode(row)) == t


def test_every_character_is_in_the_vocab_no_unk():
    ds = d2l.DateTranslation(4000, seed=5)
    src, tgt_in, tgt_out = ds.tensors()
    assert not (src == ds.src_vocab.unk_id).any()
    assert not (tgt_out == ds.tgt_vocab.unk_id).any()
    # every character any format can produce, for every month and weekday
    every = [f(dt.date(2000, m, d)) for f in d2l.text.FORMATS.values()
             for m in range(1, 13) for d in (1, 2, 3, 4, 5, 6, 7, 28)]
    assert set("".join(every)) <= set(ds.src_vocab.idx_to_token)
    # train and test sets share one fixed vocabulary
    other = d2l.DateTranslation(10, seed=99)
    assert other.src_vocab.idx_to_token == ds.src_vocab.idx_to_token
    assert other.tgt_vocab.idx_to_token == ds.tgt_vocab.idx_to_token


def test_format_subset_and_bad_arguments():
    ds = d2l.DateTranslation(100, seed=0, formats=["dd.mm.yyyy"])
    assert all(re.fullmatch(r"\d{2}\.\d{2}\.\d{4}", s) for s, _ in ds.pairs)
    with pytest.raises(ValueError, match="unknown date formats"):
        d2l.DateTranslation(10, formats=["yyyy/mm/dd"])
    with pytest.raises(ValueError, match="n must be between 1 and"):
        d2l.DateTranslation(0)
    with pytest.raises(ValueError, match="n must be between 1 and"):
        d2l.DateTranslation(40000)


# ---------------------------------------------------------------- bucket_batches


def test_bucket_batches_cover_every_example_once_and_trim_padding():
    ds = d2l.DateTranslation(1000, seed=0)
    src, tgt_in, tgt_out = ds.tensors()
    g = torch.Generator().manual_seed(0)
    seen, total, sizes, spread = [], 0, [], []
    for s, ti, to in d2l.bucket_batches(src, tgt_in, tgt_out, 32, generator=g):
        assert s.shape[0] == ti.shape[0] == to.shape[0] <= 32
        assert (s[:, -1] != 0).any()                           # trimmed to the longest
        lens = (s != 0).sum(1)
        sizes.append(s.shape[0])
        total += s.numel()
        for row, a, b in zip(s, ti, to):
            seen.append(("".join(ds.src_vocab.decode(row)), tuple(a.tolist()), tuple(b.tolist())))
        spread.append(int(lens.max() - lens.min()))
    expected = [(p[0], tuple(a.tolist()), tuple(b.tolist()))
                for p, a, b in zip(ds.pairs, tgt_in, tgt_out)]
    assert sorted(seen) == sorted(expected)
    assert sum(sizes) == 1000
    assert total < 0.7 * src.numel()                           # bucketing saves padding
    assert sum(spread) / len(spread) < 2                       # similar lengths per batch


def test_bucket_batches_deterministic_and_checked():
    ds = d2l.DateTranslation(200, seed=0)
    t = ds.tensors()
    run = lambda: [s.tolist() for s, _, _ in
                   d2l.bucket_batches(*t, 16, generator=torch.Generator().manual_seed(3))]
    assert run() == run()
    with pytest.raises(ValueError, match="batch_size must be a positive int"):
        d2l.bucket_batches(*t, 0)
    with pytest.raises(ValueError, match="disagree"):
        d2l.bucket_batches(t[0][:5], t[1], t[2], 4)


# ---------------------------------------------------------------- helpers for your own data


def test_pad_batch_left_and_right():
    seqs = [[5, 6, 7], [8], torch.tensor([9, 10])]
    assert d2l.pad_batch(seqs, side="left").tolist() == [[5, 6, 7], [0, 0, 8], [0, 9, 10]]
    assert d2l.pad_batch(seqs, pad_id=1, side="right").tolist() == [[5, 6, 7], [8, 1, 1],
                                                                    [9, 10, 1]]


def test_vocab_from_a_set_is_sorted_and_lists_keep_their_order():
    assert d2l.Vocab({"b", "c", "a"}).idx_to_token[4:] == ["a", "b", "c"]
    assert d2l.Vocab(frozenset("cab")).idx_to_token[4:] == ["a", "b", "c"]
    assert d2l.Vocab(["b", "c", "a"]).idx_to_token[4:] == ["b", "c", "a"]   # first seen
    v = d2l.Vocab("hello world")
    assert d2l.Vocab.from_tokens(v.idx_to_token) == v
    with pytest.raises(ValueError, match="starting with"):
        d2l.Vocab.from_tokens(["a", "b"])


def test_decode_a_batch_and_to_text():
    v = d2l.Vocab("abc")
    ids = torch.tensor([v.encode("cab", bos=True, eos=True), v.encode("ba", bos=True) + [0, 0]])
    assert v.decode(ids) == [["c", "a", "b"], ["b", "a"]]
    assert v.decode(ids, sep="") == ["cab", "ba"]
    assert v.decode(ids[0], sep="-") == "c-a-b"
    assert v.decode(ids.tolist(), sep="") == ["cab", "ba"]
    assert v.decode([]) == []


def test_pairs_to_tensors_matches_the_hand_made_tensors():
    pairs = [("12", "21"), ("345", "543")]
    src, tgt_in, tgt_out, sv, tv = d2l.pairs_to_tensors(pairs)
    assert src.tolist() == [sv.encode("12") + [0], sv.encode("345")]
    assert tgt_in.tolist() == [[1] + tv.encode("21") + [0], [1] + tv.encode("543")]
    assert tgt_out.tolist() == [tv.encode("21") + [2, 0], tv.encode("543") + [2]]
    # words, and the training set's vocabularies for a test set (unknown -> <unk>)
    src2, _, _, sv2, _ = d2l.pairs_to_tensors([("a b", "c")], tokenize=str.split)
    assert sv2.idx_to_token[4:] == ["a", "b"] and src2.tolist() == [[4, 5]]
    test, _, _, sv3, tv3 = d2l.pairs_to_tensors([("19", "91")], sv, tv)
    assert sv3 is sv and tv3 is tv and test.tolist() == [[sv["1"], sv.unk_id]]


def test_date_translation_tensors_come_from_pairs_to_tensors():
    data = d2l.DateTranslation(20, seed=3)
    src, tgt_in, tgt_out = data.tensors()
    ref = d2l.pairs_to_tensors(data.pairs, data.src_vocab, data.tgt_vocab)
    assert all(torch.equal(a, b) for a, b in zip((src, tgt_in, tgt_out), ref))
    assert tgt_in.shape == (20, 11) and (tgt_in[:, 0] == 1).all() and (tgt_out[:, -1] == 2).all()


def test_lm_windows():
    ids = list(range(10))
    x, y = d2l.lm_windows(ids, 4)
    assert x.tolist() == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert y.tolist() == [[1, 2, 3, 4], [5, 6, 7, 8]]
    x, y = d2l.lm_windows(torch.tensor(ids), 4, stride=1)
    assert x.shape == (6, 4) and torch.equal(y[:, :-1], x[:, 1:])
    assert x[-1].tolist() == [5, 6, 7, 8] and y[-1].tolist() == [6, 7, 8, 9]


def test_sequence_loss_ignores_pads_and_equals_torch():
    torch.manual_seed(0)
    logits = torch.randn(2, 4, 7)
    targets = torch.tensor([[4, 5, 6, 0], [3, 0, 0, 0]])
    ref = torch.nn.functional.cross_entropy(logits.reshape(-1, 7), targets.flatten(),
                                            ignore_index=0, label_smoothing=0.1)
    assert torch.allclose(d2l.sequence_loss(logits, targets, label_smoothing=0.1), ref)
    # more padding changes nothing
    padded = d2l.sequence_loss(torch.cat([logits, torch.randn(2, 3, 7)], 1),
                               torch.cat([targets, torch.zeros(2, 3, dtype=torch.long)], 1))
    assert torch.allclose(padded, d2l.sequence_loss(logits, targets))
    every = torch.nn.functional.cross_entropy(logits.reshape(-1, 7), targets.flatten())
    assert torch.allclose(d2l.sequence_loss(logits, targets, pad_id=None), every)


# ---------------------------------------------------------------- your own data files
def test_read_pairs_tsv_csv_columns_header_and_blank_lines(tmp_path):
    tsv = tmp_path / "fra.txt"
    tsv.write_text('Go.\tVa !\tCC-BY 2.0\n\n"Hi."\t"Salut !"\tCC-BY 2.0\r\n',
                   encoding="utf-8")
    assert d2l.read_pairs(tsv) == [("Go.", "Va !"), ('"Hi."', '"Salut !"')]
    assert d2l.read_pairs(str(tsv), columns=(1, 0))[0] == ("Va !", "Go.")
    assert d2l.read_pairs(tsv, columns=(0, 2))[1] == ('"Hi."', "CC-BY 2.0")
    csv_file = tmp_path / "labels.csv"
    csv_file.write_text('text,label\n"one, two",a\n"say ""hi""\nthere",b\n')
    assert d2l.read_pairs(csv_file, header=True) == [("one, two", "a"),
                                                     ('say "hi"\nthere', "b")]
    semi = tmp_path / "x.txt"
    semi.write_text("a;b\nc;d\n")
    assert d2l.read_pairs(semi, delimiter=";") == [("a", "b"), ("c", "d")]
    # the pairs go straight into pairs_to_tensors
    src, *_ = d2l.pairs_to_tensors(d2l.read_pairs(tsv))
    assert src.shape == (2, 5)                                     # '"Hi."'


def test_read_pairs_errors_name_the_line_and_the_fix(tmp_path):
    commas = tmp_path / "pairs.tsv"
    commas.write_text("a\tb\nc,d\n")
    with pytest.raises(ValueError, match=r"line 2 has 1 field.*tab.*delimiter=','"):
        d2l.read_pairs(commas)
    tabs = tmp_path / "pairs.csv"
    tabs.write_text("a\tb\n")
    with pytest.raises(ValueError, match=r"line 1 .*delimiter='\\t'"):
        d2l.read_pairs(tabs)
    empty_target = tmp_path / "e.tsv"
    empty_target.write_text("a\tb\nc\t \n")
    with pytest.raises(ValueError, match=r"line 2: the target \(field 1\) is empty"):
        d2l.read_pairs(empty_target)
    with pytest.raises(ValueError, match="at least 3"):
        d2l.read_pairs(empty_target, columns=(0, 2))
    nothing = tmp_path / "n.tsv"
    nothing.write_text("\n\n")
    with pytest.raises(ValueError, match="holds no pairs"):
        d2l.read_pairs(nothing)
    with pytest.raises(FileNotFoundError, match="No such file.*working directory"):
        d2l.read_pairs(tmp_path / "missing.tsv")
    binary = tmp_path / "model.tsv"
    binary.write_bytes(b"\x80\x81\tx\n")
    with pytest.raises(ValueError, match="not utf-8 text.*encoding="):
        d2l.read_pairs(binary)
    assert d2l.read_pairs(binary, encoding="latin-1") == [("\x80\x81", "x")]
    with pytest.raises(TypeError, match="path must be a file name"):
        d2l.read_pairs(["a\tb"])
    with pytest.raises(ValueError, match="delimiter must be one character"):
        d2l.read_pairs(commas, delimiter="\\t")
    for bad in [(0,), (0, 0), (0, -1), "01", (0, 1.0)]:
        with pytest.raises(ValueError, match="columns must be two different"):
            d2l.read_pairs(commas, columns=bad)
    with pytest.raises(TypeError, match="header must be True or False"):
        d2l.read_pairs(commas, header="yes")


def test_split_heldout_text_is_one_piece_at_the_end():
    text = "abcdefghijklmnopqrst"
    train, held = d2l.split_heldout(text, 0.25)
    assert (train, held) == ("abcdefghijklmno", "pqrst")
    assert d2l.split_heldout(text, 0.25, seed=7) == (train, held)   # seed: lists only
    with pytest.raises(TypeError, match="key groups the items of a list"):
        d2l.split_heldout(text, key=len)
    with pytest.raises(ValueError, match="leaves nothing on one side"):
        d2l.split_heldout("abc", 0.1)


def test_split_heldout_list_random_reproducible_and_ordered():
    items = list(range(100))
    train, held = d2l.split_heldout(items, 0.2, seed=3)
    assert len(held) == 20 and sorted(train + held) == items
    assert train == sorted(train) and held == sorted(held)         # original order
    assert d2l.split_heldout(items, 0.2, seed=3) == (train, held)
    assert d2l.split_heldout(items, 0.2, seed=4)[1] != held
    assert d2l.split_heldout(items, 0.2, seed=None) == (items[:80], items[80:])
    assert d2l.split_heldout(tuple(items), 0.2, seed=3) == (train, held)


def test_split_heldout_key_keeps_groups_on_one_side():
    pairs = [(str(i % 7), str(i)) for i in range(70)]      # each source 10 times
    train, held = d2l.split_heldout(pairs, 0.3, seed=0, key=lambda p: p[0])
    assert not {s for s, _ in train} & {s for s, _ in held}
    assert len(held) == 30 and len(train) + len(held) == 70
    # without a key the same sources land on both sides
    train, held = d2l.split_heldout(pairs, 0.3, seed=0)
    assert {s for s, _ in train} & {s for s, _ in held}
    with pytest.raises(ValueError, match="1 group.*nothing on one side"):
        d2l.split_heldout([("a", "b")] * 5, 0.5, key=lambda p: p[0])
    with pytest.raises(TypeError, match="hashable group"):
        d2l.split_heldout([["a"], ["b"]], 0.5, key=lambda p: p)


def test_split_heldout_bad_input():
    for bad in (0, 1, -0.1, 1.5, True, "0.1", float("nan")):
        with pytest.raises(ValueError, match="fraction must be a number strictly"):
            d2l.split_heldout("abcdefghij", bad)
    with pytest.raises(TypeError, match="before encoding"):
        d2l.split_heldout(torch.arange(10))
    for bad in (5, None, {1, 2}, b"bytes"):
        with pytest.raises(TypeError, match="data must be a text"):
            d2l.split_heldout(bad)
    with pytest.raises(ValueError, match="seed must be an int >= 0 or None"):
        d2l.split_heldout([1, 2, 3], 0.5, seed=-1)
    with pytest.raises(TypeError, match="key must be a function"):
        d2l.split_heldout([1, 2, 3], 0.5, key="source")
    with pytest.raises(ValueError, match=r"1 item\(s\) .* leave nothing"):
        d2l.split_heldout([1], 0.5)


def test_random_batches_depend_only_on_seed_and_step():
    x, y = torch.arange(50).reshape(25, 2), torch.arange(25)
    stream = d2l.random_batches(4, x, y, seed=1)
    first = [next(stream) for _ in range(6)]
    for bx, by in first:
        assert bx.shape == (4, 2) and by.shape == (4,)
        assert torch.equal(bx[:, 0] // 2, by)                      # rows stay paired
    resumed = d2l.random_batches(4, x, y, seed=1, start=3)
    for a, b in zip(first[3:], resumed):
        assert all(torch.equal(u, v) for u, v in zip(a, b))
    other = next(d2l.random_batches(4, x, y, seed=2))
    assert not torch.equal(other[1], first[0][1])
    # every row is drawn eventually (uniform, with replacement)
    seen = torch.cat([b[1] for _, b in zip(range(100), d2l.random_batches(4, x, y))])
    assert set(seen.tolist()) == set(range(25))


def test_random_batches_resume_training_exactly():
    """Two runs of d2l.train (k steps, then the rest with start=k) equal one run."""
    x = torch.randn(40, 3)
    y = x @ torch.tensor([[1.0], [-2.0], [0.5]])                   # (40, 1)

    def run(splits):
        torch.manual_seed(0)
        net = torch.nn.Linear(3, 1)
        opt = torch.optim.Adam(net.parameters(), lr=0.1)
        done = 0
        for k in splits:
            d2l.train(net, torch.nn.functional.mse_loss, opt,
                      lambda: d2l.random_batches(8, x, y, start=done), max_steps=k,
                      progress=False)
            done += k
        return net.weight.detach().clone()

    assert torch.equal(run([10]), run([4, 6]))


def test_random_batches_bad_input():
    x = torch.zeros(5, 2)
    with pytest.raises(ValueError, match="batch_size must be a positive int"):
        d2l.random_batches(0, x)
    with pytest.raises(ValueError, match="at least one tensor"):
        d2l.random_batches(4)
    with pytest.raises(ValueError, match=r"same number of rows.*\(5, 2\), \(4,\)"):
        d2l.random_batches(4, x, torch.zeros(4))
    with pytest.raises(ValueError, match="at least"):
        d2l.random_batches(4, torch.zeros(0, 2))
    with pytest.raises(TypeError, match="tensor 1 must be a torch.Tensor.*list"):
        d2l.random_batches(4, x, [1, 2, 3, 4, 5])
    with pytest.raises(TypeError, match="0-d tensor"):
        d2l.random_batches(4, torch.tensor(1.0))
    with pytest.raises(ValueError, match="seed must be an int >= 0"):
        d2l.random_batches(4, x, seed=-1)
    with pytest.raises(ValueError, match="start must be an int >= 0"):
        d2l.random_batches(4, x, start=1.5)
