"""What a corrector must never change, kept out of its way and put back as written.

A correction model can only write what its tokenizer can: the shipped speller's vocabulary has no curly quotes,
dashes, accented letters or ``@ _ = ~ < > { } | \\ # * [ ]``, and any character a tokenizer lacks comes back as
nothing or as another word; a character its vocabulary holds only alone (``barely_written``) the model has hardly
seen, and it garbles the words that hold it. A corrector also has no business changing numbers, addresses,
identifiers or the whitespace between words. ``Layout.of`` cuts a text into its words and the whitespace between
them and sorts each word into one of three kinds:

- kept: a word holding a digit, a URL, an e-mail address, an @handle or #tag, a path, a command-line flag, a snake_case,
  CamelCase or dotted identifier, a lower-case letter before a capital (``iPhone``, ``eBay``), an all-capital acronym,
  code punctuation, a roman numeral numbering an item (``(iv)``), a letter alone other than ``a`` and ``I`` (``x = y +
  z``, plan B) or a word of software no dictionary knows (``technical_words``: ``async``, ``backend``, ``numpy``,
  commands and file formats such as ``postgres`` and ``csv``, with an s too: ``csvs``) (``is_technical``), a word of
  current English no dictionary knows (``is_current_word``: ``noob``, ``chai``, ``Connor``, regional words: ``brekkie``,
  ``idli``, and loanwords: ``tagine``, ``hanbok``), a place's name (``is_place_name``: ``Yambol``, and of several words:
  ``La Paz``, ``place_name_spans``), a unit or a sports statistic's count after a number (``200 ml``, ``8
  ast``: ``measurement_units``), the pronoun ``thee`` (``archaic_pronouns``) and old verb forms (``goeth``, ``thou
  sayest``: ``archaic_verbs``), a symbol written twice in a row (``A+++``), an address abbreviation beside a name or a
  number (``Oak Rd``, ``Hwy 9``: ``address_abbreviations``), the shorthand of clinical notes where two or more of it
  meet (``po bid prn``: ``clinical_abbreviations``), a title and the name after it (``Ms Rose``, ``Aunt Bee's``:
  ``honorific_names``), a greeting the model takes for a slip (``hey dan``: ``greetings``),
  both parts of a word broken by a hyphen at a line's end (``infor- mation``: ``broken_words``; the model reads the word
  whole), a name within a sentence (``is_name_within_sentence``: ``Matteo``), informal writing (``is_informal``: a chat
  abbreviation such as ``lol``, ``idk``, ``thx``, an office abbreviation such as ``qty``, ``attn``, a colloquial
  spelling such as ``gimme``, ``coulda``, ``y'all``, a dropped g such as ``sittin'``, the pronoun ``i`` in lower case, a
  double contraction such as ``who'd've``, a letter said long such as ``sooo``), one word in quotes of its own (``the
  word "teh"``: ``is_quoted_word``), the words of a code span between backticks (``code_spans``), the words of a
  quotation a check says to keep (``Layout.of``'s ``quote_kept``: one in another language, ``"Bitte nicht stören"``), a
  token longer than ``LONGEST_WORD`` (not read at all), a token of symbols alone (``#``, ``—``, ``->``), or a character
  the tokenizer cannot write other than the typographic ones below. The model reads what the tokenizer can write of it
  (``cafe`` for ``café``, nothing for ``→``) so that the sentence still reads as one; the word comes back exactly as
  written.
- mapped: a word whose only unwritable characters are typographic quotes, apostrophes, dashes or ellipses, or whose
  contraction is written with an acute accent or a backtick for its apostrophe (``isn´t``, ``it`s``). The model reads
  their plain forms (``it's`` for ``it’s``) and may correct the word; its word comes back with the typographic
  characters in their places (``dosn't`` -> ``doesn't`` -> ``doesn’t``), or as written where the model changed their
  number.
- free: every other word, the model's to correct. A word inside Markdown emphasis, a Markdown link's text or an inline
  HTML tag (``**very importnat**``, ``[teh docs](url)``, ``<b>here</b>``: ``markup_spans``) is read without the markup,
  which comes back around the model's word; the word must come back in place, as a mapped word must. A contraction
  written without its apostrophe that is no English word (``thats``, ``youre``, ``Im``:
  ``CONTRACTIONS_WITHOUT_APOSTROPHE``) is read with it. A command or file format that may be a slip of a word (``sed``,
  ``env``, ``toml``: ``technical_words_in_context``) beside another technical word is free too; the change check
  (``capital_check``) writes it back unless the model is sure of its own word. In a text written with ’ and no ',
  apostrophes the model adds are written ’ too (``didnt`` -> ``didn’t``); a run of two or more of ``. ! ?`` ending the
  word (``Wait...``, ``what?!``) comes back as written. In a text written in capitals, its words in capitals are free
  but for acronyms, read in sentence case and written back in capitals (``shouted_words``: ``FRNOT`` -> ``FRONT``).

``Layout.assemble`` lines the model's output words up with the words it read (difflib, case ignored), puts kept and
mapped words back in their places, the words it did not read beside their neighbours, and the text's own whitespace
between words that were neighbours in the text. Where the model dropped, split or merged a kept or mapped word, so
that it cannot be put back in place, ``assemble`` returns None, and the caller decodes the runs of free words
between them on their own (``Layout.free_runs``), which always succeeds. The model's output for what it reads is
its greedy output; only what it never read, or cannot write, comes from the text.
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from functools import cache
from pathlib import Path

WHITESPACE = re.compile(r"(\s+)")
_TRAILING_MARKS = re.compile(r"[.!?]{2,}$")
_ANY_TRAILING_MARKS = re.compile(r"[.!?]*$")
_TRAILING_DASHES = re.compile(r"-{2,}$")

# typographic characters and the plain forms a tokenizer without them can write
TYPOGRAPHIC = {
    "\u2018": "'",  # ‘
    "\u2019": "'",  # ’
    "\u2032": "'",  # ′
    "\u201c": '"',  # “
    "\u201d": '"',  # ”
    "\u201e": '"',  # „
    "\u00ab": '"',  # «
    "\u00bb": '"',  # »
    "\u2033": '"',  # ″
    "\u2010": "-",  # hyphen
    "\u2011": "-",  # non-breaking hyphen
    "\u2012": "-",  # figure dash
    "\u2013": "-",  # –
    "\u2014": "-",  # —
    "\u2212": "-",  # minus sign
    "\u2026": "...",  # …
}
CURLY_APOSTROPHE = "\u2019"
# an acute accent or a backtick written for the apostrophe of a contraction, on keyboards that put them near ("isn´t",
# "it`s", "we´re"): the speller wrote "is husband it?" for "isn`t it?" and "can`" for "can`t"; the model reads "isn't"
# and the word comes back with the writer's mark
APOSTROPHE_MARKS = {"`": "'", "\u00b4": "'"}
_MARK_APOSTROPHE = re.compile(r"[^\W\d_][`\u00b4](?:s|t|re|ve|ll|d|m)[.,;:!?)\"']*$", re.IGNORECASE)

# the core of a word: punctuation around it stripped
_AROUND = re.compile(r"^[\"'`(\[{<\u2018\u201c\u00ab]*(.*?)[\"'`)\]}>.,;:!?\u2019\u201d\u00bb]*$", re.DOTALL)
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


# Lower-case words of software that no English dictionary knows ("async", "backend", "redis", "numpy", "codec",
# "postgres", "csv", "strlen", "memoize"): the speller made a third of them into dictionary words ("sync", "backed",
# "reds", "bumpy", "code", "postures", "csc", "stolen", "memorize"). Built from Debian's package descriptions, its
# index of files (commands, the C library's manual pages), mime.types and a list of words of programming by
# recipes/word_lists/make_technical_words.py.
TECHNICAL_WORDS_PATH = Path(__file__).resolve().parent.parent / "assets" / "technical_words.txt"
# Such words that a writer may mean as another word ("sed" of "set", "env" of "end", "chown" of "shown", "thd" of
# "the"): where another word of the text is technical ("run sed on the yaml file", "scp and chown"), the change check
# writes them back unless the model is sure of its own word; elsewhere they are slips.
TECHNICAL_WORDS_IN_CONTEXT_PATH = Path(__file__).resolve().parent.parent / "assets" / "technical_words_in_context.txt"


# Phrases of other languages that English prose writes ("mens rea", "bona fide", "a posteriori", "deja vu", "hors
# d'oeuvres"): the speller made their words into English ones ("means rear", "bona file", "a posterior", "deja vul",
# "horse d'oeuvres"). A list written for seq2spec.
FOREIGN_PHRASES_PATH = Path(__file__).resolve().parent.parent / "assets" / "foreign_phrases.txt"


@cache
def word_list(path: Path) -> frozenset[str]:
    """The words of a list file, one per line after ``#`` comments (empty where the file is missing)."""
    if not path.is_file():
        return frozenset()
    lines = path.read_text(encoding="utf-8").splitlines()
    return frozenset(line.strip() for line in lines if line.strip() and not line.startswith("#"))


