"""A text written in capitals: its words read in sentence case and written back in capitals."""

from __future__ import annotations

import re
from collections.abc import Callable

from seq2spec.spelling.protection.phrases import place_name_spans
from seq2spec.spelling.protection.span_rules import is_name_within_sentence
from seq2spec.spelling.protection.word import Kind, Word, read_word
from seq2spec.spelling.protection.word_lists import ASSETS, WORD_CORE, word_list
from seq2spec.spelling.protection.word_rules import is_current_word, is_informal, is_place_name, is_technical
from seq2spec.spelling.protection.writing import TokenizerWriting

# A text written in capitals ("PLEASE DO NOT PARK IN FRNOT OF THE GARAGE."): each of its words would be kept as an
# acronym, typos and all. In a text of SHOUTED_WORDS words in capitals or more, SHOUTED_SHARE of its words with letters
# at least, a word in capitals is read in sentence case and the model's word written in capitals, unless the steps
# keep it in lower or title case (a technical, informal or current word, a name or a place: "LOL", "YAMBOL") or it is
# one of CAPITAL_WORDS_PATH, frequent words no dictionary of the steps knows (acronyms: "NHS", "FBI", "USA", which the
# model would make "his", "use"), built by recipes/word_lists/make_capital_words.py, or a word of no vowels ("TCP",
# "HTML").
SHOUTED_WORDS = 3
SHOUTED_SHARE = 0.8
CAPITAL_WORDS_PATH = ASSETS / "capital_words.txt"


def capital_words() -> frozenset[str]:
    """The words of ``CAPITAL_WORDS_PATH``."""
    return word_list(CAPITAL_WORDS_PATH)


_SHOUTED_CORE = re.compile(r"^[A-Z]+(?:['\u2019-][A-Z]+)*$")
_VOWEL = re.compile("[AEIOUY]")


def shouted_words(words: list[str]) -> set[int]:
    """The indices of ``words`` (whitespace-free) the model may correct in sentence case, in a text written in
    capitals (see above); none in other texts."""
    cores = [WORD_CORE.match(word).group(1) for word in words]
    lettered = [core for core in cores if any(character.isalpha() for character in core)]
    capitals = sum(1 for core in lettered if len(core) > 1 and core.isupper())
    if capitals < SHOUTED_WORDS or capitals < SHOUTED_SHARE * len(lettered):
        return set()
    titled = [_first_letter_capital(word.lower()) for word in words]
    names = place_name_spans(titled) | {
        index for index in range(1, len(words)) if is_name_within_sentence(titled[index - 1], titled[index])
    }
    found = set()
    for index, (word, core) in enumerate(zip(words, cores, strict=True)):
        if index in names or not _SHOUTED_CORE.match(core) or core == "I" or core.lower() in capital_words():
            continue
        if core.startswith(_I_CONTRACTION):  # I'LL, I'M: no informal lower-case "i"
            found.add(index)
            continue
        if not _VOWEL.search(core):
            continue
        lower = word.lower()
        if any(keep(lower) for keep in (is_technical, is_informal, is_current_word)) or is_place_name(titled[index]):
            continue
        found.add(index)
    return found


def _first_letter_capital(word: str) -> str:
    for position, character in enumerate(word):
        if character.isalpha():
            return word[:position] + character.upper() + word[position + 1 :]
    return word


def shouted_word(
    token: str, writing: TokenizerWriting, keeps_word: Callable[[str], bool], *, contractions: bool = True
) -> Word:
    """A word of ``shouted_words``: read in lower case (``read_word``'s ``contractions``), its output written in
    capitals; kept as written where ``keeps_word`` keeps it in lower case."""
    reads = token.lower()
    if WORD_CORE.match(token).group(1)[:2] in _I_CONTRACTION:  # "I'll", not the informal "i'll"
        reads = _first_letter_capital(reads)
    word = read_word(reads, writing, keeps_word(reads), contractions=contractions)
    if word.kind is not Kind.FREE:
        return read_word(token, writing, True)
    return Word(token, word.reads, Kind.FREE, word.markup, shouted=True)


_I_CONTRACTION = ("I'", "I\u2019")


def read_shouted_code_lower(laid: list[Word]) -> None:
    """In a text written in capitals, kept words of capitals and other characters (``~/.GRADLE/CACHES``,
    ``--PREFER-OFFLINE``) read in lower case, as such words are written: the model dropped the words before them."""
    for index, word in enumerate(laid):
        if word.kind is Kind.KEPT and word.reads.isupper() and not WORD_CORE.match(word.reads).group(1).isalpha():
            laid[index] = Word(word.text, word.reads.lower(), word.kind, word.markup)


_SENTENCE_STOP = re.compile(r"[.!?][\"'\u2019\u201d)\]]*$")


def sentence_case(laid: list[Word]) -> None:
    """The shouted words that start a sentence read with a capital ("Please do not park ...")."""
    start = True
    for index, word in enumerate(laid):
        if word.shouted and start:
            laid[index] = Word(word.text, _first_letter_capital(word.reads), word.kind, word.markup, shouted=True)
        if word.text.strip():
            start = bool(_SENTENCE_STOP.search(word.text))
