"""Faults a user can cause or suffer, each with its expected behaviour: a clear message, no user file destroyed,
output that stays whole, and no finished work lost (kill -9 at random moments, a full disk, bad inputs)."""

from __future__ import annotations

import json
import os
import random
import time
from pathlib import Path

import numpy as np
import pytest
import soundfile
from fault_tools import Launcher
from synthetic_audio import tone

from seq2spec.commands.main import build_parser, main

WORDS = "the a cat sat on mat dog ran far away into old house near river under big tree quick brown fox".split()


@pytest.fixture(scope="module")
def launcher() -> Launcher:
    return Launcher()


@pytest.fixture(scope="module")
def text_pair(toy_byte_models, tmp_path_factory) -> tuple[Path, Path]:
    big, small, tokenizer = toy_byte_models
    root = tmp_path_factory.mktemp("text_pair")
    for name, model in (("big", big), ("small", small)):
        model.save_pretrained(root / name)
        tokenizer.save_pretrained(root / name)
    return root / "big", root / "small"


@pytest.fixture(scope="module")
def clips(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("clips")
    for index in range(48):
        soundfile.write(folder / f"clip{index:02d}.wav", tone(1.0 + index % 4, 16000, 1, index), 16000)
    return folder


def text_lines(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 7))) for _ in range(count)]


def jsonl_records(path: Path, *, allow_fragment: bool = False) -> list[dict]:
    """Every complete line must be a JSON record; after a kill the last line may be a fragment (not yet repaired)."""
    if not path.exists():
        return []
    data = path.read_bytes()
    lines = data.split(b"\n")
    tail = lines.pop()
    assert allow_fragment or not tail, f"{path} ends in a partial line: {tail[:80]!r}"
    return [json.loads(line) for line in lines]


def complete_lines(path: Path) -> list[str]:
    """The whole lines of ``path`` (none when a run was killed before it made the file)."""
    if not path.exists():
        return []
    data = path.read_bytes()
    return data[: data.rfind(b"\n") + 1].decode("utf-8").split("\n")[:-1]


def file_lines(path: Path) -> list[str]:
    """The lines of a file ``correct`` wrote, split at newlines only (a line may hold any other separator)."""
    return path.read_bytes().decode("utf-8").split("\n")[:-1]


# ----------------------------------------------------------------------------- kill -9 at random moments


def test_transcribe_killed_at_random_moments_loses_and_repeats_nothing(launcher, toy_whisper_dirs, clips, tmp_path):
    rng = random.Random(2501)
    everything = {str(path) for path in clips.glob("*.wav")}
    kills, run = 0, 0
    while kills < 10:
        out = tmp_path / f"run{run}.jsonl"
        argv = ["transcribe", str(clips), "--out", str(out), "--model", str(toy_whisper_dirs[0]), "--language", "en"]
        argv += ["--batch-size", str(rng.choice([1, 2, 3]))]
        before: set[str] = set()
        while kills < 10 and before != everything:
            process = launcher.start(argv)
            time.sleep(rng.uniform(0.2, 3.0))
            if launcher.kill(process).code is not None:
                break  # it finished before the kill came
            kills += 1
            files = [record["file"] for record in jsonl_records(out, allow_fragment=True)]
            assert len(files) == len(set(files)), "a file recorded twice"
            assert before <= set(files), "finished work lost"
            before = set(files)
        finished = launcher.run(argv)
        assert finished.code == 0, finished.log
        files = [record["file"] for record in jsonl_records(out)]
        assert sorted(files) == sorted(everything)  # every input exactly once, every line whole
        run += 1


