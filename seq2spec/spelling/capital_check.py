"""Capitalised words a corrector left as non-words, given their dictionary neighbour when the corrector itself scores
that nearly as high as its own output.

The shipped speller learned from text where most capitalised words it does not know are names, which it copies. Even
with ``fold_capitals`` (the word read in lower case) it leaves some capitalised typos as they are ("Lnog ago",
"Englanx") or makes them into other non-words ("Erosiin" -> "Erosin"), while a word-by-word checker would fix them,
and would also turn real names into words ("Xen" -> "Men", "Falcot" -> "Falcon"). ``CapitalCheck`` lets the model
decide: for each capitalised word of the text that the dictionary does not know, whose output word is not a
dictionary word either, and which has a dictionary word one edit away, it scores the model's own output and the same
output with that dictionary word in the word's place (the model's log-probability of each, teacher-forced on the
text it read) and takes the dictionary word when its score is at most ``margin`` nats below the output's, or
``initial_margin`` nats for a word that starts a sentence, whose capital says nothing of its being a name, and for a
slip of a month's or weekday's name (``capitals.is_calendar_slip``), written capitalised as the name is ("Thrusday",
"Agust"). Names the model is sure of stay; typos it merely copied get fixed.

The same check serves lower-case words (``lower_margin``; ``correct(check_words=True)``): in text unlike its
training sentences (technical prose) the speller copies plain typos too ("mempry", "gatway"). Turned round, it
guards against the model's slips between real words (``revert_margin``; ``correct(check_changes=True)``): where the
model changed a dictionary word of the text into another ("odor" -> "door", "hum" -> "him"), the text's word comes
back when the model scores it within that margin of its own output; a fix it is sure of ("form" -> "from") stays.
So does a command or file format beside another technical word (``protection.technical_in_context``: "run sed on
the yaml file", where the model wrote "used"), which no word check changes where the model copied it; "thd" for
"the" beside "cron" is a slip the model is sure of.

A non-word the model made into a dictionary word two or more edits away while another dictionary word is one edit
away ("pasport" -> "pastor", "motnh" -> "mouth", "chalenge" -> "change") gets that nearer word when the model scores
it within ``nearer_margin`` nats of its own output (``correct(check_nearer_words=True)``): the model decodes greedily,
and a word it would score nearly as high, one letter from the text, is the likelier fix. Where the model's word is
one edit from the non-word too, but another such word goes with the words beside it ``CONTEXT_RATIO`` times as often
or more in symspellpy's bigram counts ("went hom" -> "went him", where "went home" is common), that word is weighed
the same way, within ``context_margin`` nats (``correct(check_context_words=True)``).

The result is no longer the model's greedy output for those words: like the other text steps it is off for models
other than the shipped speller unless asked for (``correct(check_capitals=True)``). The default margins, 6.5 nats
within a sentence and 11 at its start, were chosen on the speller's validation sentences (outside both evaluation
sets, ``recipes/README.md``) as the pair that fixed the most typos net of the correct words it broke; the lower-case
change and nearer-word margins, 4 (12 for a word of five letters or more), 5 and 6, likewise by
``recipes/tune_text_steps.py``, a broken word counted twice (4 and 8 for the nearer word fixed one and two typos more
of 2,400 lines, none broken: 6 between them).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from seq2spec.spelling.capitals import is_calendar_slip
from seq2spec.spelling.classical import (
    WHITESPACE,
    WORD_TOKEN,
    WordAlignment,
    apply_case,
    case_pattern,
    context_count,
    one_edit_words,
)
from seq2spec.spelling.dictionary_words import NAME_EDITS, dictionary_checker, edit_distance
from seq2spec.spelling.protection.word_rules import technical_in_context
from seq2spec.spelling.settings import DEFAULT_INITIAL_MARGIN, DEFAULT_MARGIN

# a word that ends a sentence: its last letters followed by . ! or ?, then any closing quotes or brackets
_SENTENCE_END = re.compile(r"[.!?][\"'\u2019\u201d)\]]*$")

# a dictionary word one edit from a non-word goes this many times as often with the words beside it as the model's
# own choice (also one edit away) before it is weighed against that choice
CONTEXT_RATIO = 3.0

# a lower-case word of this many letters or more, one edit from a dictionary word, is a typo more often than a name
# or a term: it takes the long-word margin
LONG_WORD_LETTERS = 5

# (texts the model read, outputs to score) -> the model's log-probability of each output
Scorer = Callable[[list[str], list[str]], list[float]]


@dataclass(frozen=True)
class Candidate:
    """In text ``text``'s output, the word at ``pieces[piece]`` (of ``WordAlignment.pieces``) could be
    ``replacement``; ``initial``: the word starts a sentence of the text as written; ``lower``: it is written in
    lower case there; ``revert``: the replacement is the text's own word, which the model changed into another
    dictionary word; ``letters``: the length of the text's word; ``calendar``: the replacement is a month's or
    weekday's name; ``nearer``: the replacement is a dictionary word nearer the text's word than the model's;
    ``context``: the replacement is as near as the model's word and goes with the words beside it far more often."""

    text: int
    piece: int
    replacement: str
    initial: bool = False
    lower: bool = False
    revert: bool = False
    letters: int = 0
    calendar: bool = False
    nearer: bool = False
    context: bool = False


