"""seq2spec.spelling.dictionary_words and seq2spec.spelling.pipeline: which of the model's changes are undone, and in
what order ``correct``'s steps run around the model."""

from __future__ import annotations

import pytest

from seq2spec.spelling.dictionary_words import dictionary_checker, is_dictionary_token, keep_dictionary_words
from seq2spec.spelling.pipeline import SpellingPipeline
from seq2spec.spelling.settings import SpellingSettings

WORDS = {"the", "staff", "meeting", "is", "at", "noon", "nomad", "well", "known", "from", "form", "every", "day", "s"}


def is_word(word: str) -> bool:
    return word in WORDS


def test_tokens_are_known_when_every_piece_is():
    assert is_dictionary_token("Staff", is_word) and is_dictionary_token("(noon),", is_word)
    assert is_dictionary_token("nomad's", is_word) and is_dictionary_token("well-known", is_word)
    assert is_dictionary_token("30-day", is_word) and is_dictionary_token("a", is_word)  # numbers, single letters
    assert is_dictionary_token("--", is_word)  # punctuation alone
    assert not is_dictionary_token("Satuff", is_word) and not is_dictionary_token("nomade's", is_word)
    assert not is_dictionary_token("x86_64", is_word) and not is_dictionary_token("café", is_word)
    # a contraction is known when its stem is ("didn't": "did"; "can't": "can")
    assert is_dictionary_token("staff's", is_word) and is_dictionary_token("the’ll", is_word)
    known = WORDS | {"did", "can"}
    assert is_dictionary_token("didn't", known.__contains__) and is_dictionary_token("can't", known.__contains__)
    assert not is_dictionary_token("didnt", known.__contains__) and not is_dictionary_token("xyzn't", is_word)
    # a letter alone is no contraction's stem but for I: "y'll" is no word, "I'll" is
    assert not is_dictionary_token("y'll", {"y", "i"}.__contains__) and is_dictionary_token("I'll", is_word)


def test_a_dictionary_word_made_into_a_non_word_comes_back_as_written():
    source = "Staff meeting is at noon."
    assert keep_dictionary_words(source, "Satuff meeting is at noone.", is_word) == source
    # a typo fixed, a real word changed into another real word, a non-word left a non-word: the model's own
    assert keep_dictionary_words("teh meeting", "the meeting", is_word) == "the meeting"
    assert keep_dictionary_words("form the staff", "from the staff", is_word) == "from the staff"
    assert keep_dictionary_words("Xyzzy is at noon", "Xyzy is at noon", is_word) == "Xyzy is at noon"
    # the output's spacing and case are its own; only the garbled word is replaced, as the source wrote it
    assert keep_dictionary_words("STAFF  meeting", "Satuff  meeting\n", is_word) == "STAFF  meeting\n"
    # words split or merged, dropped or added: the model's own
    assert keep_dictionary_words("every day", "everyday", is_word) == "everyday"
    assert keep_dictionary_words("the staff", "the sta ff", is_word) == "the sta ff"
    assert keep_dictionary_words("the staff", "staff", is_word) == "staff"
    assert keep_dictionary_words("", "", is_word) == ""


def test_the_dictionary_is_the_checkers():
    suggestions = {"staff": "staff", "satuff": "staff", "xyzzy": None}
    check = dictionary_checker(suggestions.get)
    assert check("staff") and not check("satuff") and not check("xyzzy")


def test_the_shipped_dictionary_knows_common_words():
    pytest.importorskip("symspellpy")
    check = dictionary_checker()
    assert check("staff") and check("magenta") and not check("satuff") and not check("magental")


def test_steps_fold_before_the_model_and_keep_words_after(monkeypatch):
    import seq2spec.spelling.pipeline as text_steps

    suggestions = {"evory": "every", "satuff": "staff"}
    fold, keep = text_steps.fold_capitals, text_steps.keep_dictionary_words_of
    monkeypatch.setattr(text_steps, "fold_capitals", lambda texts: fold(texts, suggestions.get))
    monkeypatch.setattr(
        text_steps, "keep_dictionary_words_of", lambda sources, outputs, **kw: keep(sources, outputs, is_word, **kw)
    )
    seen = []

    def model(texts: list[str]) -> list[str]:
        seen.extend(texts)
        return [text.replace("evory", "every").replace("meeting", "meetnig") for text in texts]

    both = SpellingSettings(protect=False, fold_capitals=True, keep_dictionary_words=True)
    assert SpellingPipeline(both, model)(["Evory meeting"]) == ["Every meeting"]
    assert seen == ["evory meeting"]  # the model read the folded text; its garbled "meetnig" is undone
    folding = SpellingSettings(protect=False, fold_capitals=True)
    assert SpellingPipeline(folding, model)(["Evory meeting"]) == ["Every meetnig"]
    plain = SpellingSettings(protect=False)
    assert SpellingPipeline(plain, model)(["Evory meeting"]) == ["Evory meetnig"]  # no steps: the model's output
    with pytest.raises(TypeError, match="keep_dictionary_words must be True or False"):
        SpellingSettings(keep_dictionary_words="yes")


def test_unknown_words_the_model_garbled_come_back_when_asked():
    source = "Okonkwo met Xyzzy at noon."
    output = "Oknkwo met Xyzy at noone."
    assert keep_dictionary_words(source, output, is_word) == "Oknkwo met Xyzy at noon."  # dictionary words only
    assert keep_dictionary_words(source, output, is_word, unknown=True) == source
    assert (
        keep_dictionary_words(source, output, is_word, dictionary=False, unknown=True) == "Okonkwo met Xyzzy at noone."
    )
    # a non-word the model made into a dictionary word is the model's fix
    assert keep_dictionary_words("teh staff", "the staff", is_word, unknown=True) == "the staff"
