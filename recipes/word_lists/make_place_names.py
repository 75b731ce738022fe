"""Build ``seq2spec/assets/place_names.txt``: names of countries, their provinces and regions, and cities, that the
text steps keep as written.

The shipped speller made 59 of 1,316 sentences naming a place into other words ("Burkina Faso" -> "Burkina Fast",
"La Paz" -> "La Pay", "Chuuk" -> "Chuck", "Yambol" -> "Symbol", "Kasserine" -> "Passerine", "Sagaing" -> "Sagging").
The names come from two packages of any Debian or Ubuntu machine:

- ``iso-codes`` (``/usr/share/iso-codes/json``): the countries of ISO 3166-1 (their names and common names) and the
  provinces, states and regions of ISO 3166-2;
- ``tzdata`` (``/usr/share/zoneinfo``): the cities that name a time zone ("Tallinn", "Dar es Salaam").

A name of one word is kept where it is written with a capital (``correct`` keeps "Yambol", not "yambol"); it is left
out when it is one edit from a word symspellpy counts ``FREQUENT_COUNT`` times or more ("Mie": "me", "Fier": "fire",
"Nice": "nine"), whose typos it would keep, as for seq2spec's other written lists. A dictionary that knows a name does
not keep the speller from changing it ("Tallinn" -> "Tallin", "Faso" -> "Fast"), so dictionary words stay in. A name
of several words is kept whole where it is written as listed, case aside ("Burkina Faso", "La Paz"); its words alone
are not. Names are listed as written ("Asunción") and matched without their accents ("Asuncion" too).

    apt-get install iso-codes tzdata
    python recipes/word_lists/make_place_names.py
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import unicodedata
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_current_words import one_edit_away  # noqa: E402

from seq2spec.spelling.classical import word_counts  # noqa: E402
from seq2spec.spelling.protection.word_lists import PLACE_NAMES_PATH  # noqa: E402

FREQUENT_COUNT = 20_000_000  # a name one edit from a word symspellpy counts this often is left out
ZONE_REGIONS = (
    "Africa",
    "America",
    "Antarctica",
    "Arctic",
    "Asia",
    "Atlantic",
    "Australia",
    "Europe",
    "Indian",
    "Pacific",
)
_NAME = re.compile(r"[A-Za-z][A-Za-z'.-]*(?: [A-Za-z][A-Za-z'.-]*)*")


def iso_names(folder: Path) -> set[str]:
    """The names and common names of ISO 3166-1's countries and the names of ISO 3166-2's subdivisions."""
    countries = json.loads((folder / "iso_3166-1.json").read_text(encoding="utf-8"))["3166-1"]
    subdivisions = json.loads((folder / "iso_3166-2.json").read_text(encoding="utf-8"))["3166-2"]
    names = {entry[key] for entry in countries for key in ("name", "common_name") if key in entry}
    return names | {entry["name"] for entry in subdivisions}


def zone_cities(zoneinfo: Path) -> set[str]:
    """The cities of tzdata's zone names ("Europe/Tallinn", "America/Argentina/Buenos_Aires"), with spaces."""
    cities = set()
    for region in ZONE_REGIONS:
        for path in (zoneinfo / region).rglob("*"):
            if path.is_file():
                cities.add(path.name.replace("_", " "))
    return cities


def plain(name: str) -> str:
    """``name`` without accents ("Asunción" -> "Asuncion")."""
    return "".join(c for c in unicodedata.normalize("NFKD", name) if not unicodedata.combining(c))


def place_names(names: set[str]) -> list[str]:
    """The names of the module docstring's rule, sorted (case aside)."""
    counts = word_counts()

    def near_frequent(word: str) -> bool:
        return any(counts.get(other, 0) >= FREQUENT_COUNT for other in one_edit_away(word.lower()))

    kept = set()
    for name in names:
        form = plain(name)
        if not _NAME.fullmatch(form):
            continue  # digits, commas, brackets, other scripts: "Ash Shamal (North)"
        words = form.split()
        if len(words) > 1 or (form[:1].isupper() and not near_frequent(form)):
            kept.add(name)
    return sorted(kept, key=lambda name: (plain(name).lower(), name))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iso-codes", type=Path, default=Path("/usr/share/iso-codes/json"))
    parser.add_argument("--zoneinfo", type=Path, default=Path("/usr/share/zoneinfo"))
    parser.add_argument("--out", type=Path, default=PLACE_NAMES_PATH)
    args = parser.parse_args(argv)
    for path in (args.iso_codes / "iso_3166-2.json", args.zoneinfo / "Europe"):
        if not path.exists():
            raise SystemExit(f"{path} not found: apt-get install iso-codes tzdata")
    names = iso_names(args.iso_codes) | zone_cities(args.zoneinfo)
    kept = place_names(names)
    single = sum(" " not in name for name in kept)
    header = (
        f"# names of places kept as written: {single} of one word (kept capitalised) and {len(kept) - single} of "
        f"several (kept whole) from {len(names)} names of iso-codes' ISO 3166 lists and tzdata's zones "
        "(recipes/word_lists/make_place_names.py)\n"
    )
    args.out.write_text(header + "\n".join(kept) + "\n", encoding="utf-8")
    print(f"{len(kept)} names ({single} of one word) -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
