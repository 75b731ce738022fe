"""seq2spec.spelling.capitals: which capitalised words go to the model in lower case, and how their capitals come
back."""

from __future__ import annotations

from seq2spec.spelling.capitals import fold_capitals, given_names, is_calendar_slip, is_given_name_slip

# a stand-in for the classical checker: lower-case word -> its closest dictionary word, or None when none is close
SUGGESTIONS = {"evory": "every", "ploicy": "policy", "teh": "the", "paris": "paris", "wrold": "world"}


def suggest(word: str) -> str | None:
    return SUGGESTIONS.get(word)


def test_only_capitalised_words_with_another_suggestion_are_folded():
    text = "  Evory (Ploicy), Paris and Xyzzy in the WROLD, teh Wrold-wide A\tEvory\n"
    [folded] = fold_capitals([text], suggest)
    # Paris: a dictionary word; Xyzzy: nothing close; WROLD: all capitals; teh: lower case already;
    # Wrold-wide: not one plain word; A: one letter. Whitespace stays as it was.
    assert folded.text == "  evory (ploicy), Paris and Xyzzy in the WROLD, teh Wrold-wide A\tevory\n"
    assert folded.folded == {0, 1, 11}  # word indices among the text's non-space tokens
    assert fold_capitals(["nothing to do here"], suggest)[0].folded == frozenset()


def test_restore_capitalises_the_words_in_the_folded_ones_places():
    [folded] = fold_capitals(["Evory day, the Ploicy changes."], suggest)
    assert folded.restore("every day, the policy changes.") == "Every day, the Policy changes."
    assert folded.restore("every day, the policy changes.  ") == "Every day, the Policy changes.  "  # spacing kept
    assert folded.restore("(every) day, the policy changes.") == "(Every) day, the Policy changes."
    # the model split or merged the folded word: the first word standing in its place takes the capital
    assert folded.restore("every single day, the policy changes.") == "Every single day, the Policy changes."
    assert folded.restore("everyday, the policy changes.") == "Everyday, the Policy changes."
    # the folded word dropped: nothing to capitalise; other words are never touched
    assert folded.restore("day, the changes.") == "day, the changes."
    assert folded.restore("") == ""


def test_texts_without_folded_words_come_back_as_the_model_wrote_them():
    [folded] = fold_capitals(["Paris in the spring."], suggest)
    assert folded.text == "Paris in the spring."
    assert folded.restore("paris in the spring") == "paris in the spring"


def test_a_slip_of_a_months_or_weekdays_name_keeps_its_capital():
    """The shipped speller knows "November" capitalised: read as "novmber" it wrote "number"."""
    suggestions = {"novmber": "november", "thrusday": "thursday", "evory": "every", "sundar": "sunday"}
    [folded] = fold_capitals(["Evory Novmber and Thrusday, Sundar said."], suggestions.get)
    # "Sundar" is a name of its own (protection.name_words): folded as any other word
    assert folded.text == "evory Novmber and Thrusday, sundar said."
    assert is_calendar_slip("Febuary", "february") and is_calendar_slip("wendesday", "wednesday")
    assert not is_calendar_slip("Avril", "april")  # a name
    assert not is_calendar_slip("Evory", "every") and not is_calendar_slip("Xyzzy", None)


def test_a_slip_of_a_given_name_the_model_made_into_other_words_becomes_the_name():
    """Read as "jhon", the shipped speller wrote "Hon" for "Jhon" ("Jhon lives here." -> "Who join lives here.");
    "isaqac" it wrote "Isaac", and a slip it keeps stays as written."""
    suggestions = {"jhon": "john", "isaqac": "isaac", "evory": "every", "john": "john"}
    [folded] = fold_capitals(['"Jhon," said Isaqac and John: Evory day.'], suggestions.get)
    assert folded.text == '"jhon," said isaqac and John: evory day.' and folded.names == {0: "john", 2: "isaac"}
    restored = '"John," said Isaac and John: Every day.'
    assert folded.restore('"who join," said isaac and John: every day.') == restored
    assert folded.restore('"hon," said isaac and John: every day.') == restored
    assert folded.restore('"john," said isaac and John: every day.') == restored
    kept = '"Jhon," said Isaqac and John: Every day.'  # a slip the model keeps as written stays
    assert folded.restore('"jhon," said isaqac and John: every day.') == kept
    assert is_given_name_slip("jhon", "john") and not is_given_name_slip("evory", "every")
    assert not is_given_name_slip("john", "john") and not is_given_name_slip("xyzzy", None)
    assert {"john", "sarah", "paul", "isaac"} <= given_names() and "every" not in given_names()
