"""Convert a CTranslate2 (faster-whisper) Whisper model directory to a transformers Whisper directory.

A CTranslate2 directory holds ``model.bin`` (or ``model.bin.part1``, ``model.bin.part2``, ... to be concatenated),
``config.json`` (alignment heads, language ids, suppress ids) and ``tokenizer.json``. The result is a
``WhisperForConditionalGeneration`` directory with its processor (feature extractor and tokenizer) and a generation
config (language and task ids, suppress and begin-suppress tokens, no-timestamps id, alignment heads), so that
``generate(input_features, language=..., task=...)`` works as for a hub checkpoint.

``model.bin`` layout (binary version 6, little-endian): u32 version, string spec name, u32 spec revision, u32
variable count; per variable a string name, u8 rank, rank u32 dims, u8 dtype (0 f32, 1 i8, 2 i16, 3 i32, 4 f16,
5 bf16), u32 byte count and the raw bytes; then u32 alias count and (alias, target) string pairs. A string is a u16
length (counting a trailing NUL) followed by its bytes. Int8 weights carry a ``weight_scale`` (one per output row).
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import struct
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

SUPPORTED_BINARY_VERSIONS = (5, 6)
_DTYPES = {0: np.float32, 1: np.int8, 2: np.int16, 3: np.int32, 4: np.float16, 5: "bfloat16"}
_DTYPE_IDS = {np.dtype(np.float32): 0, np.dtype(np.int8): 1, np.dtype(np.int16): 2, np.dtype(np.int32): 3}
_DTYPE_IDS[np.dtype(np.float16)] = 4


class Ct2FormatError(ValueError):
    """The file is not a CTranslate2 Whisper model this converter understands."""


class DestinationError(ValueError):
    """A destination the converter must not write to; nothing was changed."""


_TIMESTAMP = re.compile(r"^<\|\d+\.\d\d\|>$")
# Written into every converted directory: what it was made from, and by which version of the converter.
# 2: Whisper's specials are the tokenizer's special tokens (timestamps decode from <|0.00|>)
# 3: the note records every file's size, so a cache damaged later (a truncated file) is found
CONVERSION_NOTE = "seq2spec_conversion.json"
CONVERTER_VERSION = 3


@dataclass
class Ct2Model:
    spec: str
    revision: int
    variables: dict[str, np.ndarray]

    def get(self, name: str) -> np.ndarray:
        try:
            return self.variables[name]
        except KeyError:
            raise Ct2FormatError(f"variable {name!r} missing from the CTranslate2 model") from None


# ----------------------------------------------------------------------------- reading and writing model.bin


def model_files(directory: str | Path) -> list[Path]:
    """``model.bin``, or its parts in order (``model.bin.part1``, ``model.bin.part2``, ...)."""
    directory = Path(directory)
    single = directory / "model.bin"
    if single.is_file():
        return [single]
    parts = sorted(directory.glob("model.bin.part*"), key=lambda p: int(re.sub(r"\D", "", p.suffix) or 0))
    if not parts:
        raise FileNotFoundError(f"no model.bin or model.bin.part* in {directory}")
    return parts


class _Reader:
    def __init__(self, data: bytes, origin: str) -> None:
        self.stream = io.BytesIO(data)
        self.origin = origin

    def unpack(self, fmt: str):
        size = struct.calcsize(fmt)
        chunk = self.stream.read(size)
        if len(chunk) != size:
            raise Ct2FormatError(f"{self.origin} ends early (truncated or not a CTranslate2 model)")
        return struct.unpack("<" + fmt, chunk)

    def string(self) -> str:
        (length,) = self.unpack("H")
        raw = self.stream.read(length)
        if len(raw) != length:
            raise Ct2FormatError(f"{self.origin} ends early (truncated or not a CTranslate2 model)")
        try:
            return raw.rstrip(b"\0").decode("utf-8")
        except UnicodeDecodeError:
            raise Ct2FormatError(f"{self.origin} is not a CTranslate2 model (a name is not text)") from None

    def raw(self, count: int) -> bytes:
        chunk = self.stream.read(count)
        if len(chunk) != count:
            raise Ct2FormatError(f"{self.origin} ends early (truncated or not a CTranslate2 model)")
        return chunk


def read_ct2_model(files: Iterable[str | Path]) -> Ct2Model:
    """Parse a CTranslate2 ``model.bin`` given as one file or as parts to concatenate."""
    files = [Path(f) for f in files]
    data = b"".join(f.read_bytes() for f in files)
    origin = " + ".join(str(f) for f in files)
    reader = _Reader(data, origin)
    (version,) = reader.unpack("I")
    if version not in SUPPORTED_BINARY_VERSIONS:
        raise Ct2FormatError(
            f"{origin}: CTranslate2 binary version {version} is not supported (expected {SUPPORTED_BINARY_VERSIONS})"
        )
    spec = reader.string()
    (revision,) = reader.unpack("I")
    (count,) = reader.unpack("I")
    variables: dict[str, np.ndarray] = {}
    for _ in range(count):
        name = reader.string()
        (rank,) = reader.unpack("B")
        shape = reader.unpack("I" * rank) if rank else ()
        (dtype_id,) = reader.unpack("B")
        (num_bytes,) = reader.unpack("I")
        raw = reader.raw(num_bytes)
        if dtype_id not in _DTYPES:
            raise Ct2FormatError(f"{origin}: variable {name!r} has unknown dtype id {dtype_id}")
        try:
            if _DTYPES[dtype_id] == "bfloat16":
                as_int = np.frombuffer(raw, dtype=np.uint16).astype(np.uint32) << 16
                array = as_int.view(np.float32)
            else:
                array = np.frombuffer(raw, dtype=_DTYPES[dtype_id])
            variables[name] = array.reshape(shape).copy()
        except ValueError as error:
            raise Ct2FormatError(f"{origin}: variable {name!r} does not fit its shape {shape} ({error})") from None
    (aliases,) = reader.unpack("I")
    for _ in range(aliases):
        alias, target = reader.string(), reader.string()
        if target not in variables:
            raise Ct2FormatError(f"{origin}: alias {alias!r} names a missing variable {target!r}")
        variables[alias] = variables[target]
    return Ct2Model(spec, revision, variables)


def write_ct2_model(path: str | Path, spec: str, revision: int, variables: dict[str, np.ndarray], aliases=()) -> None:
    """Write a CTranslate2 ``model.bin`` (binary version 6); used to test the reader without a download."""

    def string(value: str) -> bytes:
        encoded = value.encode("utf-8") + b"\0"
        return struct.pack("<H", len(encoded)) + encoded

    out = [struct.pack("<I", 6), string(spec), struct.pack("<I", revision), struct.pack("<I", len(variables))]
    for name, value in variables.items():
        value = np.ascontiguousarray(value)
        out += [string(name), struct.pack("<B", value.ndim), struct.pack(f"<{value.ndim}I", *value.shape)]
        out += [struct.pack("<B", _DTYPE_IDS[value.dtype]), struct.pack("<I", value.nbytes), value.tobytes()]
    out.append(struct.pack("<I", len(aliases)))
    for alias, target in aliases:
        out += [string(alias), string(target)]
    Path(path).write_bytes(b"".join(out))


# ----------------------------------------------------------------------------- CTranslate2 names -> transformers


def _weight(model: Ct2Model, prefix: str) -> np.ndarray:
    """A linear layer's weight as float32, de-quantised when it is stored as int8 with a per-row scale."""
    weight = model.get(f"{prefix}/weight")
    scale = model.variables.get(f"{prefix}/weight_scale")
    if scale is not None:
        return weight.astype(np.float32) / np.asarray(scale, dtype=np.float32).reshape(-1, 1)
    return weight.astype(np.float32)


