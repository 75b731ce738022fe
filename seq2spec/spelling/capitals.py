"""Capitalised words a dictionary does not know, given to a corrector in lower case and given their capital back.

The shipped speller fixes a typo in a capitalised word far less often than the same typo in lower case ("Evory day"
stays, "evory day" becomes "every day"): in its training text most capitalised words it does not know are names, which
it learned to copy. ``fold_capitals`` writes such a word in lower case before the model reads it when the classical
checker (``classical``: symspellpy's English dictionary) would change its lower-case form, that is when it is not a
dictionary word but is close to one; names the checker knows ("Paris", "Monday") and words with no close dictionary word
keep their case, as does a slip of a month's or weekday's name (``is_calendar_slip``): the model knows those capitalised
and read "novmber" as "number"; the capital check (``capital_check``) then weighs the name itself ("Novmber" ->
"November"). A slip of a given name the dictionary knows (``is_given_name_slip``, ``GIVEN_NAMES_PATH``) is folded, and
where the model made it into other words than the name or the slip itself, the name takes their place: read as "jhon",
"Jhon" became "Hon" ("Jhon lives here." -> "Who join lives here."), now "John"; "Isaqac" read as "isaqac" becomes
"Isaac" (read as written, the model copies it as a name).
``FoldedTexts.restore`` then capitalises the model's word in the same place (the output's words aligned with the folded
input's, case ignored; where the model split or merged words, the first word of its replacement), so "Evory day" comes
back as "Every day".

The model's output for the folded text is still its own greedy output for that text; only the input and the
restored capitals differ from a plain call. A name close to a dictionary word ("Bash", "Unix") is folded too, and
the model may then change it. Measured on the speller's two held-out sets (``recipes/README.md``): capitalised typos
fixed 71.4% and 64.8% of the time instead of 67.1% and 52.7%, CER lower on both, 0.62% and 0.39% of the correct
words broken instead of 0.64% and 0.37%.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from seq2spec.spelling.classical import WHITESPACE, WORD_TOKEN, WordAlignment, case_pattern

_FIRST_LETTER = re.compile(r"[A-Za-z]")

# given names the dictionary knows ("john", "sarah", "paul"), built by recipes/word_lists/make_given_names.py
GIVEN_NAMES_PATH = Path(__file__).resolve().parent.parent / "assets" / "given_names.txt"

# names written with a capital wherever they stand, so a capitalised slip of one says nothing of its being another
# name: kept capitalised for the model to read, and weighed by the capital check with a sentence's first-word margin
CALENDAR_NAMES = frozenset(
    "january february march april may june july august september october november december "
    "monday tuesday wednesday thursday friday saturday sunday".split()
)


def is_calendar_slip(word: str, suggestion: str | None) -> bool:
    """Whether ``word``, whose dictionary neighbour is ``suggestion``, is a slip of a month's or weekday's name rather
    than a name of its own: ``protection.name_words`` holds the names one edit from such a name ("Sundar", "Avril",
    "Movember"), which keep the steps of any other word."""
    from seq2spec.spelling.protection.word_lists import name_words

    return suggestion in CALENDAR_NAMES and word.lower() not in name_words()


@cache
def given_names() -> frozenset[str]:
    """The names of ``GIVEN_NAMES_PATH``, in lower case."""
    from seq2spec.spelling.protection.word_lists import word_list

    return word_list(GIVEN_NAMES_PATH)


def is_given_name_slip(word: str, suggestion: str | None) -> bool:
    """Whether ``word``, whose dictionary neighbour is ``suggestion``, is a slip of a given name ("jhon", "sarha" of
    "john", "sarah"): kept capitalised for the model to read, which knows the name so ("Jhon" -> "John")."""
    return suggestion is not None and suggestion != word and suggestion in given_names()


def _fold_token(token: str, correct_word: Callable[[str], str | None]) -> str | None:
    """The token with its word in lower case, or None when it keeps its case."""
    match = WORD_TOKEN.match(token)
    if not match:
        return None
    before, core, after = match.groups()
    if len(core) < 2 or case_pattern(core) != "title":
        return None
    lower = core.lower()
    suggestion = correct_word(lower)
    if not suggestion or suggestion == lower:  # a dictionary word, or nothing close to one
        return None
    if is_calendar_slip(lower, suggestion):  # a slip of a month's or weekday's name, which the model knows capitalised
        return None
    return before + lower + after


def _capitalised(token: str) -> str:
    match = _FIRST_LETTER.search(token)
    if match is None:
        return token
    start = match.start()
    return token[:start] + token[start].upper() + token[start + 1 :]


@dataclass(frozen=True)
class FoldedText:
    """One text as the model reads it, which of its words (indices among its non-space tokens) were folded, and
    of those the slips of a given name with the name (``names``)."""

    text: str
    folded: frozenset[int]
    names: Mapping[int, str] = field(default_factory=dict)

    def restore(self, output: str) -> str:
        """``output`` with the words aligned to the folded ones capitalised, and a slip of a given name the model
        made into other words than the name or the slip ("jhon" -> "hon", "who join") written as the name."""
        if not self.folded:
            return output
        aligned = WordAlignment.of(self.text, output)
        named: list[tuple[int, int, str]] = []  # output words j1:j2 standing for a slip, and the name
        for tag, i1, i2, j1, j2 in aligned.opcodes:
            if tag == "equal" or (tag == "replace" and i2 - i1 == j2 - j1):  # word for word
                capitalise = [j1 + offset for offset in range(i2 - i1) if i1 + offset in self.folded]
                if tag == "replace":
                    named += [(j1 + k, j1 + k + 1, self.names[i1 + k]) for k in range(i2 - i1) if i1 + k in self.names]
            elif tag == "replace" and i1 in self.folded:  # words split or merged: the first takes the capital
                capitalise = [j1]
                if i2 - i1 == 1 and i1 in self.names:
                    named.append((j1, j2, self.names[i1]))
            else:  # the folded word dropped, or words added
                continue
            for word in capitalise:
                piece = aligned.words[word]
                aligned.pieces[piece] = _capitalised(aligned.pieces[piece])
        for j1, j2, name in reversed(named):  # from the end: earlier word indices stay valid
            first = WORD_TOKEN.match(aligned.pieces[aligned.words[j1]])
            last = WORD_TOKEN.match(aligned.pieces[aligned.words[j2 - 1]])
            if first is None or last is None:
                continue
            said = [WORD_TOKEN.match(aligned.pieces[aligned.words[j]]) for j in range(j1, j2)]
            if name not in [match.group(2).lower() for match in said if match]:  # the model's words are others
                aligned.put(j1, j2, first.group(1) + _capitalised(name) + last.group(3))
        return aligned.text()


def fold_capitals(texts: Sequence[str], correct_word: Callable[[str], str | None] | None = None) -> list[FoldedText]:
    """Each text with its capitalised, not-quite-dictionary words in lower case (see the module docstring);
    ``correct_word`` defaults to the shared symspellpy checker."""
    if correct_word is None:
        from seq2spec.spelling.classical import shared_symspell_corrector

        correct_word = shared_symspell_corrector()
    folded_texts = []
    for text in texts:
        pieces = WHITESPACE.split(text)
        folded: set[int] = set()
        names: dict[int, str] = {}
        word = -1
        for index, piece in enumerate(pieces):
            if not piece or piece.isspace():
                continue
            word += 1
            lower = _fold_token(piece, correct_word)
            if lower is not None:
                pieces[index] = lower
                folded.add(word)
                core = WORD_TOKEN.match(lower).group(2)
                suggestion = correct_word(core)
                if is_given_name_slip(core, suggestion):
                    names[word] = suggestion
        folded_texts.append(FoldedText("".join(pieces), frozenset(folded), names))
    return folded_texts
