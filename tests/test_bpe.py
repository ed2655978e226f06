"""Byte-level BPE from scratch (d2lmini.bpe): round trips, training, Hugging Face tokenizers."""
import re

import pytest

import d2lmini as d2l
from d2lmini.bpe import BPE, SPLIT_PATTERN

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
    for chunk in re.findall(SPLIT_PATTERN, TEXT):
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
