"""One way to take a fast path: build it, probe it beside what it replaces, use it only on its rule's verdict, and
keep that verdict while what it was checked on stays the same.

seq2spec replaces some of transformers' work with faster versions of its own: the big model's decoder forward (a
mirror, ``exact_t5.py`` and ``exact_whisper.py``), its vocabulary head in slices (``head.py``), a draft's logits
processing as a CUDA graph (``sequences.py``), and in ``seq2spec.drafts`` a draft's lean step and encoder and its
step over a fixed-size cache. None is taken on trust. ``check`` builds one, runs its probe and judges the outcome by
the rule it is given: ``BIT_EQUAL`` (the probe found every compared tensor ``torch.equal``: what decides output
tokens) or ``Within(tolerance)`` (a draft's gap, relative to its scale: a draft only proposes). A failure to build or
probe counts as a failed check. ``StateCache`` keeps what a check returned while its key (``model_state``,
``weight_state``) stays the same, so new weights, another device, dtype or mode check again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

import torch
from torch import nn

logger = logging.getLogger(__name__)

Fast = TypeVar("Fast")
Outcome = bool | float  # a probe's answer: bit-equal or not, or its gap from the reference


@dataclass(frozen=True)
class BitEqual:
    """The probe must answer True: every tensor it compared was ``torch.equal`` to the reference's."""

    def accepts(self, outcome: Outcome) -> bool:
        return outcome is True

    def describe(self, outcome: Outcome) -> str:
        return "differs from the reference on the probe"


@dataclass(frozen=True)
class Within:
    """The probe's gap from the reference must not exceed ``tolerance`` (a gap that is not a number does not)."""

    tolerance: float

    def accepts(self, outcome: Outcome) -> bool:
        return not outcome > self.tolerance

    def describe(self, outcome: Outcome) -> str:
        return f"differs from the reference by {outcome:.2e} (tolerance {self.tolerance:.0e})"


BIT_EQUAL = BitEqual()
Rule = BitEqual | Within


def check(
    name: str,
    build: Callable[[], Fast],
    probe: Callable[[Fast], Outcome],
    rule: Rule,
    *,
    then: Callable[[Fast], Fast] | None = None,
    catching: tuple[type[BaseException], ...] = (Exception,),
) -> Fast | None:
    """``build()`` if ``probe`` of it passes ``rule``, else None (the caller keeps the reference). ``then`` makes
    what is used from what passed (a lean step's int8 version from its checked float version); an exception of a
    type in ``catching``, raised by any of them, fails the check."""
    try:
        fast = build()
        outcome = probe(fast)
        passed = rule.accepts(outcome)
        if passed and then is not None:
            fast = then(fast)
    except catching as error:
        logger.info("%s unavailable: %s", name, error)
        return None
    if not passed:
        logger.info("%s %s; not used", name, rule.describe(outcome))
        return None
    return fast


class StateCache(Generic[Fast]):
    """What ``make()`` returned for the latest key, made again (so checked again) whenever the key changes."""

    _UNSET = object()

    def __init__(self) -> None:
        self.key: object = self._UNSET
        self.value: Fast | None = None

    def get(self, key: object, make: Callable[[], Fast]) -> Fast:
        if key != self.key:
            self.key, self.value = key, make()
        return self.value  # type: ignore[return-value]


def weight_state(parameter: torch.Tensor) -> tuple:
    """Where a weight lives and how often it was changed in place (inference tensors keep no count)."""
    try:
        version = parameter._version
    except RuntimeError:
        version = None
    return parameter.data_ptr(), version, parameter.dtype, parameter.device


def model_state(model: nn.Module) -> tuple:
    """What a check of ``model`` depends on: every parameter's storage, in-place version, dtype and device, the
    mode and the attention implementation."""
    states = tuple(weight_state(parameter) for parameter in model.parameters())
    config = getattr(model, "config", None)
    return (model.training, getattr(config, "_attn_implementation", None), states)
