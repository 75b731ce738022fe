"""The word lists the protection rules read (assets of one word or phrase per line) and the forms words are matched
in."""

from __future__ import annotations

import re
import unicodedata
from functools import cache
from pathlib import Path

from seq2spec.spelling.protection.writing import CURLY_APOSTROPHE

ASSETS = Path(__file__).resolve().parents[2] / "assets"


# the core of a word: punctuation around it stripped
WORD_CORE = re.compile(r"^[\"'`(\[{<\u2018\u201c\u00ab]*(.*?)[\"'`)\]}>.,;:!?\u2019\u201d\u00bb]*$", re.DOTALL)


# Lower-case words of software that no English dictionary knows ("async", "backend", "redis", "numpy", "codec",
# "postgres", "csv", "strlen", "memoize"): the speller made a third of them into dictionary words ("sync", "backed",
# "reds", "bumpy", "code", "postures", "csc", "stolen", "memorize"). Built from Debian's package descriptions, its
# index of files (commands, the C library's manual pages), mime.types and a list of words of programming by
# recipes/word_lists/make_technical_words.py.
TECHNICAL_WORDS_PATH = ASSETS / "technical_words.txt"
# Such words that a writer may mean as another word ("sed" of "set", "env" of "end", "chown" of "shown", "thd" of
# "the"): where another word of the text is technical ("run sed on the yaml file", "scp and chown"), the change check
# writes them back unless the model is sure of its own word; elsewhere they are slips.
TECHNICAL_WORDS_IN_CONTEXT_PATH = ASSETS / "technical_words_in_context.txt"


# Phrases of other languages that English prose writes ("mens rea", "bona fide", "a posteriori", "deja vu", "hors
# d'oeuvres"): the speller made their words into English ones ("means rear", "bona file", "a posterior", "deja vul",
# "horse d'oeuvres"). A list written for seq2spec.
FOREIGN_PHRASES_PATH = ASSETS / "foreign_phrases.txt"


@cache
def word_list(path: Path) -> frozenset[str]:
    """The words of a list file, one per line after ``#`` comments (empty where the file is missing)."""
    if not path.is_file():
        return frozenset()
    lines = path.read_text(encoding="utf-8").splitlines()
    return frozenset(line.strip() for line in lines if line.strip() and not line.startswith("#"))


# the word lists of the rules below, one file each (a word per line)
PROTECTION_WORDS = ASSETS / "protection"


def listed_words(name: str) -> frozenset[str]:
    """The words of ``PROTECTION_WORDS / name``."""
    return word_list(PROTECTION_WORDS / name)


def technical_words() -> frozenset[str]:
    """The words of ``TECHNICAL_WORDS_PATH``."""
    return word_list(TECHNICAL_WORDS_PATH)


def technical_words_in_context() -> frozenset[str]:
    """The words of ``TECHNICAL_WORDS_IN_CONTEXT_PATH``."""
    return word_list(TECHNICAL_WORDS_IN_CONTEXT_PATH)


def is_listed(core: str, words: frozenset[str]) -> bool:
    """Whether ``core``, in lower case or capitalised, is one of ``words``."""
    return bool(core) and (core.islower() or core[1:].islower()) and core.lower() in words


# Words of current written English that no dictionary of the text steps knows ("noob", "chai", "selfie", "hashtag",
# "capex", "nerfed", "ganache", names such as "Connor", "Chidi", "Muji"): the speller wrote "got pawned by a job", "a
# chair late", "cape", "nerved", "panache", "child", "music". Built from wordfreq's English frequencies by
# recipes/word_lists/make_current_words.py, without the misspellings and slips it records.
CURRENT_WORDS_PATH = ASSETS / "current_words.txt"
# Words of the Englishes of Australia, Britain, South Africa, India and other places that no dictionary knows and
# wordfreq counts too rarely for ``current_words`` ("brekkie", "idli", "rooibos", "paneer"; the speller wrote "break",
# "idle", "rooms", "panzer"), written for seq2spec; none is one edit from a word symspellpy's dictionary counts 20
# million times or more ("arre" is a typo of "are" more often than the Hindi word).
REGIONAL_WORDS_PATH = ASSETS / "regional_words.txt"
# Words other languages lent English for dishes, festivals, faiths, dress, sports and music that no dictionary knows
# ("tagine", "laksa", "empanadas", "hanbok", "sindoor", "shinty"; the speller wrote "tagline", "lake", "empanada",
# "handbook", "indoor", "shiny"), written for seq2spec under the same rule; loans of several words ("coq au vin", "banh
# mi", "Yom Kippur") are foreign phrases.
LOANWORDS_PATH = ASSETS / "loanwords.txt"


@cache
def current_words() -> frozenset[str]:
    """The words of ``CURRENT_WORDS_PATH``, ``REGIONAL_WORDS_PATH`` and ``LOANWORDS_PATH``."""
    return word_list(CURRENT_WORDS_PATH) | word_list(REGIONAL_WORDS_PATH) | word_list(LOANWORDS_PATH)


# Strings of current English no dictionary knows that are too close to a commoner word for ``current_words``: mostly
# names ("Matteo", "Shira", "Jing"; the speller wrote "Matter", "Shirt", "King"), kept capitalised within a sentence,
# where a capital marks a name and a slip of a commoner word is rare. Built by recipes/word_lists/make_current_words.py.
NAME_WORDS_PATH = ASSETS / "name_words.txt"


def name_words() -> frozenset[str]:
    """The words of ``NAME_WORDS_PATH``."""
    return word_list(NAME_WORDS_PATH)


def plain_word(word: str) -> str:
    """A word as a foreign phrase is matched: punctuation around it left out, lower case, accents dropped, apostrophes
    straight."""
    core = _PHRASE_WORD.match(word).group(1).lower().replace(CURLY_APOSTROPHE, "'")
    return "".join(c for c in unicodedata.normalize("NFKD", core) if not unicodedata.combining(c))


_PHRASE_WORD = re.compile(r"^[^\w']*(.*?)[^\w']*$", re.DOTALL)


# Names of countries, provinces, regions and cities ("Yambol", "Chuuk", "Kasserine", "Tallinn", "Burkina Faso", "La
# Paz", "Dar es Salaam"; the speller wrote "Symbol", "Chuck", "Passerine", "Tallin", "Burkina Fast", "La Pay", "Car es
# Salaam", dictionaries knowing some of them), from iso-codes' ISO 3166 lists and tzdata's zones by
# recipes/word_lists/make_place_names.py: a name of one word kept where it is capitalised, one of several kept whole.
PLACE_NAMES_PATH = ASSETS / "place_names.txt"


@cache
def place_names() -> tuple[frozenset[str], dict[str, tuple[tuple[str, ...], ...]]]:
    """The names of ``PLACE_NAMES_PATH`` as plain words: those of one word, and those of several by their first word,
    longest first."""
    single, by_first = set(), {}
    for name in word_list(PLACE_NAMES_PATH):
        words = tuple(plain_word(word) for word in name.split())
        if len(words) == 1:
            single.add(words[0])
        else:
            by_first.setdefault(words[0], []).append(words)
    return frozenset(single), {first: tuple(sorted(found, key=len, reverse=True)) for first, found in by_first.items()}
