"""Capitalised non-words the model left, given their dictionary neighbour when the model scores it nearly as high."""

from __future__ import annotations

import pytest
import torch

from seq2spec import Seq2SeqSpeculator
from seq2spec.commands.main import main
from seq2spec.default_models import SPELLER_DIR, load_speller
from seq2spec.spelling.capital_check import DEFAULT_MARGIN, CapitalCheck, candidates, output_scorer

# a dictionary of a few words, and the word one edit away from some non-words
KNOWN = {"so", "long", "ago", "england", "men", "erosion", "the", "ridges", "runs", "on", "from", "of", "inhabitants"}
NEIGHBOURS = {"lnog": "long", "englanx": "england", "xen": "men", "erosiin": "erosion", "erosin": "erosion"}


def correct_word(word: str) -> str | None:
    return word if word in KNOWN else NEIGHBOURS.get(word)


def test_candidates_are_capitalised_non_words_left_as_non_words():
    originals = ["Lnog ago", "Erosiin of ridges", "Erosiin of ridges", "lnog ago", "Long ago", "Xen runs"]
    inputs = ["lnog ago", "erosiin of ridges", "erosiin of ridges", "lnog ago", "Long ago", "Xen runs"]
    outputs = ["lnog ago", "erosin of ridges", "from of ridges", "lnog ago", "Long ago", "Xen runs!"]
    _, found = candidates(originals, inputs, outputs, correct_word)
    by_text = {c.text: c.replacement for c in found}
    assert by_text == {
        0: "long",  # copied (read in lower case, so written in lower case: the capital comes back later)
        1: "erosion",  # made into another non-word
        5: "Men",  # copied as written: the replacement takes the output word's case
    }
    # 2: the model chose a dictionary word; 3: not capitalised as written; 4: a dictionary word


def test_replacements_the_model_scores_within_the_margin_are_taken():
    scores = {"So Xen runs": 0.0, "So Men runs": -12.0, "So Lnog ago": -3.0, "So Long ago": -3.0 - DEFAULT_MARGIN}
    seen = []

    def score(texts: list[str], outputs: list[str]) -> list[float]:
        seen.extend(texts)
        return [scores[output] for output in outputs]

    check = CapitalCheck(score, correct_word=correct_word)
    originals = ["So Xen runs", "So Lnog ago", "So Long ago"]
    assert check(originals, originals, originals) == ["So Xen runs", "So Long ago", "So Long ago"]
    assert sorted(seen) == ["So Lnog ago"] * 2 + ["So Xen runs"] * 2  # its output and the replacement, on its text
    assert CapitalCheck(score, margin=DEFAULT_MARGIN - 0.5, correct_word=correct_word)(
        originals[1:2], originals[1:2], ["So Lnog ago"]
    ) == ["So Lnog ago"]
    with pytest.raises(ValueError, match="margin"):
        CapitalCheck(score, margin=-1.0, correct_word=correct_word)


def test_a_word_that_starts_a_sentence_has_its_own_margin():
    originals = ["Lnog ago", "It was lnog. Lnog ago!", "So Lnog ago", 'He said "so." Lnog ago', "Mr Lnog ago"]
    _, found = candidates(originals, originals, originals, correct_word)
    assert [(c.text, c.initial) for c in found] == [(0, True), (1, True), (2, False), (3, True), (4, False)]
    scores = {"So Lnog ago": 0.0, "So Long ago": -8.0, "Lnog ago": 0.0, "Long ago": -8.0}

    def score(texts: list[str], outputs: list[str]) -> list[float]:
        return [scores[output] for output in outputs]

    check = CapitalCheck(score, margin=6.0, initial_margin=9.0, correct_word=correct_word)
    assert check(["Lnog ago", "So Lnog ago"], ["Lnog ago", "So Lnog ago"], ["Lnog ago", "So Lnog ago"]) == [
        "Long ago",  # starts the text: 8 nats below is within 9
        "So Lnog ago",  # within the sentence: 8 nats below is not within 6
    ]
    for margins in ({"margin": 6.0, "initial_margin": -1.0}, {"margin": 6.0, "initial_margin": float("nan")}):
        with pytest.raises(ValueError, match="initial_margin"):
            CapitalCheck(score, correct_word=correct_word, **margins)


