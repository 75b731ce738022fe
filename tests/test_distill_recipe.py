"""recipes/distill_whisper_draft.py: the encode stage redoes exactly what a grown set needs."""

from __future__ import annotations

from pathlib import Path

import distill_whisper_draft  # noqa: E402
import numpy as np
import pytest
import torch


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


@pytest.mark.parametrize("layout", ["FLAC", "OGG"])
def test_a_clip_of_any_rate_and_channels_is_read_as_16_khz_mono(tmp_path, layout):
    import soundfile

    rate = 24_000
    tone = np.sin(2 * np.pi * 440 * np.arange(rate) / rate).astype(np.float32) * 0.5
    path = tmp_path / f"clip.{layout.lower()}"
    subtype = "OPUS" if layout == "OGG" else "PCM_16"
    soundfile.write(path, np.stack([tone, tone], axis=1), rate, format=layout, subtype=subtype)
    samples = distill_whisper_draft.read_clip(path)
    assert samples.dtype == np.float32 and samples.ndim == 1
    assert abs(len(samples) - 16_000) <= 16  # one second at 16 kHz
    assert 0.3 < np.sqrt(np.mean(samples[2000:-2000] ** 2)) < 0.4  # the tone's level (0.5 / sqrt 2) kept


def test_encoded_clips_held_on_a_device_give_the_same_batches(tmp_path):
    folder = tmp_path / "train"
    folder.mkdir()
    torch.save(
        {
            "encoded": torch.randn(3, 4, 2).to(torch.float16),
            "ids": torch.tensor([[1, 2, 3, 9], [1, 4, 9, 9], [1, 5, 6, 9]]),
            "lengths": torch.tensor([4, 3, 4]),
            "prompt_lengths": torch.tensor([1, 1, 1]),
            "top_ids": torch.zeros(3, 4, 2, dtype=torch.int32),
            "top_logprobs": torch.zeros(3, 4, 2, dtype=torch.float16),
            "texts": ["a", "b", "c"],
        },
        folder / "000000.pt",
    )
    held = distill_whisper_draft.EncodedSet(folder)
    placed = distill_whisper_draft.EncodedSet(folder, device="cpu")
    first, second = held.batch([2, 0], pad_id=9), placed.batch([2, 0], pad_id=9)
    assert torch.equal(first["encoded"], second["encoded"]) and torch.equal(first["ids"], second["ids"])
    assert torch.equal(first["encoded"][0], held.encoded[2].float())


def test_agreement_is_split_by_how_sure_base_is():
    predicted = torch.tensor([5, 6, 7, 8])
    top_ids = torch.tensor([[5, 1], [9, 6], [7, 2], [3, 8]])
    top_logprobs = torch.tensor([[-0.1, -5.0], [-0.6, -0.9], [-1.0, -1.5], [-0.2, -4.0]])
    counts: dict[str, list[int]] = {}
    distill_whisper_draft.agreement_by_confidence(predicted, top_ids, top_logprobs, counts)
    assert counts == {"base_sure": [1, 2], "base_unsure": [1, 2]}  # sure: rows 0 (agrees) and 3; unsure: 1 and 2
    distill_whisper_draft.agreement_by_confidence(predicted[:1], top_ids[:1], top_logprobs[:1], counts)
    assert counts["base_sure"] == [2, 3]


def test_a_planned_clip_advances_the_generator_as_a_spoken_one(monkeypatch):
    """--data-seed replays the training clips' plans without speaking them, so the held-out clips stay the same."""
    import random

    import numpy as np

    monkeypatch.setattr(distill_whisper_draft, "speak", lambda *args: np.ones(1600, dtype=np.float32))
    sentences = [f"sentence {i}." for i in range(50)]
    spoken, planned = random.Random(3), random.Random(3)
    clips = [distill_whisper_draft.synthetic_clip(spoken, sentences) for _ in range(20)]
    plans = [distill_whisper_draft.synthetic_plan(planned, sentences) for _ in range(20)]
    assert [text for text, _, _ in clips] == [plan["text"] for plan in plans]
    assert spoken.random() == planned.random()
    assert len({len(samples) for _, samples, _ in clips}) > 1  # leads of different lengths: the plans differ