def test_correct_killed_at_random_moments_keeps_its_finished_lines(launcher, text_pair, tmp_path):
    rng = random.Random(2502)
    source = tmp_path / "lines.txt"
    source.write_text("\n".join(text_lines(160, seed=5)) + "\n", encoding="utf-8")
    common = [str(source), "--model", str(text_pair[0]), "--draft", str(text_pair[1]), "--max-new-tokens", "20"]
    reference_out = tmp_path / "reference.txt"
    assert launcher.run(["correct", *common, "--chunk-size", "8", "--out", str(reference_out)]).code == 0
    started = time.perf_counter()  # a second run, the launcher warm: kills drawn within its time land mid-run
    assert launcher.run(["correct", *common, "--chunk-size", "8", "--out", str(tmp_path / "again.txt")]).code == 0
    whole_run = time.perf_counter() - started
    reference = file_lines(reference_out)
    assert len(reference) == 160 and len(set(reference)) > 50
    out = tmp_path / "out.txt"
    partial = tmp_path / "out.txt.partial"
    argv = ["correct", *common, "--chunk-size", "8", "--out", str(out)]
    kills, done = 0, 0
    while kills < 10:
        process = launcher.start(argv)
        time.sleep(rng.uniform(0.05, max(0.5, whole_run)))
        killed = launcher.kill(process).code is None
        # finished before the kill, or killed after its last step (the rename) while exiting: complete, start over
        if not killed or out.exists():
            assert file_lines(out) == reference and not partial.exists()
            out.unlink()
            done = 0
            continue
        kills += 1
        lines = complete_lines(partial)
        assert lines == reference[: len(lines)], "a finished line differs from an uninterrupted run's"
        assert len(lines) >= done, "finished lines lost"
        done = len(lines)
    finished = launcher.run(argv)
    assert finished.code == 0, finished.log
    assert file_lines(out) == reference and not partial.exists()


# ----------------------------------------------------------------------------- a full disk


def test_a_full_disk_stops_transcribe_with_a_message_and_whole_records(launcher, toy_whisper_dirs, clips, tmp_path):
    out = tmp_path / "results.jsonl"
    argv = ["transcribe", str(clips), "--out", str(out), "--model", str(toy_whisper_dirs[0]), "--language", "en"]
    failed = launcher.run(argv, file_size_limit=900)
    assert failed.code == 2 and "cannot write to" in failed.log and "File too large" in failed.log, failed.log
    kept = jsonl_records(out)  # no partial line: the failed write was cut back
    assert 0 < len(kept) < 48
    assert launcher.run(argv).code == 0
    files = [record["file"] for record in jsonl_records(out)]
    assert len(files) == 48 == len(set(files)) and {r["file"] for r in kept} <= set(files)


def test_a_full_disk_stops_correct_with_a_message_and_resumes(launcher, text_pair, tmp_path):
    source = tmp_path / "lines.txt"
    source.write_text("\n".join(text_lines(400, seed=6)) + "\n", encoding="utf-8")
    out = tmp_path / "out.txt"
    argv = ["correct", str(source), "--model", str(text_pair[0]), "--max-new-tokens", "16", "--chunk-size", "4"]
    reference = tmp_path / "reference.txt"
    assert launcher.run([*argv, "--out", str(reference)]).code == 0
    limit = reference.stat().st_size // 2  # room for its note (a few hundred bytes) and about half the lines
    assert limit > 500
    failed = launcher.run([*argv, "--out", str(out)], file_size_limit=limit)
    assert failed.code == 2 and "File too large" in failed.log, failed.log
    partial = complete_lines(tmp_path / "out.txt.partial")
    assert partial == file_lines(reference)[: len(partial)] and partial
    assert not out.exists()
    assert launcher.run([*argv, "--out", str(out)]).code == 0
    assert out.read_text(encoding="utf-8") == reference.read_text(encoding="utf-8")


# ----------------------------------------------------------------------------- outputs that must not be destroyed


def test_out_equal_to_an_input_is_refused_and_the_input_kept(text_pair, tmp_path, capsys):
    notes = tmp_path / "notes.txt"
    notes.write_text("my only copy\n", encoding="utf-8")
    assert main(["correct", str(notes), "--model", str(text_pair[0]), "--out", str(notes)]) == 2
    assert "also an input" in capsys.readouterr().err
    assert notes.read_text(encoding="utf-8") == "my only copy\n"
    assert main(["correct", str(notes), "--model", str(text_pair[0]), "--out", str(tmp_path / "." / "notes.txt")]) == 2


def test_an_existing_out_is_replaced_only_by_a_finished_result(text_pair, tmp_path, capsys):
    out = tmp_path / "fixed.txt"
    out.write_text("an earlier result\n", encoding="utf-8")
    source = tmp_path / "in.txt"
    source.write_text("one\ntwo\n", encoding="utf-8")
    assert main(["correct", str(tmp_path / "missing.txt"), "--model", str(text_pair[0]), "--out", str(out)]) == 2
    assert "no such file" in capsys.readouterr().err
    assert out.read_text(encoding="utf-8") == "an earlier result\n"
    assert main(["correct", str(source), "--model", str(text_pair[0]), "--max-new-tokens", "6", "--out", str(out)]) == 0
    assert len(out.read_text(encoding="utf-8").splitlines()) == 2


