"""Words a corrector rewrote in the other variety of English, put back as they were written.

A writer's British or American spelling is no typo, yet the shipped speller, which learned mostly from American text,
sometimes rewrites a British word it reads ("The colour of the neighbour's car" -> "... the neighbor's car", "My
favourite's the blue one" -> "My favorite's ..."). ``keep_spelling_varieties`` undoes exactly that change: where the
output replaced a word of the source with the same word in the other variety (breame's table of British and American
spellings, about 1,700 pairs: neighbour/neighbor, grey/gray, travelled/traveled, organise/organize, licence/license,
and forms it lacks: amongst/among, whilst/while, learnt/learned; case ignored, piece by piece between hyphens and
apostrophes, so "neighbour's" and "well-organised" count), the source's word comes back as written. A fix of a
misspelled word ("neighbur" -> "neighbor") is kept: the source word is no spelling of either variety. The table's words
are dictionary words for the other text steps too (``classical.shared_word_list``).
"""

from __future__ import annotations

import re

from seq2spec.spelling.classical import WordAlignment, variety_pairs
from seq2spec.spelling.dictionary_words import WORD_CORE, word_groups

# where a word is joined: hyphens and apostrophes (straight or curly), kept as separators
_JOINS = re.compile(r"([-'\u2019])")


def other_variety(written: str, made: str) -> bool:
    """Whether ``made`` is ``written`` with one or more of its pieces (between hyphens and apostrophes) spelled in the
    other variety of English and nothing else changed; punctuation around either word and case are ignored."""
    first, second = (
        _JOINS.split(WORD_CORE.match(word).group(1).lower().replace("\u2019", "'")) for word in (written, made)
    )
    if len(first) != len(second) or first == second:
        return False
    pairs = variety_pairs()
    return all(a == b or (a, b) in pairs for a, b in zip(first, second, strict=True))


def keep_spelling_varieties(source: str, output: str) -> str:
    """``output`` with each word that replaced a word of ``source`` by its spelling in the other variety of English
    (one for one, also within a replaced run of words: ``word_groups``) given back as ``source`` wrote it. The
    output's spacing, punctuation and every other change are kept."""
    aligned = WordAlignment.of(source, output)
    for tag, i1, i2, j1, j2 in aligned.opcodes:
        if tag != "replace":
            continue
        made = [aligned.pieces[index] for index in aligned.words[j1:j2]]
        for (a1, a2), (b1, b2) in word_groups(aligned.sources[i1:i2], made):
            if a2 - a1 == 1 and b2 - b1 == 1:
                written, index = aligned.sources[i1 + a1], aligned.words[j1 + b1]
                made_word = aligned.pieces[index]
                if other_variety(written, made_word):  # the source's word, in the output's punctuation
                    core = WORD_CORE.match(made_word)
                    aligned.pieces[index] = (
                        made_word[: core.start(1)] + WORD_CORE.match(written).group(1) + made_word[core.end(1) :]
                    )
    return aligned.text()


def keep_spelling_varieties_of(sources: list[str], outputs: list[str]) -> list[str]:
    """``keep_spelling_varieties`` over parallel lists."""
    return [keep_spelling_varieties(s, o) for s, o in zip(sources, outputs, strict=True)]
