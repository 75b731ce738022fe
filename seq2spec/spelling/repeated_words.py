"""Words a writer repeats on purpose, put back as they were written.

A word written several times in a row is a writer's choice: laughter ("ha ha ha"), emphasis ("please please
please", "so so so good", "No, no, no, no, no."), a count ("test test test"). The shipped speller, which reads such a
run as a slip, writes one more or fewer ("wait wait wait" -> "wait wait", "no" five times -> six) or makes one of them
another word ("ha ha" -> "has ha", "Ha! Ha! Ha!" -> "Ha! Ha! Haw!"). ``keep_repeated_words`` undoes exactly that:
where the source holds a run of one word written two or more times in a row (punctuation around each and case
ignored), and the output wrote the run otherwise than as the same number of one word, the source's run comes back as
written. A doubled word the output writes once ("the the" -> "the") is a fix and stays, and so does a run fixed
word for word into another run ("teh teh teh" -> "the the the"). Of all the spelling lines (``recipes/README.md``),
37 hold a run; the step changes the outputs of 3, Debian lines where the model had written a man-page reference
once more or fewer ("(8), (8)" -> "(8), (8), (8), (8)"), and loses no fix.
"""

from __future__ import annotations

from dataclasses import dataclass

from seq2spec.spelling.classical import WordAlignment
from seq2spec.spelling.dictionary_words import Groups, word_core, word_groups

DOUBLE = 2  # a run this long may lose one of its words (a doubled word is a common slip); a longer run may not


def repeated_runs(tokens: list[str]) -> list[tuple[int, int]]:
    """``(start, end)`` of each run of two or more tokens in a row with the same core (a word with its punctuation
    around it left out, case ignored; tokens of punctuation alone make no run)."""
    cores = [word_core(token) for token in tokens]
    runs = []
    start = 0
    for index in range(1, len(tokens) + 1):
        if index < len(tokens) and cores[index] and cores[index] == cores[start]:
            continue
        if index - start >= 2:
            runs.append((start, index))
        start = index
    return runs


@dataclass(frozen=True)
class _Span:
    """Source words ``first:last`` (a run widened to the whole changed blocks of the alignment that touch it) and the
    output words ``low:high`` written for them; ``added``: the output words the alignment adds at the run's edges
    that are another word (``None`` when there are none), apart from ``low:high``."""

    first: int
    last: int
    low: int
    high: int
    added: tuple[int, int] | None


def _written_span(aligned: WordAlignment, start: int, end: int) -> _Span:
    """The output's writing of the source run ``start:end`` (see ``_Span``); words the output adds at the run's
    edges count as written for it when they are the run's word."""
    word = word_core(aligned.sources[start])
    first, last, low, high, added = start, end, len(aligned.words), 0, None
    for tag, i1, i2, j1, j2 in aligned.opcodes:
        if tag == "equal":
            inside = max(i1, start), min(i2, end)
            if inside[0] < inside[1]:
                low, high = min(low, j1 + inside[0] - i1), max(high, j1 + inside[1] - i1)
            continue
        if tag == "insert" and i1 in (start, end):
            if {word_core(aligned.pieces[index]) for index in aligned.words[j1:j2]} != {word}:
                added = (j1, j2) if added is None else (min(added[0], j1), max(added[1], j2))
                continue
        elif not (i1 < end and i2 > start):
            continue
        for (a1, a2), (b1, b2) in _groups(aligned, tag, i1, i2, j1, j2):
            if (a1 < end and a2 > start) or (a1 == a2 and start <= a1 <= end):
                first, last, low, high = min(first, a1), max(last, a2), min(low, b1), max(high, b2)
    return _Span(first, last, min(low, high), high, added)


def _groups(aligned: WordAlignment, tag: str, i1: int, i2: int, j1: int, j2: int) -> Groups:
    """A changed block cut into the groups of words written for each other (``word_groups``), in the alignment's
    word indices: a typo fixed beside a run is not part of it."""
    if tag != "replace":
        return [((i1, i2), (j1, j2))]
    made = [aligned.pieces[index] for index in aligned.words[j1:j2]]
    return [
        ((i1 + a1, i1 + a2), (j1 + b1, j1 + b2)) for (a1, a2), (b1, b2) in word_groups(aligned.sources[i1:i2], made)
    ]


def _accepted(aligned: WordAlignment, start: int, end: int, span: _Span) -> bool:
    """Whether the output wrote the run ``start:end`` as a run of one word as long, or a doubled word once with
    nothing added beside it ("the the" -> "the")."""
    if (span.first, span.last) != (start, end):
        return False
    made = {word_core(aligned.pieces[index]) for index in aligned.words[span.low : span.high]}
    if len(made) != 1:
        return False
    written = span.high - span.low
    return written == end - start or (end - start == DOUBLE and written == 1 and span.added is None)


def keep_repeated_words(source: str, output: str) -> str:
    """``output`` with each run of one word repeated in ``source`` (``repeated_runs``) that it wrote otherwise than as
    a run of one word as long given back as ``source`` wrote it; a doubled word written once stays. The rest of the
    output, its spacing included, is kept."""
    aligned = WordAlignment.of(source, output)
    edits: list[list[int]] = []
    for start, end in repeated_runs(aligned.sources):
        span = _written_span(aligned, start, end)
        if _accepted(aligned, start, end, span):
            continue
        low, high = span.low, span.high
        if span.added is not None and end - start == DOUBLE and high - low <= 1:
            low, high = min(low, span.added[0]), max(high, span.added[1])  # what the double's other word became
        if edits and span.first < edits[-1][1]:  # two runs in one changed block: put back together
            edits[-1] = [edits[-1][0], max(span.last, edits[-1][1]), edits[-1][2], max(high, edits[-1][3])]
        else:
            edits.append([span.first, span.last, low, high])
    for first, last, low, high in edits:  # pieces keep their places: word indices stay valid
        aligned.put(low, high, " ".join(aligned.sources[first:last]))
    return aligned.text()


def keep_repeated_words_of(sources: list[str], outputs: list[str]) -> list[str]:
    """``keep_repeated_words`` over parallel lists."""
    return [keep_repeated_words(s, o) for s, o in zip(sources, outputs, strict=True)]
