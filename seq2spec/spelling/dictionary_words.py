"""Dictionary words a corrector turned into words no dictionary knows, put back as they were written.

A small correction model sometimes garbles a correct word it reads ("Staff" -> "Satuff", "magenta" -> "magental",
"reconditioned" -> "recognitioned"): a word the model copies letter by letter and slips on. No fix is ever of that
shape, a dictionary word made into a word outside the dictionary, so ``keep_dictionary_words`` undoes exactly that
change: where the output replaces source words (words aligned with difflib, case ignored, and a replaced run cut
into words written one for one, split or merged at least cost in letters: ``word_groups``), the source words are
dictionary words and the output's words are not all, the source words come back as written ("Aoife" -> "A boife",
"ne sais" -> "neats" and "in ternet" -> "inteet" too), and so do dictionary words merged into fewer words of other
letters ("a public forum (mailing list" -> "a public formulating list"; a fix keeps their letters: "some thing" ->
"something"); a non-word the output adds between them is left out. A dictionary word the output drops comes back too
("millions of years of evolution" -> "millions of evolution", "and the home crowd" -> "an home crowd"): of the 67 the
model dropped on every spelling set, the reference keeps 65 and fixes 2 (typos dropped beside correct words); a doubled
word written once ("the the" -> "the") stays a fix. A word of letters made into another dictionary word ``WORD_EDITS``
or more edits away comes back too ("cohort" -> "court", "Mr" -> "More"). Every other change the model made is kept:
words fixed into other dictionary words one edit away (real-word errors: "form" -> "from"), typos made into words the
dictionary lacks (names, technical words), words split or merged into dictionary words ("alot" -> "a lot").

The dictionary is the classical checker's (``classical``: symspellpy's English frequency dictionary): a
word is in it when the checker's suggestion for it is the word itself. A token is a dictionary word when every
piece of it between hyphens and apostrophes is (``nomad's``, ``well-known``; numbers and single letters count as
known); punctuation around it is ignored. Measured on the shipped speller's two held-out sets (``recipes/README.md``):
correct words broken 0.62% -> 0.39% and 0.39% -> 0.36%, clean sentences left unchanged 95.0% -> 97.0% and 95.0% ->
95.5%, no typo fix lost. With ``unknown``, the same holds for words no dictionary knows, and a capitalised one (a
name) made into a dictionary word ``NAME_EDITS`` or more edits away comes back too ("Siobhan" -> "Song").
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache

from seq2spec.spelling.classical import WordAlignment, word_counts
from seq2spec.spelling.protection.word_rules import is_technical

# a word's core: the punctuation around it (quotes, brackets, the marks that end a clause) left out
WORD_CORE = re.compile(r"^[^0-9A-Za-z\u00c0-\uffff]*(.*?)[^0-9A-Za-z\u00c0-\uffff]*$", re.DOTALL)
_JOINS = re.compile(r"[-'\u2019]")
# an English contraction's ending: didn't, we're, I'll, she'd (the dictionary knows "did", not "didn")
_CONTRACTION = re.compile(r"(n?)['\u2019](t|s|d|m|ll|ve|re)$", re.IGNORECASE)


def dictionary_checker(correct_word: Callable[[str], str | None] | None = None) -> Callable[[str], bool]:
    """Whether a lower-case word is in the dictionary of ``correct_word``, that is whether its suggestion for the word
    is the word itself; by default whether symspellpy's dictionary or pyspellchecker's larger word list knows it."""
    if correct_word is None:
        from seq2spec.spelling.classical import is_dictionary_word

        return is_dictionary_word
    return lambda word: correct_word(word) == word


def is_dictionary_token(token: str, is_word: Callable[[str], bool]) -> bool:
    """Whether every piece of ``token`` (punctuation around it stripped, a contraction's ending too, cut at hyphens
    and apostrophes) is a number, a single letter or a dictionary word; a token of punctuation alone counts as
    known."""
    core = WORD_CORE.match(token).group(1)
    contraction = _CONTRACTION.search(core)
    if contraction:  # "didn't" is known when "did" is, "can't" when "can" is
        stem = core[: contraction.start()]
        if len(stem) == 1 and stem.lower() != "i":  # "y'll" is no contraction ("I'll" is)
            return False
        if contraction.group(2).lower() == "m" and stem.lower() != "i":  # "I'm" is the only one ("it'm" is none)
            return False
        with_n = stem + contraction.group(1)
        core = stem if stem and is_word(stem.lower()) else with_n
    for piece in _JOINS.split(core):
        if not piece or piece.isdigit():
            continue
        if not piece.isalpha():
            return False
        if len(piece) > 1 and not is_word(piece.lower()):
            return False
    return True


def keep_dictionary_words(
    source: str, output: str, is_word: Callable[[str], bool], *, dictionary: bool = True, unknown: bool = False
) -> str:
    """``output`` with the words that replaced words of ``source`` (one for one, split or merged: ``word_groups``)
    and are not all dictionary words given back as ``source`` wrote them, when those are dictionary words
    (``dictionary``) or are not (``unknown``: a name or term the model changed into another word no dictionary knows;
    a capitalised one made into a distant dictionary word too). With both, a non-word the output adds is left out.
    With ``dictionary``, a dictionary word the output drops comes back (``_keep_dropped``). Words around a technical
    token that the output split or merged are protection's. The output's spacing is kept."""
    aligned = WordAlignment.of(source, output)
    for tag, i1, i2, j1, j2 in aligned.opcodes:
        if tag == "equal":
            continue
        if i2 - i1 != j2 - j1 and any(is_technical(word) for word in aligned.sources[i1:i2]):
            continue  # protection puts a kept word back where it can, or else decodes the words around it alone
        made = [aligned.pieces[index] for index in aligned.words[j1:j2]]
        # marks alone in the block (kept by protection, which notices those the output moved): its words are not put
        # back one by one
        marks_alone = any(not any(c.isalnum() for c in word) for word in aligned.sources[i1:i2])
        for (a1, a2), (b1, b2) in _with_drops_merged(aligned.sources[i1:i2], made):
            if a2 > a1 and b2 > b1:
                _keep_group(aligned, i1 + a1, i1 + a2, j1 + b1, j1 + b2, is_word, dictionary, unknown)
            elif b2 > b1 and dictionary and unknown:
                _drop_new_non_words(aligned, j1 + b1, j1 + b2, is_word)
            elif a2 > a1 and dictionary and not marks_alone:
                _keep_dropped(aligned, i1 + a1, i1 + a2, j1 + b1, is_word)
    return aligned.text()


Groups = list[tuple[tuple[int, int], tuple[int, int]]]


def _with_drops_merged(sources: list[str], outputs: list[str]) -> Groups:
    """``word_groups`` of a changed block, where a source word written as nothing right after (or before) one of the
    commonest words that the output changed joins that word's group: "and the" -> "an" is a merge of two words into
    another, which a tie in letters cost had cut into "and" -> "an" and "the" dropped ("mani web" -> "many" is a typo
    fixed and a word dropped)."""
    groups = word_groups(sources, outputs) if sources and outputs else [((0, len(sources)), (0, len(outputs)))]

    def changed_common(i: int, j: int) -> bool:
        return sources[i].lower() != outputs[j].lower() and _is_common(sources[i])

    merged: Groups = []
    for (a1, a2), (b1, b2) in groups:
        if merged and b2 == b1 and merged[-1][1][0] == merged[-1][1][1]:  # words dropped in a row: one drop
            merged[-1] = ((merged[-1][0][0], a2), (b1, b2))
            continue
        if merged and a2 - a1 == 1 and b2 == b1:
            (p1, p2), (q1, q2) = merged[-1]
            if p2 - p1 == 1 and q2 - q1 == 1 and changed_common(p1, q1):
                merged[-1] = ((p1, a2), (q1, q2))
                continue
        if merged and b2 - b1 == 1 and a2 - a1 == 1:
            (p1, p2), (q1, q2) = merged[-1]
            if p2 - p1 == 1 and q2 == q1 and changed_common(a1, b1):
                merged[-1] = ((p1, a2), (q1, b2))
                continue
        merged.append(((a1, a2), (b1, b2)))
    return merged


# a word at least this frequent in symspellpy's counts is among about the 1,000 commonest ("and" 2nd, "port" 996th;
# "mani" is 25,822nd)
COMMON_COUNT = 77_000_000


def _is_common(word: str) -> bool:
    return word_counts().get(word_core(word), 0) >= COMMON_COUNT


def _keep_dropped(aligned: WordAlignment, i1: int, i2: int, j: int, is_word: Callable[[str], bool]) -> None:
    """Source words ``i1:i2``, which the output left out before its word ``j``, given back where they are dictionary
    words: no fix drops a correct word (of the 67 the model dropped on every spelling set, the reference drops none:
    "of millions of years of evolution" -> "of millions of evolution", "web browser" -> "browser"). A doubled word
    written once ("the the" -> "the") stays a fix."""
    dropped = aligned.sources[i1:i2]
    if not all(is_dictionary_token(word, is_word) for word in dropped):
        return
    if len(dropped) == 1:
        beside = [aligned.sources[k] for k in (i1 - 1, i2) if 0 <= k < len(aligned.sources)]
        if any(word_core(word) == word_core(dropped[0]) for word in beside):
            return
    aligned.put(j, j, " ".join(dropped))


def word_core(token: str) -> str:
    """A token's word in lower case, the punctuation around it left out ("Ha!" -> "ha")."""
    return WORD_CORE.match(token).group(1).lower()


