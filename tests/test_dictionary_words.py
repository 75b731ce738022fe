"""seq2spec.dictionary_words and seq2spec.text_steps: which of the model's changes are undone, and in what order
``correct``'s steps run around the model."""

from __future__ import annotations

import pytest

from seq2spec.dictionary_words import dictionary_checker, is_dictionary_token, keep_dictionary_words
from seq2spec.text_steps import TextSteps

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
    import seq2spec.text_steps as text_steps

    suggestions = {"evory": "every", "satuff": "staff"}
    fold, keep = text_steps.fold_capitals, text_steps.keep_dictionary_words_of
    monkeypatch.setattr(text_steps, "fold_capitals", lambda texts: fold(texts, suggestions.get))
    monkeypatch.setattr(
        text_steps, "keep_dictionary_words_of", lambda sources, outputs: keep(sources, outputs, is_word)
    )
    seen = []

    def model(texts: list[str]) -> list[str]:
        seen.extend(texts)
        return [text.replace("evory", "every").replace("meeting", "meetnig") for text in texts]

    assert TextSteps(fold_capitals=True, keep_dictionary_words=True).run(["Evory meeting"], model) == ["Every meeting"]
    assert seen == ["evory meeting"]  # the model read the folded text; its garbled "meetnig" is undone
    assert TextSteps(fold_capitals=True).run(["Evory meeting"], model) == ["Every meetnig"]
    assert TextSteps().run(["Evory meeting"], model) == ["Evory meetnig"]  # no steps: the model's output
    with pytest.raises(TypeError, match="keep_dictionary_words must be True or False"):
        TextSteps(keep_dictionary_words="yes")
