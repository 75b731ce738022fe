"""recipes/make_technical_words.py: the list of software words the text steps keep as written."""

from __future__ import annotations

import make_technical_words

from seq2spec.spelling.protection import TECHNICAL_WORDS_PATH, technical_words


def test_words_of_descriptions_are_chosen_by_the_rule(monkeypatch):
    monkeypatch.setattr(make_technical_words, "load_typos", lambda: {"output": ["ouput"]})
    descriptions = [
        "async backend for the numpy ouput (tty) llibrary",
        "Async backend, numpy; ouput tty llibrary redis",
        "backend for numpy tty ouput llibrary async",
    ]
    words = make_technical_words.technical_words(descriptions, 2)
    # dictionary words, codespell's misspellings, the descriptions' own typos, a three-letter word one edit from a
    # common word ("tty": "try") and words in fewer than two descriptions ("redis") are left out; only lower-case
    # writing counts ("Async" does not)
    assert words == ["async", "backend", "numpy"]


def test_the_shipped_list_is_the_recipes_rule():
    words = technical_words()
    assert len(words) > 500 and {"async", "backend", "numpy", "systemd"} <= words
    lines = TECHNICAL_WORDS_PATH.read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith("#") and lines[1:] == sorted(words)
    assert not words & make_technical_words.DESCRIPTION_TYPOS
