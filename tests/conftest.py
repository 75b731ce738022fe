"""Shared fixtures: small random models with varied greedy outputs (see seq2spec.toy_models)."""

from __future__ import annotations

import pytest
import torch

from seq2spec.toy_models import FAMILIES, build_toy_model, perturbed_copy

torch.set_num_threads(min(2, torch.get_num_threads()))


@pytest.fixture(scope="session")
def toy_models() -> dict:
    """Per family: the big model, a perturbed copy (partial agreement), an unrelated smaller model (almost none)."""
    models = {}
    for index, family in enumerate(FAMILIES):
        big = build_toy_model(family, seed=index)
        models[family] = {
            "big": big,
            "perturbed": perturbed_copy(big, seed=100 + index),
            "unrelated": build_toy_model(family, seed=200 + index, d_model=32, layers=1),
        }
    return models


def greedy(model, input_ids, attention_mask=None, **kwargs) -> torch.Tensor:
    """The reference every decoding path must reproduce."""
    return model.generate(input_ids, attention_mask=attention_mask, do_sample=False, num_beams=1, **kwargs)


def assert_same(actual: torch.Tensor, expected: torch.Tensor) -> None:
    assert actual.shape == expected.shape, f"shape {tuple(actual.shape)} != greedy {tuple(expected.shape)}"
    mismatch = (actual != expected).nonzero()
    assert mismatch.numel() == 0, f"first differing (row, step): {mismatch[0].tolist()}\n{actual}\n{expected}"


@pytest.fixture(scope="session")
def toy_byte_models():
    """A byte-level (ByT5 tokenizer, built offline) big model, an unrelated draft, and the tokenizer."""
    from transformers import ByT5Tokenizer

    tokenizer = ByT5Tokenizer()
    big = build_toy_model("t5-v1_1", seed=7, vocab_size=len(tokenizer))
    small = build_toy_model("t5-v1_1", seed=8, vocab_size=len(tokenizer), d_model=32, layers=1)
    return big, small, tokenizer


@pytest.fixture(scope="session")
def toy_whisper_dirs(tmp_path_factory):
    """A small random Whisper saved with a processor, and a draft sharing its encoder: (big dir, draft dir)."""
    from test_whisper_ct2 import write_tokenizer
    from transformers import WhisperFeatureExtractor, WhisperProcessor

    from seq2spec.toy_models import build_toy_whisper, whisper_draft_sharing_encoder
    from seq2spec.whisper_ct2 import load_whisper_tokenizer

    root = tmp_path_factory.mktemp("whisper")
    big = build_toy_whisper()
    write_tokenizer(root / "tokenizer.json")
    processor = WhisperProcessor(
        feature_extractor=WhisperFeatureExtractor(feature_size=80),
        tokenizer=load_whisper_tokenizer(root / "tokenizer.json", big.config.vocab_size),
    )
    big.save_pretrained(root / "big")
    processor.save_pretrained(root / "big")
    draft = whisper_draft_sharing_encoder(big)
    draft.save_pretrained(root / "draft")
    return root / "big", root / "draft"