def test_a_foreign_partial_file_is_not_overwritten(text_pair, tmp_path, capsys):
    source = tmp_path / "in.txt"
    source.write_text("one\n", encoding="utf-8")
    (tmp_path / "out.txt.partial").write_text("somebody else's file\n", encoding="utf-8")
    assert main(["correct", str(source), "--model", str(text_pair[0]), "--out", str(tmp_path / "out.txt")]) == 2
    assert "not written by seq2spec" in capsys.readouterr().err
    assert (tmp_path / "out.txt.partial").read_text(encoding="utf-8") == "somebody else's file\n"


def test_transcribe_refuses_an_output_that_is_not_its_own(toy_whisper_dirs, clips, tmp_path, capsys):
    out = tmp_path / "notes.txt"
    out.write_text("my notes\nsecond line without an ending", encoding="utf-8")
    argv = ["transcribe", str(clips / "clip00.wav"), "--out", str(out), "--model", str(toy_whisper_dirs[0])]
    assert main([*argv, "--language", "en"]) == 2
    assert "not a seq2spec results file" in capsys.readouterr().err
    assert out.read_text(encoding="utf-8") == "my notes\nsecond line without an ending"


def test_a_corrupt_line_is_skipped_and_its_file_done_again(toy_whisper_dirs, clips, tmp_path, capsys):
    out = tmp_path / "results.jsonl"
    files = [str(clips / f"clip0{index}.wav") for index in range(3)]
    argv = ["transcribe", *files, "--out", str(out), "--model", str(toy_whisper_dirs[0]), "--language", "en"]
    assert main(argv) == 0
    lines = out.read_text(encoding="utf-8").splitlines()
    out.write_text(lines[0] + "\n" + lines[1][:20] + "}garbage\n" + lines[2] + "\n", encoding="utf-8")
    capsys.readouterr()
    assert main(argv) == 0
    error = capsys.readouterr().err
    assert "1 unreadable line(s) skipped" in error and "1 to transcribe" in error
    records = [
        json.loads(line) for line in out.read_text(encoding="utf-8").splitlines() if not line.endswith("garbage")
    ]
    assert sorted(record["file"] for record in records) == sorted(files)
    assert main(argv) == 0  # and later runs go on working


def test_convert_never_deletes_what_it_did_not_write(tmp_path, capsys):
    from test_whisper_ct2 import write_ct2_directory
    from toy_helpers import build_toy_whisper

    source = write_ct2_directory(build_toy_whisper(), tmp_path / "ct2")
    source_files = sorted(path.name for path in source.iterdir())
    users = tmp_path / "users_folder"
    users.mkdir()
    (users / "keep.txt").write_text("precious", encoding="utf-8")
    assert main(["convert-ct2", str(source), str(users)]) == 2
    assert "seq2spec did not write" in capsys.readouterr().err
    assert (users / "keep.txt").read_text(encoding="utf-8") == "precious" and len(list(users.iterdir())) == 1
    assert main(["convert-ct2", str(source), str(source)]) == 2
    assert "is the source" in capsys.readouterr().err
    assert sorted(path.name for path in source.iterdir()) == source_files
    assert main(["convert-ct2", str(source), str(tmp_path)]) == 2  # a destination holding the source
    assert main(["convert-ct2", str(source), str(tmp_path / "hf")]) == 0
    assert main(["convert-ct2", str(source), str(tmp_path / "hf")]) == 0  # an earlier conversion is replaced
    (tmp_path / "empty").mkdir()
    assert main(["convert-ct2", str(source), str(tmp_path / "empty")]) == 0
    assert not [path for path in tmp_path.iterdir() if ".partial" in path.name or ".replaced" in path.name]


def test_corrupt_conversion_sources_get_messages_not_tracebacks(tmp_path, capsys):
    from test_whisper_ct2 import write_ct2_directory
    from toy_helpers import build_toy_whisper

    good = write_ct2_directory(build_toy_whisper(), tmp_path / "good")
    cases = {}
    for name, damage in {
        "garbage": lambda d: (d / "model.bin").write_bytes(os.urandom(4096)),
        "names": lambda d: (d / "model.bin").write_bytes(b"\x06\x00\x00\x00\x05\x00\xff\xfe\xfd\xfc\x00" + b"\0" * 64),
        "config": lambda d: (d / "config.json").write_text("{not json", encoding="utf-8"),
        "tokenizer": lambda d: (d / "tokenizer.json").write_text("[]", encoding="utf-8"),
    }.items():
        broken = tmp_path / name
        broken.mkdir()
        for path in good.iterdir():
            (broken / path.name).write_bytes(path.read_bytes())
        damage(broken)
        cases[name] = main(["convert-ct2", str(broken), str(tmp_path / f"{name}_out")])
        error = capsys.readouterr().err
        assert error.startswith("seq2spec convert-ct2: ") and "Traceback" not in error, (name, error)
    assert set(cases.values()) == {2}