def test_a_slip_of_a_months_or_weekdays_name_has_the_first_words_margin():
    """A capital says nothing of a name where the word is a month's or weekday's: "Thrusday" within a sentence is
    weighed as a sentence's first word is."""
    neighbours = {"thrusday": "thursday", "xen": "men"}
    originals = ["Closed on Thrusday", "Closed on Xen"]
    _, found = candidates(originals, originals, originals, neighbours.get)
    assert [(c.replacement, c.initial, c.calendar) for c in found] == [("Thursday", False, True), ("Men", False, False)]
    scores = {"Closed on Thrusday": 0.0, "Closed on Thursday": -8.0, "Closed on Xen": 0.0, "Closed on Men": -8.0}

    def score(texts: list[str], outputs: list[str]) -> list[float]:
        return [scores[output] for output in outputs]

    check = CapitalCheck(score, margin=6.0, initial_margin=9.0, correct_word=neighbours.get)
    assert check(originals, originals, originals) == ["Closed on Thursday", "Closed on Xen"]


def test_a_non_word_made_into_a_far_word_has_the_nearer_word_weighed():
    """The shipped speller wrote "pastor" for "pasport" and "mouth" for "motnh": dictionary words two edits away
    where one is one edit away."""
    known = {"bring", "your", "passport", "pastor", "the", "month", "mouth", "ended", "best", "bit", "is", "it", "what"}
    neighbours = {"pasport": "passport", "motnh": "month", "bst": "best", "qt": "it"}

    def neighbour(word: str) -> str | None:
        return word if word in known else neighbours.get(word)

    originals = ["bring your pasport", "the motnh ended", "the motnh ended", "bst is", "Bring your pasport", "Qt is"]
    outputs = ["bring your pastor", "the month ended", "the mouth ended", "bit is", "Bring your pastor", "What is"]
    _, found = candidates(originals, originals, outputs, neighbour, ("nearer",), known.__contains__)
    assert [(c.text, c.replacement, c.nearer) for c in found] == [
        (0, "passport", True),
        (2, "month", True),
        (4, "passport", True),  # in the output word's case
    ]  # 1: the model wrote the nearer word; 3: its word is one edit away too; 5: a capitalised word made into one
    # three edits away, which keep_unknown_words gives back (the speller wrote "What" for "Qt")
    assert candidates(originals, originals, outputs, neighbour, ("title", "lower"), known.__contains__)[1] == []
    scores = {"bring your pastor": 0.0, "bring your passport": -5.0, "the mouth ended": 0.0, "the month ended": -8.0}

    def score(texts: list[str], outputs: list[str]) -> list[float]:
        return [scores[output] for output in outputs]

    check = CapitalCheck(score, None, neighbour, nearer_margin=6.0, is_word=known.__contains__)
    assert check(originals[:3], originals[:3], outputs[:3]) == [
        "bring your passport",
        "the month ended",
        "the mouth ended",
    ]
    with pytest.raises(ValueError, match="nearer_margin"):
        CapitalCheck(score, correct_word=neighbour, nearer_margin=-1.0)


def test_a_non_word_made_into_a_word_rare_beside_its_neighbours_has_the_likelier_word_weighed():
    """The shipped speller wrote "went him" for "went hom": "him" and "home" are both one edit from "hom", and "went
    home" is common where "went him" is too rare for symspellpy's bigram counts."""
    from seq2spec.spelling.classical import is_dictionary_word

    originals = ["I went hom after work", "I went hom after work", "We went hom.", "I wnat to go", "I went (hom)"]
    originals += ["the motnh ended", "WE WENT HOM EARLY"]
    outputs = ["I went him after work", "I went home after work", "We went him.", "I want to go", "I went (him)"]
    outputs += ["the mouth ended", "WE WENT HIM EARLY"]
    _, found = candidates(originals, originals, outputs, correct_word, ("context",), is_dictionary_word)
    assert [(c.text, c.replacement, c.context) for c in found] == [
        (0, "home", True),
        (2, "home.", True),  # "went home" alone counts
        (6, "HOME", True),  # in the output word's case
    ]  # 1: the model wrote the likelier word; 3: "I want" is likelier than "I what"; 4: nothing beside it but
    # brackets; 5: "mouth" is two edits from "motnh" (the nearer-word check's)
    scores = {"I went him after work": 0.0, "I went home after work": -3.0, "We went him.": 0.0, "We went home.": -4.0}

    def score(texts: list[str], outputs: list[str]) -> list[float]:
        return [scores[output] for output in outputs]

    check = CapitalCheck(score, None, correct_word, context_margin=3.5, is_word=is_dictionary_word)
    assert check(originals[:3], originals[:3], outputs[:3]) == [
        "I went home after work",
        "I went home after work",
        "We went him.",  # the model scores "home" 4 nats lower: its word stays
    ]
    with pytest.raises(ValueError, match="context_margin"):
        CapitalCheck(score, correct_word=correct_word, context_margin=-1.0)