def _linear(model: Ct2Model, source: str, target: str, state: dict[str, np.ndarray]) -> None:
    state[f"{target}.weight"] = _weight(model, source)
    bias = model.variables.get(f"{source}/bias")
    if bias is not None:
        state[f"{target}.bias"] = bias.astype(np.float32)


def _layer_norm(model: Ct2Model, source: str, target: str, state: dict[str, np.ndarray]) -> None:
    state[f"{target}.weight"] = model.get(f"{source}/gamma").astype(np.float32)
    state[f"{target}.bias"] = model.get(f"{source}/beta").astype(np.float32)


def _split_rows(model: Ct2Model, source: str, parts: int) -> list[tuple[np.ndarray, np.ndarray | None]]:
    weight = _weight(model, source)
    bias = model.variables.get(f"{source}/bias")
    weights = np.split(weight, parts, axis=0)
    biases = np.split(bias.astype(np.float32), parts) if bias is not None else [None] * parts
    return list(zip(weights, biases, strict=True))


def _attention(model: Ct2Model, source: str, target: str, state: dict, cross: bool) -> None:
    if cross:
        _linear(model, f"{source}/linear_0", f"{target}.q_proj", state)
        projections = _split_rows(model, f"{source}/linear_1", 2)
        names = ("k_proj", "v_proj")
        output = f"{source}/linear_2"
    else:
        projections = _split_rows(model, f"{source}/linear_0", 3)
        names = ("q_proj", "k_proj", "v_proj")
        output = f"{source}/linear_1"
    for name, (weight, bias) in zip(names, projections, strict=True):
        state[f"{target}.{name}.weight"] = weight
        if bias is not None and name != "k_proj":  # Whisper's key projection has no bias (CTranslate2 stores 0)
            state[f"{target}.{name}.bias"] = bias
    _linear(model, output, f"{target}.out_proj", state)


