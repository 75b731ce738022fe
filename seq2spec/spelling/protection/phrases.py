"""Spans of several words: quotations, code spans between backticks, phrases of other languages, place names."""

from __future__ import annotations

import re
from functools import cache

from seq2spec.spelling.protection.word_lists import FOREIGN_PHRASES_PATH, place_names, plain_word, word_list

# a quotation mark that opens a quotation, and those that close it (English, German, French, Swedish use)
_CLOSING_QUOTES = {
    '"': '"',
    "'": "'",
    "\u201c": "\u201d",
    "\u2018": "\u2019",
    "\u201e": "\u201c\u201d",
    "\u201a": "\u2018\u2019",
    "\u00ab": "\u00bb",
    "\u00bb": "\u00ab",
}
MAX_QUOTATION_WORDS = 12


def quotations(words: list[str]) -> list[tuple[int, int]]:
    """The quotations of two to ``MAX_QUOTATION_WORDS`` words among ``words`` (whitespace-free), as ``(start, end)``:
    a word opening with a quotation mark (after a bracket) up to the nearest word that closes it (before
    punctuation); a quotation of one word is ``is_quoted_word``'s."""
    found = []
    start = 0
    while start < len(words):
        opening = words[start].lstrip("([")[:1]
        closing = _CLOSING_QUOTES.get(opening)
        end = None
        if closing and not _closes(words[start][1:], closing):
            for index in range(start + 1, min(len(words), start + MAX_QUOTATION_WORDS)):
                if _closes(words[index], closing):
                    end = index + 1
                    break
        if end is None:
            start += 1
        else:
            found.append((start, end))
            start = end
    return found


def _closes(word: str, closing: str) -> bool:
    core = word.rstrip(".,;:!?)]")
    return bool(core) and core[-1] in closing


_QUOTE_MARKS = "".join(sorted(set("".join(_CLOSING_QUOTES) + "".join(_CLOSING_QUOTES.values()))))


# a word that opens a code span (a backtick first, after brackets) and one that closes it (a backtick last, before
# punctuation)
_CODE_OPENS = re.compile(r"^[(\[]*`")
_CODE_CLOSES = re.compile(r"`[.,;:!?)\]'\"]*$")


def quotation_text(words: list[str]) -> str:
    """A quotation's words without its quotation marks and the brackets and punctuation outside them."""
    text = " ".join(words).lstrip("([")[1:]
    core = text.rstrip(".,;:!?)]")
    return core[:-1] if core and core[-1] in _QUOTE_MARKS else core


def code_spans(words: list[str]) -> set[int]:
    """The indices of ``words`` (whitespace-free) inside a code span of Markdown and chat, from a word that opens one
    with a backtick to the nearest word that closes it with one (```git chekout main```, ```timout```; the speller
    wrote "git checkout" and "nom run build" for "npm run biuld"). A quotation in the old style, ```neo'``, opens
    no span that a word closes."""
    found: set[int] = set()
    opened = None
    for index, word in enumerate(words):
        if "`" not in word:
            continue
        opens, closes = bool(_CODE_OPENS.match(word)), bool(_CODE_CLOSES.search(word))
        if opened is None and opens and closes and len(word.strip("`()[].,;:!?'\"")) > 0:
            found.add(index)  # a span of one word
        elif opened is not None and closes:
            found.update(range(opened, index + 1))
            opened = None
        elif opens:
            opened = index
    return found


@cache
def _foreign_phrases() -> dict[str, tuple[tuple[str, ...], ...]]:
    """The phrases of ``FOREIGN_PHRASES_PATH`` as plain words, by their first word, longest first."""
    by_first: dict[str, list[tuple[str, ...]]] = {}
    for phrase in word_list(FOREIGN_PHRASES_PATH):
        words = tuple(plain_word(word) for word in phrase.split())
        by_first.setdefault(words[0], []).append(words)
    return {first: tuple(sorted(found, key=len, reverse=True)) for first, found in by_first.items()}


def foreign_phrase_spans(words: list[str]) -> set[int]:
    """The indices of ``words`` (whitespace-free) inside a phrase of another language that English writes ("mens rea",
    "bona fide,", "Déjà vu", "hors d'oeuvres"; ``FOREIGN_PHRASES_PATH``), matched word by word with case, accents,
    apostrophes' shapes and the punctuation around each word ignored, and of a capitalised word right before "et al."
    (a name; "Files, et al." ends a list)."""
    found: set[int] = set()
    for start, phrase in _phrases_in(words, _foreign_phrases()):
        found.update(range(start, start + len(phrase)))
        if phrase == _ET_AL and start and words[start - 1][:1].isupper() and words[start - 1][-1:].isalpha():
            found.add(start - 1)  # the author cited: "Drepper et al." (the speller wrote "Dropper")
    return found


def _phrases_in(words: list[str], phrases: dict[str, tuple[tuple[str, ...], ...]]) -> list[tuple[int, tuple[str, ...]]]:
    """Where each phrase of ``phrases`` (plain words, by their first word, longest first) starts in ``words``, and
    which: the longest that starts at a word."""
    plain = [plain_word(word) for word in words]
    found = []
    for start, first in enumerate(plain):
        for phrase in phrases.get(first, ()):
            if tuple(plain[start : start + len(phrase)]) == phrase:
                found.append((start, phrase))
                break
    return found


def place_name_spans(words: list[str]) -> set[int]:
    """The indices of ``words`` (whitespace-free) inside a place name of several words (``PLACE_NAMES_PATH``), matched
    as foreign phrases are."""
    return {
        index for start, phrase in _phrases_in(words, place_names()[1]) for index in range(start, start + len(phrase))
    }


_ET_AL = ("et", "al")