def test_concurrent_conversions_into_one_place_all_succeed(launcher, tmp_path):
    from test_whisper_ct2 import write_ct2_directory
    from toy_helpers import build_toy_whisper
    from transformers import WhisperForConditionalGeneration

    source = write_ct2_directory(build_toy_whisper(), tmp_path / "ct2", split=True)
    processes = [launcher.start(["convert-ct2", str(source), str(tmp_path / "hf")]) for _ in range(3)]
    for process in processes:
        process.join(120)
    assert [process.exitcode for process in processes] == [0, 0, 0]
    WhisperForConditionalGeneration.from_pretrained(tmp_path / "hf")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["ct2", "hf"]  # no staging folder left behind


def test_first_uses_of_the_embedded_base_convert_it_once(tmp_path, monkeypatch):
    """Three first uses at once (threads hold separate locks, as processes would): one converts, all get it."""
    import threading

    from test_whisper_ct2 import write_ct2_directory
    from toy_helpers import build_toy_whisper

    import seq2spec.whisper.ct2 as ct2
    from seq2spec import default_models

    source = write_ct2_directory(build_toy_whisper(), tmp_path / "wheel", split=True)
    monkeypatch.setattr(default_models, "whisper_base_sources", lambda: (source, sorted(source.glob("*.part*"))))
    monkeypatch.setenv("SEQ2SPEC_CACHE", str(tmp_path / "cache"))
    conversions = []
    convert = ct2.convert_ct2_whisper

    def counted(*args, **kwargs):
        conversions.append(1)
        return convert(*args, **kwargs)

    monkeypatch.setattr(ct2, "convert_ct2_whisper", counted)
    results = []
    threads = [threading.Thread(target=lambda: results.append(default_models.whisper_base_dir())) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 3 and len(set(results)) == 1 and len(conversions) == 1
    assert (results[0] / "model.safetensors").is_file()


# ----------------------------------------------------------------------------- names, lines, files


def test_non_utf8_file_names_are_recorded_and_skipped_on_a_rerun(toy_whisper_dirs, clips, tmp_path, capsys):
    folder = tmp_path / "odd"
    folder.mkdir()
    soundfile.write(folder / "plain.wav", tone(1.0, 16000, 1, 3), 16000)
    odd = os.fsdecode(bytes(folder) + b"/caf\xe9.wav")  # Latin-1 bytes: not UTF-8
    os.rename(folder / "plain.wav", odd)
    out = tmp_path / "results.jsonl"
    argv = ["transcribe", str(folder), "--out", str(out), "--model", str(toy_whisper_dirs[0]), "--language", "en"]
    assert main(argv) == 0
    record = json.loads(out.read_bytes())  # valid JSON in valid UTF-8
    assert record["file"] == odd and "text" in record
    capsys.readouterr()
    assert main(argv) == 0 and "0 to transcribe" in capsys.readouterr().err


def test_two_runs_on_one_output_the_second_stops(launcher, toy_whisper_dirs, clips, tmp_path, capsys):
    out = tmp_path / "results.jsonl"
    argv = ["transcribe", str(clips), "--out", str(out), "--model", str(toy_whisper_dirs[0]), "--language", "en"]
    first = launcher.start([*argv, "--batch-size", "1"])
    deadline = time.time() + 120
    while time.time() < deadline and not (out.exists() and out.stat().st_size):
        time.sleep(0.05)
    assert main(argv) == 2
    assert f"another seq2spec run (pid {first.pid})" in capsys.readouterr().err
    first.join(300)
    assert first.exitcode == 0
    files = [record["file"] for record in jsonl_records(out)]
    assert len(files) == len(set(files)) == 48


def test_side_files_mirror_the_input_tree(launcher, toy_whisper_dirs, tmp_path):
    for name in ("a", "b"):
        (tmp_path / "audio" / name).mkdir(parents=True)
        soundfile.write(tmp_path / "audio" / name / "x.wav", tone(1.0 + (name == "b"), 16000, 1, 2), 16000)
    out = tmp_path / "results.jsonl"
    argv = ["transcribe", str(tmp_path / "audio"), "--out", str(out), "--model", str(toy_whisper_dirs[0])]
    finished = launcher.run([*argv, "--language", "en", "--format", "srt", "--timestamps"])
    assert finished.code == 0
    assert "deprecated" not in finished.log  # no transformers warning about Whisper's own internals
    for name in ("a", "b"):
        assert (tmp_path / "results_srt" / name / "x.wav.srt").read_text(encoding="utf-8").startswith("1\n")


def test_form_feeds_and_unicode_separators_keep_one_line_per_line(text_pair, tmp_path):
    source = tmp_path / "in.txt"
    source.write_bytes("page\fbreak\nline\u2028separator\r\nwindows line\rold mac line\n\x0bvtab\n".encode())
    out = tmp_path / "out.txt"
    assert main(["correct", str(source), "--model", str(text_pair[0]), "--max-new-tokens", "8", "--out", str(out)]) == 0
    assert len(out.read_text(encoding="utf-8").split("\n")) - 1 == 5


def test_non_utf8_standard_input_is_named_and_kept_lines_stay(launcher, text_pair, tmp_path):
    stdin = tmp_path / "stdin.bin"
    stdin.write_bytes(b"good line\n\xff\xfe bad\n")
    finished = launcher.run(["correct", "--model", str(text_pair[0]), "--max-new-tokens", "6"], stdin=stdin)
    assert finished.code == 2 and "standard input is not UTF-8 text" in finished.log, finished.log


def test_nan_audio_becomes_an_error_record(toy_whisper_dirs, tmp_path):
    samples = np.zeros(16000, dtype=np.float32)
    samples[100] = np.nan
    soundfile.write(tmp_path / "nan.wav", samples, 16000, subtype="FLOAT")
    out = tmp_path / "r.jsonl"
    assert main(["transcribe", str(tmp_path / "nan.wav"), "--out", str(out), "--model", str(toy_whisper_dirs[0])]) == 1
    assert "NaN" in json.loads(out.read_text())["error"]


# ----------------------------------------------------------------------------- arguments


@pytest.mark.parametrize(
    "argv, message",
    [
        (["correct", "--model", "./no/such/model"], "no such model directory"),
        (["correct", "--model", "MODEL", "--draft", "input_copy"], "did you mean 'input-copy'"),
        (["correct", "--model", "MODEL", "--out", "DIRECTORY"], "is a directory"),
        (["transcribe", "x.wav", "--out", "o.jsonl", "--model", "~/typo"], "no such"),
        # a hub name that is not here: the hub says it has none, or cannot be reached (offline machines, CI)
        (["correct", "--model", "seq2spec-tests/no-such-model"], "no such local directory"),
        (["transcribe", "x.wav", "--out", "o.jsonl", "--model", "seq2spec-tests/no-such-model"], "no such local"),
    ],
)
def test_bad_arguments_get_quick_clear_messages(argv, message, text_pair, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "DIRECTORY").mkdir()
    (tmp_path / "in.txt").write_text("x\n", encoding="utf-8")
    soundfile.write(tmp_path / "x.wav", tone(1.0, 16000, 1, 1), 16000)
    argv = [str(text_pair[0]) if part == "MODEL" else part for part in argv]
    if argv[0] == "correct":
        argv.insert(1, "in.txt")
    assert main(argv) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("flag", ["--batch-size", "--chunk-size", "--threads"])
@pytest.mark.parametrize("value", ["0", "-1", "two"])
def test_numbers_must_be_positive(flag, value, capsys):
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args(["correct", flag, value])
    assert exit_.value.code == 2 and "positive whole number" in capsys.readouterr().err


@pytest.mark.parametrize("command", [["correct"], ["transcribe", "x", "--out", "o"], ["demo"]])
def test_every_command_takes_threads(command):
    assert build_parser().parse_args([*command, "--threads", "1"]).threads == 1


# ----------------------------------------------------------------------------- the shipped models


def test_small_none_means_no_draft_even_with_the_shipped_speller():
    from seq2spec import Seq2SeqSpeculator

    no_draft = Seq2SeqSpeculator(draft=None)
    assert no_draft.draft is None and not no_draft.options.spellcheck_copy and not no_draft._proposers.copy
    assert Seq2SeqSpeculator()._proposers.copy  # the default: input copy (spell-checked), no draft model


def test_the_shipped_speller_leaves_other_scripts_alone():
    from seq2spec import Seq2SeqSpeculator

    texts = ["日本語のテキストです。", "Привет, как дела?", "Thsi is a tset."]
    corrected = Seq2SeqSpeculator().correct(texts)
    assert corrected[:2] == texts[:2] and corrected[2] != texts[2]


def _base_installed() -> bool:
    try:
        from seq2spec.default_models import whisper_base_sources

        whisper_base_sources()
        return True
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not _base_installed(), reason='the embedded base is not installed: "seq2spec[whisper]"')
def test_segment_timestamps_of_the_embedded_base_match_the_speech(launcher, tmp_path):
    """A clip whose speech starts at 0 s and ends at a known time, followed by silence: segment times from the
    transcribe command within 0.1 s of both (they were all 2.12 s late when the tokenizer's specials were wrong)."""
    from seq2spec.whisper.audio import load_audio

    samples = Path(__file__).resolve().parents[1] / "recipes" / "data" / "asr_samples"
    ends = {}
    for name in ("clip00_flite_slt.wav", "clip05_espeak-ng_en.wav"):
        audio = load_audio(samples / name)
        loud = np.nonzero(np.abs(audio) > 0.02)[0]
        speech = audio[loud[0] : loud[-1]]
        soundfile.write(tmp_path / name, np.concatenate([speech, np.zeros(16000, dtype=np.float32)]), 16000)
        ends[str(tmp_path / name)] = len(speech) / 16000
    out = tmp_path / "r.jsonl"
    finished = launcher.run(["transcribe", str(tmp_path), "--out", str(out), "--language", "en", "--timestamps"])
    assert finished.code == 0, finished.log
    for record in jsonl_records(out):
        segments = record["segments"]
        assert abs(segments[0]["start"] - 0.0) <= 0.1, segments
        assert abs(segments[-1]["end"] - ends[record["file"]]) <= 0.1, (segments, ends[record["file"]])


