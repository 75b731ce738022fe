"""The spelling-correction pair that ships with seq2spec: loads with no arguments and decodes exactly greedy."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
import torch
from metrics import cer

from seq2spec import Seq2SeqSpeculator
from seq2spec.commands.main import main
from seq2spec.default_models import SPELLER_DIR, SPELLER_SETTINGS, load_speller
from seq2spec.spelling.capital_check import output_scorer
from seq2spec.spelling.capitals import fold_capitals
from seq2spec.spelling.pipeline import SpellingPipeline

MISSPELLED = [
    "Thsi sentense has a fwe erors in it.",
    "The wether is nice today.",
    "She recieved a leter from her freind.",
    "Nothing is wrong with this sentence.",
]


SHIPPED = (SPELLER_DIR / "big").is_dir() and (SPELLER_DIR / "small").is_dir()
needs_weights = pytest.mark.skipif(not SHIPPED, reason="the speller weights are not trained and shipped yet (issue 4)")


@pytest.fixture(scope="module")
def speller():
    return load_speller()


def test_missing_weights_give_a_clear_error(monkeypatch, tmp_path):
    import seq2spec.default_models as default_models

    monkeypatch.setattr(default_models, "SPELLER_DIR", tmp_path / "nowhere")
    with pytest.raises(FileNotFoundError, match="shipped speller is missing"):
        default_models.load_speller()
    with pytest.raises(FileNotFoundError, match="pass your own models"):
        Seq2SeqSpeculator()
    assert main(["correct", str(tmp_path / "absent.txt")]) == 2


@needs_weights
def test_the_shipped_speller_comes_complete_from_one_function():
    """``shipped_speller`` returns what ``Seq2SeqSpeculator()`` and ``seq2spec correct`` run: the big model, its
    proposer and tuned options, its tokenizer and text steps."""
    from seq2spec.default_models import SPELLER_DEFAULT_OPTIONS, SPELLER_DEFAULT_PROPOSER, shipped_speller

    shipped = shipped_speller()
    assert (shipped.draft, shipped.options) == (SPELLER_DEFAULT_PROPOSER, SPELLER_DEFAULT_OPTIONS)
    assert shipped.spelling is SPELLER_SETTINGS and shipped.big.seq2spec_spelling is SPELLER_SETTINGS
    assert shipped.tokenizer("Teh cat")["input_ids"]
    speculator = Seq2SeqSpeculator()
    assert speculator.draft is None and speculator.options.spellcheck_copy
    assert speculator.spelling == SPELLER_SETTINGS


@needs_weights
def test_shipped_files_and_size():
    total = sum(path.stat().st_size for path in SPELLER_DIR.rglob("*") if path.is_file())
    assert total <= 60 * 1024 * 1024
    for name in ("big", "small"):
        assert (SPELLER_DIR / name / "model.safetensors").exists()
    assert (SPELLER_DIR / "MODEL_CARD.md").exists()
    metrics = json.loads((SPELLER_DIR / "metrics.json").read_text())
    assert {"cer_input", "cer_big", "clean_unchanged_big"} <= metrics.keys()  # quality figures are on record
    assert metrics["decoder_cost_ratio"] <= 1 / 8
    assert metrics["agreement_small_with_big"] >= 0.7


@needs_weights
def test_default_pair_loads_and_shares_a_tokenizer(speller):
    big, small, tokenizer = speller
    assert big.dtype == torch.float32 and small.dtype == torch.float32
    assert big.config.vocab_size == small.config.vocab_size == len(tokenizer)
    speculator = Seq2SeqSpeculator()
    assert speculator.tokenizer(MISSPELLED[0])["input_ids"] == tokenizer(MISSPELLED[0])["input_ids"]
    # its default proposer: input copy from the spell-checked source, no draft model; the draft stays one argument away
    assert speculator.draft is None and speculator.options.spellcheck_copy
    assert Seq2SeqSpeculator(None, small).draft is small
    assert not Seq2SeqSpeculator(None, small).options.spellcheck_copy


def _greedy_text(big, tokenizer, text: str) -> str:
    ids = tokenizer(text, return_tensors="pt")["input_ids"]
    return tokenizer.decode(big.generate(ids, do_sample=False, max_new_tokens=128)[0], skip_special_tokens=True)


def _greedy_texts(big, tokenizer, texts: list[str]) -> list[str]:
    return [_greedy_text(big, tokenizer, text) for text in texts]


@needs_weights
def test_default_correct_equals_big_greedy(speller):
    """correct() gives each text's capitalised near-dictionary words to the model in lower case ("Thsi" -> "thsi")
    and restores their capitals, and gives back dictionary words the model made into non-words: the big model's
    greedy output for the folded text, through the same steps. Without them: its greedy output for the text as
    written."""
    big, _, tokenizer = speller
    speculator = Seq2SeqSpeculator()
    corrected = speculator.correct(MISSPELLED, batch_size=2)
    folded = fold_capitals(MISSPELLED)
    assert folded[0].text.startswith("thsi ") and sum(bool(f.folded) for f in folded) == 1
    score = output_scorer(big, tokenizer)  # as correct runs the shipped model: its settings, checks included
    greedy = SpellingPipeline(SPELLER_SETTINGS, lambda texts: _greedy_texts(big, tokenizer, texts), score, tokenizer)
    assert corrected == greedy(MISSPELLED)
    assert speculator.last_stats.acceptance_rate > 0.5
    assert speculator.last_stats.proposed_copy_tokens > 0 and speculator.last_stats.draft_forwards == 0
    assert corrected != MISSPELLED  # it does correct something
    assert corrected[0].startswith("This ")

    plain = speculator.correct(
        MISSPELLED, batch_size=2, fold_capitals=False, keep_dictionary_words=False, check_capitals=False
    )
    assert plain == _greedy_texts(big, tokenizer, MISSPELLED)
    with pytest.raises(TypeError, match="fold_capitals must be True or False"):
        speculator.correct(MISSPELLED, fold_capitals="yes")


@needs_weights
def test_capitalised_typos_are_fixed_as_lower_case_ones_are(speller, monkeypatch):
    texts = ["Evory morning the new Ploicy is read aloud.", "Imoportant data stays on the server."]
    speculator = Seq2SeqSpeculator()
    assert speculator.correct(texts) == [
        "Every morning the new Policy is read aloud.",
        "Important data stays on the server.",
    ]
    # the model misses capitalised words it does not know
    as_written = speculator.correct(texts, fold_capitals=False, check_capitals=False)
    assert "Policy" not in as_written[0] and as_written[1].startswith("Imoportant")
    big, small, tokenizer = speller
    assert Seq2SeqSpeculator(big, small, tokenizer).spelling.fold_capitals  # the shipped model carries its settings
    monkeypatch.delattr(big, "seq2spec_spelling")  # another model: off unless asked
    assert not Seq2SeqSpeculator(big, small, tokenizer).spelling.fold_capitals


@needs_weights
def test_a_slip_of_a_name_and_a_markdown_table_come_back_whole():
    """Read as "jhon", the model wrote "Hon" ("Jhon lives here." -> "Who join lives here."); the name is read as
    written. A table whose rows the model looped on ("first name first name ...") comes back as written, no words
    added after its last pipe."""
    speculator = Seq2SeqSpeculator()
    texts = ["Jhon", "Jhon lives here.", "| Name | Age |\n|---|---|\n| Jhon Smith | 32 |\n"]
    assert speculator.correct(texts) == ["John", "John lives here.", "| Name | Age |\n|---|---|\n| John Smith | 32 |\n"]
    table = "| Key | Value |\n|---|---|\n| greeting | last name first name |\n| other | last name first name |"
    assert speculator.correct([table]) == [table]
    assert speculator.correct([table], keep_looped_texts=False) != [table]  # the model does loop on it


@needs_weights
def test_correct_words_the_model_garbles_come_back_as_written(speller, monkeypatch):
    """The shipped model writes "Satuff" for a clean "Staff" (and "magental" for "magenta"): correct() gives the
    dictionary words back; with keep_dictionary_words=False it returns the model's own greedy output."""
    big, small, tokenizer = speller
    texts = ["Staff meeting in the conference room in 3 minutes.", "she wore a sort of magenta dress"]
    speculator = Seq2SeqSpeculator()
    as_written = speculator.correct(texts, keep_dictionary_words=False)
    assert as_written == _greedy_texts(big, tokenizer, texts)
    assert as_written != texts  # the model does garble them: the step has something to undo
    assert speculator.correct(texts) == texts
    monkeypatch.delattr(big, "seq2spec_spelling")  # another model: off unless asked
    assert not Seq2SeqSpeculator(big, small, tokenizer).spelling.keep_dictionary_words


