"""recipes/eval_spelling.py end to end on a small byte-level model saved to disk; the classical peers' word handling
and the per-word typo counts."""

from __future__ import annotations

import json

import eval_spelling  # noqa: E402
import pytest
import train_speller  # noqa: E402


def test_recipe_reports_identical_outputs_and_figures(toy_byte_models, tmp_path):
    big, small, tokenizer = toy_byte_models
    for name, model in (("big", big), ("small", small)):
        model.generation_config.max_new_tokens = 24
        model.save_pretrained(tmp_path / name)
        tokenizer.save_pretrained(tmp_path / name)
    data = tmp_path / "pairs.tsv"
    rows = [("Thsi is a tset", "This is a test"), ("all good here", "all good here"), ("teh end", "the end")] * 3
    data.write_text("source\treference\n" + "".join(f"{s}\t{r}\n" for s, r in rows))
    out = tmp_path / "results"
    status = eval_spelling.main(
        [
            str(data),
            "--model",
            str(tmp_path / "big"),
            "--draft",
            str(tmp_path / "small"),
            "--batch-size",
            "4",
            "--out",
            str(out),
            "--threads",
            "1",
        ]
    )
    assert status == 0
    report = json.loads((out / "spelling.json").read_text())
    assert report["pairs"] == 9 and report["identical_share"] == 1.0 and not report["differing"]
    assert report["source"]["wer"] > 0 and 0 <= report["greedy"]["corrections"]["f1"] <= 1
    assert (out / "spelling.png").stat().st_size > 1000
    assert "| outputs identical to greedy | | | 100.0% |" in (out / "spelling.md").read_text()

    card = train_speller.evaluation_tables([out / "spelling.json"])  # the model card's table of this report
    table = [line for line in card.splitlines() if line.startswith("| ")]
    assert [row.split(" | ")[0] for row in table[1:]] == [
        "| noisy input", "| this model (seq2spec)", *(f"| {peer}" for peer in report["peers"])
    ]  # fmt: skip
    assert f"| {report['speculative']['cer']:.4f} |" in table[2] and "outputs identical to greedy 100.0%" in card
    assert train_speller.evaluation_tables([]) == ""

    # as correct() runs the shipped speller: greedy and seq2spec both get "thsi" and give their word its capital
    # back, and both have garbled dictionary words given back
    status = eval_spelling.main(
        [str(data), "--model", str(tmp_path / "big"), "--draft", str(tmp_path / "small"), "--fold-capitals",
         "--keep-dictionary-words", "--check-capitals", "--batch-size", "4", "--out", str(out), "--name", "folded",
         "--threads", "1", "--peers", "none"]
    )  # fmt: skip
    assert status == 0
    folded = json.loads((out / "folded.json").read_text())
    assert folded["fold_capitals"] and not report["fold_capitals"] and folded["identical_share"] == 1.0
    assert folded["keep_dictionary_words"] and not report["keep_dictionary_words"]
    assert folded["check_capitals"] and not report["check_capitals"]
    text = (out / "folded.md").read_text()
    assert "capitalised words folded; dictionary words kept; capitalised non-words checked" in text
    card = train_speller.evaluation_tables([out / "folded.json", out / "spelling.json"])  # one table, both rows
    table = [line for line in card.splitlines() if line.startswith("| ")]
    assert [row.split(" | ")[0] for row in table[1:3]] == [
        "| noisy input",
        "| this model (seq2spec, `correct`'s default: capitals folded, capitalised non-words checked, dictionary words "
        "kept)",
    ]
    assert table[3].startswith("| this model (seq2spec, its output as it is) |") and card.count("pairs, ") == 1

    jsonl = tmp_path / "pairs.jsonl"
    jsonl.write_text("".join(json.dumps({"src": s, "tgt": r}) + "\n" for s, r in rows[:4]))
    status = eval_spelling.main(
        [
            str(jsonl),
            "--model",
            str(tmp_path / "big"),
            "--draft",
            "input-copy",
            "--source-column",
            "src",
            "--reference-column",
            "tgt",
            "--out",
            str(out),
            "--name",
            "copy",
            "--threads",
            "1",
        ]
    )
    assert status == 0 and json.loads((out / "copy.json").read_text())["pairs"] == 4


def test_peer_word_handling_keeps_case_punctuation_and_non_words():
    from classical_spellers import correct_text

    fixes = {"teh": "the", "recieve": "receive", "wrold": "world", "cta": "cat", "dont": "don't", "nd": "and"}
    asked = []

    def correct_word(word):
        asked.append(word)
        return fixes.get(word)

    text = 'Teh TEH teh (recieve), "Wrold!" 3teh te2h teh-cta dont\'s iPhon McDonld cta.  nd'
    assert correct_text(text, correct_word) == (
        'The THE the (receive), "World!" 3teh te2h teh-cta dont\'s iPhon McDonld cat.  and'
    )
    # only plain alphabetic words in lower, capitalised or all-caps form reach the checker, in lower case
    assert sorted(set(asked)) == ["cta", "nd", "recieve", "teh", "wrold"]
    assert correct_text("known words stay", lambda word: None) == "known words stay"


def test_symspellpy_peer_restores_case():
    pytest.importorskip("symspellpy")
    from classical_spellers import correct_text, load_peer

    symspell = load_peer("symspellpy")
    assert correct_text("Teh RECIEVE, (thier) 2nd e.g. Debian's", symspell) == "The RECEIVE, (their) 2nd e.g. Debian's"


def test_typo_counts_per_word():
    from metrics import typo_counts

    sources = ["Teh cat sat", "the dog ran", "a lot of thigns", "This is anintroduction"]
    references = ["The cat sat", "the dog ran", "a lot of things", "This is an introduction"]
    outputs = ["The cat sat", "the dig ran", "a lot of thigns", "This is an introduction"]
    counts = typo_counts(sources, references, outputs)
    assert (counts.typos, counts.fixed, counts.capitalised_typos, counts.capitalised_fixed) == (3, 2, 1, 1)
    assert counts.lowercase_fixed_share == 0.5 and counts.clean_unchanged_share == 0.0
    assert (counts.correct_words, counts.broken_words) == (10, 1)
