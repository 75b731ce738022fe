"""The big model's vocabulary head on a CPU, computed the fastest way found bit-exact for each number of positions.

A verification forward feeds a few tokens per row, and on a CPU the head's matrix product for a few rows at a time
(Whisper base: 51,865 x 512 float32 weights, larger than any cache) is slow: measured on two-core CPUs, five rows
take twice as long as one on one machine, two rows 2.3 times as long as one on another. Two other products can be
faster:

- ``sliced``: the same product for 1,024 vocabulary entries at a time, each slice of the weights staying in cache
  (35% less time for five rows on the first machine). It is used only where it equals the model's own head bit for
  bit.
- ``per-position``: each position's logits computed alone, as ``generate`` computes them for one token, the
  positions in one batched call (on the second machine half the time for two rows, about 40% less for three). It is
  used only where it equals the model's own head applied to each position alone, bit for bit, and only for up to
  ``PER_POSITION_MAX_ROWS`` positions and heads without a bias.

For each number of positions (rows times tokens fed) the candidates are first computed beside the model's own head
and compared with ``torch.equal``; the model's own result is returned, and for that number of positions the fastest
of the products that passed (as long as each took in its check, the model's own among them; beyond
``PER_POSITION_MAX_ROWS`` slicing wherever it passed) is used from then on. Every product reads the inputs as one
matrix of positions, as ``nn.Linear`` does. Any change of the head (other weights, device or dtype, another module)
starts the checks again. Which product is used changes no output token beyond what verifying several tokens in one
forward does: each is one of the model's own products, bit for bit.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import torch
import torch.nn.functional as F
from torch import nn
from transformers import PreTrainedModel

from seq2spec.decoding.fast.checked import BIT_EQUAL, StateCache, check, weight_state

SLICE = 1024  # vocabulary entries per slice
MIN_HEAD_BYTES = 16 * 2**20  # smaller heads stay in cache whole: another product gains nothing
PER_POSITION_MAX_ROWS = 8  # beyond this many positions one product for all of them is faster than one each

OWN, SLICED, PER_POSITION = "own", "sliced", "per-position"


class FastHead(nn.Module):
    """``head(hidden)`` by the product chosen for each number of positions; see the module docstring."""

    def __init__(self, head: nn.Linear) -> None:
        super().__init__()
        self.head = head
        self.weights = head.weight.split(SLICE)
        self.biases = [None] * len(self.weights) if head.bias is None else list(head.bias.split(SLICE))
        self.choices: dict[tuple[int, int], str] = {}  # (positions, width) of the inputs -> the product used

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        width = hidden.shape[-1]
        positions = hidden.numel() // width
        if positions == 1:  # one position: the model's own product is as fast
            return self.head(hidden)
        choice = self.choices.get((positions, width))
        if choice is None:
            started = time.perf_counter()
            expected = self.head(hidden)
            seconds = time.perf_counter() - started
            self.choices[(positions, width)] = self.choose(hidden.reshape(positions, width), expected, seconds)
            return expected
        if choice == OWN:
            return self.head(hidden)
        return self.product(choice)(hidden.reshape(positions, width)).view(*hidden.shape[:-1], -1)

    def choose(self, flat: torch.Tensor, expected: torch.Tensor, own_seconds: float) -> str:
        """The product to use for as many positions as ``flat`` holds: the model's own (which took ``own_seconds``
        to give ``expected``), or a faster one found bit-exact (timed by its check)."""
        positions = flat.shape[0]
        seconds = {OWN: own_seconds}
        sliced = self.exact(SLICED, flat, expected.reshape(positions, -1))
        if sliced is not None:
            seconds[SLICED] = sliced
        if self.head.bias is None and positions <= PER_POSITION_MAX_ROWS:
            alone = torch.cat([self.head(position) for position in flat.split(1)])
            each = self.exact(PER_POSITION, flat, alone)
            if each is not None:
                seconds[PER_POSITION] = each
        if positions > PER_POSITION_MAX_ROWS and SLICED in seconds:  # a large product: slicing, where exact
            return SLICED
        return min(seconds, key=seconds.__getitem__)

    def exact(self, name: str, flat: torch.Tensor, reference: torch.Tensor) -> float | None:
        """The seconds product ``name`` of ``flat`` took if it equals ``reference`` bit for bit, else None (a
        product that raises fails the forward, as the head's own would)."""
        seconds: list[float] = []

        def timed() -> torch.Tensor:
            started = time.perf_counter()
            result = self.product(name)(flat)
            seconds.append(time.perf_counter() - started)
            return result

        found = check(
            f"{name} head for {flat.shape[0]} positions",
            timed,
            lambda result: torch.equal(result, reference),
            BIT_EQUAL,
            catching=(),
        )
        return None if found is None else seconds[0]

    def product(self, name: str) -> Callable[[torch.Tensor], torch.Tensor]:
        return {OWN: self.head, SLICED: self.sliced, PER_POSITION: self.per_position}[name]

    def sliced(self, flat: torch.Tensor) -> torch.Tensor:
        """The head's product computed slice by slice."""
        return torch.cat([F.linear(flat, w, b) for w, b in zip(self.weights, self.biases, strict=True)], dim=-1)

    def per_position(self, flat: torch.Tensor) -> torch.Tensor:
        """Each position's product with the weights computed on its own, all positions in one batched call."""
        positions = flat.shape[0]
        weights = self.head.weight.t().unsqueeze(0).expand(positions, -1, -1)
        return torch.bmm(flat.unsqueeze(1), weights).squeeze(1)


class BigModelHead:
    """Installs a ``FastHead`` in place of the big model's head for the duration of a forward (CPU only)."""

    def __init__(self) -> None:
        self._heads: StateCache[FastHead] = StateCache()
        self._holders: StateCache[tuple[nn.Module, str]] = StateCache()

    @property
    def fast(self) -> FastHead | None:
        """The fast head last installed (None before the first), with the product chosen per number of positions."""
        return self._heads.value

    @contextmanager
    def installed(self, model: PreTrainedModel) -> Iterator[None]:
        head = model.get_output_embeddings()
        weight = head.weight if type(head) is nn.Linear else None
        if weight is None or weight.device.type != "cpu" or weight.numel() * weight.element_size() < MIN_HEAD_BYTES:
            yield
            return
        fast = self._heads.get((id(head), weight_state(head.weight)), lambda: FastHead(head))
        holder, name = self._holders.get(id(head), lambda: _holder(model, head))
        # set in the module that holds the head, not through set_output_embeddings: some families' setter also ties
        # the decoder's input embeddings to what it is given (T5Gemma)
        setattr(holder, name, fast)
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
