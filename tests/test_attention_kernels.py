"""On CUDA, seq2spec's forwards run without cuDNN's attention (it plans anew for each new pair of query and key
lengths, and speculative rounds keep bringing new pairs); elsewhere nothing changes."""

from __future__ import annotations

import contextlib

import pytest
import torch
from conftest import assert_same, greedy
from toy_helpers import build_toy_whisper, perturbed_copy, toy_features, whisper_draft_sharing_encoder

from seq2spec import Seq2SeqSpeculator
from seq2spec.commands.toys import build_toy_model, random_sources
from seq2spec.decoding.fast import attention_kernels as kernels


def enabled() -> tuple[bool, bool, bool, bool]:
    cuda = torch.backends.cuda
    return cuda.cudnn_sdp_enabled(), cuda.flash_sdp_enabled(), cuda.mem_efficient_sdp_enabled(), cuda.math_sdp_enabled()


def test_cuda_decodes_without_cudnn_attention_and_restores_the_settings():
    before = enabled()
    with kernels.attention_kernels("cuda"):
        assert enabled() == (False, True, True, True)
    assert enabled() == before
    with kernels.attention_kernels(torch.device("cpu")):
        assert enabled() == before


def test_generate_runs_in_the_big_models_kernels(monkeypatch):
    big = build_toy_model("t5-v1_1", seed=3)
    draft = perturbed_copy(big, seed=4)
    devices = []

    def recording(device):
        devices.append(torch.device(device))
        return contextlib.nullcontext()

    monkeypatch.setattr(kernels, "attention_kernels", recording)
    ids, mask = random_sources(3, seed=5)
    actual = Seq2SeqSpeculator(big, draft).generate(ids, mask, max_new_tokens=12)
    assert devices == [big.device]
    assert_same(actual, greedy(big, ids, mask, max_new_tokens=12))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_the_kernels_apply_inside_generate_on_cuda(monkeypatch):
    big = build_toy_whisper().to("cuda", torch.float16)
    draft = whisper_draft_sharing_encoder(big)
    features = toy_features(4, seed=4).to("cuda", torch.float16)
    expected = big.generate(features, max_new_tokens=30, language="fr")
    seen = []
    original = torch.nn.functional.scaled_dot_product_attention

    def watching(*args, **kwargs):
        seen.append(torch.backends.cuda.cudnn_sdp_enabled())
        return original(*args, **kwargs)

    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention", watching)
    actual = Seq2SeqSpeculator(big, draft).generate(input_features=features, max_new_tokens=30, language="fr")
    assert seen and not any(seen)
    assert_same(actual, expected)