# the word lists of the rules below, one file each (a word per line)
PROTECTION_WORDS = Path(__file__).resolve().parent.parent / "assets" / "protection"


def _listed_words(name: str) -> frozenset[str]:
    """The words of ``PROTECTION_WORDS / name``."""
    return word_list(PROTECTION_WORDS / name)


def technical_words() -> frozenset[str]:
    """The words of ``TECHNICAL_WORDS_PATH``."""
    return word_list(TECHNICAL_WORDS_PATH)


def technical_words_in_context() -> frozenset[str]:
    """The words of ``TECHNICAL_WORDS_IN_CONTEXT_PATH``."""
    return word_list(TECHNICAL_WORDS_IN_CONTEXT_PATH)


def _listed(core: str, words: frozenset[str]) -> bool:
    """Whether ``core``, in lower case or capitalised, is one of ``words``."""
    return bool(core) and (core.islower() or core[1:].islower()) and core.lower() in words


def is_technical(word: str) -> bool:
    """Whether a word (whitespace-free) is one a corrector must leave as written: see the module docstring."""
    core = _AROUND.match(word).group(1)
    if not core:
        return False
    if any(pattern.search(core) for pattern in _TECHNICAL) or _ROMAN_ITEM.match(word):
        return True
    words = technical_words()
    # a listed word with an s: "greps", "csvs" (the speller wrote "grips")
    return _listed(core, words) or (len(core) > 3 and core[-1:] in "sS" and _listed(core[:-1], words))


def technical_in_context(words: list[str]) -> set[int]:
    """The indices of ``words`` (whitespace-free) that are ``technical_words_in_context`` beside another word of code
    (a URL, path, flag, identifier or code punctuation) or of either list of technical words."""
    listed = [_listed(_AROUND.match(word).group(1), technical_words_in_context()) for word in words]
    if not any(listed):
        return set()
    technical = [listed[index] or _technical_context(word) for index, word in enumerate(words)]
    if sum(technical) < 2:
        return set()
    return {index for index, is_listed in enumerate(listed) if is_listed}


def _technical_context(word: str) -> bool:
    core = _AROUND.match(word).group(1)
    return bool(core) and (any(pattern.search(core) for pattern in _CODE) or _listed(core, technical_words()))


# Words of current written English that no dictionary of the text steps knows ("noob", "chai", "selfie", "hashtag",
# "capex", "nerfed", "ganache", names such as "Connor", "Chidi", "Muji"): the speller wrote "got pawned by a job", "a
# chair late", "cape", "nerved", "panache", "child", "music". Built from wordfreq's English frequencies by
# recipes/word_lists/make_current_words.py, without the misspellings and slips it records.
CURRENT_WORDS_PATH = Path(__file__).resolve().parent.parent / "assets" / "current_words.txt"
# Words of the Englishes of Australia, Britain, South Africa, India and other places that no dictionary knows and
# wordfreq counts too rarely for ``current_words`` ("brekkie", "idli", "rooibos", "paneer"; the speller wrote "break",
# "idle", "rooms", "panzer"), written for seq2spec; none is one edit from a word symspellpy's dictionary counts 20
# million times or more ("arre" is a typo of "are" more often than the Hindi word).
REGIONAL_WORDS_PATH = Path(__file__).resolve().parent.parent / "assets" / "regional_words.txt"
# Words other languages lent English for dishes, festivals, faiths, dress, sports and music that no dictionary knows
# ("tagine", "laksa", "empanadas", "hanbok", "sindoor", "shinty"; the speller wrote "tagline", "lake", "empanada",
# "handbook", "indoor", "shiny"), written for seq2spec under the same rule; loans of several words ("coq au vin", "banh
# mi", "Yom Kippur") are foreign phrases.
LOANWORDS_PATH = Path(__file__).resolve().parent.parent / "assets" / "loanwords.txt"


