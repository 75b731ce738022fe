"""The rules that keep words as written judged by the words beside them: names, titles, addresses, units, clinical
shorthand, old English, greetings; and words broken in two at a line's end."""

from __future__ import annotations

import re

from seq2spec.spelling.protection.word_lists import WORD_CORE, listed_words, name_words

# the marks that open a quotation, whose first word is capitalised as a sentence's is
_OPENING_QUOTES = "\"'\u201c\u2018\u201e\u201a\u00ab\u00bb"
# the end of a sentence or clause a capital may follow without being a name's: "Done. Matter closed."
_SENTENCE_END = re.compile(r"[.!?:;][\"'\u2019\u201d\u00bb)\]]*$")


def is_name_within_sentence(previous: str, word: str) -> bool:
    """Whether ``word`` (whitespace-free), after ``previous`` within the same sentence, is capitalised and one of
    ``name_words``."""
    core = WORD_CORE.match(word).group(1)
    if not core[:1].isupper() or not core[1:].islower() or _SENTENCE_END.search(previous):
        return False
    if word[:1] in _OPENING_QUOTES:  # a quotation's first word starts a sentence of its own
        return False
    return core.lower() in name_words()


def names_within_sentence(words: list[str]) -> set[int]:
    """The indices of ``words`` (whitespace-free) that ``is_name_within_sentence`` after the word before them."""
    return {index for index in range(1, len(words)) if is_name_within_sentence(words[index - 1], words[index])}


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
HONORIFICS = listed_words("honorifics.txt")


def honorific_names(words: list[str]) -> set[int]:
    """The indices of ``words`` (whitespace-free) that are a capitalised title of ``HONORIFICS`` (``Ms``, ``Dr.``)
    before a capitalised word, and that word where a dictionary knows it (``Rose``, ``Bee's``: a name the model would
    take for the word); a name no dictionary knows stays the model's, typos and all ("Mr. Qbernathy", "Sir Isaqac")."""
    from seq2spec.spelling.classical import is_dictionary_word

    found = set()
    for index in range(len(words) - 1):
        title = _TITLE.fullmatch(words[index])
        name = _POSSESSIVE.sub("", WORD_CORE.match(words[index + 1]).group(1))
        if title and title.group(1).lower() in HONORIFICS and name[:1].isupper() and name[1:].islower():
            found.add(index)
            if is_dictionary_word(name.lower()):
                found.add(index + 1)
    return found


_TITLE = re.compile(r"([A-Z][a-z]+)\.?")
_POSSESSIVE = re.compile(r"['\u2019]s$")


def _capitalised_unknown(word: str) -> bool:
    core = WORD_CORE.match(word).group(1)
    if len(core) < 2 or not core.isalpha() or not core[0].isupper() or not core[1:].islower():
        return False
    from seq2spec.spelling.classical import is_dictionary_word

    return not is_dictionary_word(core.lower())


# the shorthand of clinical notes and prescriptions, kept where a text holds two or more of them ("Take 1 tab po bid
# prn", "Pt c/o SOB x3d, hx of HTN": the speller wrote "pron", "porn", "Put", "his"); alone each may be a slip of a
# word ("po", "pt", "hx"), and is left to the model
CLINICAL_ABBREVIATIONS = listed_words("clinical_abbreviations.txt")
# abbreviations of an address, kept capitalised beside a name or a number ("Oak Rd", "Hwy 9", "Cty Rd 12"; the speller
# wrote "Oak Red", "City Red")
ADDRESS_ABBREVIATIONS = frozenset("apt ave bldg blvd ct cty dr fl fwy hwy ln pkwy pl rd rte sq st ste".split())


def address_abbreviations(words: list[str]) -> set[int]:
    """The indices of ``words`` (whitespace-free) that are ``ADDRESS_ABBREVIATIONS`` capitalised (``Rd``, ``Hwy,``)
    after a capitalised word or a number, or before a number or another such abbreviation."""

    def abbreviation(index: int) -> bool:
        core = WORD_CORE.match(words[index]).group(1)
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
    cores = [WORD_CORE.match(word).group(1).lower() for word in words]
    found = {index for index, core in enumerate(cores) if core in CLINICAL_ABBREVIATIONS}
    return found if len({cores[index] for index in found}) >= 2 else set()


# units of measurement and the counts of sports statistics, in lower case, as they are written after a number ("200
# ml", "3 yd", "5 mls", "8 ast": the speller wrote "200 mil", "3 gd", "5 mod", "8 fast")
MEASUREMENT_UNITS = listed_words("measurement_units.txt")


def measurement_units(words: list[str]) -> set[int]:
    """The indices of ``words`` (whitespace-free) that are ``MEASUREMENT_UNITS`` right after a number."""
    return {
        index
        for index in range(1, len(words))
        if words[index - 1][-1:].isdigit() and WORD_CORE.match(words[index]).group(1).lower() in MEASUREMENT_UNITS
    }


# words a determiner cannot stand before: after "thee" they mark the old pronoun ("I thank thee for", "Get thee to",
# "thee and me"; the speller wrote "the"), not a slip of "the" ("on thee table")
_AFTER_PRONOUN = listed_words("after_pronoun.txt")


def archaic_pronouns(words: list[str]) -> set[int]:
    """The indices of ``words`` (whitespace-free) that are the pronoun "thee": before punctuation, at the end, or
    before one of ``_AFTER_PRONOUN``."""
    found = set()
    for index, word in enumerate(words):
        if WORD_CORE.match(word).group(1).lower() != "thee":
            continue
        following = WORD_CORE.match(words[index + 1]).group(1).lower() if index + 1 < len(words) else ""
        if index + 1 == len(words) or not word[-1].isalpha() or following in _AFTER_PRONOUN:
            found.add(index)
    return found


# verbs whose old forms in -eth and -est scripture, verse and quotations write ("goeth", "giveth", "thou sayest"; the
# speller wrote "youth", "safest", "finest", "guest" for "goest")
_OLD_VERBS = listed_words("old_verbs.txt")


def archaic_verbs(words: list[str]) -> set[int]:
    """The indices of ``words`` (whitespace-free) that are an old form of one of ``_OLD_VERBS``: in -eth or -th
    anywhere ("goeth", "taketh", "seeth"), in -est or -st beside "thou" ("goest thou", "thou sayest", "seest thou")."""
    cores = [WORD_CORE.match(word).group(1) for word in words]
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
        greeting = WORD_CORE.match(word).group(1)
        other = _GREETINGS.get(greeting)
        if other is None:
            continue
        if index + 1 == len(words) or not word[-1].isalpha():
            found.add(index)
            continue
        from seq2spec.spelling.classical import bigram_counts

        following, counts = WORD_CORE.match(words[index + 1]).group(1).lower(), bigram_counts()
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