def _words(text: str) -> list[str]:
    return [token for token in WHITESPACE.split(text) if token and not token.isspace()]


def candidates(
    originals: Sequence[str],
    inputs: Sequence[str],
    outputs: Sequence[str],
    correct_word: Callable[[str], str | None],
    cases: tuple[str, ...] = ("title",),
    is_word: Callable[[str], bool] | None = None,
) -> tuple[list[WordAlignment], list[Candidate]]:
    """The words worth a second look, with each output's word alignment to its input.

    ``originals[i]``: text ``i`` as written; ``inputs[i]``: as the model read it (``fold_capitals`` changes only
    the case of some words, so its words line up with the original's); ``outputs[i]``: the model's output. A
    candidate is an output word aligned one for one with an input word that is capitalised in the original, not in
    the dictionary but one edit from a dictionary word (``correct_word``'s suggestion), when the output word is not
    that suggestion and is not a dictionary word itself (a word the model chose from the dictionary stays). A word
    starts a sentence when it is the text's first or the word before it ends in ".", "!" or "?". ``cases``: the
    case patterns of the words looked at (``"title"``, ``"lower"``); with ``"revert"``, an output word that replaced
    a dictionary word of the text with another dictionary word is a candidate too, the text's word its
    replacement; with ``"nearer"``, one that replaced a non-word with a dictionary word two or more edits from it,
    ``correct_word``'s suggestion its replacement; with ``"context"``, one that replaced a non-word with a dictionary
    word one edit from it while another such word goes with its neighbours far more often (``_likelier_in_context``),
    that word its replacement. ``is_word`` says which lower-case words are known (default: those
    ``correct_word`` leaves as they are); a known word is never a non-word to check."""
    if is_word is None:
        is_word = dictionary_checker(correct_word)
    alignments, found = [], []
    for index, (original, written, output) in enumerate(zip(originals, inputs, outputs, strict=True)):
        aligned = WordAlignment.of(written, output)
        alignments.append(aligned)
        original_words = _words(original)
        if len(original_words) != len(aligned.sources):  # not the same words: nothing to line up
            continue
        technical = technical_in_context(original_words)
        for tag, i1, i2, j1, j2 in aligned.opcodes:
            if tag == "equal" or (tag == "replace" and i2 - i1 == j2 - j1):
                for i, j in zip(range(i1, i2), range(j1, j2), strict=True):
                    written, said = original_words[i], aligned.pieces[aligned.words[j]]
                    initial = i == 0 or _SENTENCE_END.search(original_words[i - 1]) is not None
                    if i in technical:  # "sed" beside "yaml": the text's word unless the model is sure of its own
                        kept = _written_back(written, said) if "revert" in cases else None
                        if kept is not None:
                            found.append(Candidate(index, aligned.words[j], kept, initial, revert=True))
                        continue
                    candidate = _candidate(written, said, correct_word, cases, is_word, initial)
                    if candidate is not None:
                        core = WORD_TOKEN.match(written).group(2)
                        lowered = case_pattern(core) == "lower"
                        calendar = is_calendar_slip(core, WORD_TOKEN.match(candidate).group(2).lower())
                        found.append(
                            Candidate(
                                index,
                                aligned.words[j],
                                candidate,
                                initial,
                                lowered,
                                letters=len(core),
                                calendar=calendar,
                            )
                        )
                    elif tag == "replace":
                        changed = _changed_word(written, aligned, j, cases, correct_word, is_word)
                        if changed is not None:
                            word, kind = changed
                            found.append(Candidate(index, aligned.words[j], word, initial, **{kind: True}))
    return alignments, found


