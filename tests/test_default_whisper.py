"""The embedded Whisper base with the shipped distilled draft: the draft attaches to base (shared encoder and
embeddings) and the pair decodes exactly base's greedy output on real and synthetic speech."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from seq2spec import Seq2SeqSpeculator
from seq2spec.whisper.audio import load_audio
from seq2spec.whisper.draft import WHISPER_BASE_DRAFT_DIR, output_token_ids

SAMPLES = Path(__file__).resolve().parents[1] / "recipes" / "data" / "asr_samples"
LIBRIVOX = Path("/usr/share/pocketsphinx/test/data/librivox")


def _base_installed() -> bool:
    from seq2spec.default_models import whisper_base_sources

    try:
        whisper_base_sources()
    except FileNotFoundError:
        return False
    return True


pytestmark = pytest.mark.skipif(not _base_installed(), reason='the embedded base is not installed: "seq2spec[whisper]"')


@pytest.fixture(scope="module")
def pair():
    from seq2spec.default_models import load_whisper_base_pair

    return load_whisper_base_pair()


def test_draft_is_shipped_small_and_described():
    size = (WHISPER_BASE_DRAFT_DIR / "decoder.safetensors").stat().st_size
    assert size < 20e6  # only the draft's own layers, fp16
    metrics = json.loads((WHISPER_BASE_DRAFT_DIR / "metrics.json").read_text())
    assert metrics["draft_layers"] == 2 and metrics["steps"] > 0  # the recipe's record of the shipped draft
    assert 0.5 < metrics["agreement_heldout"] <= 1
    assert (WHISPER_BASE_DRAFT_DIR / "MODEL_CARD.md").is_file()


def test_draft_shares_base_modules(pair):
    big, draft, _ = pair
    assert draft.model.decoder.embed_tokens is big.model.decoder.embed_tokens
    assert len(draft.model.decoder.layers) == 2
    # the shipped draft scores a subset of the vocabulary: its head holds base's rows for those tokens
    tokens = output_token_ids(draft)
    assert tokens is not None and 8000 < tokens.numel() < big.config.vocab_size
    assert torch.equal(draft.proj_out.weight, big.proj_out.weight[tokens])
    eot = big.generation_config.eos_token_id
    assert bool(torch.isin(torch.arange(eot, big.config.vocab_size), tokens).all())  # specials and timestamps


def test_pair_decodes_base_greedy_exactly(pair):
    big, draft, processor = pair
    paths = sorted(SAMPLES.glob("clip0[0-3]*.wav")) + sorted(LIBRIVOX.glob("*.wav"))[:2]
    clips = [load_audio(p) for p in paths]
    features = processor.feature_extractor(clips, sampling_rate=16000, return_tensors="pt").input_features
    expected = big.generate(features, language="en", task="transcribe")
    speculator = Seq2SeqSpeculator(big, draft, processor)
    actual = speculator.generate(input_features=features, language="en", task="transcribe")
    assert actual.shape == expected.shape and torch.equal(actual, expected)
    stats = speculator.last_stats
    assert stats.draft_encoder_calls == 0
    assert stats.acceptance_rate > 0.5  # a trained draft, not a random one
    texts = processor.batch_decode(actual, skip_special_tokens=True)
    assert len({t.strip() for t in texts}) == len(texts) and all(t.strip() for t in texts)
