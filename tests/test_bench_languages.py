"""benchmarks/bench_languages.py: its held-out sentences (frozen in the repository, held out from every training set)
and the speculation options a side carries."""

import hashlib
from pathlib import Path

import multilingual_speech as speech
import pytest
from script_loading import load_script

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_languages.py"


@pytest.fixture(scope="module")
def bench():
    return load_script(SCRIPT)


def test_every_default_language_has_its_frozen_sentences(bench):
    frozen = bench.frozen_sentences(bench.SENTENCES)
    for code in bench.DEFAULT_LANGUAGES:
        sentences = bench.held_out_sentences(code)
        assert len(sentences) >= 40 and len(set(sentences)) == len(sentences), code
        assert sentences == frozen[code]


def test_frozen_sentences_are_those_the_recipes_hold_out(bench):
    frozen = bench.frozen_sentences(bench.SENTENCES)
    for code, sentences in frozen.items():
        if code == "en":  # distill_whisper_draft.split_sentences(5): the first digest byte's bucket under 5%
            assert all(hashlib.sha1(s.lower().encode()).digest()[1] * 100 // 256 < 5 for s in sentences)
        elif not speech.LANGUAGES[code].reading:  # kana and pinyin are stored as read, not as written
            assert all(speech.held_out(s, 8) for s in sentences), code


def test_a_language_not_frozen_is_refused_by_name(bench, tmp_path):
    with pytest.raises(SystemExit, match="xx: no held-out sentences .* --freeze --languages xx"):
        bench.held_out_sentences("xx", tmp_path / "none.json")


def test_freezing_an_unknown_language_is_refused_by_name(bench, tmp_path):
    with pytest.raises(SystemExit, match="xx: not a language .* fr "):
        bench.freeze(tmp_path / "sentences.json", ["xx"], 3)
    assert not (tmp_path / "sentences.json").exists()


def test_freezing_adds_languages_beside_those_stored(bench, tmp_path, monkeypatch):
    monkeypatch.setattr(bench, "catalogue_sentences", lambda code, count: [f"{code} {i}." for i in range(count)])
    path = tmp_path / "sentences.json"
    bench.freeze(path, ["fr"], 3)
    bench.freeze(path, ["de"], 2)
    assert bench.frozen_sentences(path) == {"de": ["de 0.", "de 1."], "fr": ["fr 0.", "fr 1.", "fr 2."]}
    assert bench.held_out_sentences("de", path) == ["de 0.", "de 1."]


def test_short_clips_are_planned_from_the_given_sentences_alone(bench):
    plans = bench.short_clip_plans("fr", ["Un.", "Deux."], 6, seed=0)
    assert len(plans) == 6
    assert all(set(text.split(" ")) <= {"Un.", "Deux."} for text, _, _ in plans)
    assert all(voice in bench.held_out_voices("fr") and 0.9 <= rate <= 1.15 for _, voice, rate in plans)
    assert plans == bench.short_clip_plans("fr", ["Un.", "Deux."], 6, seed=0)


def test_a_side_carries_its_own_speculation_options(bench):
    assert bench.side("shipped=default") == ("shipped", "default", {})
    name, folder, options = bench.side("unpaused=runs/ml/export,pause_draft=false,num_draft_tokens=3")
    assert (name, folder, options) == ("unpaused", "runs/ml/export", {"pause_draft": False, "num_draft_tokens": 3})
