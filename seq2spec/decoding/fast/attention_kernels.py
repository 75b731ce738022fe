"""Which scaled-dot-product attention kernels seq2spec's forwards run on CUDA.

PyTorch prefers cuDNN's attention for float16 and bfloat16 on recent NVIDIA GPUs, and cuDNN builds an execution plan
the first time it meets a pair of query and key lengths. Plain decoding meets a few hundred such pairs and reuses
them; speculative rounds feed each row a varying number of positions against a growing cache, so most rounds of a
recording not heard before bring new pairs. Measured on an H200 (torch 2.11, whisper-base and its draft in float16,
sequential long form of a 196-s recording the process had not decoded): 9.3 s with cuDNN's attention, 1.5 s with
the other kernels, whose cost does not depend on having seen the lengths. So ``generate`` runs with flash,
memory-efficient and math attention on CUDA; outside it, and on other devices, nothing changes.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any, TypeVar

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

T = TypeVar("T")
WITHOUT_CUDNN = [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]


def attention_kernels(device: torch.device | str) -> AbstractContextManager:
    """The context seq2spec decodes in on ``device``: every attention kernel but cuDNN's on CUDA, no change on other
    devices."""
    return sdpa_kernel(WITHOUT_CUDNN) if torch.device(device).type == "cuda" else nullcontext()


def in_attention_kernels(method: Callable[..., T]) -> Callable[..., T]:
    """A method of an object with a ``big`` model, run in ``attention_kernels`` of that model's device."""

    @functools.wraps(method)
    def run(self, *args: Any, **kwargs: Any) -> T:
        with attention_kernels(self.big.device):
            return method(self, *args, **kwargs)

    return run