@cache
def current_words() -> frozenset[str]:
    """The words of ``CURRENT_WORDS_PATH``, ``REGIONAL_WORDS_PATH`` and ``LOANWORDS_PATH``."""
    return word_list(CURRENT_WORDS_PATH) | word_list(REGIONAL_WORDS_PATH) | word_list(LOANWORDS_PATH)


def is_current_word(word: str) -> bool:
    """Whether a word (whitespace-free), in lower case or capitalised, is one of ``current_words``."""
    return _listed(_AROUND.match(word).group(1), current_words())


# Strings of current English no dictionary knows that are too close to a commoner word for ``current_words``: mostly
# names ("Matteo", "Shira", "Jing"; the speller wrote "Matter", "Shirt", "King"), kept capitalised within a sentence,
# where a capital marks a name and a slip of a commoner word is rare. Built by recipes/word_lists/make_current_words.py.
NAME_WORDS_PATH = Path(__file__).resolve().parent.parent / "assets" / "name_words.txt"
# the marks that open a quotation, whose first word is capitalised as a sentence's is
_OPENING_QUOTES = "\"'\u201c\u2018\u201e\u201a\u00ab\u00bb"
# the end of a sentence or clause a capital may follow without being a name's: "Done. Matter closed."
_SENTENCE_END = re.compile(r"[.!?:;][\"'\u2019\u201d\u00bb)\]]*$")


def name_words() -> frozenset[str]:
    """The words of ``NAME_WORDS_PATH``."""
    return word_list(NAME_WORDS_PATH)


def is_name_within_sentence(previous: str, word: str) -> bool:
    """Whether ``word`` (whitespace-free), after ``previous`` within the same sentence, is capitalised and one of
    ``name_words``."""
    core = _AROUND.match(word).group(1)
    if not core[:1].isupper() or not core[1:].islower() or _SENTENCE_END.search(previous):
        return False
    if word[:1] in _OPENING_QUOTES:  # a quotation's first word starts a sentence of its own
        return False
    return core.lower() in name_words()


def name_runs(words: list[str]) -> set[int]:
    """The indices of ``words`` (whitespace-free) that are capitalised words no dictionary knows written beside
    another such word, nothing between them: names of several words ("Abu Dhabi", "Nguyen Thi Minh Khai", "Recep
    Tayyip"), which the speller made into words ("About Dhabi", "This Minh"), within a sentence: a sentence's first
    word is capitalised anyway ("Chicen Liitle was right"), and a capitalised typo beside a dictionary word ("the
    Unted States") stays the model's."""
    unknown = [_capitalised_unknown(word) for word in words]
    found = set()
    for index in range(1, len(words) - 1):
        within = not _SENTENCE_END.search(words[index - 1]) and words[index][:1] not in _OPENING_QUOTES
        if within and unknown[index] and unknown[index + 1] and words[index][-1:].isalpha():
            found.update((index, index + 1))
    return found


# titles written before a name: "Ms Rose", "Dr Nkemelu", "Aunt Bee", "Det. Benson" (the speller wrote "Mas Rose",
# "Aunt Beer's", "Get. Benson")
HONORIFICS = _listed_words("honorifics.txt")


def honorific_names(words: list[str]) -> set[int]:
    """The indices of ``words`` (whitespace-free) that are a capitalised title of ``HONORIFICS`` (``Ms``, ``Dr.``)
    before a capitalised word, and that word where a dictionary knows it (``Rose``, ``Bee's``: a name the model would
    take for the word); a name no dictionary knows stays the model's, typos and all ("Mr. Qbernathy", "Sir Isaqac")."""
    from seq2spec.spelling.classical import is_dictionary_word

    found = set()
    for index in range(len(words) - 1):
        title = _TITLE.fullmatch(words[index])
        name = _POSSESSIVE.sub("", _AROUND.match(words[index + 1]).group(1))
        if title and title.group(1).lower() in HONORIFICS and name[:1].isupper() and name[1:].islower():
            found.add(index)
            if is_dictionary_word(name.lower()):
                found.add(index + 1)
    return found


_TITLE = re.compile(r"([A-Z][a-z]+)\.?")
_POSSESSIVE = re.compile(r"['\u2019]s$")


def _capitalised_unknown(word: str) -> bool:
    core = _AROUND.match(word).group(1)
    if len(core) < 2 or not core.isalpha() or not core[0].isupper() or not core[1:].islower():
        return False
    from seq2spec.spelling.classical import is_dictionary_word

    return not is_dictionary_word(core.lower())


# Abbreviations and greetings of chat and e-mail that are no typos: a corrector made "lol ok np" into "look nop", "idk
# tbh" into "disk this", "Ok, see you soon." into "Oak, see you soon.", "Omw" into "Know", "Yw." into "Ye.", "Hbd!"
# into "Bud!", "tl;dr" into "girl", the greeting line "Hi Sarah," into "His Sarah," and "a few mins, max an hr" into
# "a few mind, max an her", "thx abt that" into "thx bat that", "sry" into "try", "ngl" into "nil", "ik" into "like",
# "ig" into "it", "kk" into "kick", "Bruh" into "Brush" and "2 tbsp of olive oil" into "2 tap of olive oil". None of
# them but "ok" and "hi" (each as itself, twice) is a word of the spelling sets' sources (recipes/data); "nbd" and
# "nm" are words of the Debian manuals (a device, New Maintainer), kept as written there too. ("wya" and "bby" are left
# out: the spelling sets misspell "way" and "by" so.)
CHAT_ABBREVIATIONS = _listed_words("chat_abbreviations.txt")
# abbreviations of letters and offices written without a period ("acct", "qty", "attn"; the speller wrote "act",
# "port" for "ltr"), each more than one edit from any word symspellpy counts 20 million times ("eta" and "tel" are
# also slips of "eat" and "tell": left out)
OFFICE_ABBREVIATIONS = frozenset("approx assoc attn blvd encl etc excl fwd mgmt mgrs natl pkwy qty qtys wfh".split())
# the shorthand of clinical notes and prescriptions, kept where a text holds two or more of them ("Take 1 tab po bid
# prn", "Pt c/o SOB x3d, hx of HTN": the speller wrote "pron", "porn", "Put", "his"); alone each may be a slip of a
# word ("po", "pt", "hx"), and is left to the model
CLINICAL_ABBREVIATIONS = _listed_words("clinical_abbreviations.txt")
# abbreviations of an address, kept capitalised beside a name or a number ("Oak Rd", "Hwy 9", "Cty Rd 12"; the speller
# wrote "Oak Red", "City Red")
ADDRESS_ABBREVIATIONS = frozenset("apt ave bldg blvd ct cty dr fl fwy hwy ln pkwy pl rd rte sq st ste".split())
# laughter: haha, hahaha, hehe ("Haha ok." had become "Has ok.")
_LAUGHTER = re.compile(r"(?:ha){2,}h?|(?:he){2,}h?|(?:hi){2,}h?")