@needs_weights
def test_generate_on_the_trained_pair_equals_greedy(speller):
    big, small, tokenizer = speller
    batch = tokenizer(MISSPELLED * 4, padding=True, return_tensors="pt")
    expected = big.generate(**batch, do_sample=False, max_new_tokens=64)
    speculator = Seq2SeqSpeculator(big, small, tokenizer)
    output = speculator.generate(batch["input_ids"], batch["attention_mask"], max_new_tokens=64)
    assert output.shape == expected.shape and torch.equal(output, expected)


@needs_weights
def test_correct_command_uses_the_shipped_pair(tmp_path, capsys):
    source = tmp_path / "typos.txt"
    source.write_text("\n".join(MISSPELLED) + "\n", encoding="utf-8")
    assert main(["correct", str(source)]) == 0
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert len(lines) == len(MISSPELLED)
    assert lines == Seq2SeqSpeculator().correct(MISSPELLED)
    assert main(["correct", str(source), "--no-fold-capitals"]) == 0
    assert capsys.readouterr().out.splitlines() == Seq2SeqSpeculator().correct(MISSPELLED, fold_capitals=False)
    assert main(["correct", str(source), "--no-fold-capitals", "--no-keep-dictionary-words"]) == 0
    plain = Seq2SeqSpeculator().correct(MISSPELLED, fold_capitals=False, keep_dictionary_words=False)
    assert capsys.readouterr().out.splitlines() == plain