# ----------------------------------------------------------------------------- third round: pipes, reruns, links


def _corrected(text_pair, lines: list[str]) -> list[str]:
    """What ``correct`` writes for ``lines``: the Python API's corrections, one line each."""
    from seq2spec import Seq2SeqSpeculator
    from seq2spec.commands.correct import one_line

    speculator = Seq2SeqSpeculator(str(text_pair[0]))
    return [one_line(text) for text in speculator.correct(lines, max_new_tokens=8)]


def test_input_from_a_pipe_is_read_once_and_corrected(launcher, text_pair, tmp_path):
    """``printf ... | seq2spec correct /dev/stdin``: a pipe is read once; counting its lines first had emptied it."""
    lines = ["Thsi is a tset.", "anothr line here"]
    argv = ["correct", "/dev/stdin", "--model", str(text_pair[0]), "--max-new-tokens", "8"]
    finished = launcher.run(argv, stdin="\n".join(lines).encode() + b"\n", timeout=120)
    assert finished.code == 0, finished.log
    assert "2 lines" in finished.log
    assert "".join(line + "\n" for line in _corrected(text_pair, lines)) in finished.log


def test_a_fifo_input_neither_hangs_nor_loses_its_lines(launcher, text_pair, tmp_path):
    import threading

    fifo = tmp_path / "lines.fifo"
    os.mkfifo(fifo)
    out = tmp_path / "out.txt"

    def write() -> None:  # a writer that sends its lines once, as a process substitution's does
        with open(fifo, "wb") as pipe:
            pipe.write(b"Thsi is a tset.\nanothr line\n")

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    argv = ["correct", str(fifo), "--model", str(text_pair[0]), "--max-new-tokens", "8", "--out", str(out)]
    finished = launcher.run(argv, timeout=120)
    writer.join(10)
    assert finished.code == 0, finished.log
    assert out.read_text(encoding="utf-8").splitlines() == _corrected(text_pair, ["Thsi is a tset.", "anothr line"])


