"""Shared fixtures: small random models with varied greedy outputs (see seq2spec.commands.toys and toy_helpers)."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import numpy as np
import pytest
import soundfile
import torch
from synthetic_audio import tone
from toy_helpers import perturbed_copy

from seq2spec.commands.toys import FAMILIES, build_toy_model

torch.set_num_threads(min(2, torch.get_num_threads()))
# A test run started in the background (nohup, `&` in a script) inherits Ctrl-C ignored, and so would every command
# it starts: the tests of what a stop keeps need it to act as in a terminal.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
# the recipes (training, evaluation, metrics) are scripts, not part of the package: their tests import them from here
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "recipes"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "recipes" / "word_lists"))  # the word lists' makers
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "recipes" / "data"))  # the data sets' makers


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
    from toy_helpers import build_toy_whisper, whisper_draft_sharing_encoder
    from transformers import WhisperFeatureExtractor, WhisperProcessor

    from seq2spec.whisper.ct2 import load_whisper_tokenizer

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


@pytest.fixture()
def audio_folder(tmp_path):
    folder = tmp_path / "audio"
    (folder / "nested").mkdir(parents=True)
    soundfile.write(folder / "a_8k_mono.wav", tone(1.5, 8000, 1, 1), 8000)
    soundfile.write(folder / "nested" / "b_16k_stereo.flac", tone(2.5, 16000, 2, 2), 16000)
    soundfile.write(folder / "c_44k_stereo.wav", tone(1.0, 44100, 2, 3), 44100)
    soundfile.write(folder / "d_16k_mono.ogg", tone(3.0, 16000, 1, 4), 16000)
    soundfile.write(folder / "empty.wav", np.zeros((0,), dtype=np.float32), 16000)
    (folder / "notes.wav").write_text("this is text, not audio\n")
    good = (folder / "a_8k_mono.wav").read_bytes()
    (folder / "truncated.wav").write_bytes(good[:30])
    (folder / "readme.txt").write_text("not an audio extension: ignored\n")
    return folder