def _drop_new_non_words(aligned: WordAlignment, j1: int, j2: int, is_word: Callable[[str], bool]) -> None:
    """The output's words ``j1:j2``, which stand for no source word, left out where no dictionary knows them (the
    model added "telesi" to "te reo"): no fix adds a non-word."""
    for j in range(j1, j2):
        index = aligned.words[j]
        if is_dictionary_token(aligned.pieces[index], is_word):
            continue
        aligned.pieces[index] = ""
        if index > 0:
            aligned.pieces[index - 1] = ""  # the whitespace before it
        elif index + 1 < len(aligned.pieces):
            aligned.pieces[index + 1] = ""


def _keep_group(
    aligned: WordAlignment,
    i1: int,
    i2: int,
    j1: int,
    j2: int,
    is_word: Callable[[str], bool],
    dictionary: bool,
    unknown: bool,
) -> None:
    """Source words ``i1:i2``, which the output wrote as its words ``j1:j2`` (one for one, split or merged), given
    back as written where the output made a new word no dictionary knows of them ("Staff" -> "Satuff", "Aoife" ->
    "A boife", "ne sais" -> "neats"); a fix gives dictionary words ("alot" -> "a lot")."""
    written = aligned.sources[i1:i2]
    seen = {word.lower() for word in written} if i2 - i1 != j2 - j1 else set()
    made = [aligned.pieces[index] for index in aligned.words[j1:j2]]
    known = all(is_dictionary_token(word, is_word) for word in written)
    if all(is_dictionary_token(word, is_word) or word.lower() in seen for word in made):
        if not (
            known and dictionary and (_merged_into_another(written, made) or _word_made_another(written, made))
        ) and (known or not unknown or not _name_made_a_word(written, made)):
            return
    elif not ((known and dictionary) or (not known and unknown)):
        return
    aligned.put(j1, j2, " ".join(written))


