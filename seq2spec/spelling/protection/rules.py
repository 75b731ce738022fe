"""The rules of what a corrector keeps as written, as one table (``RULES``) that ``Layout.of`` walks, and the
readings it makes of some words (``READINGS``); ``RuleSet`` switches any of them off by name."""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, field

from seq2spec.spelling.protection.phrases import code_spans, foreign_phrase_spans, place_name_spans
from seq2spec.spelling.protection.span_rules import (
    address_abbreviations,
    archaic_pronouns,
    archaic_verbs,
    clinical_abbreviations,
    greetings,
    honorific_names,
    measurement_units,
    name_runs,
    names_within_sentence,
)
from seq2spec.spelling.protection.word_rules import (
    has_symbol_run,
    is_current_word,
    is_informal,
    is_place_name,
    is_quoted_word,
    is_symbols_alone,
    is_technical,
)


@dataclass(frozen=True)
class Rule:
    """A rule of ``RULES``: its ``name``, what it ``keeps``, and how it finds that: among a text's words judged with
    their neighbours (``spans``: the indices kept) or in one word alone (``word``)."""

    name: str
    keeps: str
    spans: Callable[[list[str]], Collection[int]] | None = None
    word: Callable[[str], bool] | None = None


RULES: tuple[Rule, ...] = (
    Rule(
        "names",
        "a capitalised name within a sentence too close to a word for the current words (Matteo)",
        spans=names_within_sentence,
    ),
    Rule("code_spans", "the words between backticks (`git chekout main`)", spans=code_spans),
    Rule(
        "foreign_phrases",
        "a phrase of another language English writes (mens rea, bona fide)",
        spans=foreign_phrase_spans,
    ),
    Rule("place_name_spans", "a place name of several words (La Paz, Dar es Salaam)", spans=place_name_spans),
    Rule("name_runs", "capitalised words no dictionary knows beside each other (Abu Dhabi)", spans=name_runs),
    Rule("honorifics", "a title and the known word after it (Ms Rose, Aunt Bee's)", spans=honorific_names),
    Rule("measurement_units", "a unit or a statistic's count after a number (200 ml, 8 ast)", spans=measurement_units),
    Rule("archaic_pronouns", "the pronoun thee (I thank thee)", spans=archaic_pronouns),
    Rule("archaic_verbs", "old verb forms (goeth, thou sayest)", spans=archaic_verbs),
    Rule("greetings", "a greeting the model takes for a slip (hey dan)", spans=greetings),
    Rule(
        "address_abbreviations",
        "an address abbreviation beside a name or number (Oak Rd, Hwy 9)",
        spans=address_abbreviations,
    ),
    Rule(
        "clinical_abbreviations", "clinical shorthand where two or more meet (po bid prn)", spans=clinical_abbreviations
    ),
    Rule("symbol_runs", "a word writing a symbol twice in a row (A+++)", word=has_symbol_run),
    Rule(
        "technical",
        "numbers, URLs, addresses, handles, paths, flags, identifiers, acronyms, words of software",
        word=is_technical,
    ),
    Rule(
        "informal",
        "chat abbreviations, colloquial spellings, a lower-case i, letters said long (lol, gimme, sooo)",
        word=is_informal,
    ),
    Rule(
        "current_words",
        "words of current English, regional words and loanwords (noob, brekkie, tagine)",
        word=is_current_word,
    ),
    Rule("place_names", "a capitalised place name of one word (Yambol)", word=is_place_name),
    Rule("quoted_words", 'one word in quotes of its own (the word "teh")', word=is_quoted_word),
    Rule("symbols", "a word of symbols alone (#, ->)", word=is_symbols_alone),
)

# what Layout.of reads otherwise than as written, by name
READINGS = {
    "markup": "a word in Markdown emphasis, a link's text or an inline HTML tag read without the markup",
    "broken_words": "a word broken by a hyphen at a line's end read whole, both parts kept as written",
    "shouted": "the words of a text written in capitals read in sentence case and written back in capitals",
    "contractions": "a contraction written without its apostrophe that is no English word read with it (Im, dont)",
}

# the rules and readings of English alone, off for a text in another language (``SpellingSettings.language``): they
# would keep its nouns as names and read the German "im" as "I'm"
ENGLISH_RULES = frozenset(
    {
        "names",
        "foreign_phrases",
        "name_runs",
        "honorifics",
        "archaic_pronouns",
        "archaic_verbs",
        "greetings",
        "address_abbreviations",
        "clinical_abbreviations",
        "informal",
        "current_words",
        "contractions",
    }
)


def rule_names() -> tuple[str, ...]:
    """The names of ``RULES`` and ``READINGS``, in order."""
    return (*(rule.name for rule in RULES), *READINGS)


@dataclass(frozen=True)
class RuleSet:
    """``RULES`` and ``READINGS`` but those named in ``off``."""

    off: frozenset[str] = frozenset()
    _spans: tuple[Rule, ...] = field(init=False, repr=False, compare=False)
    _words: tuple[Rule, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        unknown = sorted(set(self.off) - set(rule_names()))
        if unknown:
            raise ValueError(f"unknown protection rule(s) {unknown}; the rules are: {', '.join(rule_names())}")
        in_force = [rule for rule in RULES if rule.name not in self.off]
        object.__setattr__(self, "_spans", tuple(rule for rule in in_force if rule.spans is not None))
        object.__setattr__(self, "_words", tuple(rule for rule in in_force if rule.word is not None))

    def kept(self, words: list[str]) -> set[int]:
        """The indices of ``words`` (whitespace-free) the span rules in force keep."""
        return {index for rule in self._spans for index in rule.spans(words)}

    def keeps_word(self, word: str) -> bool:
        """Whether a word rule in force keeps ``word`` (whitespace-free)."""
        return any(rule.word(word) for rule in self._words)

    def reads(self, name: str) -> bool:
        """Whether the reading ``name`` of ``READINGS`` is in force."""
        return name not in self.off


ALL_RULES = RuleSet()
