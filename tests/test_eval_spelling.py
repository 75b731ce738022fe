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
         "--keep-dictionary-words", "--check-capitals", "--check-words", "--check-changes", "--check-nearer-words",
         "--check-context-words", "--keep-unknown-words",
             "--batch-size", "4",
         "--out", str(out), "--name", "folded", "--threads", "1", "--peers", "none"]
    )  # fmt: skip
    assert status == 0
    folded = json.loads((out / "folded.json").read_text())
    assert folded["fold_capitals"] and not report["fold_capitals"] and folded["identical_share"] == 1.0
    assert folded["keep_dictionary_words"] and not report["keep_dictionary_words"]
    assert folded["check_capitals"] and not report["check_capitals"]
    text = (out / "folded.md").read_text()
    assert "capitalised words folded; capitalised non-words checked; lower-case non-words checked" in text
    card = train_speller.evaluation_tables([out / "folded.json", out / "spelling.json"])  # one table, both rows
    table = [line for line in card.splitlines() if line.startswith("| ")]
    assert [row.split(" | ")[0] for row in table[1:3]] == [
        "| noisy input",
        "| this model (seq2spec, `correct`'s default: protected text kept, capitalised words folded, capitalised "
        "non-words checked, lower-case non-words checked, changes between dictionary words checked, far words made of "
        "non-words checked, words rare beside their neighbours made of non-words checked, dictionary words kept, "
        "unknown words kept)",
    ]
    assert table[3].startswith("| this model (seq2spec, protected text kept only) |") and card.count("pairs, ") == 1

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


def test_real_text_counts_keep_score_of_what_the_source_holds():
    from metrics import real_text_counts

    sources = ["Set MAX_RETRIES=5 at the café — teh end", "mail a@b.org now"]
    references = ["Set MAX_RETRIES=5 at the café — the end", "mail a@b.org now"]
    outputs = ["Set MAXRETRIES5 at the cafe - the end", "mail a@b.org now"]
    counts = real_text_counts(sources, references, outputs)
    # special characters of the sources: _ = é — @ ; the first output lost the first four
    assert (counts.characters, counts.characters_kept) == (5, 1)
    assert (counts.protected_tokens, counts.protected_kept) == (2, 1)  # MAX_RETRIES=5 lost, a@b.org kept
    assert (counts.lines, counts.lines_right) == (2, 1)


def test_the_real_text_sets_have_typos_in_plain_words_only(tmp_path):
    pytest.importorskip("codespell_lib")
    import make_real_text_sets

    from seq2spec.spelling.protection.word_rules import is_technical

    assert make_real_text_sets.main(["--out", str(tmp_path), "--seed", "3"]) == 0
    for name in make_real_text_sets.SETS.values():
        rows = [json.loads(line) for line in (tmp_path / name).read_text(encoding="utf-8").splitlines()]
        assert 0.2 < sum(row["source"] == row["reference"] for row in rows) / len(rows) < 0.4
        for row in rows:
            kept = [token for token in row["reference"].split() if is_technical(token)]
            assert [token for token in row["source"].split() if is_technical(token)] == kept
    assert make_real_text_sets.drop_apostrophe("we didn’t go", __import__("random").Random(0)) == "we didnt go"


def test_the_settings_tuning_recipe_prints_a_row_per_variant(monkeypatch, capsys, tmp_path):
    import tune_text_steps

    lines = [{"source": "Thsi is fine.", "reference": "This is fine."}, {"source": "ok then", "reference": "ok then"}]
    data = tmp_path / "validation.jsonl"
    data.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    monkeypatch.setattr(tune_text_steps, "REAL_VALIDATION", data)

    class Corrector:
        def __init__(self):
            self.calls = []

        def correct(self, texts, **changes):
            self.calls.append(changes)
            return [t.replace("Thsi", "This") if changes.get("check_words") else t for t in texts]

    corrector = Corrector()
    monkeypatch.setattr(tune_text_steps, "Seq2SeqSpeculator", lambda: corrector)
    tune_text_steps.main(["--variant", "check_words=true,word_check_margin=3", "--variant", "protect=false"])
    rows = [
        line
        for line in capsys.readouterr().out.splitlines()
        if line.startswith("| check") or line.startswith("| protect")
    ]
    assert rows == [
        "| check_words=True, word_check_margin=3.0 | +1 / +0 / +0 / +1 | +1 |",
        "| protect=False | +0 / +0 / +0 / +0 | +0 |",
    ]
    assert corrector.calls == [{}, {"check_words": True, "word_check_margin": 3.0}, {"protect": False}]
    with pytest.raises(SystemExit):
        tune_text_steps.main(["--variant", "no_such_setting=1"])