def _changed_word(
    written: str,
    aligned: WordAlignment,
    j: int,
    cases: tuple[str, ...],
    correct_word: Callable[[str], str | None],
    is_word: Callable[[str], bool],
) -> tuple[str, str] | None:
    """For the output's ``j``-th word, which replaced the text's word ``written``: the word to weigh in its place and
    its kind (the ``Candidate`` field), the first of the text's own word (``revert``), the nearer word (``nearer``)
    and the word likelier beside its neighbours (``context``) that ``cases`` asks for and that applies."""
    said = aligned.pieces[aligned.words[j]]
    if "revert" in cases and (kept := _kept_word(written, said, is_word)) is not None:
        return kept, "revert"
    if "nearer" in cases and (nearer := _nearer_word(written, said, correct_word, is_word)) is not None:
        return nearer, "nearer"
    if "context" in cases:
        likelier = _likelier_in_context(written, said, *_neighbours(aligned, j), is_word)
        if likelier is not None:
            return likelier, "context"
    return None


def _kept_word(original: str, said: str, is_word: Callable[[str], bool]) -> str | None:
    """``said`` with the text's word back in its place, where both are plain known words that differ."""
    kept = _written_back(original, said)
    if kept is None:
        return None
    core, word = WORD_TOKEN.match(original).group(2), WORD_TOKEN.match(said).group(2)
    return kept if is_word(core.lower()) and is_word(word.lower()) else None


def _nearer_word(
    original: str, said: str, correct_word: Callable[[str], str | None], is_word: Callable[[str], bool]
) -> str | None:
    """``said`` with the dictionary word one edit from the text's non-word in its place, where the model wrote a
    dictionary word two or more edits from it; in ``said``'s case."""
    source, output = WORD_TOKEN.match(original), WORD_TOKEN.match(said)
    if source is None or output is None:
        return None
    core, word = source.group(2).lower(), output.group(2).lower()
    if len(core) < 2 or not core.isalpha() or is_word(core) or not is_word(word):
        return None
    suggestion = correct_word(core)
    if not suggestion or suggestion in (core, word) or edit_distance("DAMERAU_OSA")(core, word, 1) >= 0:
        return None
    if source.group(2)[:1].isupper() and edit_distance("DAMERAU_OSA")(core, word, NAME_EDITS - 1) < 0:
        return None  # a capitalised word made into one this far: keep_unknown_words gives the name back ("Qt")
    return output.group(1) + apply_case(suggestion, case_pattern(output.group(2)) or "lower") + output.group(3)


def _likelier_in_context(
    original: str, said: str, previous: str | None, following: str | None, is_word: Callable[[str], bool]
) -> str | None:
    """``said`` with another dictionary word one edit from the text's non-word in its place, where the model wrote
    one such word and the other goes with the words beside it ``CONTEXT_RATIO`` times as often or more
    (``context_count``), as often or more on each side, and on one side is common where the model's word is too rare
    to count ("went hom" -> "went him", where "went home" is common); in ``said``'s case."""
    source, output = WORD_TOKEN.match(original), WORD_TOKEN.match(said)
    if source is None or output is None:
        return None
    core, word = source.group(2).lower(), output.group(2).lower()
    if len(core) < 2 or is_word(core) or not is_word(word) or core == word:
        return None
    if edit_distance("DAMERAU_OSA")(core, word, 1) != 1:
        return None
    before = previous if not output.group(1) else None
    after = following if not output.group(3) else None
    if before is None and after is None:
        return None
    own = context_count(before, word, None), context_count(None, word, after)
    best, best_count = None, 0
    for other in one_edit_words(core):  # most frequent first: the first of equal counts
        if other == word:
            continue
        counts = context_count(before, other, None), context_count(None, other, after)
        if any(count < mine for count, mine in zip(counts, own, strict=True)):
            continue  # rarer on one side than the model's word
        if not any(mine == 0 < count for count, mine in zip(counts, own, strict=True)):
            continue  # the model's word is common beside both its neighbours
        if sum(counts) >= CONTEXT_RATIO * max(sum(own), 1) and sum(counts) > best_count:
            best, best_count = other, sum(counts)
    if best is None:
        return None
    return output.group(1) + apply_case(best, case_pattern(output.group(2)) or "lower") + output.group(3)


