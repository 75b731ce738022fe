"""recipes/word_lists/make_capital_words.py: the words kept as written in a text written in capitals."""

from __future__ import annotations

import re

import pytest

from seq2spec.spelling.classical import word_counts
from seq2spec.spelling.protection.shouted import CAPITAL_WORDS_PATH, capital_words
from seq2spec.spelling.protection.word_lists import word_list


def test_the_shipped_list_holds_plain_words_no_dictionary_counts():
    words = word_list(CAPITAL_WORDS_PATH)
    assert {"nhs", "fbi", "usa", "tcp", "nasa", "lol"} <= words
    assert not words & set(word_counts()) and all(re.fullmatch("[a-z]{2,8}", word) for word in words)
    # typos the speller should fix in capitals stay out of it
    assert not words & {"hsi", "thre", "yuo", "recieve", "frnot", "teh", "alot", "dont", "thats"}
    assert capital_words() == words


def test_the_shipped_list_is_what_the_recipe_writes(tmp_path):
    pytest.importorskip("wordfreq")
    import make_capital_words

    out = tmp_path / "capital_words.txt"
    assert make_capital_words.main(["--out", str(out)]) == 0
    assert word_list(out) == word_list(CAPITAL_WORDS_PATH)
