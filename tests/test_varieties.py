"""A writer's British or American spelling is no typo: words the corrector rewrote in the other variety come back."""

from __future__ import annotations

import pytest

from seq2spec import Seq2SeqSpeculator
from seq2spec.default_models import SPELLER_DIR
from seq2spec.spelling.dictionary_words import dictionary_checker
from seq2spec.spelling.pipeline import SpellingPipeline
from seq2spec.spelling.settings import SpellingSettings
from seq2spec.spelling.varieties import keep_spelling_varieties, other_variety

needs_weights = pytest.mark.skipif(not (SPELLER_DIR / "big").is_dir(), reason="the speller weights are not shipped")


def test_the_other_variety_of_a_word_is_told():
    assert other_variety("neighbour's", "neighbor's")
    assert other_variety("Grey,", "gray")  # case and punctuation around the word ignored
    assert other_variety("color", "colour")  # either way
    assert other_variety("well-organised", "well-organized")
    assert other_variety("favourite\u2019s", "favorite's")  # curly or straight apostrophe
    assert not other_variety("colour", "colour")
    assert not other_variety("neighbur", "neighbor")  # a typo fixed: neither variety's spelling
    assert not other_variety("colour", "collar")
    assert not other_variety("neighbour's", "neighbors")  # the possessive changed too
    assert not other_variety("well-organised", "organized")
    assert other_variety("amongst", "among") and other_variety("Learnt", "learned")  # forms breame's table lacks
    assert not other_variety("amongst", "amidst")


def test_british_spellings_are_dictionary_words():
    """600 of breame's 1,730 British spellings are in neither symspellpy's dictionary nor pyspellchecker's list: the
    text steps know them, so the model's "baptises" -> "baptists" is a change between words, checked, not a fix."""
    is_word = dictionary_checker()
    for word in ["baptises", "amortise", "colonises", "neighbour", "colour", "neighbor", "color"]:
        assert is_word(word), word
    assert not is_word("neighbur") and not is_word("baptisez")


def test_words_rewritten_in_the_other_variety_come_back_as_written():
    source = "The colour of the neighbour's car is grey, teh end"
    assert keep_spelling_varieties(source, "The color of the neighbor's car is gray, the end") == (
        "The colour of the neighbour's car is grey, the end"
    )
    # the output's punctuation and spacing are kept, other fixes too
    assert keep_spelling_varieties("my favourite  neighbour", "My favorite  neighbor.") == "My favourite  neighbour."
    assert keep_spelling_varieties("My neighbur's dog", "My neighbor's dog") == "My neighbor's dog"
    # within a run the model also split: the word written one for one is found
    assert keep_spelling_varieties("alot of colour", "a lot of color") == "a lot of colour"
    assert keep_spelling_varieties("", "") == ""


def test_the_pipeline_keeps_the_writers_variety_only_when_asked():
    def decode(texts):  # a corrector that writes American English
        return [text.replace("neighbour", "neighbor").replace("teh", "the") for text in texts]

    texts = ["My neighbour's dog ate teh cake."]
    kept = SpellingPipeline(SpellingSettings(protect=False, keep_spelling_varieties=True), decode)
    assert kept(texts) == ["My neighbour's dog ate the cake."]
    plain = SpellingPipeline(SpellingSettings(protect=False), decode)
    assert plain(texts) == ["My neighbor's dog ate the cake."]


@needs_weights
def test_the_shipped_speller_keeps_british_spellings():
    """The shipped model wrote "neighbor's" and "favorite's" for these British spellings, and "among" for
    "amongst"."""
    texts = [
        "The colour of the neighbour's car is grey.",
        "My favourite's the blue one.",
        "Our neighbour's cat ate teh fish.",
        "The book was hidden amongst the papers.",
    ]
    expected = [*texts[:2], "Our neighbour's cat ate the fish.", texts[3]]
    speculator = Seq2SeqSpeculator()
    assert speculator.correct(texts) == expected
    plain = speculator.correct(texts, keep_spelling_varieties=False)
    assert all(p != e for p, e in zip(plain[:3], expected[:3], strict=True))  # without the step, each is rewritten
    # "amongst" -> "among" is two edits: keep_dictionary_words gives it back too (WORD_EDITS)
    assert speculator.correct(texts[3:], keep_spelling_varieties=False, keep_dictionary_words=False) == [
        "The book was hidden among the papers."
    ]
