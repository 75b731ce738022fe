"""A shallow decoder-only draft for a Whisper model, sharing the big model's encoder and embeddings.

The draft is a ``WhisperForCausalLM`` (distil-whisper's assistant layout) whose token embeddings, position
embeddings and output projection ARE the big model's modules (no copy), and whose encoder input is the big
model's encoder output. Only its own decoder layers and final layer norm are stored: the shipped draft for
Whisper base is 2 layers, about 17 MB in fp16 (``seq2spec/assets/whisper_base_draft``).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from pathlib import Path

import torch
from torch import nn

WHISPER_BASE_DRAFT_DIR = Path(__file__).parent / "assets" / "whisper_base_draft"
WEIGHTS_FILE = "decoder.safetensors"
CONFIG_FILE = "draft_config.json"


def _skeleton(big, num_layers: int):
    """A draft whose shared parts are the big model's modules and whose own parts are still unallocated (meta)."""
    from transformers import WhisperForCausalLM

    config = copy.deepcopy(big.config)
    config.decoder_layers = num_layers
    with torch.device("meta"):
        draft = WhisperForCausalLM(config)
    decoder = draft.model.decoder
    decoder.embed_tokens = big.model.decoder.embed_tokens
    decoder.embed_positions = big.model.decoder.embed_positions
    draft.proj_out = big.proj_out
    draft.generation_config = copy.deepcopy(big.generation_config)
    return draft


def own_parameters(draft) -> dict[str, nn.Parameter]:
    """The draft's parameters that are not the big model's (decoder layers and final layer norm)."""
    decoder = draft.model.decoder
    named = {f"layers.{k}": v for k, v in decoder.layers.named_parameters()}
    named.update({f"layer_norm.{k}": v for k, v in decoder.layer_norm.named_parameters()})
    return named


def draft_from_big_layers(big, layers: Sequence[int]):
    """A fresh draft whose layers are copies of the big model's decoder ``layers`` (distil-whisper's initialisation)."""
    source = big.model.decoder
    if not layers or any(not 0 <= i < len(source.layers) for i in layers):
        raise ValueError(
            f"layers {list(layers)} must name decoder layers of the big model (0..{len(source.layers) - 1})"
        )
    draft = _skeleton(big, len(layers))
    decoder = draft.model.decoder
    decoder.layers = nn.ModuleList(copy.deepcopy(source.layers[i]) for i in layers)
    for position, layer in enumerate(decoder.layers):
        for attention in (layer.self_attn, layer.encoder_attn):
            attention.layer_idx = position  # the cache slot of this layer in the draft's own cache
    decoder.layer_norm = copy.deepcopy(source.layer_norm)
    return draft.eval()


def save_whisper_draft(draft, directory: str | Path, *, dtype: torch.dtype = torch.float16, **card: object) -> Path:
    """Write the draft's own weights (``dtype``) and a small config; the shared parts are not stored."""
    from safetensors.torch import save_file

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    tensors = {name: p.detach().to("cpu", dtype).contiguous() for name, p in own_parameters(draft).items()}
    save_file(tensors, directory / WEIGHTS_FILE)
    config = draft.config
    description = {
        "decoder_layers": config.decoder_layers,
        "d_model": config.d_model,
        "vocab_size": config.vocab_size,
        "max_target_positions": config.max_target_positions,
        **card,
    }
    (directory / CONFIG_FILE).write_text(json.dumps(description, indent=2) + "\n", encoding="utf-8")
    return directory


def load_whisper_draft(big, directory: str | Path | None = None):
    """Attach a saved draft to a loaded big Whisper model; it takes the big model's device and dtype.

    ``directory`` defaults to the shipped draft for Whisper base. The draft's token and position embeddings and
    output projection are the big model's own modules, so it adds only its decoder layers to memory.
    """
    from safetensors.torch import load_file

    directory = Path(directory) if directory is not None else WHISPER_BASE_DRAFT_DIR
    config_path, weights_path = directory / CONFIG_FILE, directory / WEIGHTS_FILE
    if not config_path.is_file() or not weights_path.is_file():
        raise FileNotFoundError(f"{directory} holds no Whisper draft ({CONFIG_FILE} and {WEIGHTS_FILE} expected)")
    description = json.loads(config_path.read_text(encoding="utf-8"))
    for key in ("d_model", "vocab_size", "max_target_positions"):
        if getattr(big.config, key) != description[key]:
            raise ValueError(
                f"the draft in {directory} was made for {key}={description[key]}, "
                f"but the big model has {key}={getattr(big.config, key)}"
            )
    draft = _skeleton(big, int(description["decoder_layers"]))
    decoder = draft.model.decoder
    parameter = next(big.parameters())
    decoder.layers.to_empty(device=parameter.device)
    decoder.layer_norm.to_empty(device=parameter.device)
    state = load_file(weights_path, device=str(parameter.device))
    expected = set(own_parameters(draft))
    if set(state) != expected:
        missing, unexpected = sorted(expected - set(state)), sorted(set(state) - expected)
        raise ValueError(
            f"{weights_path}: weights do not match the draft (missing {missing[:3]}, extra {unexpected[:3]})"
        )
    with torch.no_grad():
        for name, value in own_parameters(draft).items():
            value.copy_(state[name])
    decoder.layers.to(parameter.dtype)
    decoder.layer_norm.to(parameter.dtype)
    return draft.eval()
