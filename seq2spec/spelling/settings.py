"""``SpellingSettings``: the one list of text steps ``Seq2SeqSpeculator.correct`` takes around a correction model.

A model carries the settings it was made for (``model.seq2spec_spelling``, set by the shipped speller's loader:
``seq2spec.default_models.SPELLER_SETTINGS``), as a shipped draft carries its speculation options; every other model
gets the defaults. The commands derive their flags from the fields and their help texts.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from typing import Any

from seq2spec.spelling.protection import RuleSet

# the capital check's margins (seq2spec.spelling.capital_check), nats below the model's own output
DEFAULT_MARGIN = 6.5  # a capitalised word within a sentence
DEFAULT_INITIAL_MARGIN = 11.0  # the first word of a sentence
DEFAULT_WORD_MARGIN = 4.0  # a word in lower case
DEFAULT_LONG_WORD_MARGIN = 12.0  # a word in lower case of five letters or more
DEFAULT_CHANGE_MARGIN = 5.0  # a dictionary word the model changed into another
DEFAULT_NEARER_MARGIN = 6.0  # a non-word the model made into a dictionary word farther than another
DEFAULT_CONTEXT_MARGIN = 3.5  # a non-word the model made into a word rarer beside its neighbours than another


# the steps of an English corrector: they read English dictionaries or tell English from other languages
ENGLISH_STEPS = (
    "fold_capitals",
    "check_capitals",
    "check_words",
    "check_changes",
    "check_nearer_words",
    "check_context_words",
    "keep_dictionary_words",
    "keep_unknown_words",
    "keep_spelling_varieties",
    "keep_other_languages",
)
_LANGUAGE_CODE = re.compile(r"[a-z]{2,3}(?:[-_][a-z0-9]{2,8})*")


def _setting(default: Any, description: str, **metadata: Any) -> Any:
    return field(default=default, metadata={"help": description, **metadata})


@dataclass(frozen=True)
class SpellingSettings:
    """What ``correct`` does to texts around the model; the model's output for what it reads is its greedy output."""

    protect: bool = _setting(
        True,
        "keep as written what the model cannot write or must not change: whitespace, characters its tokenizer "
        "lacks, numbers, URLs, e-mail addresses, @handles, #tags, paths, flags, identifiers, acronyms, letters "
        "alone, names such as iPhone, code between backticks, words of software (async, numpy, postgres, csv), chat "
        "abbreviations, colloquial spellings "
        "(gimme, y'all, sittin'), a lower-case i, a word in quotes of its own, runs of . ! ? ending a word",
    )
    protection_off: tuple[str, ...] = _setting(
        (),
        "the protection rules and readings to switch off, by name (seq2spec.spelling.protection.rule_names(): names, "
        "code_spans, technical, informal, current_words, place_names, markup, shouted, ...)",
    )
    language: str | None = _setting(
        None,
        "the language of the texts (a code such as en, de, ru): en applies protect's English rules and readings "
        "(names, informal words, contractions read with their apostrophe, ...) to every text, another code to none "
        "and refuses the steps of an English corrector; None (auto): to each text (or sentence piece) but those mostly "
        "in another script or that the language detector takes for another language, and to every text where a step "
        "of an English corrector is on",
    )
    split_longer_than: int | None = _setting(
        None,
        "decode a text longer than this many characters sentence by sentence, whitespace kept (None: every text whole)",
    )
    fold_capitals: bool = _setting(
        False,
        "give a capitalised word that is close to, but not in, an English dictionary to the model in lower case and "
        "capitalise the model's word in its place",
    )
    check_capitals: bool = _setting(
        False,
        "where the model left a capitalised non-word one edit from a dictionary word, take that word if the model "
        "scores it within capital_check_margin nats of its own output (capital_check_initial_margin for a "
        "sentence's first word)",
    )
    capital_check_margin: float = _setting(DEFAULT_MARGIN, "the capital check's margin within a sentence, in nats")
    capital_check_initial_margin: float = _setting(
        DEFAULT_INITIAL_MARGIN, "the capital check's margin for a sentence's first word, in nats"
    )
    check_words: bool = _setting(
        False,
        "where the model left a lower-case non-word one edit from a dictionary word, take that word if the model "
        "scores it within word_check_margin nats of its own output",
    )
    word_check_margin: float = _setting(DEFAULT_WORD_MARGIN, "the lower-case word check's margin, in nats")
    long_word_check_margin: float = _setting(
        DEFAULT_LONG_WORD_MARGIN, "the same for a word of five letters or more, in nats"
    )
    check_changes: bool = _setting(
        False,
        "where the model changed a word of the text into another dictionary word, or a command beside another "
        "technical word (sed beside yaml), keep the text's word if the model scores it within change_check_margin "
        "nats of its own output",
    )
    change_check_margin: float = _setting(DEFAULT_CHANGE_MARGIN, "the change check's margin, in nats")
    check_nearer_words: bool = _setting(
        False,
        "where the model made a non-word into a dictionary word two or more edits away while another is one edit away "
        "(pasport -> pastor, not passport), take the nearer word if the model scores it within nearer_word_margin "
        "nats of its own output",
    )
    nearer_word_margin: float = _setting(DEFAULT_NEARER_MARGIN, "the nearer-word check's margin, in nats")
    check_context_words: bool = _setting(
        False,
        "where the model made a non-word into a dictionary word one edit away while another one edit away goes with "
        "the words beside it three times as often or more (went hom -> went him, not home), take that word if the "
        "model scores it within context_word_margin nats of its own output",
    )
    context_word_margin: float = _setting(DEFAULT_CONTEXT_MARGIN, "the context-word check's margin, in nats")
    keep_dictionary_words: bool = _setting(
        False,
        "where the model made a dictionary word into a word no English dictionary knows, or merged dictionary words "
        "into another word (forum (mailing -> formulating), keep them as written",
    )
    keep_unknown_words: bool = _setting(
        False,
        "where the model changed a word no English dictionary knows (a name, a technical term) into another word no "
        "dictionary knows, or a capitalised one into a dictionary word three or more edits away (Siobhan -> Song), "
        "keep it as written",
    )
    keep_spelling_varieties: bool = _setting(
        False,
        "where the model rewrote a word in the other variety of English (British neighbour's -> American neighbor's, "
        "or back), keep it as written",
    )
    keep_repeated_words: bool = _setting(
        False,
        "where the text repeats a word (ha ha ha, please please please, no, no, no) and the model wrote the run with "
        "more or fewer words or another word in it, keep it as written (a doubled word written once stays: the the)",
    )
    keep_other_languages: bool = _setting(
        False,
        "return as written a text (or sentence piece) confidently in another language than English (German, French, "
        "Spanish, Italian, Portuguese, Dutch, Swedish, Polish, Danish, Finnish), and keep a quotation of two words or "
        'more in one ("Bitte nicht stören"); its detector takes about 300 MB',
    )
    keep_looped_texts: bool = _setting(
        False,
        "keep as written a text (or sentence piece) for which the model wrote far more letters than it read, "
        "repeating itself (witout -> without without)",
    )
    unchanged: Callable[[str], bool] | None = _setting(
        None, "texts (or sentence pieces) for which this is true come back as written, unread", flag=False
    )

    def __post_init__(self) -> None:
        limit = self.split_longer_than
        if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 1):
            raise ValueError(f"split_longer_than must be a positive number of characters or None, got {limit!r}")
        for name in (item.name for item in fields(self) if isinstance(item.default, bool)):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name} must be True or False, got {getattr(self, name)!r}")
        for name in (item.name for item in fields(self) if item.name.endswith("_margin")):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not value >= 0:
                raise ValueError(f"{name} must be a number of nats >= 0, got {value!r}")
        if isinstance(self.protection_off, str) or not all(isinstance(name, str) for name in self.protection_off):
            raise TypeError(f"protection_off must be a sequence of rule names, got {self.protection_off!r}")
        object.__setattr__(self, "protection_off", tuple(self.protection_off))
        RuleSet(frozenset(self.protection_off))  # an unknown name is a ValueError that lists the rules
        language = self.language
        if language is not None and (not isinstance(language, str) or not _LANGUAGE_CODE.fullmatch(language.lower())):
            raise ValueError(f"language must be a language code such as 'en' or 'de', or None; got {language!r}")
        object.__setattr__(self, "language", None if language is None else language.lower())
        english_steps = self.english_steps
        if english_steps and self.language not in (None, "en"):
            raise ValueError(
                f"{', '.join(english_steps)} read English dictionaries, for an English corrector; with "
                f"language={self.language!r} switch them off"
            )
        if self.unchanged is not None and not callable(self.unchanged):
            raise TypeError(f"unchanged must be a function of a text, or None; got {self.unchanged!r}")

    @property
    def english_steps(self) -> tuple[str, ...]:
        """The steps on that are an English corrector's (they read English dictionaries or detect English)."""
        return tuple(name for name in ENGLISH_STEPS if getattr(self, name))

    @property
    def texts_in_english(self) -> bool | None:
        """Whether every text is English (True), none is (False), or each is told apart (None): ``language``, with
        None taken for English where an English corrector's step is on."""
        if self.language is None:
            return True if self.english_steps else None
        return self.language == "en"

    @property
    def checks_scores(self) -> bool:
        """Whether a step scores outputs with the model (the checks of capitals, words, changes, nearer words and
        words in context)."""
        checks = (self.check_capitals, self.check_words, self.check_changes, self.check_nearer_words)
        return any(checks) or self.check_context_words

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        return tuple(item.name for item in fields(cls))

    @classmethod
    def flag_fields(cls) -> tuple[Any, ...]:
        """The fields the commands offer as flags."""
        return tuple(item for item in fields(cls) if item.metadata.get("flag", True))

    def updated(self, **changes: Any) -> SpellingSettings:
        """A copy with ``changes`` applied; an unknown name is a ``TypeError`` that lists the known ones."""
        unknown = sorted(set(changes) - set(self.field_names()))
        if unknown:
            raise TypeError(f"unknown spelling setting(s) {unknown}; known: {', '.join(self.field_names())}")
        return replace(self, **changes)


def settings_of(model: object) -> SpellingSettings:
    """The settings a model was made for (``model.seq2spec_spelling``), else the defaults."""
    settings = getattr(model, "seq2spec_spelling", None)
    return settings if isinstance(settings, SpellingSettings) else SpellingSettings()