def _merged_into_another(written: list[str], made: list[str]) -> bool:
    """Whether words were merged into fewer words of other letters ("a public forum (mailing list" -> "a public
    formulating list"); a merge that fixes words keeps their letters ("some thing" -> "something")."""

    def letters(words: list[str]) -> str:
        return "".join(character.lower() for word in words for character in word if character.isalnum())

    return len(made) < len(written) and letters(made) != letters(written)


# a dictionary word of letters alone that a corrector made into another this many edits away or more was no real-word
# error: of the 6,520 spelling lines' outputs all 6 such changes were wrong ("Mr" -> "More", "Fifth" -> "Floor",
# "honoree" -> "honor", "hex" -> "and"), and so were "cohort" -> "court", "from" -> "is" and "noah" -> "not" in text
# as people write it; real-word errors one edit away ("form" -> "from", "then" -> "than") stay the model's
WORD_EDITS = 2


def _word_made_another(written: list[str], made: list[str]) -> bool:
    """Whether one word of letters alone was made into another ``WORD_EDITS`` or more edits away."""
    pair = _one_for_one(written, made)
    if pair is None or not (pair[0].isalpha() and pair[1].isalpha()) or pair[0] == pair[1]:
        return False
    return edit_distance("DAMERAU_OSA")(*pair, WORD_EDITS - 1) < 0


