"""recipes/distill_whisper_draft.py: the encode stage redoes exactly what a grown set needs."""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "recipes"))
import distill_whisper_draft  # noqa: E402


def write_chunk(folder: Path, start: int, rows: int) -> None:
    torch.save({"ids": torch.zeros(rows, 3, dtype=torch.long)}, folder / f"{start:06d}.pt")


def test_missing_chunks_are_encoded(tmp_path):
    assert distill_whisper_draft.chunks_to_encode(tmp_path, 40, 16) == [0, 16, 32]
    write_chunk(tmp_path, 0, 16)
    write_chunk(tmp_path, 32, 8)
    assert distill_whisper_draft.chunks_to_encode(tmp_path, 40, 16) == [16]


def test_a_short_last_chunk_is_redone_once_the_set_grows(tmp_path):
    for start, rows in ((0, 16), (16, 16), (32, 8)):  # a 40-clip set, fully encoded
        write_chunk(tmp_path, start, rows)
    assert distill_whisper_draft.chunks_to_encode(tmp_path, 40, 16) == []
    # grown to 70 clips: the 8-clip chunk must hold 16 now, and two chunks are new
    assert distill_whisper_draft.chunks_to_encode(tmp_path, 70, 16) == [32, 48, 64]