def test_a_texts_own_output_is_scored_once_for_all_its_candidates():
    scored = []

    def score(texts: list[str], outputs: list[str]) -> list[float]:
        scored.extend(outputs)
        return [{"Lnog Xen": 0.0, "Long Xen": -1.0, "Lnog Men": -20.0}[output] for output in outputs]

    check = CapitalCheck(score, correct_word=correct_word)
    assert check(["Lnog Xen"], ["Lnog Xen"], ["Lnog Xen"]) == ["Long Xen"]
    assert sorted(scored) == ["Lnog Men", "Lnog Xen", "Long Xen"]


def test_nothing_to_check_scores_nothing():
    def score(texts, outputs):
        raise AssertionError("scored")

    check = CapitalCheck(score, correct_word=correct_word)
    assert check(["the ridges"], ["the ridges"], ["the ridges"]) == ["the ridges"]
    # words that do not line up with the text as written are left alone
    assert check(["Lnog ago"], ["Lnog ago now"], ["Lnog ago now"]) == ["Lnog ago now"]


SHIPPED = (SPELLER_DIR / "big").is_dir() and (SPELLER_DIR / "small").is_dir()
needs_weights = pytest.mark.skipif(not SHIPPED, reason="the speller weights are not shipped")


@needs_weights
def test_output_scores_are_the_models_log_probabilities_padding_aside():
    big, _, tokenizer = load_speller()
    score = output_scorer(big, tokenizer, batch_size=8)
    texts = ["the chidren of srael", "Lnog ago, in a finite state far away, there lived a character named Jack."]
    outputs = ["the children of Israel", "Long ago, in a finite state far away, there lived a character named Jack."]
    together = score(texts, outputs)
    alone = [score([text], [output])[0] for text, output in zip(texts, outputs, strict=True)]
    assert together == pytest.approx(alone, abs=1e-3)
    labels = tokenizer(outputs[:1], return_tensors="pt").input_ids
    with torch.inference_mode():
        logits = big(**tokenizer(texts[:1], return_tensors="pt"), labels=labels).logits
    expected = logits.log_softmax(-1)[0].gather(1, labels[0][:, None]).sum().item()
    assert alone[0] == pytest.approx(expected, abs=1e-4)
    assert score(texts[:1], ["the children of israel"])[0] != pytest.approx(alone[0], abs=1e-3)


@needs_weights
def test_correct_checks_capitalised_typos_the_speller_copied():
    """ "Lnog" (read as "lnog") the shipped speller copies; it scores "long" close to its own output and takes it.
    "Xen", a name within the sentence, it scores more than the margin below: it stays. With check_capitals=False:
    the model's output."""
    speculator = Seq2SeqSpeculator()
    texts = [
        "Lnog ago, in a finite srtate far away, there livwd a JOVIAL character named Jack.",
        "We run Xen on Debian.",
    ]
    assert speculator.correct(texts) == [
        "Long ago, in a finite state far away, there lived a JOVIAL character named Jack.",
        "We run Xen on Debian.",
    ]
    assert speculator.correct(texts, check_capitals=False)[0].startswith("Lnog ago")
    big, small, tokenizer = load_speller()
    assert Seq2SeqSpeculator(big, small, tokenizer).spelling.check_capitals  # the shipped model carries its settings
    del big.seq2spec_spelling  # another model: off unless asked
    assert not Seq2SeqSpeculator(big, small, tokenizer).spelling.check_capitals
    with pytest.raises(TypeError, match="check_capitals"):
        speculator.correct(texts, check_capitals="yes")