def test_held_out_and_evaluation_voices_never_speak_training_clips(tmp_path):
    import voices

    for name in ("af_bella", "af_nicole", "am_echo", "bf_emma", "bf_isabella", "bm_lewis", "bm_george", "jf_alpha"):
        (tmp_path / f"{name}.bin").write_bytes(b"")
    train, held_out = voices.natural_voices(tmp_path)
    assert {v.name for v in held_out} == set(voices.KOKORO_HELD_OUT)
    assert not {v.name for v in train} & set(voices.KOKORO_HELD_OUT)
    assert {v.label for v in train} == set()  # the rest are evaluation voices
    (tmp_path / "af_sky.bin").write_bytes(b"")
    (tmp_path / "bm_daniel.bin").write_bytes(b"")
    train, _ = voices.natural_voices(tmp_path)
    assert {v.label for v in train} == {"kokoro:af_sky", "kokoro:bm_daniel"}
    with pytest.raises(ValueError, match="kokoro-js"):
        voices.natural_voices(None)
    with pytest.raises(FileNotFoundError, match="kokoro-js"):
        voices.natural_voices(tmp_path / "missing")


def test_clips_are_spoken_in_order_by_parallel_workers():
    items = list(range(23))
    assert list(distill_whisper_draft.parallel_map(abs, [-i for i in items], 3)) == items
    assert list(distill_whisper_draft.parallel_map(abs, [-i for i in items], 1)) == items


def test_hibari_speaks_at_16_khz():
    pytest.importorskip("hibari")
    import voices

    samples = voices.speak("The library closes at six.", voices.Voice("hibari", "heart"), stretch=1.0, seed=1)
    again = voices.speak("The library closes at six.", voices.Voice("hibari", "heart"), stretch=1.0, seed=1)
    slower = voices.speak("The library closes at six.", voices.Voice("hibari", "heart"), stretch=1.3, seed=1)
    assert samples.dtype == np.float32 and 0.8 * voices.RATE < len(samples) < 4 * voices.RATE
    assert np.array_equal(samples, again) and len(slower) > len(samples)


def test_the_model_card_names_where_the_draft_trained():
    torch.set_num_threads(2)
    assert distill_whisper_draft.trained_on(torch.device("cpu")) == "a 2-thread CPU"
    card = distill_whisper_draft.MODEL_CARD
    assert "{trained_on}" in card and "2-core CPU" not in card


def test_timestamp_positions_weigh_in_the_loss_as_asked():
    generator = torch.Generator().manual_seed(0)
    begin, vocab = 8, 12  # ids 8-11 stand for timestamps
    logits = torch.randn(2, 5, vocab, generator=generator)
    top_ids = torch.stack([torch.randperm(vocab, generator=generator)[:3] for _ in range(10)]).view(2, 5, 3)
    top_ids[0, 1, 0], top_ids[1, 0, 0], top_ids[0, 2, 0] = 9, 11, 2  # two positions whose next token is a timestamp
    top_logprobs = torch.randn(2, 5, 3, generator=generator).log_softmax(-1)
    mask = torch.ones(2, 5, dtype=torch.bool)
    mask[1, 3:] = False
    batch = {"mask": mask, "top_ids": top_ids, "top_logprobs": top_logprobs}
    loss = distill_whisper_draft.distillation_loss

    plain = loss(logits, batch, 0.5)[0]
    assert torch.equal(loss(logits, batch, 0.5, None, 1.0, begin)[0], plain)  # weight 1: today's loss to the bit

    def alone(row: int, column: int) -> torch.Tensor:  # the loss of one position
        single = torch.zeros_like(mask)
        single[row, column] = True
        return loss(logits, batch | {"mask": single}, 0.5)[0]

    positions = mask.nonzero().tolist()
    weights = torch.tensor([4.0 if top_ids[r, c, 0] >= begin else 1.0 for r, c in positions])
    expected = (torch.stack([alone(r, c) for r, c in positions]) * weights).sum() / weights.sum()
    weighted = loss(logits, batch, 0.5, None, 4.0, begin)[0]
    assert torch.allclose(weighted, expected) and not torch.allclose(weighted, plain)