# Informal spellings of spoken English and its interjections, which a writer chooses: the speller wrote "time" for
# "gimme", "could" for "coulda", "have" for "hafta", "trina" for "tryna", "you'll" for "y'all", "Hush" for "Uh",
# "She" for "Shh", "Past" for "Psst", "May" for "Yay", "Oil" for "Oi", "through" for "thru", "Who" for "Whoa", "Bur"
# for "Brr", "Mom" for "Mmm" and "New" for "Ew". ("yo" is left out: the out-of-domain spelling set writes it for
# "you".)
COLLOQUIAL_SPELLINGS = _listed_words("colloquial_spellings.txt")
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
    written = _AROUND.match(word).group(1).replace(CURLY_APOSTROPHE, "'")
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


def address_abbreviations(words: list[str]) -> set[int]:
    """The indices of ``words`` (whitespace-free) that are ``ADDRESS_ABBREVIATIONS`` capitalised (``Rd``, ``Hwy,``)
    after a capitalised word or a number, or before a number or another such abbreviation."""

    def abbreviation(index: int) -> bool:
        core = _AROUND.match(words[index]).group(1)
        return len(core) > 1 and core[0].isupper() and core[1:].islower() and core.lower() in ADDRESS_ABBREVIATIONS

    found = set()
    for index in range(len(words)):
        if not abbreviation(index):
            continue
        before = words[index - 1] if index else ""
        after = words[index + 1] if index + 1 < len(words) else ""
        if (before[:1].isupper() and before[-1:].isalpha()) or before[-1:].isdigit() or after[:1].isdigit():
            found.add(index)
        elif after and abbreviation(index + 1):
            found.update((index, index + 1))
    return found


def clinical_abbreviations(words: list[str]) -> set[int]:
    """The indices of ``words`` (whitespace-free) that are ``CLINICAL_ABBREVIATIONS`` (in any case), where two or more
    different ones are in the text."""
    cores = [_AROUND.match(word).group(1).lower() for word in words]
    found = {index for index, core in enumerate(cores) if core in CLINICAL_ABBREVIATIONS}
    return found if len({cores[index] for index in found}) >= 2 else set()


def is_quoted_word(word: str) -> bool:
    """Whether a word (whitespace-free) is one word in quotes of its own (``"teh"``, ``‘colour’,``), which a corrector
    leaves as written: a word mentioned rather than used, a term, a value, a title."""
    return bool(_QUOTED_WORD.match(word))


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


def _plain_word(word: str) -> str:
    """A word as a foreign phrase is matched: punctuation around it left out, lower case, accents dropped, apostrophes
    straight."""
    core = _PHRASE_WORD.match(word).group(1).lower().replace(CURLY_APOSTROPHE, "'")
    return "".join(c for c in unicodedata.normalize("NFKD", core) if not unicodedata.combining(c))


_PHRASE_WORD = re.compile(r"^[^\w']*(.*?)[^\w']*$", re.DOTALL)


@cache
def _foreign_phrases() -> dict[str, tuple[tuple[str, ...], ...]]:
    """The phrases of ``FOREIGN_PHRASES_PATH`` as plain words, by their first word, longest first."""
    by_first: dict[str, list[tuple[str, ...]]] = {}
    for phrase in word_list(FOREIGN_PHRASES_PATH):
        words = tuple(_plain_word(word) for word in phrase.split())
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
    plain = [_plain_word(word) for word in words]
    found = []
    for start, first in enumerate(plain):
        for phrase in phrases.get(first, ()):
            if tuple(plain[start : start + len(phrase)]) == phrase:
                found.append((start, phrase))
                break
    return found


# Names of countries, provinces, regions and cities ("Yambol", "Chuuk", "Kasserine", "Tallinn", "Burkina Faso", "La
# Paz", "Dar es Salaam"; the speller wrote "Symbol", "Chuck", "Passerine", "Tallin", "Burkina Fast", "La Pay", "Car es
# Salaam", dictionaries knowing some of them), from iso-codes' ISO 3166 lists and tzdata's zones by
# recipes/word_lists/make_place_names.py: a name of one word kept where it is capitalised, one of several kept whole.
PLACE_NAMES_PATH = Path(__file__).resolve().parent.parent / "assets" / "place_names.txt"


@cache
def _place_names() -> tuple[frozenset[str], dict[str, tuple[tuple[str, ...], ...]]]:
    """The names of ``PLACE_NAMES_PATH`` as plain words: those of one word, and those of several by their first word,
    longest first."""
    single, by_first = set(), {}
    for name in word_list(PLACE_NAMES_PATH):
        words = tuple(_plain_word(word) for word in name.split())
        if len(words) == 1:
            single.add(words[0])
        else:
            by_first.setdefault(words[0], []).append(words)
    return frozenset(single), {first: tuple(sorted(found, key=len, reverse=True)) for first, found in by_first.items()}


def is_place_name(word: str) -> bool:
    """Whether a word (whitespace-free) is capitalised and a place name of one word (``PLACE_NAMES_PATH``)."""
    core = _AROUND.match(word).group(1)
    return core[:1].isupper() and _plain_word(core) in _place_names()[0]


def place_name_spans(words: list[str]) -> set[int]:
    """The indices of ``words`` (whitespace-free) inside a place name of several words (``PLACE_NAMES_PATH``), matched
    as foreign phrases are."""
    return {
        index for start, phrase in _phrases_in(words, _place_names()[1]) for index in range(start, start + len(phrase))
    }


_ET_AL = ("et", "al")


# units of measurement and the counts of sports statistics, in lower case, as they are written after a number ("200
# ml", "3 yd", "5 mls", "8 ast": the speller wrote "200 mil", "3 gd", "5 mod", "8 fast")
MEASUREMENT_UNITS = _listed_words("measurement_units.txt")


