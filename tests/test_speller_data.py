"""The corruption used to train the speller: real typos where known, edit noise otherwise, seeded."""

from __future__ import annotations

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "recipes"))
import speller_data  # noqa: E402

TYPOS = {"receive": ["recieve"], "friend": ["freind"], "letter": ["leter"]}


def test_real_typos_are_used_and_capitalisation_kept():
    corruptor = speller_data.Corruptor(TYPOS, clean_share=0.0, real_typo_share=1.0)
    rng = random.Random(0)
    assert corruptor.corrupt_word("Friend,", rng) == "Freind,"
    assert corruptor.corrupt_word("receive", rng) == "recieve"


def test_corruption_is_seeded_and_changes_one_to_three_words():
    corruptor = speller_data.Corruptor(TYPOS, clean_share=0.0)
    sentence = "She will receive a letter from her friend tomorrow morning."
    first = corruptor(sentence, random.Random(5))
    assert first == corruptor(sentence, random.Random(5))
    changed = sum(a != b for a, b in zip(first.split(" "), sentence.split(" "), strict=True))
    assert 1 <= changed <= 3


def test_clean_share_leaves_sentences_unchanged():
    corruptor = speller_data.Corruptor(TYPOS, clean_share=1.0)
    assert corruptor("Nothing changes here at all.", random.Random(1)) == "Nothing changes here at all."


def test_edits_stay_close_to_the_word():
    rng = random.Random(3)
    for _ in range(200):
        edited = speller_data.Corruptor.edit("keyboard", rng)
        assert abs(len(edited) - len("keyboard")) <= 1 and edited != ""


def test_held_out_split_is_stable_and_about_five_percent():
    sentences = [f"sentence number {i}." for i in range(4000)]
    held = [s for s in sentences if speller_data.is_held_out(s)]
    assert held == [s for s in sentences if speller_data.is_held_out(s)]
    assert 0.03 < len(held) / len(sentences) < 0.07