@needs_weights
def test_correct_fixes_slips_of_months_and_weekdays_and_keeps_names_beside_them():
    """The shipped speller wrote "Number" for "Novmber" (read as "novmber") and copied "Febuary", "Thrusday"."""
    texts = [
        "The invoice for Novmber is attached.",
        "It usually snows in Febuary.",
        "The shop is closed on Thrusday.",
        "Sundar Pichai spoke on Friday.",
        "I met Frida and Avril in Paris.",
    ]
    assert Seq2SeqSpeculator().correct(texts) == [
        "The invoice for November is attached.",
        "It usually snows in February.",
        "The shop is closed on Thursday.",
        "Sundar Pichai spoke on Friday.",
        "I met Frida and Avril in Paris.",
    ]


@needs_weights
def test_correct_weighs_the_nearer_word_where_the_speller_wrote_a_far_one():
    texts = ["Don't forget to bring your pasport!"]
    assert Seq2SeqSpeculator().correct(texts, check_nearer_words=False)[0] == "Don't forget to bring your pastor!"
    assert Seq2SeqSpeculator().correct(texts)[0] == "Don't forget to bring your passport!"


@needs_weights
def test_correct_weighs_the_word_likelier_beside_its_neighbours():
    texts = ["She went hom yesterday.", "I went hom after work."]
    assert Seq2SeqSpeculator().correct(texts, check_context_words=False) == [
        "She went him yesterday.",
        "I went him after work.",
    ]
    assert Seq2SeqSpeculator().correct(texts) == ["She went home yesterday.", "I went home after work."]


@needs_weights
def test_the_command_checks_capitals_unless_told_not_to(tmp_path, capsys):
    source = tmp_path / "in.txt"
    source.write_text("Lnog ago, in a finite srtate far away, there livwd a JOVIAL character named Jack.\n")
    assert main(["correct", str(source)]) == 0
    assert capsys.readouterr().out.startswith("Long ago")
    assert main(["correct", str(source), "--no-check-capitals"]) == 0
    assert capsys.readouterr().out.startswith("Lnog ago")


@needs_weights
def test_the_tuning_recipe_reports_each_margin_and_picks_one(tmp_path, monkeypatch, capsys):
    import train_speller
    import tune_capital_check

    held_out = [f"Long ago in England there lived a man called Jack number {i}." for i in range(40)]
    monkeypatch.setattr(train_speller, "split_corpus", lambda work_dir: ([], held_out))
    monkeypatch.setattr(train_speller, "load_typos", lambda work_dir: {"long": ["lnog"], "england": ["englanx"]})
    tune_capital_check.main(
        [
            "--work-dir",
            str(tmp_path),
            "--eval-size",
            "5",
            "--validation-size",
            "10",
            "--margins",
            "3",
            "1",
            "--initial-margins",
            "5",
            "--threads",
            "1",
        ]
    )
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("| ") and line.split(" | ")[0][2:].isdigit()]
    assert [tuple(row.split(" | ")[:2]) for row in rows] == [("| 1", "1"), ("| 1", "5"), ("| 3", "3"), ("| 3", "5")]
    assert "most typos fixed net of correct words broken: margin " in out


def test_a_lower_case_word_within_a_sentence_keeps_its_case():
    """The shipped speller wrote "Qry" for "evrey" after "crème brûlée": the check gave "Every" mid-sentence."""
    originals = ["we go evrey day", "evrey day"]
    outputs = ["we go Qry day", "Qry day"]
    check = candidates(
        originals, originals, outputs, lambda word: {"evrey": "every", "qry": None}.get(word, word), ("lower",)
    )[1]
    assert [c.replacement for c in check] == ["every", "Every"]  # a sentence's first word takes the output's case


