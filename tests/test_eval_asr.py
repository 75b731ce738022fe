"""recipes/eval_asr.py end to end on a small random Whisper and a folder of synthetic clips."""

from __future__ import annotations

import json

import eval_asr  # noqa: E402
import numpy as np
import soundfile


def test_recipe_reports_identical_transcripts(toy_whisper_dirs, tmp_path):
    big_dir, draft_dir = toy_whisper_dirs
    folder = tmp_path / "clips"
    folder.mkdir()
    rng = np.random.default_rng(0)
    rows = []
    for index, seconds in enumerate((1.0, 2.5, 4.0, 35.0)):  # the last one is long-form
        samples = 0.3 * np.sin(2 * np.pi * (150 + 200 * index) * np.arange(int(seconds * 16000)) / 16000)
        samples += 0.05 * rng.standard_normal(samples.size)
        soundfile.write(folder / f"c{index}.wav", samples, 16000)
        rows.append(f"c{index}.wav\tHello, World number {index}!\n")
    (folder / "references.tsv").write_text("file\ttext\n" + "".join(rows))
    out = tmp_path / "results"
    status = eval_asr.main(
        [
            str(folder),
            "--model",
            str(big_dir),
            "--draft",
            str(draft_dir),
            "--batch-size",
            "2",
            "--out",
            str(out),
            "--threads",
            "1",
        ]
    )
    assert status == 0
    report = json.loads((out / "asr.json").read_text())
    assert report["files"] == 4 and report["identical_share"] == 1.0 and not report["differing"]
    assert report["greedy"]["wer"] == report["speculative"]["wer"] >= 0
    assert report["speculative"]["acceptance_rate"] > 0
    assert (out / "asr.png").stat().st_size > 1000
    assert "transcripts identical to greedy | | 100.0%" in (out / "asr.md").read_text()


def test_an_audio_folder_dataset_is_read_without_audio_decoding_backends(tmp_path):
    """A Hugging Face audiofolder (clips plus metadata.csv with transcriptions) gives names, 16 kHz clips, texts."""
    folder = tmp_path / "dataset"
    folder.mkdir()
    soundfile.write(folder / "one.wav", np.zeros(8000, dtype=np.float32), 8000)
    soundfile.write(folder / "two.flac", 0.1 * np.ones((16000, 2), dtype=np.float32), 16000)
    (folder / "metadata.csv").write_text("file_name,transcription\none.wav,first clip\ntwo.flac,second clip\n")
    names, clips, texts = eval_asr.load_references(folder, None)
    assert sorted(zip(names, texts, strict=True)) == [("one.wav", "first clip"), ("two.flac", "second clip")]
    lengths = dict(zip(names, (len(clip) for clip in clips), strict=True))
    assert lengths == {"one.wav": 16000, "two.flac": 16000}  # resampled to 16 kHz, channels mixed down
