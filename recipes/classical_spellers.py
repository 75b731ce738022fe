"""Classical spell checkers as peers of the corrector, used word by word as a user would: ``symspellpy``
(``lookup`` with its bundled English frequency dictionary, maximum edit distance 2, closest suggestion) and
``pyspellchecker`` (``SpellChecker().correction``, ties broken alphabetically so that runs repeat).

Word handling, the same for both: text is split at whitespace (kept as it is); a token is corrected only when it is
one purely alphabetic word with optional punctuation around it (``"(Teh,"`` -> ``"(The,"``); tokens with digits,
apostrophes, hyphens or other characters inside are left alone, as are mixed-case words (``AppArmor``) whose case
cannot be carried onto another word. The word is looked up in lower case and the suggestion takes the word's
pattern back: lower case, capitalised (``Recieve`` -> ``Receive``) or all capitals (``RECIEVE`` -> ``RECEIVE``);
the punctuation around it is kept. A word the checker knows, or has no suggestion for, is left as written.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable

PEERS = ("symspellpy", "pyspellchecker")
INSTALL_HINT = "pip install symspellpy pyspellchecker  (or: pip install -e '.[recipes]')"

_WORD = re.compile(r"^([^A-Za-z0-9]*)([A-Za-z]+)([^A-Za-z0-9]*)$")
_SPACE = re.compile(r"(\s+)")


def case_pattern(word: str) -> str | None:
    """'lower', 'title', 'upper' (two letters or more) or None (mixed case, as in a name like ``AppArmor``)."""
    if word.islower():
        return "lower"
    if word[0].isupper() and (len(word) == 1 or word[1:].islower()):
        return "title"
    if word.isupper():
        return "upper"
    return None


def apply_case(word: str, pattern: str) -> str:
    """``word`` (lower case) in ``pattern``: as it is, capitalised, or in capitals."""
    if pattern == "upper":
        return word.upper()
    if pattern == "title":
        return word[:1].upper() + word[1:]
    return word


def correct_token(token: str, correct_word: Callable[[str], str | None]) -> str:
    """``token`` corrected by ``correct_word`` (lower-case word -> suggestion or None), case and punctuation kept."""
    match = _WORD.match(token)
    if not match:
        return token
    before, core, after = match.groups()
    pattern = case_pattern(core)
    if pattern is None:
        return token
    suggestion = correct_word(core.lower())
    if not suggestion or suggestion == core.lower():
        return token
    return before + apply_case(suggestion, pattern) + after


def correct_text(text: str, correct_word: Callable[[str], str | None]) -> str:
    return "".join(piece if piece.isspace() else correct_token(piece, correct_word) for piece in _SPACE.split(text))


class _Cached:
    """A word corrector with its answers remembered (texts repeat words; pyspellchecker is slow on long ones)."""

    def __init__(self, correct_word: Callable[[str], str | None]) -> None:
        self._correct_word = correct_word
        self._cache: dict[str, str | None] = {}

    def __call__(self, word: str) -> str | None:
        if word not in self._cache:
            self._cache[word] = self._correct_word(word)
        return self._cache[word]


def symspell_word_corrector(max_edit_distance: int = 2) -> Callable[[str], str | None]:
    from importlib.resources import files

    from symspellpy import SymSpell, Verbosity

    speller = SymSpell(max_dictionary_edit_distance=max_edit_distance)
    dictionary = files("symspellpy") / "frequency_dictionary_en_82_765.txt"
    if not speller.load_dictionary(str(dictionary), term_index=0, count_index=1):
        raise FileNotFoundError(f"symspellpy's bundled dictionary {dictionary} could not be read")

    def correct(word: str) -> str | None:
        suggestions = speller.lookup(word, Verbosity.CLOSEST, max_edit_distance=max_edit_distance)
        return suggestions[0].term if suggestions else None

    return _Cached(correct)


def _without_accents(word: str) -> str:
    return "".join(ch for ch in unicodedata.normalize("NFKD", word) if not unicodedata.combining(ch))


def pyspellchecker_word_corrector() -> Callable[[str], str | None]:
    """``SpellChecker().correction`` with ties between equally frequent candidates broken alphabetically (the
    library takes the first of a set, which changes with Python's string hashing from run to run)."""
    from spellchecker import SpellChecker

    checker = SpellChecker()

    def correct(word: str) -> str | None:
        candidates = checker.candidates(word)
        if not candidates:
            return None
        same_letters = [c for c in candidates if _without_accents(c) == _without_accents(word)]
        return max(sorted(same_letters or candidates), key=checker.__getitem__)

    return _Cached(correct)


def load_peer(name: str) -> Callable[[str], str | None]:
    """The word corrector of peer ``name``; ImportError (with the install hint) when its package is missing."""
    factories = {"symspellpy": symspell_word_corrector, "pyspellchecker": pyspellchecker_word_corrector}
    if name not in factories:
        raise ValueError(f"unknown peer {name!r}; known: {', '.join(PEERS)}")
    try:
        return factories[name]()
    except ImportError as error:
        raise ImportError(f"{name} is not installed: {INSTALL_HINT}") from error


def correct_texts(texts: list[str], correct_word: Callable[[str], str | None]) -> list[str]:
    return [correct_text(text, correct_word) for text in texts]