def test_utf16_standard_input_with_its_byte_order_mark_is_read(launcher, text_pair):
    lines = ["Thsi is a tset.", "caf\u00e9 line"]
    data = ("\n".join(lines) + "\n").encode("utf-16")  # a byte-order mark first, as PowerShell 5 writes
    finished = launcher.run(["correct", "-", "--model", str(text_pair[0]), "--max-new-tokens", "8"], stdin=data)
    assert finished.code == 0, finished.log
    assert "".join(line + "\n" for line in _corrected(text_pair, lines)) in finished.log


def test_form_feeds_and_separators_inside_a_line_are_kept_as_the_python_api_keeps_them(text_pair, tmp_path):
    lines = ["\f", "page\fbreak", "vertical\x0btab", "next\x85line", "line\u2028separator", "para\u2029graph"]
    source = tmp_path / "in.txt"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "out.txt"
    assert main(["correct", str(source), "--model", str(text_pair[0]), "--max-new-tokens", "8", "--out", str(out)]) == 0
    written = out.read_text(encoding="utf-8").split("\n")[:-1]
    assert written == _corrected(text_pair, lines)
    assert written[0] == "\f"  # a form-feed line stays a form feed, not an empty line


def test_a_rerun_with_only_the_batch_size_changed_resumes(launcher, text_pair, tmp_path):
    source = tmp_path / "in.txt"
    source.write_text("\n".join(text_lines(120, seed=4)) + "\n", encoding="utf-8")
    out = tmp_path / "out.txt"
    argv = ["correct", str(source), "--model", str(text_pair[0]), "--max-new-tokens", "6", "--chunk-size", "16"]
    full = launcher.run([*argv, "--out", str(tmp_path / "full.txt")])
    assert full.code == 0
    stopped = launcher.run([*argv, "--out", str(out), "--batch-size", "4"], file_size_limit=300)
    assert stopped.code == 2 and not out.exists()
    done = len(complete_lines(out.with_name("out.txt.partial")))
    assert done > 0
    resumed = launcher.run([*argv, "--out", str(out), "--batch-size", "32", "--chunk-size", "64"])
    assert resumed.code == 0 and f"{done} lines already done" in resumed.log, resumed.log
    assert out.read_bytes() == (tmp_path / "full.txt").read_bytes()


