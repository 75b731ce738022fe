"""The rules that keep a word as written judged by the word alone: technical, informal and current words, a place's
name, one word in quotes, runs of symbols."""

from __future__ import annotations

import re

from seq2spec.spelling.protection.word_lists import (
    WORD_CORE,
    current_words,
    is_listed,
    listed_words,
    place_names,
    plain_word,
    technical_words,
    technical_words_in_context,
)
from seq2spec.spelling.protection.writing import CURLY_APOSTROPHE

# code: URLs, paths, flags, identifiers and code punctuation (a technical token that ordinary prose does not write)
_CODE = [
    re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://|^www\.", re.IGNORECASE),  # URLs
    re.compile(r"^(~|\.{1,2})?/\S|\S/\S|\\|^\.\w"),  # paths and dotfiles (.venv, .bashrc)
    re.compile(r"^--?[A-Za-z]"),  # command-line flags
    re.compile(r"\w_\w|^_|_$"),  # snake_case
    # CamelCase (two humps: maxRetries, GitHub, PostgreSQL, HTTPServer; a typo such as "TThe" has one)
    re.compile(r"[a-z]{2,}[A-Z]|[A-Z]{3,}[a-z]{2,}"),
    re.compile(r"[A-Za-z_]\w*\.[A-Za-z_]\w*"),  # dotted identifiers and host names
    re.compile(r"[=<>{}\[\]|^*&%$\\]|\w\(|\)\w"),  # code: a=b, f(x), x[0]
]
_TECHNICAL = [
    *_CODE,
    re.compile(r"\d"),  # numbers, versions, times, sizes, digests with digits
    re.compile(r"^[^@\s]+@[^@\s]+\.[A-Za-z]{2,}$"),  # e-mail addresses
    re.compile(r"^[@#]\w"),  # @handles and #tags
    # a lower-case letter before a capital: iPhone, eBay, iOS, mRNA, pH (the speller wrote "Macc" for iMac, "Book" for
    # eBook, "PRIge, Phone" for iPhone); a typo of that shape ("gThis") stays as written
    re.compile(r"^[a-z][A-Z]"),
    re.compile(r"^[A-Z]{2,}(['\u2019]?s)?$"),  # all-capital acronyms: NASA, URLs, CPU's
    re.compile(r"^[B-HJ-Zb-hj-z]$"),  # a letter alone that is no word (a, I are): a variable, a label (x, plan B)
]


# a lower-case roman numeral that numbers an item, "(iv)" or "iv)" (the speller wrote "(in)")
_ROMAN_ITEM = re.compile(r"^\(?(?=[ivx])x{0,3}(?:ix|iv|v?i{0,3})\)[.,;:]?$")


def is_technical(word: str) -> bool:
    """Whether a word (whitespace-free) is one a corrector must leave as written: see the module docstring."""
    core = WORD_CORE.match(word).group(1)
    if not core:
        return False
    if any(pattern.search(core) for pattern in _TECHNICAL) or _ROMAN_ITEM.match(word):
        return True
    words = technical_words()
    # a listed word with an s: "greps", "csvs" (the speller wrote "grips")
    return is_listed(core, words) or (len(core) > 3 and core[-1:] in "sS" and is_listed(core[:-1], words))


def technical_in_context(words: list[str]) -> set[int]:
    """The indices of ``words`` (whitespace-free) that are ``technical_words_in_context`` beside another word of code
    (a URL, path, flag, identifier or code punctuation) or of either list of technical words."""
    listed = [is_listed(WORD_CORE.match(word).group(1), technical_words_in_context()) for word in words]
    if not any(listed):
        return set()
    technical = [listed[index] or _technical_context(word) for index, word in enumerate(words)]
    if sum(technical) < 2:
        return set()
    return {index for index, is_listed in enumerate(listed) if is_listed}


def _technical_context(word: str) -> bool:
    core = WORD_CORE.match(word).group(1)
    return bool(core) and (any(pattern.search(core) for pattern in _CODE) or is_listed(core, technical_words()))


def is_current_word(word: str) -> bool:
    """Whether a word (whitespace-free), in lower case or capitalised, is one of ``current_words``."""
    return is_listed(WORD_CORE.match(word).group(1), current_words())


