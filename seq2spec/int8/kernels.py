"""PyTorch's int8 kernels as seq2spec uses them: where they run, how weights are packed, how activations are
quantised.

Weights are symmetric int8 with one scale per output channel (``int8_pack``). Activations are quantised by the
kernel (``torch.ops.quantized.linear_dynamic``) with one scale per call, over 8 bits where the CPU sums int8 products
in 32 bits (VNNI) and over 7 bits elsewhere, where fbgemm sums pairs of products in 16 bits and full-range 8-bit
activations could saturate. ``int8_product`` is the one place that makes that choice (``REDUCE_RANGE``), for the int8
mode's ``Int8Linear`` and a lean draft's ``Dense`` alike.
"""

from __future__ import annotations

import warnings

import torch

SMALLEST_WEIGHT_SCALE = 1e-8  # an all-zero weight row divides by this instead of zero


def cpu_has_vnni() -> bool:
    """Whether this CPU multiplies int8 with VNNI instructions (AVX512-VNNI or AVX-VNNI), which sum products in 32
    bits (Linux only: on other systems the answer is no)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            flags = next((line for line in handle if line.startswith("flags")), "")
    except OSError:
        return False
    return bool({"avx512_vnni", "avx_vnni"} & set(flags.split()))


# 8-bit activations where VNNI makes them safe; 7 bits (PyTorch's choice for x86 without VNNI) elsewhere
REDUCE_RANGE = not cpu_has_vnni()


def int8_available(device: torch.device | str = "cpu") -> bool:
    """Whether int8 quantised linear layers run on ``device`` (PyTorch's x86 or fbgemm engine: CPUs only)."""
    if torch.device(device).type != "cpu":
        return False
    engines = torch.backends.quantized.supported_engines
    return "x86" in engines or "fbgemm" in engines


def int8_pack(weight: torch.Tensor, bias: torch.Tensor | None = None) -> object:
    """PyTorch's packed int8 weight (symmetric, one scale per output row) for ``int8_product``."""
    weight = weight.detach().float().cpu()
    scales = (weight.abs().amax(dim=1).clamp(min=SMALLEST_WEIGHT_SCALE) / 127).double()
    zero_points = torch.zeros(weight.shape[0], dtype=torch.long)
    with warnings.catch_warnings():  # PyTorch marks its quantised-tensor constructors as deprecated
        warnings.simplefilter("ignore")
        quantized = torch.quantize_per_channel(weight, scales, zero_points, 0, torch.qint8)
        return torch.ops.quantized.linear_prepack(quantized, None if bias is None else bias.detach().float().cpu())


def int8_product(activations: torch.Tensor, packed: object) -> torch.Tensor:
    """``activations @ weight.T + bias`` for a packed weight: the activations (float32, contiguous) quantised with
    one scale for the whole call, over the range ``REDUCE_RANGE`` allows."""
    return torch.ops.quantized.linear_dynamic(activations, packed, REDUCE_RANGE)