def test_an_output_named_through_a_link_stays_a_link_and_shares_its_lock(launcher, text_pair, tmp_path, capsys):
    source = tmp_path / "in.txt"
    source.write_text("\n".join(text_lines(8, seed=5)) + "\n", encoding="utf-8")
    target = tmp_path / "target.txt"
    target.write_text("old\n", encoding="utf-8")
    link = tmp_path / "link.txt"
    link.symlink_to(target)
    argv = ["correct", str(source), "--model", str(text_pair[0]), "--max-new-tokens", "8"]
    assert main([*argv, "--out", str(link)]) == 0
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text(encoding="utf-8").splitlines() == _corrected(text_pair, text_lines(8, seed=5))
    from seq2spec.commands.outputs import OutputLock

    with OutputLock(target):  # another run writing the target: a run through the link must stop
        assert main([*argv, "--out", str(link)]) == 2
    assert "another seq2spec run" in capsys.readouterr().err


def _transcribe(argv: list[str]) -> int:
    return main(["transcribe", *argv, "--language", "en"])


def test_a_rerun_from_another_folder_transcribes_nothing_again(toy_whisper_dirs, clips, tmp_path, monkeypatch):
    out = tmp_path / "r.jsonl"
    monkeypatch.chdir(clips.parent)
    assert _transcribe([f"{clips.name}/clip00.wav", f"{clips.name}/clip01.wav", "--out", str(out),
                        "--model", str(toy_whisper_dirs[0])]) == 0  # fmt: skip
    monkeypatch.chdir(clips)
    assert _transcribe(["clip00.wav", "clip01.wav", "--out", str(out), "--model", str(toy_whisper_dirs[0])]) == 0
    assert len(jsonl_records(out)) == 2


def test_a_file_changed_since_its_transcript_is_transcribed_again(toy_whisper_dirs, tmp_path, capsys):
    audio = tmp_path / "growing.wav"
    soundfile.write(audio, tone(1.0, 16000, 1, 1), 16000)
    out = tmp_path / "r.jsonl"
    argv = [str(audio), "--out", str(out), "--model", str(toy_whisper_dirs[0])]
    assert _transcribe(argv) == 0
    first = jsonl_records(out)
    soundfile.write(audio, tone(2.5, 16000, 1, 3), 16000)  # the recording went on
    assert _transcribe(argv) == 0
    assert "1 changed since their transcript" in capsys.readouterr().err
    records = jsonl_records(out)
    assert len(records) == 1 and records[0]["duration"] == 2.5 and records[0]["stamp"] != first[0]["stamp"]


