"""The corruption used to train the speller: real typos where known, edit noise otherwise, seeded."""

from __future__ import annotations

import random
from pathlib import Path

import speller_data  # noqa: E402

TYPOS = {"receive": ["recieve"], "friend": ["freind"], "letter": ["leter"]}


def test_real_typos_are_used_and_capitalisation_kept():
    corruptor = speller_data.Corruptor(TYPOS, clean_share=0.0, real_typo_share=1.0)
    rng = random.Random(0)
    assert corruptor.corrupt_word("Friend,", rng) == "Freind,"
    assert corruptor.corrupt_word("receive", rng) == "recieve"


def test_corruption_is_seeded_and_changes_one_to_three_words():
    corruptor = speller_data.Corruptor(TYPOS, clean_share=0.0)
    sentence = "She will receive a letter from her friend tomorrow morning."
    first = corruptor(sentence, random.Random(5))
    assert first == corruptor(sentence, random.Random(5))
    changed = sum(a != b for a, b in zip(first.split(" "), sentence.split(" "), strict=True))
    assert 1 <= changed <= 3


def test_clean_share_leaves_sentences_unchanged():
    corruptor = speller_data.Corruptor(TYPOS, clean_share=1.0)
    assert corruptor("Nothing changes here at all.", random.Random(1)) == "Nothing changes here at all."


def test_edits_stay_close_to_the_word():
    rng = random.Random(3)
    for _ in range(200):
        edited = speller_data.Corruptor.edit("keyboard", rng)
        assert abs(len(edited) - len("keyboard")) <= 1 and edited != ""


def test_held_out_split_is_stable_and_about_five_percent():
    sentences = [f"sentence number {i}." for i in range(4000)]
    held = [s for s in sentences if speller_data.is_held_out(s)]
    assert held == [s for s in sentences if speller_data.is_held_out(s)]
    assert 0.03 < len(held) / len(sentences) < 0.07


WORDNET_NOUN = (
    "  1 This software and database is being provided to you, the LICENSEE, by  \n"
    "11356392 18 n 03 Updike 0 John_Updike 0 John_Hoyer_Updike 0 001 @i 10794014 n 0000 | United States author "
    "(born 1932)  \n"
    "00002137 03 n 02 abstraction 0 abstract_entity 0 010 @ 00001740 n 0000 | a general concept formed by "
    'extracting common features from specific examples; "the abstraction of a concept"  \n'
)
WORDNET_ADJ = (
    "02371078 00 s 01 sweptwing 0 002 & 02370753 a 0000 | (of an aircraft) having sweptback wings; "
    '"a sweptwing aircraft flies fast"  \n'
    "02013631 00 s 01 redux(ip) 0 001 & 02013198 a 0000 | brought back to a former state  \n"
)


def fake_wordnet(tmp_path: Path) -> Path:
    for part, text in (("noun", WORDNET_NOUN), ("verb", ""), ("adj", WORDNET_ADJ), ("adv", "")):
        (tmp_path / f"data.{part}").write_text(text, encoding="utf-8")
    return tmp_path


def test_wordnet_headword_entries_put_the_synset_words_before_the_first_definition(tmp_path):
    directory = fake_wordnet(tmp_path)
    assert speller_data.wordnet_headword_entries(directory) == [
        "Updike, John Updike, John Hoyer Updike: United States author (born 1932)",
        "abstraction, abstract entity: a general concept formed by extracting common features from specific examples",
        "redux: brought back to a former state",  # the adjective's position marker is dropped
        "sweptwing: (of an aircraft) having sweptback wings",
    ]
    first = speller_data.wordnet_headword_entries(directory, max_words=1)[0]
    assert first == "Updike: United States author (born 1932)"
    # the same files give the definitions and the usage examples
    assert "(of an aircraft) having sweptback wings" in speller_data.wordnet_glosses(directory)
    examples = speller_data.wordnet_examples(directory)
    assert examples == ["the abstraction of a concept", "a sweptwing aircraft flies fast"]


def test_capitalised_weight_picks_capitalised_words_more_often():
    """noise.HumanNoise's capitalised_weight: capitalised words take that many times the share of typos a
    lower-case word takes (1: every eligible word alike, the default stream of typos unchanged)."""
    from noise import HumanNoise

    sentence = "Several Packages provide tools, and Debian keeps every Package current."
    capitalised = {i for i, word in enumerate(sentence.split(" ")) if word[0].isupper()}

    def capitalised_share(weight: float) -> float:
        noise = HumanNoise(TYPOS, kind_weights={"keyboard": 1.0}, capitalised_weight=weight)
        hits = total = 0
        for seed in range(400):
            noisy, _ = noise(sentence, random.Random(seed), 1)
            changed = [i for i, (a, b) in enumerate(zip(noisy.split(" "), sentence.split(" "), strict=True)) if a != b]
            hits += sum(i in capitalised for i in changed)
            total += len(changed)
        return hits / total

    uniform, weighted = capitalised_share(1.0), capitalised_share(4.0)
    # 4 of the 10 words are capitalised: about 0.4 of the typos alike, about 4 * 4 / (4 * 4 + 6) = 0.73 weighted
    assert 0.3 < uniform < 0.5
    assert 0.63 < weighted < 0.83
    default = HumanNoise(TYPOS, kind_weights={"keyboard": 1.0})
    explicit = HumanNoise(TYPOS, kind_weights={"keyboard": 1.0}, capitalised_weight=1.0)
    assert default(sentence, random.Random(1), 2) == explicit(sentence, random.Random(1), 2)
