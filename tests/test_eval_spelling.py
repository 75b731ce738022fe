"""recipes/eval_spelling.py end to end on a small byte-level model saved to disk."""

from __future__ import annotations

import json

import eval_spelling  # noqa: E402


def test_recipe_reports_identical_outputs_and_figures(toy_byte_models, tmp_path):
    big, small, tokenizer = toy_byte_models
    for name, model in (("big", big), ("small", small)):
        model.generation_config.max_new_tokens = 24
        model.save_pretrained(tmp_path / name)
        tokenizer.save_pretrained(tmp_path / name)
    data = tmp_path / "pairs.tsv"
    rows = [("thsi is a tset", "this is a test"), ("all good here", "all good here"), ("teh end", "the end")] * 3
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