def _layer_count(model: Ct2Model, stack: str) -> int:
    indices = {int(m.group(1)) for name in model.variables if (m := re.match(rf"{stack}/layer_(\d+)/", name))}
    if not indices:
        raise Ct2FormatError(f"no {stack} layers found")
    return max(indices) + 1


def _scalar(model: Ct2Model, name: str) -> int:
    return int(np.asarray(model.get(name)).reshape(-1)[0])


def hf_whisper_state(model: Ct2Model):
    """``(WhisperConfig keyword arguments, state dict of float32 tensors)`` for ``WhisperForConditionalGeneration``."""
    if model.spec != "WhisperSpec":
        raise Ct2FormatError(f"not a Whisper model: CTranslate2 spec is {model.spec!r}, expected 'WhisperSpec'")
    state: dict[str, np.ndarray] = {}
    for conv in ("conv1", "conv2"):
        state[f"model.encoder.{conv}.weight"] = model.get(f"encoder/{conv}/weight").astype(np.float32)
        state[f"model.encoder.{conv}.bias"] = model.get(f"encoder/{conv}/bias").astype(np.float32)
    state["model.encoder.embed_positions.weight"] = model.get("encoder/position_encodings/encodings").astype(np.float32)
    state["model.decoder.embed_positions.weight"] = model.get("decoder/position_encodings/encodings").astype(np.float32)
    state["model.decoder.embed_tokens.weight"] = model.get("decoder/embeddings/weight").astype(np.float32)
    _layer_norm(model, "encoder/layer_norm", "model.encoder.layer_norm", state)
    _layer_norm(model, "decoder/layer_norm", "model.decoder.layer_norm", state)
    encoder_layers, decoder_layers = _layer_count(model, "encoder"), _layer_count(model, "decoder")
    for stack, count in (("encoder", encoder_layers), ("decoder", decoder_layers)):
        for index in range(count):
            source, target = f"{stack}/layer_{index}", f"model.{stack}.layers.{index}"
            _attention(model, f"{source}/self_attention", f"{target}.self_attn", state, cross=False)
            _layer_norm(model, f"{source}/self_attention/layer_norm", f"{target}.self_attn_layer_norm", state)
            if stack == "decoder":
                _attention(model, f"{source}/attention", f"{target}.encoder_attn", state, cross=True)
                _layer_norm(model, f"{source}/attention/layer_norm", f"{target}.encoder_attn_layer_norm", state)
            _linear(model, f"{source}/ffn/linear_0", f"{target}.fc1", state)
            _linear(model, f"{source}/ffn/linear_1", f"{target}.fc2", state)
            _layer_norm(model, f"{source}/ffn/layer_norm", f"{target}.final_layer_norm", state)
    conv1 = state["model.encoder.conv1.weight"]
    d_model, mel_bins = conv1.shape[0], conv1.shape[1]
    embeddings = state["model.decoder.embed_tokens.weight"]
    projection = model.variables.get("decoder/projection/weight")
    if projection is not None and not np.array_equal(projection, model.get("decoder/embeddings/weight")):
        raise Ct2FormatError("the output projection differs from the token embeddings; Whisper ties them")
    config = {
        "vocab_size": int(embeddings.shape[0]),
        "num_mel_bins": int(mel_bins),
        "d_model": int(d_model),
        "encoder_layers": encoder_layers,
        "decoder_layers": decoder_layers,
        "encoder_attention_heads": _scalar(model, "encoder/num_heads"),
        "decoder_attention_heads": _scalar(model, "decoder/num_heads"),
        "encoder_ffn_dim": int(state["model.encoder.layers.0.fc1.weight"].shape[0]),
        "decoder_ffn_dim": int(state["model.decoder.layers.0.fc1.weight"].shape[0]),
        "max_source_positions": int(state["model.encoder.embed_positions.weight"].shape[0]),
        "max_target_positions": int(state["model.decoder.embed_positions.weight"].shape[0]),
    }
    return config, {name: torch.from_numpy(np.ascontiguousarray(value)) for name, value in state.items()}


