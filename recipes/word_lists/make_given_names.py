"""Build ``seq2spec/assets/given_names.txt``: given names that are also words of the text steps' dictionary.

``fold_capitals`` (``seq2spec.spelling.capitals``) gives the speller a capitalised word in lower case when the
dictionary does not know it but knows a word close to it, so that "Evory day" is read as "evory day" and fixed. When
that close word is a given name, the capitalised word is most likely a slip of the name: read as "jhon", "Jhon" became
"Hon" ("Jhon lives here." -> "Who join lives here."). Where the model makes a slip of one of these names into other
words than the name or the slip itself, the name takes their place ("John lives here.").

The names are the US first names of Faker's ``en_US`` person provider (``pip install faker``; the US Census Bureau's
counts of first names), those symspellpy's dictionary or pyspellchecker's list knows, in lower case.

    pip install faker && python recipes/word_lists/make_given_names.py
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable
from importlib.metadata import version
from pathlib import Path

from seq2spec.spelling.capitals import GIVEN_NAMES_PATH


def given_names_known(names: Iterable[str], is_word: Callable[[str], bool]) -> list[str]:
    """The ``names`` of letters alone whose lower-case form ``is_word`` knows, in lower case, sorted, once each."""
    return sorted({name.lower() for name in names if name.isalpha() and is_word(name.lower())})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=GIVEN_NAMES_PATH)
    args = parser.parse_args(argv)
    from faker.providers.person.en_US import Provider

    from seq2spec.spelling.classical import is_dictionary_word

    listed = [*Provider.first_names_male, *Provider.first_names_female]
    names = given_names_known(listed, is_dictionary_word)
    header = (
        f"# given names the dictionary knows, written for a slip of one the speller made into other words: "
        f"{len(names)} of the {len(set(listed))} US first names of Faker {version('faker')} (en_US; US Census counts) "
        f"(recipes/word_lists/make_given_names.py)\n"
    )
    args.out.write_text(header + "\n".join(names) + "\n", encoding="utf-8")
    print(f"{len(names)} names -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