def _neighbours(aligned: WordAlignment, j: int) -> tuple[str | None, str | None]:
    """The output's words before and after its ``j``-th, each in lower case where it is a plain word joined to it
    by nothing but a space (no punctuation between them), else None."""

    def plain(k: int, leading: bool) -> str | None:
        if not 0 <= k < len(aligned.words):
            return None
        match = WORD_TOKEN.match(aligned.pieces[aligned.words[k]])
        if match is None or match.group(1 if leading else 3):
            return None
        return match.group(2).lower()

    return plain(j - 1, leading=False), plain(j + 1, leading=True)


def _written_back(original: str, said: str) -> str | None:
    """``said`` with the text's word back in its place, where the model changed it."""
    source, output = WORD_TOKEN.match(original), WORD_TOKEN.match(said)
    if source is None or output is None or source.group(2).lower() == output.group(2).lower():
        return None
    return output.group(1) + source.group(2) + output.group(3)


def _candidate(
    original: str,
    written: str,
    correct_word: Callable[[str], str | None],
    cases: tuple[str, ...],
    is_word: Callable[[str], bool],
    initial: bool = False,
) -> str | None:
    source, output = WORD_TOKEN.match(original), WORD_TOKEN.match(written)
    if source is None or output is None:
        return None
    core = source.group(2)
    if len(core) < 2 or case_pattern(core) not in cases:
        return None
    suggestion = correct_word(core.lower())
    if not suggestion or suggestion == core.lower() or is_word(core.lower()):
        return None
    before, word, after = output.groups()
    lower = word.lower()
    if lower == suggestion or (lower != core.lower() and is_word(lower)):
        return None
    case = case_pattern(word) or "lower"
    if case_pattern(core) == "lower" and not initial:  # a word written in lower case within a sentence stays so (the
        case = "lower"  # speller wrote "Qry" for "evrey" after "crème brûlée": "every", not "Every")
    return before + apply_case(suggestion, case) + after


class CapitalCheck:
    """``check(originals, inputs, outputs)``: the outputs with the candidates (see ``candidates``) the model scores
    within ``margin`` nats of its own output (``initial_margin`` for a word that starts a sentence or a slip of a
    month's or weekday's name, ``lower_margin`` for a word in lower case, ``revert_margin`` for a changed dictionary
    word, ``nearer_margin`` for a nearer word, ``context_margin`` for a word likelier beside its neighbours) replaced
    by their dictionary word. ``margin`` None: capitalised words are not checked; ``lower_margin``,
    ``revert_margin``, ``nearer_margin``, ``context_margin`` None: neither are those."""

    def __init__(
        self,
        score: Scorer,
        margin: float | None = DEFAULT_MARGIN,
        correct_word: Callable[[str], str | None] | None = None,
        initial_margin: float = DEFAULT_INITIAL_MARGIN,
        lower_margin: float | None = None,
        revert_margin: float | None = None,
        long_lower_margin: float | None = None,
        is_word: Callable[[str], bool] | None = None,
        nearer_margin: float | None = None,
        context_margin: float | None = None,
    ) -> None:
        margins = [("margin", margin), ("initial_margin", initial_margin), ("lower_margin", lower_margin)]
        margins += [("revert_margin", revert_margin), ("long_lower_margin", long_lower_margin)]
        margins += [("nearer_margin", nearer_margin), ("context_margin", context_margin)]
        for name, value in margins:
            if value is None and name != "initial_margin":
                continue
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not value >= 0:
                raise ValueError(f"{name} must be a number of nats >= 0, got {value!r}")
        if correct_word is None:
            from seq2spec.spelling.classical import shared_symspell_corrector

            correct_word = shared_symspell_corrector(max_edit_distance=1)
            is_word = dictionary_checker() if is_word is None else is_word  # symspellpy's words and pyspellchecker's
        self.is_word = is_word if is_word is not None else dictionary_checker(correct_word)
        self.score = score
        self.margin = margin
        self.initial_margin = initial_margin
        self.lower_margin = lower_margin
        self.revert_margin = revert_margin
        self.nearer_margin = nearer_margin
        self.context_margin = context_margin
        self.long_lower_margin = long_lower_margin if long_lower_margin is not None else lower_margin
        self.correct_word = correct_word

    def __call__(self, originals: Sequence[str], inputs: Sequence[str], outputs: Sequence[str]) -> list[str]:
        margins = {"title": self.margin, "lower": self.lower_margin, "revert": self.revert_margin}
        margins["nearer"], margins["context"] = self.nearer_margin, self.context_margin
        cases = tuple(case for case, margin in margins.items() if margin is not None)
        alignments, found = candidates(originals, inputs, outputs, self.correct_word, cases, self.is_word)
        if not found:
            return list(outputs)
        replaced = []
        for candidate in found:
            pieces = list(alignments[candidate.text].pieces)
            pieces[candidate.piece] = candidate.replacement
            replaced.append("".join(pieces))
        # each text's own output scored once, however many candidates it has
        pairs = sorted(
            {(inputs[c.text], outputs[c.text]) for c in found}
            | set(zip((inputs[c.text] for c in found), replaced, strict=True))
        )
        scores = dict(zip(pairs, self.score([p[0] for p in pairs], [p[1] for p in pairs]), strict=True))
        for candidate, other in zip(found, replaced, strict=True):
            source = inputs[candidate.text]
            margin = self.margin_of(candidate)
            if scores[source, other] >= scores[source, outputs[candidate.text]] - margin:
                alignments[candidate.text].pieces[candidate.piece] = candidate.replacement
        results = list(outputs)
        for index in {c.text for c in found}:
            results[index] = alignments[index].text()
        return results

    def margin_of(self, candidate: Candidate) -> float:
        if candidate.revert:
            return self.revert_margin
        if candidate.nearer:
            return self.nearer_margin
        if candidate.context:
            return self.context_margin
        if candidate.lower:
            return self.long_lower_margin if candidate.letters >= LONG_WORD_LETTERS else self.lower_margin
        return self.initial_margin if candidate.initial or candidate.calendar else self.margin