def measurement_units(words: list[str]) -> set[int]:
    """The indices of ``words`` (whitespace-free) that are ``MEASUREMENT_UNITS`` right after a number."""
    return {
        index
        for index in range(1, len(words))
        if words[index - 1][-1:].isdigit() and _AROUND.match(words[index]).group(1).lower() in MEASUREMENT_UNITS
    }


# words a determiner cannot stand before: after "thee" they mark the old pronoun ("I thank thee for", "Get thee to",
# "thee and me"; the speller wrote "the"), not a slip of "the" ("on thee table")
_AFTER_PRONOUN = _listed_words("after_pronoun.txt")


def archaic_pronouns(words: list[str]) -> set[int]:
    """The indices of ``words`` (whitespace-free) that are the pronoun "thee": before punctuation, at the end, or
    before one of ``_AFTER_PRONOUN``."""
    found = set()
    for index, word in enumerate(words):
        if _AROUND.match(word).group(1).lower() != "thee":
            continue
        following = _AROUND.match(words[index + 1]).group(1).lower() if index + 1 < len(words) else ""
        if index + 1 == len(words) or not word[-1].isalpha() or following in _AFTER_PRONOUN:
            found.add(index)
    return found


# verbs whose old forms in -eth and -est scripture, verse and quotations write ("goeth", "giveth", "thou sayest"; the
# speller wrote "youth", "safest", "finest", "guest" for "goest")
_OLD_VERBS = _listed_words("old_verbs.txt")


def archaic_verbs(words: list[str]) -> set[int]:
    """The indices of ``words`` (whitespace-free) that are an old form of one of ``_OLD_VERBS``: in -eth or -th
    anywhere ("goeth", "taketh", "seeth"), in -est or -st beside "thou" ("goest thou", "thou sayest", "seest thou")."""
    cores = [_AROUND.match(word).group(1) for word in words]
    found = set()
    for index, core in enumerate(cores):
        lower = core.lower()
        if not core.isalpha() or not (core.islower() or core[1:].islower()):
            continue
        beside_thou = any(
            0 <= other < len(cores) and cores[other].lower() == "thou" for other in (index - 1, index + 1)
        )
        for ending in ("eth", "th") + (("est", "st") if beside_thou else ()):
            if lower.endswith(ending) and _old_verb(lower[: -len(ending)], short=len(ending) == 2):
                found.add(index)
    return found


def _old_verb(stem: str, short: bool) -> bool:
    """Whether ``stem``, what is left of a word without its -eth/-est (``short``: -th/-st, after a vowel), is one of
    ``_OLD_VERBS``, whose final e or doubled consonant it may lack ("tak" of "taketh", "sitt" of "sittest")."""
    if short:
        return stem[-1:] in "aeiouy" and stem in _OLD_VERBS
    doubled = len(stem) > 2 and stem[-1] == stem[-2] and stem[:-1] in _OLD_VERBS
    return stem in _OLD_VERBS or stem + "e" in _OLD_VERBS or doubled


# greetings the speller takes for a slip of another word ("hey dan," -> "they dan,", "yo dan," -> "you can,")
_GREETINGS = {"hey": "they", "yo": "you"}


def greetings(words: list[str]) -> set[int]:
    """The indices of ``words`` (whitespace-free) that are a greeting of ``_GREETINGS`` written in lower case: before
    punctuation, at the end, or before a word that English writes after the greeting or never after the word it could
    be a slip of ("hey guys", "hey dan"; symspellpy's bigram counts). "hey went home" is a slip of "they"."""
    found = set()
    for index, word in enumerate(words):
        greeting = _AROUND.match(word).group(1)
        other = _GREETINGS.get(greeting)
        if other is None:
            continue
        if index + 1 == len(words) or not word[-1].isalpha():
            found.add(index)
            continue
        from seq2spec.spelling.classical import bigram_counts

        following, counts = _AROUND.match(words[index + 1]).group(1).lower(), bigram_counts()
        if counts.get((greeting, following), 0) > 0 or counts.get((other, following), 0) == 0:
            found.add(index)
    return found


# a word broken and hyphenated at the end of a line (text copied from a PDF, a hard-wrapped page): its first part,
# after any opening marks, ends in a hyphen; its second part starts with a lower-case letter
_BROKEN_HEAD = re.compile(r"^(\W*)([^\W\d_]+)-$")
_BROKEN_TAIL = re.compile(r"^([^\W\d_]+)(.*)$", re.DOTALL)


def broken_words(words: list[str]) -> dict[int, str]:
    """Index of a word's first part -> the word whole, where ``words`` (whitespace-free) hold a word broken in two by
    a hyphen at the end of a line ("infor-" "mation", "depart-" "ment."; the speller wrote "inform- nation" and
    "com- putter"): the two parts joined are a dictionary word, or neither part is one ("impor-" "tnat"). Two words
    with a hyphen between ("well- known", "home- it was late") and a suspended hyphen ("pre- and post-war") are no
    broken word: one of the parts is a word and the two joined are not."""
    found: dict[int, str] = {}
    for index in range(len(words) - 1):
        head, tail = _BROKEN_HEAD.match(words[index]), _BROKEN_TAIL.match(words[index + 1])
        if head is None or tail is None or not tail.group(1)[:1].islower():
            continue
        first, second = head.group(2).lower(), tail.group(1).lower()
        from seq2spec.spelling.classical import shared_word_list

        known = shared_word_list()
        if first + second in known or (first not in known and second not in known):
            found[index] = head.group(1) + head.group(2) + tail.group(1) + tail.group(2)
    return found


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


def quotation_text(words: list[str]) -> str:
    """A quotation's words without its quotation marks and the brackets and punctuation outside them."""
    text = " ".join(words).lstrip("([")[1:]
    core = text.rstrip(".,;:!?)]")
    return core[:-1] if core and core[-1] in _QUOTE_MARKS else core


class TokenizerWriting:
    """Which text a tokenizer writes back as it was (``decode(encode(text)) == text``) with no character its
    vocabulary holds only alone (``barely_written``), remembered per text."""

    def __init__(self, tokenizer) -> None:
        self.tokenizer = tokenizer
        self.barely_written = barely_written(tokenizer)
        self._writes: dict[str, bool] = {}

    def writes(self, text: str) -> bool:
        if text not in self._writes:
            ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
            round_trip = self.tokenizer.decode(ids) == text
            self._writes[text] = round_trip and not any(c in self.barely_written for c in text)
        return self._writes[text]

    def stand_in(self, word: str) -> str:
        """What the tokenizer can write of ``word``: writable characters as they are, typographic ones in their plain
        form, accented letters without their accents, the rest left out."""
        parts = []
        for character in word:
            if self.writes(character):
                parts.append(character)
            elif character in TYPOGRAPHIC and self.writes(TYPOGRAPHIC[character]):
                parts.append(TYPOGRAPHIC[character])
            elif unicodedata.category(character).startswith("L"):
                base = "".join(c for c in unicodedata.normalize("NFKD", character) if not unicodedata.combining(c))
                if base and base != character and self.writes(base):
                    parts.append(base)
        return "".join(parts)