def _one_for_one(written: list[str], made: list[str]) -> tuple[str, str] | None:
    """The cores of one word written and the one word made of it, in lower case; None for other groups."""
    if len(written) != 1 or len(made) != 1:
        return None
    return WORD_CORE.match(written[0]).group(1).lower(), WORD_CORE.match(made[0]).group(1).lower()


# a capitalised word no dictionary knows (a name) that a corrector made into a dictionary word this many edits away or
# more was no typo: on the spelling sets all 5 such changes were wrong ("Siobhan" -> "Song", "Rahman" -> "Rain", "Aran"
# -> "Arrange"), and 2 of 7 two edits away were right
NAME_EDITS = 3


def _name_made_a_word(written: list[str], made: list[str]) -> bool:
    """Whether one capitalised word was made into one dictionary word ``NAME_EDITS`` or more edits away."""
    pair = _one_for_one(written, made)
    if pair is None or not written[0][:1].isupper():
        return False
    return edit_distance("DAMERAU_OSA")(*pair, NAME_EDITS - 1) < 0


@cache
def edit_distance(algorithm: str) -> Callable[[str, str, int], int]:
    """symspellpy's edit distance by ``algorithm``'s name: ``(a, b, most) -> distance``, -1 when over ``most``."""
    from symspellpy.editdistance import DistanceAlgorithm, EditDistance

    return EditDistance(getattr(DistanceAlgorithm, algorithm)).compare


# the groups a replaced run of words is cut into: (source words, output words)
_GROUP_SIZES = ((1, 1), (1, 2), (2, 1), (1, 3), (3, 1), (2, 2), (1, 0), (0, 1))
_REGROUPED_COST = 1  # a split or merge costs as much as a changed letter, so one for one is preferred on a tie


def word_groups(sources: list[str], outputs: list[str]) -> Groups:
    """``sources`` and the ``outputs`` a corrector wrote for them, cut into groups at least cost: words written one
    for one, split, merged, dropped or added, the cost of a group the edits between its letters (spaces and case
    ignored). Each group is ``((start, end) in sources, (start, end) in outputs)``, in order."""
    distance = edit_distance("LEVENSHTEIN")
    n, m = len(sources), len(outputs)
    best: dict[tuple[int, int], tuple[float, tuple[int, int] | None]] = {(0, 0): (0.0, None)}
    for i in range(n + 1):
        for j in range(m + 1):
            if (i, j) == (0, 0):
                continue
            options = []
            for a, b in _GROUP_SIZES:
                if a <= i and b <= j and (i - a, j - b) in best:
                    left = "".join(sources[i - a : i]).lower()
                    right = "".join(outputs[j - b : j]).lower()
                    cost = distance(left, right, max(len(left), len(right)) + 1)
                    cost += _REGROUPED_COST if a != b else 0
                    options.append((best[(i - a, j - b)][0] + cost, (a, b)))
            if options:
                best[(i, j)] = min(options)
    groups = []
    i, j = n, m
    while (i, j) != (0, 0):
        a, b = best[(i, j)][1]
        groups.append(((i - a, i), (j - b, j)))
        i, j = i - a, j - b
    return groups[::-1]


def keep_dictionary_words_of(
    sources: list[str],
    outputs: list[str],
    is_word: Callable[[str], bool] | None = None,
    *,
    dictionary: bool = True,
    unknown: bool = False,
) -> list[str]:
    """``keep_dictionary_words`` over parallel lists (``is_word`` defaults to the symspellpy dictionary's)."""
    if is_word is None:
        is_word = dictionary_checker()
    return [
        keep_dictionary_words(s, o, is_word, dictionary=dictionary, unknown=unknown)
        for s, o in zip(sources, outputs, strict=True)
    ]