def test_side_files_are_completed_from_the_jsonl_by_any_rerun(toy_whisper_dirs, clips, tmp_path, capsys):
    out = tmp_path / "r.jsonl"
    files = [str(clips / "clip00.wav"), str(clips / "clip01.wav")]
    argv = [*files, "--out", str(out), "--model", str(toy_whisper_dirs[0])]
    assert _transcribe(argv) == 0
    assert _transcribe([*argv, "--format", "txt"]) == 0  # nothing to decode: the side files come from the records
    for record in jsonl_records(out):
        assert (tmp_path / "r_txt" / f"{Path(record['file']).name}.txt").read_text() == record["text"] + "\n"
    shutil_folder = tmp_path / "r_srt"
    shutil_folder.write_text("a file in the way of the side folder")
    assert _transcribe([*argv, "--format", "srt"]) == 1
    assert "the transcript is in the JSONL, rerun to write it" in capsys.readouterr().err
    shutil_folder.unlink()
    assert _transcribe([*argv, "--format", "srt"]) == 0
    assert len(list(shutil_folder.glob("*.srt"))) == 2 and len(jsonl_records(out)) == 2


def test_fences_inside_list_items_and_after_a_byte_order_mark_are_code():
    from seq2spec.commands.correct import Fences

    fences = Fences()
    listed = ["1. Install:", "", "    ```bash", "    pip install mypackage", "    ```", "Then import it."]
    assert [fences.code(line) for line in listed] == [False, False, True, True, True, False]
    fences = Fences()
    assert [fences.code(line) for line in ["\ufeff```python", "import mypackage", "```", "prose"]] == [
        True, True, True, False,
    ]  # fmt: skip


def test_a_long_file_is_read_without_holding_it_at_its_own_rate(tmp_path):
    """A long 48-kHz stereo file becomes 16-kHz mono block by block: peak allocation a little over the result."""
    import tracemalloc

    from seq2spec.whisper.audio import AudioFile, load_audio

    path = tmp_path / "long.wav"
    seconds = 200
    rng = np.random.default_rng(0)
    with soundfile.SoundFile(path, "w", 48000, 2, subtype="PCM_16") as writer:
        for _ in range(seconds // 20):
            writer.write((0.1 * rng.standard_normal((48000 * 20, 2))).astype(np.float32))
    expected = load_audio(path)
    tracemalloc.start()
    samples = AudioFile(path).samples()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert np.array_equal(samples, expected)
    whole = seconds * 48000 * 2 * 4  # the file at its own rate and channels, as float32
    assert peak < 0.6 * whole, f"peak {peak / 2**20:.0f} MB; the whole file is {whole / 2**20:.0f} MB"


def test_phase_inverted_stereo_is_not_mixed_into_silence(caplog):
    from seq2spec.whisper.audio import to_mono_16k

    left = tone(1.0, 16000, 1, 7)
    inverted = np.stack([left, -left], axis=1)
    with caplog.at_level("WARNING"):
        mono = to_mono_16k(inverted, 16000)
    assert np.array_equal(mono, left.astype(np.float32)) and "cancel each other" in caplog.text
    together = np.stack([left, 0.5 * left], axis=1)
    assert np.allclose(to_mono_16k(together, 16000), 0.75 * left)  # ordinary stereo is still mixed


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda spec: spec.transcribe(np.zeros(16000, dtype=np.float32), sampling_rate="16000"), "positive int"),
        (lambda spec: spec.transcribe(np.zeros(16000, dtype=np.float32), 16000, decoding={"seed": 1}),
         "decoding must be a WhisperDecoding"),
    ],
)  # fmt: skip
def test_wrong_types_get_messages_naming_them(toy_whisper_dirs, call, message):
    from seq2spec import Seq2SeqSpeculator

    with pytest.raises(TypeError, match=message):
        call(Seq2SeqSpeculator(str(toy_whisper_dirs[0])))


def test_every_flag_has_help_and_no_help_shows_rest_markup():
    parser = build_parser()
    for name, command in parser._subparsers._group_actions[0].choices.items():
        assert "``" not in command.format_help().replace("```", ""), name
        for action in command._actions:
            if action.option_strings and action.option_strings[0] != "-h":
                assert action.help, f"seq2spec {name} {action.option_strings[0]} has no help"


def test_a_run_that_decodes_no_audio_reports_no_real_time_factor(toy_whisper_dirs, tmp_path, capsys):
    (tmp_path / "broken.wav").write_bytes(b"RIFF\x00\x00\x00\x00WAVEfmt ")  # a header cut short: no audio at all
    out = tmp_path / "r.jsonl"
    assert _transcribe([str(tmp_path / "broken.wav"), "--out", str(out), "--model", str(toy_whisper_dirs[0])]) == 1
    assert "real-time factor n/a" in capsys.readouterr().err
