"""Byte-level BPE from scratch (d2lmini.bpe): round trips, training, Hugging Face tokenizers,
and GPT-2's own tokenizer loaded from OpenAI's files."""
import shutil
import unicodedata

import pytest

import d2lmini as d2l
from d2lmini.bpe import BPE, SPLIT_PATTERN, bytes_to_unicode, compile_pattern, gpt2_tokenizer_files

TEXT = d2l.load_corpus("book.txt")

STRINGS = ["", " ", "a", "hello world", "Hello, World!!  \n\n\tTabs\r\nand CRLF",
           "naïve café résumé", "北京欢迎你。机器学习很有趣！", "🙂👍🏽 family: 👨‍👩‍👧",
           "日本語のテキストと한국어", "x = 3.14159; y_2 = x**2  # comment",
           "e\u0301\u200b\u00a0zero-width and no-break", "\x00\x01\x7f control",
           "'s 't 're 've 'm 'll 'd  multiple   spaces   ", "a" * 300, "🙂" * 50]


@pytest.fixture(scope="module")
def tok():
    return BPE.train(TEXT, 600)


@pytest.mark.parametrize("s", STRINGS)
def test_round_trip_of_any_unicode_string(tok, s):
    ids = tok.encode(s)
    assert tok.decode(ids) == s
    assert all(isinstance(i, int) and 0 <= i < 600 for i in ids)
    assert len(ids) <= len(s.encode("utf-8"))               # never longer than the bytes


def test_vocabulary_and_merges(tok):
    assert tok.vocab_size == len(tok) == 600 and len(tok.merges) == 344
    assert list(tok.merges.values()) == list(range(256, 600))
    for (a, b), new in tok.merges.items():                 # every token = its two parts
        assert a < new and b < new and tok.vocab[new] == tok.vocab[a] + tok.vocab[b]
    assert b" the" in tok.vocab.values()
    assert tok.encode(" the") == [[i for i, v in tok.vocab.items() if v == b" the"][0]]
    # the first merge is the most frequent adjacent pair inside the chunks
    counts = {}
    for chunk in compile_pattern(SPLIT_PATTERN).findall(TEXT):
        b = chunk.encode()
        for p in zip(b, b[1:]):
            counts[p] = counts.get(p, 0) + 1
    assert next(iter(tok.merges)) == max(counts, key=counts.get)


def test_merges_never_cross_chunks_and_compress_the_corpus(tok):
    assert "".join(tok.chunks(TEXT)) == TEXT
    assert tok.chunks("Hello, world's 42 dogs!") == ["Hello", ",", " world", "'s", " 42",
                                                     " dogs", "!"]
    ids = tok.encode(TEXT)
    assert len(ids) / len(TEXT.encode()) < 0.5             # measured 0.45 at 600
    assert not any(b" " in tok.vocab[i][1:] for i in range(256, 600)
                   if tok.vocab[i].strip())                # no token holds a space inside a word
    bigger = BPE.train(TEXT, 1000)
    assert len(bigger.encode(TEXT)) < len(ids)             # more merges, fewer tokens


def test_encoding_reproduces_the_training_segmentation():
    small = "low lower lowest newer newest wider " * 20
    tok = BPE.train(small, 300)
    assert tok.decode(tok.encode(small)) == small
    # a word seen in training becomes few tokens; the encoder applies merges by rank
    assert len(tok.encode(" lowest")) == 1
    assert BPE(tok.merges).encode(small) == tok.encode(small)


def test_compression_within_a_few_percent_of_hugging_face_tokenizers():
    pytest.importorskip("tokenizers")
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    for V in (400, 1000):
        ours = BPE.train(TEXT, V)
        hf = Tokenizer(models.BPE())
        hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        hf.decoder = decoders.ByteLevel()
        hf.train_from_iterator([TEXT], trainers.BpeTrainer(
            vocab_size=V, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            special_tokens=[], show_progress=False))
        assert hf.get_vocab_size() == V
        n_ours, n_hf = len(ours.encode(TEXT)), len(hf.encode(TEXT).ids)
        assert abs(n_ours / n_hf - 1) < 0.02, (V, n_ours, n_hf)
        assert hf.decode(hf.encode(TEXT).ids) == TEXT


def test_bad_input():
    tok = BPE.train("abc abc abc", 258)
    with pytest.raises(ValueError, match=r"vocab_size must be an int >= 256.*got 100"):
        BPE.train("abc", 100)
    with pytest.raises(TypeError, match="text must be a str, got bytes"):
        BPE.train(b"abc", 300)
    with pytest.raises(TypeError, match="text must be a str, got int"):
        tok.encode(3)
    with pytest.raises(ValueError, match=r"token id 258 is outside the vocabulary \(expected ids 0..257\)"):
        tok.decode([97, 258])
    with pytest.raises(ValueError, match="out of order"):
        BPE({(97, 98): 300})
    assert BPE.train("ab", 1000).vocab_size == 256        # no pair occurs twice: no merge