# Abbreviations and greetings of chat and e-mail that are no typos: a corrector made "lol ok np" into "look nop", "idk
# tbh" into "disk this", "Ok, see you soon." into "Oak, see you soon.", "Omw" into "Know", "Yw." into "Ye.", "Hbd!"
# into "Bud!", "tl;dr" into "girl", the greeting line "Hi Sarah," into "His Sarah," and "a few mins, max an hr" into
# "a few mind, max an her", "thx abt that" into "thx bat that", "sry" into "try", "ngl" into "nil", "ik" into "like",
# "ig" into "it", "kk" into "kick", "Bruh" into "Brush" and "2 tbsp of olive oil" into "2 tap of olive oil". None of
# them but "ok" and "hi" (each as itself, twice) is a word of the spelling sets' sources (recipes/data); "nbd" and
# "nm" are words of the Debian manuals (a device, New Maintainer), kept as written there too. ("wya" and "bby" are left
# out: the spelling sets misspell "way" and "by" so.)
CHAT_ABBREVIATIONS = listed_words("chat_abbreviations.txt")
# abbreviations of letters and offices written without a period ("acct", "qty", "attn"; the speller wrote "act",
# "port" for "ltr"), each more than one edit from any word symspellpy counts 20 million times ("eta" and "tel" are
# also slips of "eat" and "tell": left out)
OFFICE_ABBREVIATIONS = frozenset("approx assoc attn blvd encl etc excl fwd mgmt mgrs natl pkwy qty qtys wfh".split())
# laughter: haha, hahaha, hehe ("Haha ok." had become "Has ok.")
_LAUGHTER = re.compile(r"(?:ha){2,}h?|(?:he){2,}h?|(?:hi){2,}h?")


# Informal spellings of spoken English and its interjections, which a writer chooses: the speller wrote "time" for
# "gimme", "could" for "coulda", "have" for "hafta", "trina" for "tryna", "you'll" for "y'all", "Hush" for "Uh",
# "She" for "Shh", "Past" for "Psst", "May" for "Yay", "Oil" for "Oi", "through" for "thru", "Who" for "Whoa", "Bur"
# for "Brr", "Mom" for "Mmm" and "New" for "Ew". ("yo" is left out: the out-of-domain spelling set writes it for
# "you".)
COLLOQUIAL_SPELLINGS = listed_words("colloquial_spellings.txt")
# a letter said long, as chat writes it: "sooo", "Nooo", "yesss", "gooood" (the speller wrote "soon", "Noon"); a run
# of three of one letter inside a word is taken for a typo ("runnng", "seeene"), as is one whose word with the run
# written twice is a word ("tooo", "fulll", "Theee")
_LONG_LETTER = re.compile(r"([a-z])\1{2,}")
# how often a word said long occurs in symspellpy's counts at least (about the 9,000 commonest words)
COMMON_WORD_COUNT = 5_000_000
# a double contraction of speech: he'd've, who'd've, shouldn't've (the speller wrote "He've", "Who's've")
_DOUBLE_CONTRACTION = re.compile(r"^[A-Za-z]+(?:n't|'d|'ll)'ve$", re.IGNORECASE)
# the pronoun I written in lower case, as chat and quick notes write it: the speller wrote "yesterday its went", "it
# don't know", "it'm not sure" (a lower-case "i" is no word of the spelling sets' sources)
LOWER_CASE_I = frozenset("i i'm i've i'll i'd".split())
# a dropped g written as an apostrophe: nothin', sittin', chillin' (the speller wrote "sitting'" and "Nothing's")
_DROPPED_G = re.compile(r"^[\"(\u2018\u201c]*[A-Za-z]{2,}in['\u2019][.,;:!?)\"\u201d]*$")


# a single word in quotes: a word mentioned ('the word "teh"'), a term, a value, a title; the speller wrote 'The word
# "the" is a common typo of "the"'
_QUOTED_WORD = re.compile(
    r"^[(\[]?[\"'\u2018\u201c][^\s\"'\u2018\u2019\u201c\u201d]*[^\W\d_][^\s\"'\u2018\u2019\u201c\u201d]*"
    r"[\"'\u2019\u201d][.,;:!?)\]]*$"
)