def barely_written(tokenizer) -> frozenset[str]:
    """The non-ASCII characters a vocabulary of characters (sentencepiece, WordPiece) holds as pieces of their own
    but inside no longer piece: the model met them too rarely to learn any word with them (the shipped speller's
    2,048 pieces have one, ``í``). Byte-level vocabularies hold no such characters."""
    try:
        pieces = [piece.lstrip("\u2581") for piece in tokenizer.get_vocab()]
    except (AttributeError, NotImplementedError, TypeError):
        return frozenset()
    alone = {piece for piece in pieces if len(piece) == 1 and not piece.isascii()}
    inside = {character for piece in pieces if len(piece) > 1 for character in piece if character in alone}
    return frozenset(alone - inside)


# Markdown emphasis and links, wiki emphasis and inline HTML around a word: ``**bold**``, ``~~gone~~``, ``[the
# docs](url)``, ``'''bold'''`` (the speller wrote ``''bold''``), ``<b>here</b>`` (a word in them was kept whole, its
# typos unfixed, and the model read ``bhere/b``); underscores (``__init__``, ``_private``) and brackets that are no link
# (``[sic]``, ``[x]``) are left alone
_INLINE_TAGS = "b|i|u|s|em|strong|mark|del|ins|small|p|li|h[1-6]|td|th|dt|dd|span|blockquote|cite|q"
_MARKUP_OPENS = re.compile(
    rf"^((?:[(\"\u2018\u201c]|'(?!'))*)((?:\*{{1,3}}|~~|'{{2,5}}|\[|<(?:{_INLINE_TAGS})>)+)(?=[^\W\d_])"
)
_MARKUP_CLOSES = re.compile(
    rf"(?<=[\w.,;:!?'\u2019])((?:\*{{1,3}}|~~|'{{2,5}}|\](?:\([^\s()]*\)|\[[^\s\]]*\])|</(?:{_INLINE_TAGS})>)+)"
    r"([.,;:!?)\"'\u2019\u201d]*)$"
)


@dataclass(frozen=True)
class Markup:
    """Markup ``opening`` at ``start`` and ``closing`` at ``end`` of the word the model reads (its characters
    ``[start:end]`` inside the markup, punctuation outside it)."""

    opening: str
    closing: str
    start: int
    end: int

    def around(self, read: str, output: str) -> str:
        """``output`` (the model's word for ``read``) with the markup put back: where the punctuation outside it
        came back unchanged, exactly around the same characters; else around the output's word and the
        punctuation next to it."""
        head, tail = read[: self.start], read[self.end :]
        if not (output.startswith(head) and output.endswith(tail) and len(output) >= len(head) + len(tail)):
            head = re.match(r"^[(\"'\u2018\u201c]*", output).group()
            tail = re.search(r"[.,;:!?)\"'\u2019\u201d]*$", output[len(head) :]).group()
        middle = output[len(head) : len(output) - len(tail)]
        return head + self.opening + middle + self.closing + tail


def _markup_closes(opening: str, closing: str) -> bool:
    """Whether ``closing`` ends what ``opening`` began: the same emphasis marks reversed, ``]`` for ``[``, the
    closing tag."""
    if opening.startswith("["):
        return closing.startswith("]")
    if opening.startswith("<"):
        return closing == opening.replace("<", "</", 1)
    return closing == opening[::-1]


def markup_spans(words: list[str]) -> dict[int, tuple[str, Markup]]:
    """Index of ``words`` (whitespace-free) -> (the word without its markup, the markup), for the words that open
    and close a span of Markdown emphasis, a Markdown link's text or an inline HTML tag (``**very importnat**``,
    ``[teh docs](url)``, ``<b>here</b>``, ``<p>Teh text.</p>``), matched as pairs within ``MAX_QUOTATION_WORDS``
    words, a span inside another too; an opening no later word closes (``*args``) is no markup."""
    found: dict[int, tuple[str, Markup]] = {}
    index = 0
    while index < len(words):
        if index in found:  # the closing word of a span that holds another (``<p>The <b>qiuck</b> fox.</p>``)
            index += 1
            continue
        opens = _MARKUP_OPENS.match(words[index])
        closed = None
        for end in range(index, min(len(words), index + MAX_QUOTATION_WORDS)) if opens else ():
            word = words[end][opens.end() :] if end == index else words[end]
            closes = _MARKUP_CLOSES.search(word)
            if closes is not None and _markup_closes(opens.group(2), closes.group(1)):
                closed = end, word, closes
                break
        if closed is None:
            index += 1
            continue
        end, word, closes = closed
        lead, opening = opens.group(1), opens.group(2)
        inner, closing, trail = word[: closes.start()], closes.group(1), closes.group(2)
        if end == index:
            found[index] = (lead + inner + trail, Markup(opening, closing, len(lead), len(lead) + len(inner)))
        else:
            rest = words[index][opens.end() :]
            found[index] = (lead + rest, Markup(opening, "", len(lead), len(lead) + len(rest)))
            found[end] = (inner + trail, Markup("", closing, 0, len(inner)))
        index += 1
    return found


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


