"""A word a writer repeats on purpose (ha ha ha, please please please) is no slip: runs the corrector changed come
back as written, a doubled word written once stays fixed."""

from __future__ import annotations

import pytest

from seq2spec import Seq2SeqSpeculator
from seq2spec.default_models import SPELLER_DIR
from seq2spec.spelling.pipeline import SpellingPipeline
from seq2spec.spelling.repeated_words import keep_repeated_words, repeated_runs
from seq2spec.spelling.settings import SpellingSettings

needs_weights = pytest.mark.skipif(not (SPELLER_DIR / "big").is_dir(), reason="the speller weights are not shipped")


def test_runs_are_one_word_written_twice_or_more_in_a_row():
    assert repeated_runs("ha ha that is so so so funny".split()) == [(0, 2), (4, 7)]
    assert repeated_runs("No, no, no! Ha!".split()) == [(0, 3)]  # punctuation around a word and case ignored
    assert repeated_runs("- - - ... ...".split()) == []  # punctuation alone makes no run
    assert repeated_runs("one two three".split()) == [] and repeated_runs([]) == []


@pytest.mark.parametrize(
    "source, output, expected",
    [
        # a run written with fewer or more words, or with another word in it, comes back as written
        ("Please please please help me.", "Please please help me.", "Please please please help me."),
        ("No, no, no, no, no.", "No, no, no, no, no, no.", "No, no, no, no, no."),
        ("Ha! Ha! Ha! Very funny.", "Ha! Ha! Haw! Very funny.", "Ha! Ha! Ha! Very funny."),
        ("ha ha that is funny.", "has ha that is funny.", "ha ha that is funny."),
        ("good good", "god good", "good good"),  # the output's "god" stood for one of the two
        ("ha ha ha", "", "ha ha ha"),
        ("start ha ha ha end", "start end", "start ha ha ha end"),
        ("ha ha no no no", "ha has no no", "ha ha no no no"),  # two runs in one changed block
        # the rest of the output stays: fixes beside a run, the output's spacing and punctuation
        ("wait wait wait, teh door is open", "wait wait, the door is open", "wait wait wait, the door is open"),
        ("la la la teh  end", "la la la the  end.", "la la la the  end."),
        # a doubled word written once is a fix; a run fixed word for word too; a run left alone is left alone
        ("I went to the the store.", "I went to the store.", "I went to the store."),
        ("teh teh teh end", "the the the end", "the the the end"),
        ("I said no no no way", "I said no no no way", "I said no no no way"),
        ("no no no", "no no no way", "no no no way"),  # a word added after the run is no part of it
    ],
)
def test_runs_the_output_changed_come_back_as_written(source, output, expected):
    assert keep_repeated_words(source, output) == expected


def test_the_pipeline_keeps_repeated_words_only_when_asked():
    def decode(texts):  # a corrector that writes a run once fewer
        return [text.replace("so so so", "so so").replace("teh", "the") for text in texts]

    texts = ["It was so so so good, teh end."]
    kept = SpellingPipeline(SpellingSettings(protect=False, keep_repeated_words=True), decode)
    assert kept(texts) == ["It was so so so good, the end."]
    plain = SpellingPipeline(SpellingSettings(protect=False), decode)
    assert plain(texts) == ["It was so so good, the end."]


@needs_weights
def test_the_shipped_speller_keeps_repeated_words():
    """The shipped model wrote "Please please help me.", "has ha", "Ha! Ha! Haw!", six "no"s and "wait wait" here."""
    texts = [
        "Please please please help me.",
        "ha ha that is funny.",
        "Ha! Ha! Ha! Very funny.",
        "No, no, no, no, no.",
        "wait wait wait, teh door is open",
    ]
    expected = [*texts[:4], "wait wait wait, the door is open"]
    speculator = Seq2SeqSpeculator()
    assert speculator.correct(texts) == expected
    # without the step, each run is rewritten (six "no"s also trip the loop check, which gives that text back whole)
    plain = speculator.correct(texts, keep_repeated_words=False, keep_looped_texts=False)
    assert all(p != e for p, e in zip(plain, expected, strict=True))