def is_informal(word: str) -> bool:
    """Whether a word (whitespace-free) is informal writing a corrector must leave as written: a chat abbreviation,
    laughter, one of ``COLLOQUIAL_SPELLINGS`` (apostrophes straight or curly), the pronoun I in lower case (``i``,
    ``i'm``), a double contraction (``who'd've``), a word ending in ``in'`` for ``ing`` or a letter said long
    (``sooo``: ``is_lengthened``)."""
    written = WORD_CORE.match(word).group(1).replace(CURLY_APOSTROPHE, "'")
    if written in LOWER_CASE_I:
        return True
    core = written.lower()
    if _informal_spelling(core):
        return True
    if _DOUBLE_CONTRACTION.match(written):
        return True
    return bool(_DROPPED_G.match(word)) or is_lengthened(core)


def is_lengthened(word: str) -> bool:
    """Whether a lower-case word of letters alone says a letter long (``sooo``, ``yesss``, ``gooood``): a run of
    three or more of one letter, at the word's end or of four or more, that written once gives a common word (one of
    ``COMMON_WORD_COUNT``) or an informal one (a run of exactly three: and written twice no word; ``tooo`` is a
    typo of ``too``), or written twice an interjection (``brrr``, ``hmmm``). A rarer word is taken for a typo
    ("mirrr" for "mirror", not "mir" said long)."""
    runs = list(_LONG_LETTER.finditer(word))
    if not runs or not word.isalpha() or any(len(run.group(0)) == 3 and run.end() < len(word) for run in runs):
        return False
    once, twice = _LONG_LETTER.sub(r"\1", word), _LONG_LETTER.sub(r"\1\1", word)
    if twice in COLLOQUIAL_SPELLINGS:  # an interjection said long: "brrr", "shhh", "hmmm"
        return True
    from seq2spec.spelling.classical import shared_symspell_corrector, word_counts

    if not (_informal_spelling(once) or word_counts().get(once, 0) >= COMMON_WORD_COUNT):
        return False
    if any(len(run.group(0)) > 3 for run in runs):
        return True
    return not (_informal_spelling(twice) or twice in word_counts() or shared_symspell_corrector()(twice) == twice)


def _informal_spelling(text: str) -> bool:
    """Whether a lower-case word is a chat or office abbreviation, one of ``COLLOQUIAL_SPELLINGS`` or laughter."""
    return (
        text in CHAT_ABBREVIATIONS
        or text in OFFICE_ABBREVIATIONS
        or text in COLLOQUIAL_SPELLINGS
        or bool(_LAUGHTER.fullmatch(text))
    )


def is_quoted_word(word: str) -> bool:
    """Whether a word (whitespace-free) is one word in quotes of its own (``"teh"``, ``‘colour’,``), which a corrector
    leaves as written: a word mentioned rather than used, a term, a value, a title."""
    return bool(_QUOTED_WORD.match(word))


def is_place_name(word: str) -> bool:
    """Whether a word (whitespace-free) is capitalised and a place name of one word (``PLACE_NAMES_PATH``)."""
    core = WORD_CORE.match(word).group(1)
    return core[:1].isupper() and plain_word(core) in place_names()[0]


# a token longer than any word (the longest English ones have about 45 letters): a string of code, data or noise the
# model is not given to read ("aaaa..." of 5,000 letters was longer than the speller's 256-token input)
LONGEST_WORD = 64
# scripts written without spaces between words (Han, kana, Thai, Lao, Khmer, Myanmar, Tibetan): a token of them may be
# a whole sentence, no longer a word, and is read at any length
_UNSPACED_LETTER = re.compile(
    "[\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u0e00-\u0eff\u1780-\u17ff"
    "\u1000-\u109f\u0f00-\u0fff]"
)


def is_too_long(token: str) -> bool:
    """Whether ``token`` is longer than ``LONGEST_WORD`` and not written mostly in a script without spaces."""
    if len(token) <= LONGEST_WORD:
        return False
    letters = sum(1 for character in token if character.isalpha())
    return len(_UNSPACED_LETTER.findall(token)) * 2 <= letters


# a symbol written twice or more in a row, other than marks of prose a corrector may mend (``A+++``, ``:::``: the
# speller wrote "A++")
_SYMBOL_RUN = re.compile(r"([^\w\s.,!?'\"\u2019-])\1")


def has_symbol_run(word: str) -> bool:
    """Whether a word (whitespace-free) writes a symbol twice or more in a row (``A+++``, ``:::``), other than the
    marks of prose a corrector may mend."""
    return bool(_SYMBOL_RUN.search(word))


def is_symbols_alone(word: str) -> bool:
    """Whether a word (whitespace-free) is symbols alone, no letter or digit (``#``, ``—``, ``->``)."""
    return not any(character.isalnum() for character in word)