def output_scorer(
    model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, prefix: str | None = None, batch_size: int = 16
) -> Scorer:
    """The log-probability ``model`` gives each output after reading its text (``prefix`` prepended, as ``correct``
    prepends it), its tokens teacher-forced, summed in float32; texts longer than the model's input limit keep their
    first tokens. Each distinct text is encoded once for all the outputs scored against it."""
    limit = getattr(tokenizer, "model_max_length", None)
    limit = limit if isinstance(limit, int) and 0 < limit < 1_000_000 else None

    def score(texts: list[str], outputs: list[str]) -> list[float]:
        if len(texts) != len(outputs):
            raise ValueError(f"{len(texts)} texts for {len(outputs)} outputs")
        owners: dict[str, list[int]] = {}
        for index, text in enumerate(texts):
            owners.setdefault(text, []).append(index)
        sources = sorted(owners, key=lambda text: (len(text), text))  # batches of similar lengths: less padding
        scores = [0.0] * len(texts)
        for start in range(0, len(sources), batch_size):
            chunk = sources[start : start + batch_size]
            encoded = tokenizer(
                [(prefix or "") + text for text in chunk],
                return_tensors="pt",
                padding=True,
                truncation=limit is not None,
                max_length=limit,
            ).to(model.device)
            members = [(row, index) for row, text in enumerate(chunk) for index in owners[text]]
            rows = torch.tensor([row for row, _ in members], device=model.device)
            labels = tokenizer([outputs[index] for _, index in members], return_tensors="pt", padding=True).input_ids
            labels = labels.to(model.device)
            labels[labels == tokenizer.pad_token_id] = -100
            with torch.inference_mode():
                states = model.get_encoder()(**encoded).last_hidden_state
                logits = model(
                    encoder_outputs=(states.index_select(0, rows),),
                    attention_mask=encoded["attention_mask"].index_select(0, rows),
                    labels=labels,
                ).logits
            logprobs = logits.float().log_softmax(dim=-1)
            picked = logprobs.gather(2, labels.clamp(min=0).unsqueeze(-1)).squeeze(-1)
            for (_, index), value in zip(members, (picked * (labels != -100)).sum(dim=1).tolist(), strict=True):
                scores[index] = value
        return scores

    return score
