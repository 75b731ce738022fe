"""Metric code on hand-made cases with known answers."""

from __future__ import annotations

import pytest
from metrics import cer, correction_counts, error_counts, text_normalizer, wer, word_edits


def test_substitution_insertion_deletion():
    assert wer(["the cat sat"], ["the bat sat"]) == pytest.approx(1 / 3)
    counts = error_counts(["the cat sat"], ["the cat sat down"])
    assert (counts.insertions, counts.deletions, counts.substitutions, counts.reference_length) == (1, 0, 0, 3)
    counts = error_counts(["the cat sat"], ["the sat"])
    assert (counts.insertions, counts.deletions, counts.substitutions) == (0, 1, 0)
    assert cer(["abcd"], ["abxd"]) == pytest.approx(0.25)
    assert cer(["abcd"], ["abd"]) == pytest.approx(0.25)
    assert cer(["abcd"], ["abcde"]) == pytest.approx(0.25)


def test_corpus_level_rate_pools_all_sentences():
    assert wer(["a b c d", "e f"], ["a b c d", "x f"]) == pytest.approx(1 / 6)


def test_empty_hypothesis_and_empty_reference():
    assert wer(["one two three"], [""]) == pytest.approx(1.0)
    counts = error_counts(["", "a b"], ["x y", "a b"])
    assert (counts.insertions, counts.reference_length) == (2, 2)
    assert counts.rate == pytest.approx(1.0)
    assert wer([""], [""]) == 0.0
    assert wer([""], ["extra"]) == 1.0
    assert cer([""], ["ab"]) == 1.0
    with pytest.raises(ValueError, match="references but"):
        wer(["a"], [])


def test_normalisation_of_case_and_punctuation():
    normalise = text_normalizer("en")
    assert normalise("Hello, World!") == normalise("hello world")
    assert wer([normalise("Mr. Smith's car.")], [normalise("mister smith's car")]) == 0.0
    basic = text_normalizer("fr")
    assert basic("Bonjour, le Monde !") == basic("bonjour le monde")


def test_correction_counts():
    source = "thsi is teh cat"
    reference = "this is the cat"
    assert word_edits(source, reference) == {(0, 1, ("this",)), (2, 3, ("the",))}
    perfect = correction_counts([source], [reference], [reference])
    assert (perfect.correct, perfect.wrong, perfect.missed) == (2, 0, 0) and perfect.f1 == 1.0
    half = correction_counts([source], [reference], ["this is teh cat"])  # one fixed, one left wrong
    assert (half.correct, half.wrong, half.missed) == (1, 0, 1)
    assert half.precision == 1.0 and half.recall == 0.5
    wrong = correction_counts([source], [reference], ["this is ten cats"])  # a wrong fix and a needless change
    assert (wrong.correct, wrong.wrong, wrong.missed) == (1, 1, 1)
    untouched = correction_counts(["all good"], ["all good"], ["all good"])
    assert untouched.precision == untouched.recall == 1.0
