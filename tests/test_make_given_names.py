"""recipes/word_lists/make_given_names.py: the given names whose slips the text steps write as the name."""

from __future__ import annotations

import make_given_names

from seq2spec.spelling.capitals import GIVEN_NAMES_PATH, given_names


def test_names_the_dictionary_knows_are_kept_in_lower_case_once():
    known = {"john", "sarah", "mary"}
    names = ["John", "Sarah", "Xochitl", "Mary-Ann", "JOHN", "Mary"]
    # a name no dictionary knows needs no slip rule; one of other characters than letters is left out
    assert make_given_names.given_names_known(names, known.__contains__) == ["john", "mary", "sarah"]


def test_the_shipped_list_is_the_recipes():
    header = GIVEN_NAMES_PATH.read_text(encoding="utf-8").splitlines()[0]
    assert header.startswith("# given names") and "recipes/word_lists/make_given_names.py" in header
    assert len(given_names()) > 600 and all(name.isalpha() and name.islower() for name in given_names())
