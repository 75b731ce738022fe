"""Text an English corrector must not read: sentences in another language (Latin letters) and other scripts."""

from __future__ import annotations

import pytest

from seq2spec import Seq2SeqSpeculator
from seq2spec.default_models import SPELLER_DIR
from seq2spec.spelling.languages import in_other_language, mostly_other_script, quote_in_other_language
from seq2spec.spelling.pipeline import SpellingPipeline
from seq2spec.spelling.settings import SpellingSettings

needs_weights = pytest.mark.skipif(not (SPELLER_DIR / "big").is_dir(), reason="the speller weights are not shipped")
OTHER = [
    "Ich habe keine Zeit für dich.",
    "Je ne sais pas ce que tu veux dire.",
    "Mañana vamos a comer en un restaurante nuevo.",
    "La pizza di questo ristorante è molto buona.",
    "Ik heb geen tijd om naar de winkel te gaan.",
]
ENGLISH = [
    "Thsi sentense has a fwe erors.",
    "an occasional workrer",
    "Their café “déjà vu” moment — a naïve coöperation.",
    "Wojciech and Agnieszka ahev run the same pierogi stand in Częstochowa for over thirty years.",
    "order the shōyu with an extra egg and dont skip the gyōza",
]


def test_sentences_in_other_languages_are_told_from_english():
    for text in OTHER:
        assert in_other_language(text), text
    for text in ENGLISH:
        assert not in_other_language(text) and not mostly_other_script(text), text
    assert not in_other_language("Hola, ¿cómo estás?")  # too few words to tell
    for text in ["Ich weiß nicht.", "Kiitos paljon.", "Dziękuję bardzo."]:  # short, and told near certainly
        assert in_other_language(text), text
    for text in ["teh end.", "Wht now?", "Thx mate", "I recieved it.", "Sanks a lot"]:
        assert not in_other_language(text), text
    assert mostly_other_script("Привет, как дела?") and not in_other_language("Привет, как дела?")  # another script


def test_the_pipeline_never_reads_another_language():
    read = []

    def decode(texts):
        read.extend(texts)
        return [text.upper() for text in texts]

    settings = SpellingSettings(protect=False, split_longer_than=60, keep_other_languages=True)
    pipeline = SpellingPipeline(settings, decode)
    english = "We went to the market and bought some bread."
    texts = [OTHER[0], f"{english} {OTHER[1]}"]
    assert pipeline(texts) == [OTHER[0], f"{english.upper()} {OTHER[1]}"]
    assert read == [english]


@needs_weights
def test_the_shipped_speller_leaves_other_languages_as_written():
    speculator = Seq2SeqSpeculator()
    assert speculator.correct(OTHER) == OTHER
    english = "We wnet to the markte and baught some bread and cheese for the long weekend with our friends from Leeds."
    mixed = f"{english} Ich habe keine Zeit für dich, sagte er."  # over 140 characters: read sentence by sentence
    corrected = speculator.correct([mixed])[0]
    assert corrected.endswith(" Ich habe keine Zeit für dich, sagte er.")
    assert corrected.startswith("We went to the market and bought some bread")
    # the step matters: without it the speller rewrites German into English words
    assert speculator.correct(OTHER[:1], keep_other_languages=False) != OTHER[:1]


QUOTED = [
    'The sign read "Bitte nicht stören" on the hotel door.',
    "She greeted us with «Buenos días, ¿cómo están?» at the door.",
    "She wrote „merci beaucoup“ on the card.",
]


def test_quotations_in_another_language_are_told_from_english():
    for quote in ("Bitte nicht stören", "Buenos días, ¿cómo están?", "merci beaucoup", "Cuídate mucho, mi niño."):
        assert quote_in_other_language(quote), quote
    for quote in ("I recieved a leter", "the word teh", "dont do that", "Thsi sentense has erors"):
        assert not quote_in_other_language(quote), quote
    assert not quote_in_other_language("Gesundheit")  # one word: a quoted word is kept as written anyway
    # a sentence is told by its words outside quotations, where they are enough to tell
    assert not in_other_language('The sign read "Bitte nicht stören" at teh door.')
    assert in_other_language('"Ich habe keine Zeit für dich."')


def test_the_pipeline_keeps_quotations_in_another_language_as_written():
    from transformers import ByT5Tokenizer

    def decode(texts):  # as the shipped speller did: German and Spanish words made English
        for old, new in (("Bitte nicht", "Bite night"), ("Buenos", "Bueno"), ("merci", "mercy"), ("sgin", "sign")):
            texts = [text.replace(old, new) for text in texts]
        return texts

    pipeline = SpellingPipeline(SpellingSettings(keep_other_languages=True), decode, tokenizer=ByT5Tokenizer())
    texts = [text.replace(" sign ", " sgin ") for text in QUOTED]
    assert pipeline(texts) == QUOTED
    off = SpellingPipeline(SpellingSettings(), decode, tokenizer=ByT5Tokenizer())
    assert off(texts)[0] == 'The sign read "Bite night stören" on the hotel door.'


@needs_weights
def test_the_shipped_speller_leaves_quotations_and_names_as_written():
    """The shipped model wrote "Bite night stören", "Bueno días", "A boife", "Je neats pas" and "Song" for
    "Siobhan"; the typos beside them are still fixed."""
    texts = [
        *QUOTED,
        "Our team met Aoife, Niamh, Siobhán and Saoirse at the conference.",
        "My friend Siobhan is from Donegal.",
        "She said «Je ne sais pas» and left teh room.",
        'The sign read "Bitte nicht stören" at teh door.',
    ]
    expected = [*texts[:-2], "She said «Je ne sais pas» and left the room.", texts[-1].replace("teh", "the")]
    speculator = Seq2SeqSpeculator()
    assert speculator.correct(texts) == expected
    plain = speculator.correct(texts, keep_other_languages=False, keep_unknown_words=False)
    # without the steps, each is damaged but the names protection keeps itself ("Aoife", "Saoirse" within a sentence,
    # "Siobhan" a word of current English)
    assert [p != e for p, e in zip(plain, expected, strict=True)] == [True] * 3 + [False, False] + [True] * 2
