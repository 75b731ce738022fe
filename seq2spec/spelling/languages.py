"""Texts an English corrector must not read: text mostly in another script, and sentences confidently in another
language written in Latin letters.

A corrector trained on English turns other languages into English words: the shipped speller wrote "Rich have keine
Zeit für ditch." for "Ich habe keine Zeit für dich.". The shipped speller's settings return a text (or sentence piece)
as written where ``mostly_other_script`` (its ``unchanged`` step) or, with ``keep_other_languages``,
``in_other_language`` is true for it. A Latin-script text counts as another language only when lingua (a language
detector whose models come inside its wheel), choosing among English and ``OTHER_LANGUAGES``, gives another language at
least ``MIN_CONFIDENCE`` and English at most ``MAX_ENGLISH_CONFIDENCE`` for what is left of it with its accents and its
capitalised words after the first (names) taken off, and that holds at least ``MIN_WORDS`` words: short typo-ridden
English ("an occasional workrer"), English with foreign names ("Agnieszka ... in Częstochowa") or loanwords ("a naïve
déjà vu") stays the corrector's, and a sentence in another language is told by its function words. A text of two or
three words counts when lingua is near certain (``MIN_SHORT_CONFIDENCE``, ``MAX_SHORT_ENGLISH_CONFIDENCE``): the
speller wrote "Rich weiß night." for "Ich weiß nicht."; of 12,671 fragments of two and three words cut from the
spelling sets' English sentences, one is taken for another language ("he spojke"), and 4 of 19 such texts in other
languages are ("Kiitos paljon.", "Dziękuję bardzo."; "Das ist gut." and "Dank je wel!" are not). Inside an English
text, a quotation of ``MIN_QUOTE_WORDS`` or more words (``"Bitte nicht stören"``, ``«Buenos días, ¿cómo están?»``) is
told the same way, with its accents and capitalised words (``quote_in_other_language``), and protection keeps its words
as written; the sentence itself is told by its words outside quotations ("The sign read "Bitte nicht stören" at teh
door." is English). The thresholds were chosen, among a few, on the 2,320 lines of the spelling sets (recipes/data:
held-out, out-of-domain, technical, Unicode and validation lines) and 30 everyday sentences in 13 other languages: none
of the lines is taken for another language, 26 of the 30 sentences are. Of the quotations of two words or more, 3 of
the 55 in those sets and the corpus validation sentences are taken for another language ("Cuídate mucho, mi niño.",
"Don Giovanni", "Señor Frosty"), and 2 of the 1,850 in 12,771 sentences of Debian's manuals with typos ("soft recject",
"Debian Reference (verzion 1)": their typos are left). Its models take about 300 MB of memory and 1.3 s to load, once
per process.
"""

from __future__ import annotations

import re
import unicodedata
from functools import cache

from seq2spec.spelling.protection.phrases import quotations

# the languages told from English (each costs about 30 MB of lingua's models in memory, loaded on first use)
OTHER_LANGUAGES = (
    "GERMAN", "FRENCH", "SPANISH", "ITALIAN", "PORTUGUESE", "DUTCH", "SWEDISH", "POLISH", "DANISH", "FINNISH",
)  # fmt: skip
MIN_WORDS = 4
MIN_QUOTE_WORDS = 2  # a quotation's marks set it apart: its words are told on their own
MIN_CONFIDENCE = 0.5
MAX_ENGLISH_CONFIDENCE = 0.1
# a text of MIN_SHORT_WORDS to MIN_WORDS - 1 words ("Ich weiß nicht.", "Merci beaucoup!") counts as another language
# only when the detector is near certain of it
MIN_SHORT_WORDS = 2
MIN_SHORT_CONFIDENCE = 0.9
MAX_SHORT_ENGLISH_CONFIDENCE = 0.02
_WORD = re.compile(r"[^\W\d_]")  # a token holding a letter


