"""recipes/pack_draft_speech.py: several data runs merged into one carryable work directory, finished work kept."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pack_draft_speech
import soundfile


def clip(path: Path, seconds: float = 0.5) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    samples = (np.random.default_rng(len(str(path))).standard_normal(int(16_000 * seconds)) * 0.1).astype(np.float32)
    soundfile.write(path, samples, 16_000, subtype="PCM_16")
    return path


def test_runs_are_merged_held_out_sets_and_real_clips_once(tmp_path):
    first = tmp_path / "classic"
    records = [
        {"split": "train", "path": str(clip(first / "audio/train/00000.wav")), "voice": "flite:slt:1.00"},
        {"split": "train", "path": str(clip(first / "audio/train_real/a.raw@1.0.wav")), "voice": "real"},
        {"split": "heldout", "path": str(clip(first / "audio/heldout/00000.wav")), "voice": "flite:kal:1.00"},
        {"split": "asr_samples", "path": "recipes/data/asr_samples/x.wav", "voice": "tts"},
    ]
    (first / "manifest.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    second = tmp_path / "natural"  # stopped before its manifest: its finished clips count, the newest does not
    for index in range(3):
        clip(second / f"audio/train/{index:05d}.wav")
    clip(second / "audio/train_real/a.raw@1.0.wav")
    for index in range(2):
        clip(second / f"audio/heldout/{index:05d}.wav")
    merged = pack_draft_speech.merge([first, second])
    assert [(r["split"], r["source_run"], Path(r["path"]).name) for r in merged] == [
        ("train", "classic", "00000.wav"),
        ("train", "classic", "a.raw@1.0.wav"),
        ("heldout", "classic", "00000.wav"),
        ("asr_samples", "classic", "x.wav"),
        ("train", "natural", "00000.wav"),
        ("train", "natural", "00001.wav"),  # 00002.wav may be cut short: left out
    ]


def test_clips_are_written_with_their_durations_and_a_rerun_keeps_them(tmp_path):
    run = tmp_path / "run"
    records = [
        {"split": "train", "path": str(clip(run / "audio/train/00000.wav", 0.75)), "voice": "x", "source_run": "run"},
        {"split": "heldout", "path": str(clip(run / "audio/heldout/00000.wav")), "voice": "x", "source_run": "run"},
        {"split": "asr_samples", "path": "recipes/data/asr_samples/x.wav", "voice": "tts", "source_run": "run"},
    ]
    out = tmp_path / "merged"
    written = [pack_draft_speech.convert(r, out, pack_draft_speech.flac_writer) for r in records]
    assert written[0]["path"] == str(out / "audio/train/run_00000.flac") and written[0]["seconds"] == 0.75
    assert written[1]["path"] == str(out / "audio/heldout/run_00000.flac")
    assert written[2] == records[2]  # a file of the repository is referenced where it is
    original, _ = soundfile.read(records[1]["path"], dtype="int16")
    assert np.array_equal(soundfile.read(written[1]["path"], dtype="int16")[0], original)  # held out: lossless
    stamp = Path(written[0]["path"]).stat().st_mtime_ns
    pack_draft_speech.convert(records[0], out, pack_draft_speech.flac_writer)
    assert Path(written[0]["path"]).stat().st_mtime_ns == stamp