# ----------------------------------------------------------------------------- tokenizer, generation config, convert

_NON_LANGUAGE_TOKENS = {
    "<|endoftext|>",
    "<|startoftranscript|>",
    "<|translate|>",
    "<|transcribe|>",
    "<|startoflm|>",
    "<|startofprev|>",
    "<|nocaptions|>",
    "<|notimestamps|>",
}


def load_whisper_tokenizer(tokenizer_file: str | Path, vocab_size: int):
    """The Whisper tokenizer from a ``tokenizer.json``, with the timestamp tokens the model's vocabulary ends with."""
    from transformers import AddedToken, WhisperTokenizerFast

    try:
        tokenizer = WhisperTokenizerFast(tokenizer_file=str(tokenizer_file))
    except Exception as error:  # noqa: BLE001 - any unreadable tokenizer file: name it
        raise Ct2FormatError(f"{tokenizer_file}: not a tokenizer.json this converter can read ({error})") from None
    tokenizer.pad_token = "<|endoftext|>"
    # Whisper's specials (<|endoftext|> ... <|notimestamps|>) must be special tokens: transformers places the first
    # timestamp token right after the last special id when it turns timestamp tokens into seconds
    vocabulary = tokenizer.get_vocab()
    specials = sorted(
        (
            token
            for token in vocabulary
            if token.startswith("<|") and token.endswith("|>") and not _TIMESTAMP.match(token)
        ),
        key=vocabulary.get,
    )
    tokenizer.add_special_tokens({"additional_special_tokens": specials}, replace_extra_special_tokens=True)
    missing = vocab_size - len(tokenizer)
    if missing > 0:  # CTranslate2 vocabularies end with <|0.00|> ... <|30.00|> (0.02 s steps)
        tokenizer.add_tokens(
            [AddedToken(f"<|{index * 0.02:.2f}|>", lstrip=False, rstrip=False) for index in range(missing)],
            special_tokens=False,
        )
    return tokenizer


# OpenAI's English-only models (tiny.en ... medium.en, and distil-whisper's .en ones) have this many tokens, the
# multilingual ones 51,865 or (large-v3) 51,866: openai-whisper and CTranslate2 tell them apart by this size
ENGLISH_ONLY_VOCABULARY = 51864


