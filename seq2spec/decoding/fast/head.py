"""The big model's vocabulary head on a CPU, computed in slices of the vocabulary, used only where it is bit-exact.

A verification forward feeds several tokens per row, and on a CPU the head's matrix product for a few rows at a time
(Whisper base: 51,865 x 512 float32 weights, larger than any cache) is slow: measured on a two-core CPU, five rows
take twice as long as one. The same product computed for 1,024 vocabulary entries at a time keeps each slice of the
weights in cache and takes about 35% less time. Each logit is still one row of the weights against one hidden state,
so the numbers are normally the same bit for bit; seq2spec does not assume it. For every input shape the sliced
head is first computed beside the model's own head and compared with ``torch.equal``: the model's own result is
returned, and the sliced one is used for that shape from then on only if the two were equal. Any change of the head
(other weights, device or dtype, another module) starts the checks again.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch
import torch.nn.functional as F
from torch import nn
from transformers import PreTrainedModel

from seq2spec.decoding.fast.checked import BIT_EQUAL, StateCache, check, weight_state

SLICE = 1024  # vocabulary entries per slice
MIN_HEAD_BYTES = 16 * 2**20  # smaller heads stay in cache whole: slicing them gains nothing


class SlicedHead(nn.Module):
    """``head(hidden)`` in vocabulary slices, for the input shapes where that was found equal to ``head``."""

    def __init__(self, head: nn.Linear) -> None:
        super().__init__()
        self.head = head
        self.weights = head.weight.split(SLICE)
        self.biases = [None] * len(self.weights) if head.bias is None else list(head.bias.split(SLICE))
        self.equal: dict[tuple[int, ...], bool] = {}  # input shape -> sliced result found equal

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        shape = tuple(hidden.shape)
        verdict = self.equal.get(shape)
        if verdict is False or hidden.numel() == hidden.shape[-1]:  # one position: the full product is as fast
            return self.head(hidden)
        if verdict is None:
            expected = self.head(hidden)
            same = check(
                f"sliced head for inputs {shape}",
                lambda: self.sliced(hidden),
                lambda sliced: torch.equal(sliced, expected),
                BIT_EQUAL,
                catching=(),  # a failing product fails the forward, as the head's own would
            )
            self.equal[shape] = same is not None
            return expected
        return self.sliced(hidden)

    def sliced(self, hidden: torch.Tensor) -> torch.Tensor:
        """The head's product computed slice by slice."""
        return torch.cat([F.linear(hidden, w, b) for w, b in zip(self.weights, self.biases, strict=True)], dim=-1)


class BigModelHead:
    """Installs a ``SlicedHead`` in place of the big model's head for the duration of a forward (CPU only)."""

    def __init__(self) -> None:
        self._heads: StateCache[SlicedHead] = StateCache()
        self._holders: StateCache[tuple[nn.Module, str]] = StateCache()

    @property
    def sliced(self) -> SlicedHead | None:
        """The sliced head last installed (None before the first), with its verdicts per input shape."""
        return self._heads.value

    @contextmanager
    def installed(self, model: PreTrainedModel) -> Iterator[None]:
        head = model.get_output_embeddings()
        weight = head.weight if type(head) is nn.Linear else None
        if weight is None or weight.device.type != "cpu" or weight.numel() * weight.element_size() < MIN_HEAD_BYTES:
            yield
            return
        sliced = self._heads.get((id(head), weight_state(head.weight)), lambda: SlicedHead(head))
        holder, name = self._holders.get(id(head), lambda: _holder(model, head))
        # set in the module that holds the head, not through set_output_embeddings: some families' setter also ties
        # the decoder's input embeddings to what it is given (T5Gemma)
        setattr(holder, name, sliced)
        try:
            yield
        finally:
            setattr(holder, name, head)


def _holder(model: nn.Module, head: nn.Module) -> tuple[nn.Module, str]:
    """The module that holds ``head`` as an attribute, and that attribute's name."""
    for name, module in model.named_modules():
        if module is head:
            parent, _, attribute = name.rpartition(".")
            return model.get_submodule(parent), attribute
    raise ValueError(f"{type(model).__name__} does not hold its own output embeddings")