def test_lower_case_words_have_their_own_margin_and_are_checked_only_when_asked():
    originals = ["so lnog ago", "So Lnog ago"]
    assert [c.lower for c in candidates(originals, originals, originals, correct_word, ("title", "lower"))[1]] == [
        True,
        False,
    ]
    assert [c.text for c in candidates(originals, originals, originals, correct_word)[1]] == [1]  # title only
    scores = {"so lnog ago": 0.0, "so long ago": -3.0, "So Lnog ago": 0.0, "So Long ago": -3.0}

    def score(texts: list[str], outputs: list[str]) -> list[float]:
        return [scores[output] for output in outputs]

    words = CapitalCheck(score, margin=None, correct_word=correct_word, lower_margin=4.0)
    assert words(originals, originals, originals) == ["so long ago", "So Lnog ago"]  # capitals not checked
    both = CapitalCheck(score, margin=1.0, correct_word=correct_word, lower_margin=4.0)
    assert both(originals, originals, originals) == ["so long ago", "So Lnog ago"]  # 3 nats: within 4, not 1
    assert CapitalCheck(score, correct_word=correct_word, lower_margin=2.0)(
        originals[:1], originals[:1], originals[:1]
    ) == ["so lnog ago"]
    with pytest.raises(ValueError, match="lower_margin"):
        CapitalCheck(score, correct_word=correct_word, lower_margin=-1.0)


def test_a_change_between_dictionary_words_is_undone_unless_the_model_is_sure():
    known = KNOWN | {"odor", "door", "form"}

    def checker(word: str) -> str | None:
        return word if word in known else NEIGHBOURS.get(word)

    originals = ["the odor of ridges", "the form ridges"]
    outputs = ["the door of ridges", "the from ridges"]
    _, found = candidates(originals, originals, outputs, checker, ("revert",))
    assert [(c.text, c.replacement, c.revert) for c in found] == [(0, "odor", True), (1, "form", True)]
    assert candidates(originals, originals, outputs, checker)[1] == []  # asked for capitals only
    scores = {"the door of ridges": 0.0, "the odor of ridges": -2.0, "the from ridges": 0.0, "the form ridges": -9.0}

    def score(texts: list[str], said: list[str]) -> list[float]:
        return [scores[output] for output in said]

    check = CapitalCheck(score, margin=None, correct_word=checker, revert_margin=5.0)
    assert check(originals, originals, outputs) == ["the odor of ridges", "the from ridges"]


def test_a_command_beside_another_technical_word_is_written_back_unless_the_model_is_sure():
    """ "sed" and "thd" beside "yaml" (seq2spec.spelling.protection.technical_in_context): the speller wrote "used" for
    "sed" and "the" for "thd" (a slip of "the", and a Debian command); the text's word comes back where the model
    scores it within the change margin, and no word check turns a command the model copied into a word."""
    known = KNOWN | {"used", "the", "set", "run", "on", "file", "see"}

    def checker(word: str) -> str | None:
        return word if word in known else {"sed": "set", "thd": "the"}.get(word)

    originals = ["run sed on thd yaml file", "run sed on the yaml file", "I sed teh file"]
    outputs = ["run used on the yaml file", "run sed on the yaml file", "I see the file"]
    _, found = candidates(originals, originals, outputs, checker, ("lower", "revert"))
    # no context in the third text: "sed" is a non-word the model changed into a word, nothing to check
    assert [(c.text, c.replacement) for c in found] == [(0, "sed"), (0, "thd")]
    scores = {"run sed on the yaml file": -1.0, "run used on thd yaml file": -12.0}

    def score(texts: list[str], said: list[str]) -> list[float]:
        return [scores.get(output, 0.0) for output in said]

    check = CapitalCheck(score, margin=None, correct_word=checker, lower_margin=4.0, revert_margin=5.0)
    assert check(originals, originals, outputs) == ["run sed on the yaml file", *outputs[1:]]
    assert candidates(originals, originals, outputs, checker, ("lower",))[1] == []  # no change check asked for


def test_a_long_lower_case_word_has_its_own_margin():
    known = KNOWN | {"private", "tape"}

    def checker(word: str) -> str | None:
        return word if word in known else {"pdivate": "private", "tapa": "tape"}.get(word)

    texts = ["the pdivate tapa"]
    scores = {"the pdivate tapa": 0.0, "the private tapa": -7.0, "the pdivate tape": -7.0}

    def score(sources: list[str], outputs: list[str]) -> list[float]:
        return [scores[output] for output in outputs]

    check = CapitalCheck(score, margin=None, correct_word=checker, lower_margin=4.0, long_lower_margin=8.0)
    assert check(texts, texts, texts) == ["the private tapa"]  # 7 nats: within 8 for seven letters, not 4 for four
    assert CapitalCheck(score, margin=None, correct_word=checker, lower_margin=4.0)(texts, texts, texts) == texts