def mostly_other_script(text: str) -> bool:
    """True when most of the text's letters are in a script other than Latin (an English-only corrector would turn
    such text into English words)."""
    letters = [character for character in text if character.isalpha()]
    if not letters:
        return False
    latin = sum(1 for character in letters if unicodedata.name(character, "").startswith("LATIN"))
    return latin < len(letters) / 2


@cache
def _detector():
    from lingua import Language, LanguageDetectorBuilder

    languages = [Language.ENGLISH, *(getattr(Language, name) for name in OTHER_LANGUAGES)]
    return LanguageDetectorBuilder.from_languages(*languages).build(), Language.ENGLISH


def in_other_language(text: str) -> bool:
    """Whether a Latin-script ``text`` is confidently in one of ``OTHER_LANGUAGES`` rather than English, told by its
    words outside quotations where they are ``MIN_WORDS`` or more (an English sentence quoting German is English:
    its quotation is ``quote_in_other_language``'s)."""
    tokens = text.split()
    quoted = {index for start, end in quotations(tokens) for index in range(start, end)}
    outside = [token for index, token in enumerate(tokens) if index not in quoted]
    if sum(1 for token in outside if _WORD.search(token)) >= MIN_WORDS:
        tokens = outside
    unnamed = " ".join(token for index, token in enumerate(tokens) if index == 0 or not token[:1].isupper())
    return _confidently_other(unnamed, MIN_WORDS, accents=False, short_words=MIN_SHORT_WORDS)


def not_english(text: str) -> bool:
    """Whether protection's English rules stay off for ``text`` (``SpellingSettings.language`` None): it is mostly in
    another script, or ``in_other_language``, or of ``MIN_WORDS`` words or more that lingua, reading it whole (accents
    and capitalised words kept), takes for another language with English at most ``MAX_ENGLISH_CONFIDENCE``. A wrong
    call costs an English text only the English rules, not its correction, so the bar is lower than
    ``keep_other_languages``'s: of 2,122 English lines (the held-out spelling set and the real-text sets) 3 are taken
    for another language, of sentences with typos from the translated manual pages 89-99% in each of de, fr, es, it,
    pt, nl, pl and sv (70-98% by ``in_other_language`` alone)."""
    if mostly_other_script(text) or in_other_language(text):
        return True
    return _confidently_other(text, MIN_WORDS, accents=True, least=0.0)


def quote_in_other_language(quote: str) -> bool:
    """Whether the words of a quotation inside an English text (``"Bitte nicht stören"``, ``«merci beaucoup»``) are
    confidently in one of ``OTHER_LANGUAGES``: told as a sentence is, from ``MIN_QUOTE_WORDS`` words, with its accents
    and capitalised words (a quoted title or a German noun is no name to leave out)."""
    return _confidently_other(quote, MIN_QUOTE_WORDS, accents=True)


def _confidently_other(
    text: str, min_words: int, *, accents: bool, short_words: int | None = None, least: float | None = None
) -> bool:
    """Whether lingua gives ``text`` (of ``min_words`` words or more; ``short_words`` or more when near certain)
    another language first, at least ``least`` (default ``MIN_CONFIDENCE``), with English at most
    ``MAX_ENGLISH_CONFIDENCE``."""
    words = sum(1 for token in text.split() if _WORD.search(token))
    short = short_words is not None and short_words <= words < min_words
    if words < min_words and not short:
        return False
    detector, english = _detector()
    plain = text if accents else "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
    confidences = detector.compute_language_confidence_values(plain)
    first = confidences[0]
    english_confidence = next(item.value for item in confidences if item.language == english)
    floor, most_english = (
        (MIN_SHORT_CONFIDENCE, MAX_SHORT_ENGLISH_CONFIDENCE) if short else (MIN_CONFIDENCE, MAX_ENGLISH_CONFIDENCE)
    )
    least = floor if least is None or short else least
    return first.language != english and first.value >= least and english_confidence <= most_english