def whisper_generation_config(
    tokenizer, ct2_config: dict, max_length: int, decoder_layers: int, decoder_heads: int, vocab_size: int | None = None
):
    """The generation config of a converted Whisper. An English-only model (``vocab_size`` 51,864) gets no language
    or task tokens, whatever language ids its CTranslate2 config lists: its prompt holds neither."""
    from transformers import GenerationConfig

    vocabulary = tokenizer.get_vocab()

    def token_id(token: str) -> int | None:
        return int(vocabulary[token]) if token in vocabulary else None

    end = token_id("<|endoftext|>")
    start = token_id("<|startoftranscript|>")
    no_timestamps = token_id("<|notimestamps|>")
    if end is None or start is None or no_timestamps is None:
        raise Ct2FormatError("tokenizer.json lacks Whisper's special tokens (<|endoftext|>, <|startoftranscript|>)")
    language_ids = [] if vocab_size == ENGLISH_ONLY_VOCABULARY else ct2_config.get("lang_ids") or []
    lang_to_id = {tokenizer.convert_ids_to_tokens(int(i)): int(i) for i in language_ids}
    lang_to_id = {token: index for token, index in lang_to_id.items() if token not in _NON_LANGUAGE_TOKENS}
    alignment_heads = ct2_config.get("alignment_heads") or [
        [layer, head] for layer in range(decoder_layers // 2, decoder_layers) for head in range(decoder_heads)
    ]
    settings = {
        "decoder_start_token_id": start,
        "bos_token_id": end,
        "eos_token_id": end,
        "pad_token_id": end,
        "no_timestamps_token_id": no_timestamps,
        "suppress_tokens": [int(i) for i in ct2_config.get("suppress_ids", [])],
        "begin_suppress_tokens": [int(i) for i in ct2_config.get("suppress_ids_begin", [])],
        "alignment_heads": [[int(layer), int(head)] for layer, head in alignment_heads],
        "max_length": max_length,
        "max_initial_timestamp_index": 50,
        "return_timestamps": False,
        "is_multilingual": bool(lang_to_id),
    }
    previous = token_id("<|startofprev|>")
    if previous is not None:
        settings["prev_sot_token_id"] = previous
    if lang_to_id:
        settings["lang_to_id"] = lang_to_id
        settings["task_to_id"] = {
            task: index for task in ("transcribe", "translate") if (index := token_id(f"<|{task}|>")) is not None
        }
    return GenerationConfig(**settings)


def check_destination(source: Path, destination: Path, *, overwrite: bool = False) -> None:
    """Refuse a destination that is the source or holds it, a file, or a folder with files this converter did not
    write (``overwrite`` lets a previous conversion's folder be replaced even without its note)."""
    source, target = source.resolve(), destination.resolve()
    if target == source or target in source.parents:
        raise DestinationError(
            f"the destination {destination} is the source {source} or contains it: choose a new directory"
        )
    if destination.is_file() or destination.is_symlink():
        raise DestinationError(f"the destination {destination} is a file: choose a new directory")
    if destination.is_dir() and any(destination.iterdir()) and not overwrite:
        if not (destination / CONVERSION_NOTE).is_file():
            raise DestinationError(
                f"the destination {destination} exists and holds files seq2spec did not write: choose a new directory "
                "(nothing was changed)"
            )


def _read_note(directory: Path) -> dict[str, Any] | None:
    try:
        note = json.loads((directory / CONVERSION_NOTE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return note if isinstance(note, dict) else None


def damaged_files(directory: Path) -> list[str]:
    """The files of a conversion that are missing or not the size its note records, as ``"name (why)"``."""
    note = _read_note(directory)
    if note is None:
        return [f"{CONVERSION_NOTE} (missing or unreadable)"]
    damaged = []
    for name, size in (note.get("files") or {}).items():
        try:
            actual = (directory / name).stat().st_size
        except OSError:
            damaged.append(f"{name} (missing)")
            continue
        if actual != size:
            damaged.append(f"{name} ({actual:,} bytes, {size:,} written)")
    return damaged


def is_current_conversion(directory: Path) -> bool:
    """A directory this converter (in its present version) wrote completely, every file still as written."""
    note = _read_note(directory)
    if note is None or note.get("converter_version") != CONVERTER_VERSION:
        return False
    return not damaged_files(directory)


def _install(staging: Path, destination: Path) -> None:
    """Move the finished ``staging`` folder to ``destination``; a previous conversion there is replaced in one
    rename, an empty folder is taken over, and a destination that another process has just finished is kept."""
    if destination.is_dir() and not any(destination.iterdir()):
        destination.rmdir()
    if not destination.exists():
        try:
            staging.rename(destination)
            return
        except OSError:
            if is_current_conversion(destination):  # another conversion finished first: keep it
                return
            raise
    aside = destination.with_name(f"{destination.name}.replaced-{os.getpid()}")
    destination.rename(aside)
    staging.rename(destination)
    shutil.rmtree(aside, ignore_errors=True)


def convert_ct2_whisper(
    source: str | Path,
    destination: str | Path,
    *,
    files: Iterable[str | Path] | None = None,
    dtype: torch.dtype = torch.float32,
    overwrite: bool = False,
) -> Path:
    """Convert the CTranslate2 Whisper directory ``source`` into a transformers directory ``destination``.

    ``files`` overrides where ``model.bin`` is read from (its parts, in order) when they do not sit in ``source``.
    The result is built in a staging folder of this process next to ``destination`` and moved into place when
    complete, so an interrupted or concurrent conversion leaves nothing half-written. ``destination`` must be new,
    empty, or an earlier conversion (``overwrite=True``: any folder this tool is known to have made). Returns it.
    """
    from transformers import WhisperFeatureExtractor, WhisperProcessor

    source, destination = Path(source), Path(destination)
    check_destination(source, destination, overwrite=overwrite)
    files = list(files) if files is not None else model_files(source)
    tokenizer_file = source / "tokenizer.json"
    if not tokenizer_file.is_file():
        raise FileNotFoundError(f"{source} has no tokenizer.json (a CTranslate2 Whisper directory needs one)")
    config_kwargs, state = _read_whisper_state(source, files)
    ct2_config = _read_ct2_config(source / "config.json")
    tokenizer = load_whisper_tokenizer(tokenizer_file, config_kwargs["vocab_size"])
    generation_config = whisper_generation_config(
        tokenizer,
        ct2_config,
        config_kwargs["max_target_positions"],
        config_kwargs["decoder_layers"],
        config_kwargs["decoder_attention_heads"],
        config_kwargs["vocab_size"],
    )
    model = _whisper_model(config_kwargs, state, generation_config).to(dtype).eval()
    feature_extractor = WhisperFeatureExtractor(feature_size=model.config.num_mel_bins)
    processor = WhisperProcessor(feature_extractor=feature_extractor, tokenizer=tokenizer)
    _save_conversion(model, processor, source, destination)
    return destination


def _read_whisper_state(source: Path, files: list[str | Path]) -> tuple[dict[str, Any], dict[str, torch.Tensor]]:
    """``hf_whisper_state`` of the model in ``files``; one it cannot read is a ``Ct2FormatError`` naming ``source``."""
    try:
        return hf_whisper_state(read_ct2_model(files))
    except Ct2FormatError:
        raise
    except (KeyError, IndexError, ValueError, struct.error) as error:
        raise Ct2FormatError(f"{source}: not a CTranslate2 Whisper model this converter can read ({error!r})") from None


def _read_ct2_config(config_path: Path) -> dict[str, Any]:
    """The CTranslate2 ``config.json`` as a dict (empty when there is none)."""
    try:
        ct2_config = json.loads(config_path.read_text(encoding="utf-8")) if config_path.is_file() else {}
    except (ValueError, UnicodeDecodeError) as error:
        raise Ct2FormatError(f"{config_path} is not valid JSON ({error})") from None
    if not isinstance(ct2_config, dict):
        raise Ct2FormatError(f"{config_path} does not hold a JSON object")
    return ct2_config


def _whisper_model(config_kwargs: dict[str, Any], state: dict[str, torch.Tensor], generation_config):
    """A ``WhisperForConditionalGeneration`` holding ``state``, its output projection tied to the token embeddings
    and ``generation_config`` its generation config."""
    from transformers import WhisperConfig, WhisperForConditionalGeneration

    config = WhisperConfig(
        **config_kwargs,
        pad_token_id=generation_config.pad_token_id,
        bos_token_id=generation_config.bos_token_id,
        eos_token_id=generation_config.eos_token_id,
        decoder_start_token_id=generation_config.decoder_start_token_id,
        suppress_tokens=None,  # these live in the generation config only
        begin_suppress_tokens=None,
        tie_word_embeddings=True,
    )
    model = WhisperForConditionalGeneration(config)
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [name for name in missing if name != "proj_out.weight"]  # tied to the token embeddings
    if missing or unexpected:
        raise Ct2FormatError(f"weights do not fit Whisper: missing {missing[:5]}, unexpected {unexpected[:5]}")
    model.tie_weights()
    model.generation_config = generation_config
    return model


def _save_conversion(model, processor, source: Path, destination: Path) -> None:
    """Save ``model`` and ``processor`` with the conversion note in a staging folder, then install it as
    ``destination``; the staging folder never outlives the call."""
    destination.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f"{destination.name}.partial-", dir=destination.parent))
    try:
        model.save_pretrained(staging)
        processor.save_pretrained(staging)
        sizes = {path.name: path.stat().st_size for path in sorted(staging.iterdir()) if path.is_file()}
        note = {"converted_from": str(source.resolve()), "converter_version": CONVERTER_VERSION, "files": sizes}
        (staging / CONVERSION_NOTE).write_text(json.dumps(note) + "\n", encoding="utf-8")
        _install(staging, destination)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