@dataclass(frozen=True)
class Layout:
    """A text's words and the whitespace around them: ``leading + words[0] + gaps[0] + ... + words[-1] + gaps[-1]``
    is the text (``gaps[-1]`` its trailing whitespace)."""

    leading: str
    words: list[Word]
    gaps: list[str]
    apostrophe: str | None = None  # how apostrophes the model adds are written (None: as it writes them)
    shouted: bool = False  # written in capitals: the words the model adds are written in capitals too

    @classmethod
    def of(
        cls,
        text: str,
        writing: TokenizerWriting,
        apostrophe: str | None = None,
        quote_kept: Callable[[str], bool] | None = None,
    ) -> Layout:
        """The layout of ``text``; the words of a quotation for whose text ``quote_kept`` is true (one in another
        language), and names within a sentence (``is_name_within_sentence``), are kept as written."""
        body = text.strip()
        if not body:
            return cls(text, [], [], apostrophe)
        leading, trailing = text[: len(text) - len(text.lstrip())], text[len(text.rstrip()) :]
        tokens = WHITESPACE.split(body)  # word, gap, word, ..., word
        words = tokens[::2]
        kept = set()
        for start, end in quotations(words) if quote_kept else []:
            if quote_kept(quotation_text(words[start:end])):
                kept.update(range(start, end))
        kept.update(index for index in range(1, len(words)) if is_name_within_sentence(words[index - 1], words[index]))
        kept.update(code_spans(words))
        kept.update(foreign_phrase_spans(words))
        kept.update(place_name_spans(words))
        kept.update(name_runs(words))
        kept.update(honorific_names(words))
        kept.update(measurement_units(words))
        kept.update(archaic_pronouns(words))
        kept.update(archaic_verbs(words))
        kept.update(greetings(words))
        kept.update(address_abbreviations(words))
        kept.update(clinical_abbreviations(words))
        shouted = shouted_words(words) - kept
        laid = [
            _shouted_word(token, writing) if index in shouted else _word(token, writing, index in kept)
            for index, token in enumerate(words)
        ]
        if shouted:
            _shouted_code_read_lower(laid)
            _sentence_case(laid)
        for index, (read, markup) in markup_spans(words).items():  # the model reads the word without its markup
            inner = _word(read, writing, index in kept)
            free = inner.kind is Kind.FREE
            laid[index] = Word(words[index], inner.reads, inner.kind if free else Kind.KEPT, markup if free else None)
        for index, whole in broken_words(words).items():  # both parts as written; the model reads the word whole
            reads = whole if writing.writes(whole) else writing.stand_in(whole)
            laid[index : index + 2] = [Word(words[index], reads, Kind.KEPT), Word(words[index + 1], "", Kind.KEPT)]
        return cls(leading, laid, [*tokens[1::2], trailing], apostrophe, bool(shouted))

    @property
    def model_text(self) -> str:
        """What the model reads: the words it can read, one space apart."""
        return " ".join(word.reads for word in self.words if word.reads)

    @property
    def needs_model(self) -> bool:
        """Whether there is anything for the model to correct."""
        return any(word.kind is not Kind.KEPT and word.reads for word in self.words)

    def text(self) -> str:
        return self.leading + "".join(word.text + gap for word, gap in zip(self.words, self.gaps, strict=True))

    def assemble(self, output: str) -> str | None:
        """The text with the model's ``output`` (for ``model_text``) in its words' places; None where a kept or
        mapped word cannot be put back in place."""
        read = [index for index, word in enumerate(self.words) if word.reads]
        tokens = WHITESPACE.split(output.strip())
        said = [token for token in tokens[::2] if token]
        said_gaps = [*tokens[1::2], ""]
        placed = _aligned([self.words[i].reads for i in read], said)
        where = {read[i]: j for i, j in placed.items()}
        if any(not self._free(i) and i not in where for i in read):  # kept, mapped or marked up: must be in place
            return None
        source_of = {j: i for i, j in where.items()}
        # (source index or None, text, the output's whitespace after it) per word of the result, in order
        units: list[tuple[int | None, str, str]] = []
        for j, word in enumerate(said):
            source = source_of.get(j)
            if source is not None:
                text = self.words[source].restored(word, self.apostrophe)
            else:
                text = word.upper() if self.shouted else word
            units.append((source, text, said_gaps[j]))
        units = self._insert_unread(units, where)
        if units is None:
            return None
        parts = [self.leading]
        for position, (source, text, gap) in enumerate(units):
            parts.append(text)
            if position + 1 < len(units):
                following = units[position + 1][0]
                neighbours = source is not None and following == source + 1
                parts.append(self.gaps[source] if neighbours else gap or " ")
        parts.append(self.gaps[-1] if self.gaps else "")
        return "".join(parts)

    def _insert_unread(
        self, units: list[tuple[int | None, str, str]], where: dict[int, int]
    ) -> list[tuple[int | None, str, str]] | None:
        """``units`` with the words the model did not read after the nearest read word before them, or before the
        nearest after them; None where neither was placed."""
        unread = [index for index, word in enumerate(self.words) if not word.reads]
        if not unread:
            return units
        position_of = {source: position for position, (source, _, _) in enumerate(units) if source is not None}
        after: dict[int, list[int]] = {}
        for index in unread:
            before = next((i for i in range(index - 1, -1, -1) if self.words[i].reads), None)
            behind = next((i for i in range(index + 1, len(self.words)) if self.words[i].reads), None)
            if before is not None and before in where:
                after.setdefault(position_of[before], []).append(index)
            elif behind is not None and behind in where:
                after.setdefault(position_of[behind] - 1, []).append(index)
            else:
                return None
        result = [(index, self.words[index].text, " ") for index in after.get(-1, [])]
        for position, unit in enumerate(units):
            result.append(unit)
            result += [(index, self.words[index].text, " ") for index in after.get(position, [])]
        return result

    def _free(self, index: int) -> bool:
        word = self.words[index]
        return word.kind is Kind.FREE and bool(word.reads) and word.markup is None

    def free_runs(self) -> list[Layout]:
        """The runs of neighbouring free words, each as a layout of its own (kept, mapped and unread words and the
        whitespace around them stay as written between them)."""
        runs: list[list[int]] = []
        for index in range(len(self.words)):
            if self._free(index):
                if index == 0 or not self._free(index - 1):
                    runs.append([])
                runs[-1].append(index)
        return [
            Layout(
                "", [self.words[i] for i in run], [*(self.gaps[i] for i in run[:-1]), ""], self.apostrophe, self.shouted
            )
            for run in runs
        ]

    def join_runs(self, corrected: list[str]) -> str:
        """The text with each of ``free_runs()`` replaced by its corrected text."""
        runs = iter(corrected)
        parts = [self.leading]
        last = len(self.words) - 1
        for index, word in enumerate(self.words):
            if not self._free(index):
                parts += [word.text, self.gaps[index]]
                continue
            if index == 0 or not self._free(index - 1):  # a run starts
                parts.append(next(runs))
            if index == last or not self._free(index + 1):  # a run ends
                parts.append(self.gaps[index])
        return "".join(parts)


