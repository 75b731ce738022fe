"""int8 on a CPU, in one place: the kernels and their one quantisation rule (``kernels``), the per-token
``Int8Linear`` (``linear``), the float64 decoder attention that keeps int8 decoding exact (``attention``), and the
int8 mode that converts a model (``mode``). Imports torch and transformers only."""

from seq2spec.int8.kernels import REDUCE_RANGE, int8_available, int8_pack, int8_product
from seq2spec.int8.linear import Int8Linear
from seq2spec.int8.mode import INT8, float_dtype, is_int8, is_int8_dtype, quantize_int8, quantize_int8_pair

__all__ = [
    "INT8",
    "REDUCE_RANGE",
    "Int8Linear",
    "float_dtype",
    "int8_available",
    "int8_pack",
    "int8_product",
    "is_int8",
    "is_int8_dtype",
    "quantize_int8",
    "quantize_int8_pair",
]
