"""recipes/word_lists/make_place_names.py: the names of places the text steps keep as written."""

from __future__ import annotations

import json

import make_place_names

from seq2spec.spelling.protection.word_lists import PLACE_NAMES_PATH, word_list


def test_names_are_chosen_by_the_rule():
    names = {"Yambol", "Tallinn", "Mie", "Nice", "Burkina Faso", "Ash Shamal (North)", "Asunción", "yambol"}
    # one edit from a frequent word ("Mie": "me", "Nice": "nine"), one with brackets and one not capitalised are left
    # out; a name a dictionary knows stays ("Tallinn"); accents are read without
    assert make_place_names.place_names(names) == ["Asunción", "Burkina Faso", "Tallinn", "Yambol"]


def test_names_come_from_iso_codes_and_zones(tmp_path):
    iso = tmp_path / "iso"
    iso.mkdir()
    countries = [{"name": "Bolivia, Plurinational State of", "common_name": "Bolivia"}, {"name": "Burkina Faso"}]
    (iso / "iso_3166-1.json").write_text(json.dumps({"3166-1": countries}))
    (iso / "iso_3166-2.json").write_text(json.dumps({"3166-2": [{"code": "BG-28", "name": "Yambol"}]}))
    assert make_place_names.iso_names(iso) == {"Bolivia, Plurinational State of", "Bolivia", "Burkina Faso", "Yambol"}
    zones = tmp_path / "zoneinfo"
    for zone in ("Europe/Tallinn", "America/La_Paz", "America/Argentina/Buenos_Aires", "posix/Europe/Oslo"):
        (zones / zone).parent.mkdir(parents=True, exist_ok=True)
        (zones / zone).write_text("")
    assert make_place_names.zone_cities(zones) == {"Tallinn", "La Paz", "Buenos Aires"}


def test_the_shipped_list_is_the_recipes_rule():
    names = word_list(PLACE_NAMES_PATH)
    assert len(names) > 2000 and {"Yambol", "Chuuk", "Burkina Faso", "La Paz", "Dar es Salaam", "Tallinn"} <= names
    assert not {"Mie", "Fier", "Nice", "Male"} & names
    assert make_place_names.place_names(set(names)) == sorted(
        names, key=lambda name: (make_place_names.plain(name).lower(), name)
    )