# contractions written without their apostrophe that are no English word ("thats", "youre", "ive", "im"; "cant",
# "wont", "lets", "its", "were", "well", "ill", "hows" are words; "IM" is an acronym): the model reads them with it (it
# had written "that", "your", "give", "there", "in" for "thats", "youre", "ive", "theyre", "im")
CONTRACTIONS_WITHOUT_APOSTROPHE = {word.replace("'", "").lower(): word for word in _listed_words("contractions.txt")}
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


# a token longer than any word (the longest English ones have about 45 letters): a string of code, data or noise the
# model is not given to read ("aaaa..." of 5,000 letters was longer than the speller's 256-token input)
LONGEST_WORD = 64
# a symbol written twice or more in a row, other than marks of prose a corrector may mend (``A+++``, ``:::``: the
# speller wrote "A++")
_SYMBOL_RUN = re.compile(r"([^\w\s.,!?'\"\u2019-])\1")
# a character written four or more times in a row in a token of symbols alone (a rule of dashes or equals signs, a row
# of stars): the model reads it three times (it read 43 dashes and wrote 131, dropping the sentence's words)
_LONG_SYMBOL_RUN = re.compile(r"(.)\1{3,}", re.DOTALL)


def _word(token: str, writing: TokenizerWriting, quoted: bool = False) -> Word:
    if len(token) > LONGEST_WORD:
        return Word(token, "", Kind.KEPT)
    written = writing.writes(token)
    symbols_alone = not any(character.isalnum() for character in token)
    if (
        quoted
        or _SYMBOL_RUN.search(token)
        or is_technical(token)
        or is_informal(token)
        or is_current_word(token)
        or is_place_name(token)
        or is_quoted_word(token)
        or symbols_alone
    ):
        reads = _LONG_SYMBOL_RUN.sub(r"\1\1\1", token) if symbols_alone else token
        return Word(token, reads if written else writing.stand_in(reads), Kind.KEPT)
    if _MARK_APOSTROPHE.search(token) and sum(token.count(mark) for mark in APOSTROPHE_MARKS) == 1:
        reads = "".join(APOSTROPHE_MARKS.get(character, character) for character in token)
        if writing.writes(reads):
            return Word(token, reads, Kind.MAPPED)  # "isn`t" read "isn't"
    if written:
        return Word(token, _with_apostrophe(token), Kind.FREE)
    reads = writing.stand_in(token)
    unwritable = [c for c in token if not writing.writes(c)]
    if all(c in TYPOGRAPHIC for c in unwritable) and len(reads) == len(token) + 2 * token.count("\u2026"):
        return Word(token, reads, Kind.MAPPED)
    return Word(token, reads, Kind.KEPT)


# A text written in capitals ("PLEASE DO NOT PARK IN FRNOT OF THE GARAGE."): each of its words would be kept as an
# acronym, typos and all. In a text of SHOUTED_WORDS words in capitals or more, SHOUTED_SHARE of its words with letters
# at least, a word in capitals is read in sentence case and the model's word written in capitals, unless the steps
# keep it in lower or title case (a technical, informal or current word, a name or a place: "LOL", "YAMBOL") or it is
# one of CAPITAL_WORDS_PATH, frequent words no dictionary of the steps knows (acronyms: "NHS", "FBI", "USA", which the
# model would make "his", "use"), built by recipes/word_lists/make_capital_words.py, or a word of no vowels ("TCP",
# "HTML").
SHOUTED_WORDS = 3
SHOUTED_SHARE = 0.8
CAPITAL_WORDS_PATH = Path(__file__).resolve().parent.parent / "assets" / "capital_words.txt"


def capital_words() -> frozenset[str]:
    """The words of ``CAPITAL_WORDS_PATH``."""
    return word_list(CAPITAL_WORDS_PATH)


_SHOUTED_CORE = re.compile(r"^[A-Z]+(?:['\u2019-][A-Z]+)*$")
_VOWEL = re.compile("[AEIOUY]")


def shouted_words(words: list[str]) -> set[int]:
    """The indices of ``words`` (whitespace-free) the model may correct in sentence case, in a text written in
    capitals (see above); none in other texts."""
    cores = [_AROUND.match(word).group(1) for word in words]
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


def _shouted_word(token: str, writing: TokenizerWriting) -> Word:
    """A word of ``shouted_words``: read in lower case, its output written in capitals."""
    reads = token.lower()
    if _AROUND.match(token).group(1)[:2] in _I_CONTRACTION:  # "I'll", not the informal "i'll"
        reads = _first_letter_capital(reads)
    word = _word(reads, writing)
    if word.kind is not Kind.FREE:
        return _word(token, writing, True)
    return Word(token, word.reads, Kind.FREE, word.markup, shouted=True)


_I_CONTRACTION = ("I'", "I\u2019")


def _shouted_code_read_lower(laid: list[Word]) -> None:
    """In a text written in capitals, kept words of capitals and other characters (``~/.GRADLE/CACHES``,
    ``--PREFER-OFFLINE``) read in lower case, as such words are written: the model dropped the words before them."""
    for index, word in enumerate(laid):
        if word.kind is Kind.KEPT and word.reads.isupper() and not _AROUND.match(word.reads).group(1).isalpha():
            laid[index] = Word(word.text, word.reads.lower(), word.kind, word.markup)


_SENTENCE_STOP = re.compile(r"[.!?][\"'\u2019\u201d)\]]*$")


def _sentence_case(laid: list[Word]) -> None:
    """The shouted words that start a sentence read with a capital ("Please do not park ...")."""
    start = True
    for index, word in enumerate(laid):
        if word.shouted and start:
            laid[index] = Word(word.text, _first_letter_capital(word.reads), word.kind, word.markup, shouted=True)
        if word.text.strip():
            start = bool(_SENTENCE_STOP.search(word.text))


def _aligned(read: list[str], said: list[str]) -> dict[int, int]:
    """Word ``i`` of ``read`` -> word ``j`` of ``said``, where difflib (case ignored) lines them up one for one."""
    matcher = difflib.SequenceMatcher(a=[w.lower() for w in read], b=[w.lower() for w in said], autojunk=False)
    placed = {}
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal" or (tag == "replace" and i2 - i1 == j2 - j1):
            placed.update(zip(range(i1, i2), range(j1, j2), strict=True))
    return placed


def text_apostrophe(text: str) -> str | None:
    """``’`` for a text written with ’ and no ', else None."""
    return CURLY_APOSTROPHE if CURLY_APOSTROPHE in text and "'" not in text else None
