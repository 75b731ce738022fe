"""recipes/word_lists/make_current_words.py: the list of words of current English the text steps keep as written."""

from __future__ import annotations

import sys
import types

import make_current_words

from seq2spec.spelling.protection.word_lists import (
    CURRENT_WORDS_PATH,
    NAME_WORDS_PATH,
    name_words,
    technical_words,
    word_list,
)

ZIPF = {
    "the": 7.7, "she": 6.2, "blog": 4.9, "noon": 4.0, "vlog": 2.95, "noob": 2.7, "shel": 2.6, "alot": 3.9,
    "dont": 4.7, "goin": 3.0, "ofthe": 3.5, "sooo": 3.5, "async": 2.6, "Kanye": 3.4, "fomo": 2.6, "rare": 4.5,
    "rizz": 1.8,
}  # fmt: skip


def use_frequencies(monkeypatch, zipf: dict[str, float]) -> None:
    """wordfreq answering from ``zipf``, and codespell knowing the misspelling "alot"."""
    fake = types.ModuleType("wordfreq")
    fake.top_n_list = lambda language, n, wordlist: sorted(zipf, key=zipf.get, reverse=True)
    fake.zipf_frequency = lambda word, language, wordlist: zipf.get(word, 0.0)
    monkeypatch.setitem(sys.modules, "wordfreq", fake)
    monkeypatch.setattr(make_current_words, "recorded_misspellings", lambda: {"alot"})
    monkeypatch.setattr(make_current_words, "technical_words", lambda: frozenset({"async"}))


def test_words_are_chosen_by_the_rule(monkeypatch):
    use_frequencies(monkeypatch, ZIPF)
    found = make_current_words.candidates(min_zipf=2.0, min_length=4)
    words = make_current_words.current_words(found, min_zipf=2.5, max_neighbour_gap=2.0)
    # left out: dictionary words ("the", "blog", "rare"), a slip of a far commoner word ("shel": "she"), a recorded
    # misspelling ("alot"), no apostrophe ("dont", "goin"), run together ("ofthe"), a letter said long ("sooo"), a
    # technical word ("async"), capitals ("Kanye"), the rarer words ("rizz")
    assert words == ["fomo", "noob", "vlog"]


def test_names_are_the_rarer_words_the_list_leaves_out(monkeypatch):
    use_frequencies(monkeypatch, {**ZIPF, "matteo": 2.3, "chidi": 2.1, "ama": 3.0, "zzyx": 1.5})
    found = make_current_words.candidates(min_zipf=2.0, min_length=4)
    current = make_current_words.current_words(found, min_zipf=2.5, max_neighbour_gap=2.0)
    # "shel" (a slip of "she") and the words under 2.5 come in; three letters ("ama") and under 2.0 ("zzyx") do not
    assert make_current_words.name_words(found, 2.0, current) == ["chidi", "matteo", "shel"]


def test_one_edit_away_covers_the_four_edits():
    near = make_current_words.one_edit_away("vlog")
    assert {"log", "lvog", "blog", "vlogs"} <= near and "vlog" not in near


def test_the_shipped_list_is_the_recipes_rule():
    words = word_list(CURRENT_WORDS_PATH)
    assert len(words) > 15000 and {"noob", "chai", "selfie", "connor", "chidi", "capex", "nerfed", "ganache"} <= words
    lines = CURRENT_WORDS_PATH.read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith("#") and "CC BY-SA" in lines[0] and lines[1:] == sorted(words)
    assert not words & technical_words() and not words & {"ofthe", "inthe", "tobe", "dont", "alot", "teh"}


def test_the_shipped_names_are_the_recipes_rule():
    names = name_words()
    assert len(names) > 3000 and {"matteo", "shira", "jing"} <= names and not names & word_list(CURRENT_WORDS_PATH)
    lines = NAME_WORDS_PATH.read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith("#") and "CC BY-SA" in lines[0] and lines[1:] == sorted(names)
