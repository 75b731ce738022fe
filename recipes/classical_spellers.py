"""Classical spell checkers as peers of the corrector, used word by word as a user would: ``symspellpy``
(``lookup`` with its bundled English frequency dictionary, maximum edit distance 2, closest suggestion) and
``pyspellchecker`` (``SpellChecker().correction``, ties broken alphabetically so that runs repeat).

Word handling, the same for both, is ``seq2spec.spelling.classical``'s (whitespace kept, punctuation around a word kept,
the suggestion taking the word's case pattern, mixed-case and non-alphabetic tokens left alone); symspellpy's corrector
is the one seq2spec proposes with (``spellcheck_copy``).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable

from seq2spec.spelling.classical import (  # noqa: F401 - the word handling, re-exported for the recipes
    CachedCorrector,
    apply_case,
    case_pattern,
    correct_text,
    correct_token,
    symspell_word_corrector,
)

PEERS = ("symspellpy", "pyspellchecker")
INSTALL_HINT = "pip install symspellpy pyspellchecker  (or: pip install -e '.[recipes]')"


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

    return CachedCorrector(correct)


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
