"""``correct``: texts in, the big model's greedy texts out, in the caller's order."""

from __future__ import annotations

import pytest
from conftest import greedy

from seq2spec import Seq2SeqSpeculator


def _reference(big, tokenizer, texts, **kwargs) -> list[str]:
    outputs = []
    for text in texts:
        ids = tokenizer(text, return_tensors="pt")["input_ids"]
        outputs.append(tokenizer.decode(greedy(big, ids, **kwargs)[0], skip_special_tokens=True))
    return outputs


TEXTS = [
    "Thsi sentense has a fwe mistakes.",
    "on",
    "",
    "A much longer line of text, with punctuation; it should be batched with its peers by length!",
    "short one",
    "Another medium-length line here.",
    "xy",
]


@pytest.mark.parametrize("batch_size", [1, 3, 32])
def test_correct_matches_greedy_in_caller_order(toy_byte_models, batch_size):
    big, small, tokenizer = toy_byte_models
    expected = _reference(big, tokenizer, TEXTS, max_new_tokens=24)
    assert len(set(expected)) >= 4, "reference outputs are not varied"
    speculator = Seq2SeqSpeculator(big, small, tokenizer, num_draft_tokens=3)
    assert speculator.correct(TEXTS, batch_size=batch_size, max_new_tokens=24) == expected
    read = [text for text in TEXTS if text.strip()]  # an empty text comes back empty, unread
    assert speculator.last_stats.big_encoder_calls == -(-len(read) // batch_size)


def test_prefix_is_prepended(toy_byte_models):
    big, small, tokenizer = toy_byte_models
    texts = ["fix this", "and that one"]
    expected = _reference(big, tokenizer, ["grammar: " + text for text in texts], max_new_tokens=16)
    speculator = Seq2SeqSpeculator(big, small, tokenizer)
    assert speculator.correct(texts, prefix="grammar: ", max_new_tokens=16) == expected
    assert speculator.correct(texts, max_new_tokens=16) != expected


def test_empty_list_and_empty_strings(toy_byte_models):
    big, small, tokenizer = toy_byte_models
    speculator = Seq2SeqSpeculator(big, small, tokenizer)
    assert speculator.correct([]) == []
    assert speculator.correct(["", ""], max_new_tokens=12) == _reference(big, tokenizer, ["", ""], max_new_tokens=12)


def test_accepts_any_iterable_of_strings(toy_byte_models):
    big, small, tokenizer = toy_byte_models
    speculator = Seq2SeqSpeculator(big, small, tokenizer)
    as_list = speculator.correct(["one", "two"], max_new_tokens=8)
    assert speculator.correct(text for text in ("one", "two")) is not None
    assert speculator.correct(("one", "two"), max_new_tokens=8) == as_list


def test_too_long_input_is_an_error_unless_truncation_is_asked_for():
    from transformers import ByT5Tokenizer

    from seq2spec.commands.toys import build_toy_model

    tokenizer = ByT5Tokenizer(model_max_length=32)
    big = build_toy_model("t5-v1_1", seed=7, vocab_size=len(tokenizer))
    speculator = Seq2SeqSpeculator(big, big, tokenizer)
    long_text = "a rather long sentence that certainly exceeds thirty-two bytes"
    with pytest.raises(ValueError, match="32-token input limit.*truncate=True"):
        speculator.correct(["short", long_text])
    truncated = tokenizer(long_text, truncation=True, max_length=32, return_tensors="pt")["input_ids"]
    assert truncated.shape[1] == 32
    expected = tokenizer.decode(greedy(big, truncated, max_new_tokens=10)[0], skip_special_tokens=True)
    assert speculator.correct([long_text], truncate=True, max_new_tokens=10, protect=False) == [expected]


def test_texts_over_the_split_limit_are_corrected_piece_by_piece(toy_byte_models):
    from seq2spec.spelling.pieces import join_pieces, split_text

    big, small, tokenizer = toy_byte_models
    texts = ["Thsi is one. And anoter one!  A third, with a clause; here.", "short one", "ok. fine."]
    speculator = Seq2SeqSpeculator(big, small, tokenizer)
    assert speculator.spelling.split_longer_than is None  # a model of your own: texts whole unless asked
    long_text = split_text(texts[0], 20)
    pieces = _reference(big, tokenizer, long_text.pieces, max_new_tokens=24)
    expected = [join_pieces(long_text, pieces), *_reference(big, tokenizer, texts[1:], max_new_tokens=24)]
    assert len(long_text.pieces) == 4 and expected[0] != _reference(big, tokenizer, texts[:1], max_new_tokens=24)[0]
    pieced = speculator.correct(texts, max_new_tokens=24, split_longer_than=20, batch_size=2, protect=False)
    assert pieced == expected
    assert speculator.correct(texts, max_new_tokens=24, protect=False) == _reference(
        big, tokenizer, texts, max_new_tokens=24
    )
    with pytest.raises(ValueError, match="split_longer_than"):
        speculator.correct(texts, split_longer_than=0)


def test_a_piece_over_the_token_limit_names_its_text(toy_byte_models):
    from seq2spec.speculator import InputTooLongError

    big, small, tokenizer = toy_byte_models
    speculator = Seq2SeqSpeculator(big, small, tokenizer)
    speculator._source_limit = lambda: 30  # tokens
    texts = ["fine", "Short. " + "x" * 40, "also fine"]  # the second text's one-word piece is over the limit
    with pytest.raises(InputTooLongError) as raised:
        speculator.correct(texts, split_longer_than=10)
    assert raised.value.index == 1 and "texts[1]" in str(raised.value)