# ------------------------------------------------------------------ GPT-2's tokenizer
VARIED = ("Hello world! It's 2019: GPT-2 reads 1234567 numbers, ² and ½, Ⅻ, ３.\n"
          "naïve café, 北京欢迎你。为什么我们要工作？ 🙂👍🏽 👨‍👩‍👧  trailing   \n\n\t tabs\r\n"
          "<|endoftext|>next doc  <|endoftext|> x\x1c\x1dy e\u0301 \u00a0nbsp \u3000ideo"
          " SolidGoldMagikarp 'S 'll'd I'M 3.14159 -42 $1,000  ")


@pytest.fixture(scope="module")
def gpt2():
    return BPE.from_gpt2()


@pytest.fixture(scope="module")
def hf_gpt2(tmp_path_factory):
    """Hugging Face's GPT2TokenizerFast built offline from the same two files (the
    names from_pretrained expects work in transformers 4 and 5 alike)."""
    transformers = pytest.importorskip("transformers")
    folder = tmp_path_factory.mktemp("gpt2_tokenizer")
    enc, bpe = gpt2_tokenizer_files()
    shutil.copy(enc, folder / "vocab.json")
    shutil.copy(bpe, folder / "merges.txt")
    return transformers.GPT2TokenizerFast.from_pretrained(str(folder))


def test_gpt2_files_load_to_gpt2s_vocabulary(gpt2):
    assert gpt2.vocab_size == len(gpt2) == 50257 and len(gpt2.merges) == 50000
    assert gpt2.special_tokens == {"<|endoftext|>": 50256}
    assert gpt2.encode("Hello world") == [15496, 995]
    assert gpt2.encode("<|endoftext|>") == [50256]
    assert gpt2.encode("<|endoftext|>", special=False) != [50256]
    # ids 0-255 are the bytes in bytes_to_unicode's order, not in byte order
    assert gpt2.vocab[0] == b"!" and gpt2.byte_ids[ord("!")] == 0
    assert gpt2.byte_ids[ord(" ")] == 220 and gpt2.vocab[220] == b" "
    assert gpt2.decode([15496, 995, 50256]) == "Hello world<|endoftext|>"


def test_bytes_to_unicode_is_gpt2s_table():
    table = bytes_to_unicode()
    assert sorted(table) == list(range(256)) and len(set(table.values())) == 256
    assert table[ord("A")] == "A" and table[32] == "Ġ" and table[10] == "Ċ"
    assert all(c.isprintable() and not c.isspace() for c in table.values())
    assert list(table)[:3] == [33, 34, 35] and list(table)[188] == 0


def test_gpt2_token_for_token_equal_to_hugging_face(gpt2, hf_gpt2):
    for s in [VARIED, TEXT, d2l.load_corpus("tinyshakespeare.txt")[-50_000:], *STRINGS]:
        ids = gpt2.encode(s)
        assert ids == hf_gpt2(s)["input_ids"], s[:40]
        assert gpt2.decode(ids) == s


def test_split_pattern_reads_unicode_classes_as_gpt2s_regex_does():
    """\\p{N} takes "²" and "½" (Python's re would call them letters), \\s is
    Unicode's White_Space (Python's re adds U+001C-U+001F)."""
    split = compile_pattern(SPLIT_PATTERN).findall
    assert split("x² ½ Ⅻ") == ["x", "²", " ½", " Ⅻ"]
    assert split("a\x1cb") == ["a", "\x1c", "b"]
    regex = pytest.importorskip("regex")
    for name in ("L", "N"):
        theirs, ours = regex.compile(rf"\p{{{name}}}"), compile_pattern(rf"\p{{{name}}}")
        for cp in range(0, 0x40000, 7):                      # every 7th code point
            c = chr(cp)
            if 0xD800 <= cp < 0xE000 or unicodedata.category(c) == "Cn":
                continue                                      # unassigned here
            assert bool(theirs.fullmatch(c)) == bool(ours.fullmatch(c)), hex(cp)
    ws = regex.compile(r"\s")
    ours = compile_pattern(r"\s")
    assert [c for c in range(0x3001) if ws.match(chr(c))] == \
        [c for c in range(0x3001) if ours.match(chr(c))]
    assert regex.findall(SPLIT_PATTERN, VARIED) == split(VARIED)


def test_gpt2_files_give_clear_errors(tmp_path):
    enc, bpe = gpt2_tokenizer_files()
    with pytest.raises(TypeError, match="encoder_json must be a path"):
        BPE.from_gpt2(42, bpe)
    with pytest.raises(ValueError, match="lacks single-byte tokens"):
        BPE.from_gpt2({"a": 0}, [])
    with pytest.raises(ValueError, match="each merge is two strings"):
        BPE.from_gpt2(enc, [("a", "b", "c")])
    with pytest.raises(ValueError, match="only .p.L. and .p.N. are supported"):
        compile_pattern(r"\p{Lu}")
