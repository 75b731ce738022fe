"""A word of a text as the model reads it (``read_word``), and the model's word written back in its place."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

from seq2spec.spelling.protection.markup import Markup
from seq2spec.spelling.protection.word_lists import listed_words
from seq2spec.spelling.protection.word_rules import is_symbols_alone, is_too_long
from seq2spec.spelling.protection.writing import APOSTROPHE_MARKS, MARK_APOSTROPHE, TYPOGRAPHIC, TokenizerWriting

_TRAILING_MARKS = re.compile(r"[.!?]{2,}$")
_ANY_TRAILING_MARKS = re.compile(r"[.!?]*$")
_TRAILING_DASHES = re.compile(r"-{2,}$")


class Kind(Enum):
    FREE = "free"
    MAPPED = "mapped"
    KEPT = "kept"


@dataclass(frozen=True)
class Word:
    """A word as ``text`` wrote it, what the model ``reads`` in its place ("" for nothing), and its kind."""

    text: str
    reads: str
    kind: Kind
    markup: Markup | None = None  # the Markdown or HTML around a free word, which the model reads without
    shouted: bool = False  # a word in capitals of a text in capitals, read in sentence case (``shouted_words``)

    def restored(self, output: str, apostrophe: str | None) -> str:
        """The word to write where the model wrote ``output`` in its place."""
        if self.kind is Kind.KEPT:
            return self.text
        if self.kind is Kind.MAPPED:
            return _map_back(self.text, output)
        if self.shouted:
            output = output.upper()
        output = _with_trailing_marks(self.reads if self.markup else self.text, output)
        output = _with_inner_dashes(self.reads if self.markup else self.text, output)
        output = output.replace("'", apostrophe) if apostrophe else output
        return self.markup.around(self.reads, output) if self.markup else output


def _with_trailing_marks(written: str, output: str) -> str:
    """``output`` ending with ``written``'s run of two or more of ``. ! ?`` (``...``, ``?!``, ``!!``) where ``written``
    ends with one, the shipped speller wrote ``..`` for every ``...``; and with its run of two or more dashes, where
    the output ends with a dash too."""
    dashes = _TRAILING_DASHES.search(written)
    if dashes is not None and output.endswith("-"):  # "MESSAGE-----" had become "MESSAGE---"
        return output.rstrip("-") + dashes.group()
    marks = _TRAILING_MARKS.search(written)
    if marks is None:
        return output
    return output[: len(output) - len(_ANY_TRAILING_MARKS.search(output).group())] + marks.group()


def _with_inner_dashes(written: str, output: str) -> str:
    """``output`` with ``written``'s runs of two or more dashes between letters (``program--to``, a dash of plain
    text; the shipped speller wrote ``program-to``), where it has the same parts between its dashes."""
    if not _INNER_DASHES.search(written):
        return output
    written_parts, output_parts = _DASHES.split(written), _DASHES.split(output)
    if len(written_parts) != len(output_parts):
        return output
    return "".join(output_parts[index] if index % 2 == 0 else dashes for index, dashes in enumerate(written_parts))


_INNER_DASHES = re.compile(r"\w--+\w")
_DASHES = re.compile(r"(-+)")


# the characters a mapped word is read without, their plain forms, and those forms as they occur in an output
_MAPPED_FORMS = {**TYPOGRAPHIC, **APOSTROPHE_MARKS}
_PLAIN_FORM = re.compile("|".join(map(re.escape, sorted(set(_MAPPED_FORMS.values()), key=len, reverse=True))))


def _map_back(written: str, output: str) -> str:
    """``output`` with the plain forms of ``written``'s typographic characters turned back into them, in order;
    ``written`` itself where ``output`` holds a different number of them."""
    typographic = [character for character in written if character in _MAPPED_FORMS]
    found = _PLAIN_FORM.findall(output)
    if [_MAPPED_FORMS[character] for character in typographic] != found:
        return written
    characters = iter(typographic)
    return _PLAIN_FORM.sub(lambda match: next(characters), output)


# contractions written without their apostrophe that are no English word ("thats", "youre", "ive", "im"; "cant",
# "wont", "lets", "its", "were", "well", "ill", "hows" are words; "IM" is an acronym): the model reads them with it (it
# had written "that", "your", "give", "there", "in" for "thats", "youre", "ive", "theyre", "im")
CONTRACTIONS_WITHOUT_APOSTROPHE = {word.replace("'", "").lower(): word for word in listed_words("contractions.txt")}
_CONTRACTION_CORE = re.compile(r"^([^\w]*)([A-Za-z]+)([^\w]*)$")


def _with_apostrophe(token: str) -> str:
    """``token`` with its contraction's apostrophe where it is one of ``CONTRACTIONS_WITHOUT_APOSTROPHE`` (``Dont`` ->
    ``Don't``, ``ive`` -> ``I've``), else as it is."""
    parts = _CONTRACTION_CORE.match(token)
    contraction = CONTRACTIONS_WITHOUT_APOSTROPHE.get(parts.group(2).lower()) if parts else None
    if contraction is None:
        return token
    core = parts.group(2)
    if core.isupper() and len(core) > 1:
        contraction = contraction.upper()
    elif core[0].isupper():
        contraction = contraction[0].upper() + contraction[1:]
    return parts.group(1) + contraction + parts.group(3)


# a character written four or more times in a row in a token of symbols alone (a rule of dashes or equals signs, a row
# of stars): the model reads it three times (it read 43 dashes and wrote 131, dropping the sentence's words)
_LONG_SYMBOL_RUN = re.compile(r"(.)\1{3,}", re.DOTALL)


def read_word(token: str, writing: TokenizerWriting, kept: bool = False, *, contractions: bool = True) -> Word:
    """``token`` as the model reads it: a word a rule ``kept`` (or one that ``is_too_long``) as a kept word,
    others mapped or free as the module docstring of ``seq2spec.spelling.protection`` says (with ``contractions``, an
    English contraction written without its apostrophe read with it)."""
    if is_too_long(token):
        return Word(token, "", Kind.KEPT)
    written = writing.writes(token)
    if kept:
        reads = _LONG_SYMBOL_RUN.sub(r"\1\1\1", token) if is_symbols_alone(token) else token
        return Word(token, reads if written else writing.stand_in(reads), Kind.KEPT)
    if MARK_APOSTROPHE.search(token) and sum(token.count(mark) for mark in APOSTROPHE_MARKS) == 1:
        reads = "".join(APOSTROPHE_MARKS.get(character, character) for character in token)
        if writing.writes(reads):
            return Word(token, reads, Kind.MAPPED)  # "isn`t" read "isn't"
    if written:
        return Word(token, _with_apostrophe(token) if contractions else token, Kind.FREE)
    reads = writing.stand_in(token)
    unwritable = [c for c in token if not writing.writes(c)]
    if all(c in TYPOGRAPHIC for c in unwritable) and len(reads) == len(token) + 2 * token.count("\u2026"):
        return Word(token, reads, Kind.MAPPED)
    return Word(token, reads, Kind.KEPT)
