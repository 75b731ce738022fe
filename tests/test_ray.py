"""``seq2spec transcribe --ray`` and ``seq2spec correct --ray`` on a local 2-CPU Ray instance: the same results as the
local commands, file for file and line for line; bad inputs as error records; a rerun redoes nothing."""

from __future__ import annotations

import json

import pytest

ray = pytest.importorskip("ray", reason='Ray is not installed (pip install "seq2spec[ray]")')

from seq2spec.commands.main import main  # noqa: E402
from seq2spec.commands.ray_cluster import read_records  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def by_file(records: list[dict]) -> dict[str, dict]:
    return {record["file"]: record for record in records}


def test_transcribe_with_ray_equals_local(toy_whisper_dirs, audio_folder, tmp_path):
    big_dir, draft_dir = toy_whisper_dirs
    common = [str(audio_folder), "--model", str(big_dir), "--assistant", str(draft_dir), "--language", "en"]
    local_out = tmp_path / "local.jsonl"
    assert main(["transcribe", *common, "--batch-size", "3", "--out", str(local_out)]) == 1  # bad files exist
    local = by_file([json.loads(line) for line in local_out.read_text().splitlines()])

    ray_out = tmp_path / "ray_out"
    ray_args = ["transcribe", *common, "--batch-size", "2", "--ray", "--num-actors", "2", "--out", str(ray_out)]
    assert main(ray_args) == 1
    remote = by_file(read_records(ray_out))
    assert set(remote) == set(local)
    for name, record in local.items():
        if "error" in record:
            assert remote[name]["error"] == record["error"]  # the same reason, e.g. "no audio samples"
            assert "text" not in remote[name]
        else:
            assert remote[name]["text"] == record["text"]
            assert remote[name]["duration"] == pytest.approx(record["duration"])
    assert any(record["text"] for record in remote.values() if "text" in record)

    files_before = sorted(p.name for p in ray_out.iterdir())
    assert main(ray_args) == 0  # everything is done: nothing runs, nothing is written
    assert sorted(p.name for p in ray_out.iterdir()) == files_before


def test_transcribe_with_ray_resumes_after_a_lost_file(toy_whisper_dirs, audio_folder, tmp_path):
    """A run whose output lost records (as a killed run would) redoes exactly those inputs; Parquet output."""
    big_dir, draft_dir = toy_whisper_dirs
    ray_out = tmp_path / "ray_out"
    args = ["transcribe", str(audio_folder), "--model", str(big_dir), "--assistant", str(draft_dir)]
    args += ["--language", "en", "--ray", "--out-format", "parquet", "--batch-size", "2", "--out", str(ray_out)]
    main(args)
    first = by_file(read_records(ray_out))
    written = sorted(ray_out.glob("*.parquet"))
    assert len(written) >= 2
    lost = set(by_file(__import__("pyarrow.parquet").parquet.read_table(written[0]).to_pylist()))
    written[0].write_bytes(written[0].read_bytes()[:20])  # a file cut short
    main(args)
    second = by_file(read_records(ray_out))
    assert set(second) == set(first)
    assert len(read_records(ray_out)) == len(first)  # nothing done twice
    assert lost and all(second[name].get("text") == first[name].get("text") for name in lost)
    assert list(ray_out.glob("*.corrupt"))


def test_correct_with_ray_equals_local(tmp_path):
    good = tmp_path / "lines.txt"
    lines = [
        "Thsi sentense has a fwe erors.",
        "She recieved a leter from her freind.",
        "The weather is nice today.",
        "",
        "We went too the libary on Tusday.",
    ]
    good.write_text("\n".join(lines) + "\n", encoding="utf-8")
    bad = tmp_path / "latin1.txt"
    bad.write_bytes("caf\xe9 cr\xe8me\n".encode("latin-1"))
    local_out = tmp_path / "local.txt"
    assert main(["correct", str(good), str(bad), "--out", str(local_out), "--batch-size", "2"]) == 1
    local = local_out.read_text(encoding="utf-8").splitlines()
    assert len(local) == len(lines)

    ray_out = tmp_path / "ray_out"
    ray_args = ["correct", str(good), str(bad), "--ray", "--out", str(ray_out), "--chunk-size", "2"]
    assert main(ray_args) == 1
    records = read_records(ray_out)
    corrected = sorted((r for r in records if r["file"] == str(good)), key=lambda r: r["line"])
    assert [r["source"] for r in corrected] == lines
    assert [r["text"] for r in corrected] == local
    errors = [r for r in records if "error" in r]
    assert len(errors) == 1 and errors[0]["file"] == str(bad) and "UTF-8" in errors[0]["error"]

    assert main(ray_args) == 1  # still reports the recorded error, but redoes nothing
    assert len(read_records(ray_out)) == len(records)


def test_ray_output_must_be_a_directory(tmp_path, capsys):
    existing = tmp_path / "file.jsonl"
    existing.write_text("")
    source = tmp_path / "lines.txt"
    source.write_text("hello\n")
    assert main(["correct", str(source), "--ray", "--out", str(existing)]) == 2
    assert "must be a directory" in capsys.readouterr().err
