"""The protection rules one by one (``seq2spec.spelling.protection.RULES`` and ``READINGS``): each keeps (or reads)
its own example, and switched off by name it no longer does; an unknown name is refused."""

from __future__ import annotations

import pytest

from seq2spec.commands.flags import rule_names_list
from seq2spec.spelling.protection import ALL_RULES, RULES, Kind, Layout, RuleSet, TokenizerWriting, rule_names
from seq2spec.spelling.settings import SpellingSettings

# rule -> (a text, the index of the word only that rule keeps)
KEPT_BY = {
    "names": ("I met Matteo there.", 2),
    "code_spans": ("Type `chekout` here.", 1),
    "foreign_phrases": ("It was bona fide work.", 2),
    "place_name_spans": ("We flew to La Paz today.", 3),
    "name_runs": ("We met Zorblat Quennix there.", 2),
    "honorifics": ("Ms Rose came.", 0),
    "measurement_units": ("Add 200 ml now.", 2),
    "archaic_pronouns": ("I thank thee for it.", 2),
    "archaic_verbs": ("Thou sayest so.", 1),
    "greetings": ("hey dan, come here.", 0),
    "address_abbreviations": ("Turn onto Oak Rd today.", 3),
    "clinical_abbreviations": ("Take 1 tab po bid prn.", 3),
    "symbol_runs": ("Grade A+++ work.", 1),
    "technical": ("Open config.yaml now.", 1),
    "informal": ("lol ok then.", 0),
    "current_words": ("He is a noob here.", 3),
    "place_names": ("She lives in Yambol now.", 3),
    "quoted_words": ('The word "teh" is wrong.', 2),
    "symbols": ("Wait \u2014 what?", 1),
}


@pytest.fixture(scope="module")
def writing():
    from transformers import AutoTokenizer

    from seq2spec.default_models import SPELLER_DIR

    if not (SPELLER_DIR / "big").is_dir():
        pytest.skip("the speller weights are not shipped")
    return TokenizerWriting(AutoTokenizer.from_pretrained(SPELLER_DIR / "big"))


def test_every_rule_has_an_example_here():
    assert set(KEPT_BY) == {rule.name for rule in RULES}
    assert len(set(rule_names())) == len(rule_names())


@pytest.mark.parametrize("name", list(KEPT_BY))
def test_a_rule_keeps_its_example_and_switched_off_does_not(name, writing):
    text, index = KEPT_BY[name]
    assert Layout.of(text, writing).words[index].kind is Kind.KEPT
    assert Layout.of(text, writing, rules=RuleSet(frozenset({name}))).words[index].kind is not Kind.KEPT
    others = frozenset(rule_names()) - {name}  # the rule alone keeps it
    assert Layout.of(text, writing, rules=RuleSet(others)).words[index].kind is Kind.KEPT


def test_the_markup_reading(writing):
    text = "**very importnat** here"
    assert Layout.of(text, writing).words[1].markup is not None
    assert Layout.of(text, writing).words[1].reads == "importnat"
    assert Layout.of(text, writing, rules=RuleSet(frozenset({"markup"}))).words[1].markup is None


def test_the_broken_words_reading(writing):
    text = "the infor- mation here"
    words = Layout.of(text, writing).words
    assert (words[1].reads, words[2].reads) == ("information", "")
    words = Layout.of(text, writing, rules=RuleSet(frozenset({"broken_words"}))).words
    assert words[2].reads == "mation"


def test_the_shouted_reading(writing):
    text = "PLEASE DO NOT PARK IN FRNOT OF THE GARAGE."
    word = Layout.of(text, writing).words[5]
    assert (word.kind, word.reads, word.shouted) == (Kind.FREE, "frnot", True)
    assert Layout.of(text, writing, rules=RuleSet(frozenset({"shouted"}))).words[5].kind is Kind.KEPT


def test_unknown_rule_names_are_refused_with_the_names_known():
    with pytest.raises(ValueError, match="unknown protection rule.*'tecnical'.*technical"):
        RuleSet(frozenset({"tecnical"}))
    with pytest.raises(ValueError, match="'tecnical'"):
        SpellingSettings(protection_off=("tecnical",))
    with pytest.raises(TypeError, match="sequence of rule names"):
        SpellingSettings(protection_off="technical")
    assert rule_names_list("technical, informal") == ("technical", "informal")
    assert SpellingSettings(protection_off=["technical"]).protection_off == ("technical",)
    assert ALL_RULES == RuleSet()


def test_correct_with_a_rule_switched_off_gives_the_word_to_the_model(writing):
    """The setting reaches the layout: a model that rewrites a file name has its way only with ``technical`` off."""
    from seq2spec.spelling.pipeline import SpellingPipeline

    def decode(texts: list[str]) -> list[str]:
        return [text.replace("config.yaml", "config.yml") for text in texts]

    for off, expected in (((), "Open config.yaml now."), (("technical",), "Open config.yml now.")):
        settings = SpellingSettings(protection_off=off)
        pipeline = SpellingPipeline(settings, decode, tokenizer=writing.tokenizer)
        assert pipeline(["Open config.yaml now."]) == [expected]