MORE = [
    "A man who has never gone to school may steal from a freight car.",
    "Beauty is in the eye of the beholder, but it may be neccessary from time to time to give a stupid person a hint.",
    "He is definately the best canditate.",
    "Every cloud has a silver linning.",
    "We will meet tomorow at the libary.",
    "You cannot step twice into the same river.",
    "It was a dark and stormy nigth.",
    "The comittee will anounce the results next week.",
    "Time flies like an arrow.",
    "An apple a day keeps the docter away.",
    "Please seperate the paper from the plastic.",
    "They went to the begining of the road.",
]


@needs_weights
@pytest.mark.parametrize("rows", [1, 16])
@pytest.mark.parametrize("mode", ["input-copy", "copy+draft"])
def test_input_copy_on_the_trained_speller_equals_greedy(speller, rows, mode):
    big, small, tokenizer = speller
    texts = (MORE + MISSPELLED)[:rows]
    batch = tokenizer(texts, padding=True, return_tensors="pt")
    expected = big.generate(**batch, do_sample=False, max_new_tokens=96)
    if mode == "input-copy":
        speculator = Seq2SeqSpeculator(big, tokenizer=tokenizer, draft="input-copy")
    else:
        speculator = Seq2SeqSpeculator(big, small, tokenizer, input_copy=True)
    output = speculator.generate(batch["input_ids"], batch["attention_mask"], max_new_tokens=96)
    assert output.shape == expected.shape and torch.equal(output, expected)
    stats = speculator.last_stats
    assert stats.accepted_copy_tokens > 0.5 * stats.proposed_copy_tokens  # the output mostly repeats the input
    assert stats.tokens_per_big_forward > 2


HELDOUT = Path(__file__).resolve().parents[1] / "recipes" / "data" / "spelling_heldout.tsv"


