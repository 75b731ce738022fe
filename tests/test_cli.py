"""The ``seq2spec`` command as a user runs it: models loaded by path, lines in, lines out."""

from __future__ import annotations

import pytest
from conftest import greedy

from seq2spec import Seq2SeqSpeculator
from seq2spec.commands.correct import Fences, one_line
from seq2spec.commands.main import main


@pytest.fixture(scope="module")
def saved_pair(toy_byte_models, tmp_path_factory):
    big, small, tokenizer = toy_byte_models
    root = tmp_path_factory.mktemp("models")
    for name, model in (("big", big), ("small", small)):
        model.save_pretrained(root / name)
        tokenizer.save_pretrained(root / name)
    return root / "big", root / "small"


def test_correct_command_reads_files_and_writes_lines(saved_pair, tmp_path, toy_byte_models, capsys):
    big_path, small_path = saved_pair
    lines = ["Teh cat sat.", "", "a second line of input"]
    source = tmp_path / "in.txt"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "out.txt"
    code = main(
        [
            "correct",
            str(source),
            "--model",
            str(big_path),
            "--draft",
            str(small_path),
            "--max-new-tokens",
            "12",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    big, small, tokenizer = toy_byte_models
    expected = Seq2SeqSpeculator(big, small, tokenizer).correct(lines, max_new_tokens=12)
    assert out.read_text(encoding="utf-8").splitlines() == [one_line(text) for text in expected]
    assert "tokens per big forward" in capsys.readouterr().err


def test_fences_mark_the_lines_of_fenced_code_blocks():
    lines = ["Teh intro", "```python", "resutl = 1", "```", "  ~~~~", "a ~~~ b", "~~~", "~~~~"]
    lines += ["```code``` here", "```"]  # no fence: a backtick in its info string; then a fence
    fences = Fences()
    assert [fences.code(line) for line in lines] == [False, True, True, True, True, True, True, True, False, True]
    fences = Fences()  # a fence left open runs to the end of its file
    assert [fences.code(line) for line in ["``` sh", "pip instal x", "~~~", "more"]] == [True, True, True, True]


def test_lines_of_fenced_code_come_back_as_written(saved_pair, tmp_path, toy_byte_models):
    """Read line by line, a Markdown file's code was corrected as prose ("import mypackage" -> "import my
    package")."""
    big_path, small_path = saved_pair
    prose = ["Teh cat sat.", "a second line of input", "and a thrid"]
    code = ["```python", "import mypackage", "resutl = mypackage.run()", "```"]
    source = tmp_path / "doc.md"
    source.write_text("\n".join([prose[0], *code, *prose[1:]]) + "\n", encoding="utf-8")
    out = tmp_path / "out.md"
    arguments = ["--model", str(big_path), "--draft", str(small_path), "--max-new-tokens", "12", "--chunk-size", "3"]
    assert main(["correct", str(source), *arguments, "--out", str(out)]) == 0
    big, small, tokenizer = toy_byte_models
    corrected = [one_line(text) for text in Seq2SeqSpeculator(big, small, tokenizer).correct(prose, max_new_tokens=12)]
    assert corrected != prose  # the toy model changes prose
    assert out.read_text(encoding="utf-8").splitlines() == [corrected[0], *code, *corrected[1:]]


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be", "utf-32"])
def test_a_unicode_file_with_a_byte_order_mark_is_read(saved_pair, tmp_path, encoding):
    """Windows PowerShell 5 writes UTF-16 with `>`: such a file, read by its byte-order mark, gives the output of the
    same lines in UTF-8 (line ends kept)."""
    big_path, small_path = saved_pair
    lines = ["Teh café sat.", "", "a second line of input"]
    arguments = ["correct", "--model", str(big_path), "--draft", str(small_path), "--max-new-tokens", "12"]
    plain, marked = tmp_path / "plain.txt", tmp_path / "marked.txt"
    plain.write_bytes("\r\n".join(lines).encode("utf-8") + b"\r\n")
    text = "\r\n".join(lines) + "\r\n"
    marked.write_bytes(
        text.encode(encoding) if encoding != "utf-16-be" else "\ufeff".encode(encoding) + text.encode(encoding)
    )
    assert main([*arguments, str(plain), "--out", str(tmp_path / "plain.out")]) == 0
    assert main([*arguments, str(marked), "--out", str(tmp_path / "marked.out")]) == 0
    assert (tmp_path / "marked.out").read_bytes() == (tmp_path / "plain.out").read_bytes()
    assert (tmp_path / "plain.out").read_bytes().count(b"\r\n") == 3


def test_loading_by_path_shares_the_tokenizer(saved_pair, toy_byte_models):
    """Models loaded by path decode with the tokenizer saved beside the big one: the big model's greedy text."""
    big_path, small_path = saved_pair
    speculator = Seq2SeqSpeculator(str(big_path), str(small_path))
    big, _, tokenizer = toy_byte_models
    texts = ["hello", "a second, longer line"]
    expected = [
        tokenizer.decode(
            greedy(big, tokenizer(text, return_tensors="pt")["input_ids"], max_new_tokens=8)[0],
            skip_special_tokens=True,
        )
        for text in texts
    ]
    assert len(set(expected)) == 2 and all(expected)
    assert speculator.correct(texts, max_new_tokens=8, protect=False) == expected


def test_demo_reports_identical_outputs(capsys):
    assert main(["demo", "--rows", "4", "--max-new-tokens", "16"]) == 0
    assert "outputs identical: True" in capsys.readouterr().out


def test_chunks_match_one_pass_and_work_done_survives_a_failure(saved_pair, tmp_path, toy_byte_models, capsys):
    from transformers import ByT5Tokenizer

    big_path, _ = saved_pair
    limited = tmp_path / "limited"
    toy_byte_models[0].save_pretrained(limited)
    ByT5Tokenizer(model_max_length=32).save_pretrained(limited)
    lines = ["first line", "second line", "a third line that is far longer than thirty-two bytes", "fourth"]
    source = tmp_path / "in.txt"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    whole, chunked = tmp_path / "whole.txt", tmp_path / "chunked.txt"
    assert main(["correct", str(source), "--model", str(big_path), "--max-new-tokens", "8", "--out", str(whole)]) == 0
    assert (
        main(
            [
                "correct",
                str(source),
                "--model",
                str(big_path),
                "--max-new-tokens",
                "8",
                "--chunk-size",
                "2",
                "--out",
                str(chunked),
            ]
        )
        == 0
    )
    assert chunked.read_text(encoding="utf-8") == whole.read_text(encoding="utf-8")
    kept = tmp_path / "kept.txt"
    arguments = ["correct", str(source), "--model", str(limited), "--max-new-tokens", "8", "--chunk-size", "2"]
    assert main([*arguments, "--out", str(kept)]) == 2
    error = capsys.readouterr().err
    assert "line 3 of" in error and "--truncate" in error
    assert not kept.exists()  # nothing half-done at --out; the finished chunk waits in the partial output
    partial = kept.with_name("kept.txt.partial")
    assert partial.read_text(encoding="utf-8").splitlines() == whole.read_text(encoding="utf-8").splitlines()[:2]
    assert main([*arguments, "--truncate", "--out", str(kept)]) == 0  # the rerun continues after those lines
    assert "2 lines already done" in capsys.readouterr().err
    finished = kept.read_text(encoding="utf-8").splitlines()
    assert len(finished) == 4 and finished[:2] == whole.read_text(encoding="utf-8").splitlines()[:2]
    assert not partial.exists()


def test_a_half_precision_checkpoint_loads_in_float32_on_a_cpu(toy_byte_models, tmp_path):
    import copy

    import torch

    big, _, tokenizer = toy_byte_models
    copy.deepcopy(big).to(torch.float16).save_pretrained(tmp_path / "half")
    tokenizer.save_pretrained(tmp_path / "half")
    assert Seq2SeqSpeculator(str(tmp_path / "half")).big.dtype == torch.float32
    assert Seq2SeqSpeculator(str(tmp_path / "half"), dtype=torch.float16).big.dtype == torch.float16


@pytest.mark.parametrize("command", ["correct", "transcribe", "distill-draft"])
def test_a_device_torch_cannot_run_on_stops_the_command_naming_why(command, tmp_path, capsys):
    import torch

    arguments = {
        "correct": [],
        "transcribe": ["--out", str(tmp_path / "t.jsonl")],
        "distill-draft": ["--model", str(tmp_path), "--out", str(tmp_path / "draft")],
    }[command]
    with pytest.raises(SystemExit) as stop:
        main([command, str(tmp_path), *arguments, "--device", "cdua"])
    assert stop.value.code == 2 and "'cdua' is not a device name" in capsys.readouterr().err
    if not torch.cuda.is_available():
        with pytest.raises(SystemExit) as stop:
            main([command, str(tmp_path), *arguments, "--device", "cuda"])
        assert stop.value.code == 2 and "sees no CUDA device" in capsys.readouterr().err