@needs_weights
def test_shipped_speller_meets_its_held_out_targets():
    """Issue 4's bar on the shipped held-out sample (sentences never trained on), decoded by the default speculator:
    CER after correction at most half the input's, and at least 95% of clean sentences returned unchanged."""
    metrics = json.loads((SPELLER_DIR / "metrics.json").read_text())
    with open(HELDOUT, encoding="utf-8", newline="") as handle:
        rows = list(csv.reader(handle, delimiter="\t"))[1:]
    corrupted, clean = (
        rows[: metrics["eval_corrupted"]],
        [reference for _, reference in rows[metrics["eval_corrupted"] :]],
    )
    assert len(corrupted) >= 300 and len(clean) >= 300
    sources = [source for source, _ in corrupted]
    references = [reference for _, reference in corrupted]
    outputs = Seq2SeqSpeculator().correct(sources + clean, batch_size=64)
    fixed, unchanged = outputs[: len(sources)], outputs[len(sources) :]
    input_cer, output_cer = cer(references, sources), cer(references, fixed)
    assert input_cer > 0.02  # the sample is really corrupted
    assert output_cer <= 0.5 * input_cer, (output_cer, input_cer)
    assert sum(a == b for a, b in zip(unchanged, clean, strict=True)) / len(clean) >= 0.95


@needs_weights
def test_int8_mode_equals_int8_greedy(tmp_path, capsys):
    """dtype="int8" (and --dtype int8): the shipped pair in int8 decodes exactly the int8 big model's greedy output,
    per-row and with input copy, in a batch of 16 rows."""
    from seq2spec.int8 import is_int8

    big, small, tokenizer = load_speller(dtype="int8")
    assert is_int8(big) and is_int8(small.get_encoder()) and not is_int8(small.get_decoder())
    texts = MORE + MISSPELLED
    batch = tokenizer(texts, padding=True, return_tensors="pt")
    expected = big.generate(**batch, do_sample=False, max_new_tokens=96)
    for options in ({}, {"input_copy": True}):
        speculator = Seq2SeqSpeculator(big, small, tokenizer, **options)
        output = speculator.generate(batch["input_ids"], batch["attention_mask"], max_new_tokens=96)
        assert output.shape == expected.shape and torch.equal(output, expected)
    source = tmp_path / "typos.txt"
    source.write_text("\n".join(MISSPELLED) + "\n", encoding="utf-8")
    assert main(["correct", str(source), "--dtype", "int8"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines == Seq2SeqSpeculator(dtype="int8").correct(MISSPELLED)
    single = [
        tokenizer.decode(
            big.generate(**tokenizer(t, return_tensors="pt"), do_sample=False, max_new_tokens=128)[0],
            skip_special_tokens=True,
        )
        for t in MISSPELLED
    ]
    assert lines == single


@needs_weights
def test_long_lines_are_corrected_sentence_by_sentence(speller, tmp_path, capsys):
    from seq2spec.spelling.pieces import split_text

    big, _, tokenizer = speller
    line = (
        "Thsi sentense has a fwe erors. She recieved a leter from her freind, and she was very hapy about it "
        "becuase it had been a long tiem since they last spoke."
    )
    assert len(line) > 140 and len(split_text(line, 140).pieces) == 2
    seen = []

    def greedy(texts: list[str]) -> list[str]:
        seen.extend(texts)
        return _greedy_texts(big, tokenizer, texts)

    score = output_scorer(big, tokenizer)  # as correct runs the shipped model: its settings, checks included
    [pieced] = SpellingPipeline(SPELLER_SETTINGS, greedy, score, tokenizer)([line])
    assert len(seen) == 2  # the model read the line's two sentences apart
    seen.clear()
    whole_line = SPELLER_SETTINGS.updated(split_longer_than=None)
    [whole] = SpellingPipeline(whole_line, greedy, score, tokenizer)([line])
    assert len(seen) == 1  # the whole line at once
    source = tmp_path / "long.txt"
    source.write_text(line + "\n")
    assert main(["correct", str(source)]) == 0
    assert capsys.readouterr().out == pieced + "\n"
    assert main(["correct", str(source), "--split-longer-than", "0"]) == 0
    assert capsys.readouterr().out == whole + "\n"
