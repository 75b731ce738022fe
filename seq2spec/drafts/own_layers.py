"""A draft made of the big model's own decoder layers: for any encoder-decoder, with no sibling model needed.

Most models users bring have no smaller sibling of the same tokenizer (a Marian or Pegasus of their own, a
fine-tuned UMT5). A few of the model's own decoder layers are one: ``layer_draft(big, (0, -1))`` is a model of the
big model's class whose decoder keeps copies of the chosen layers and shares everything else with the big model (the
encoder module itself, so the draft adds no encoder call; the embeddings, positions, final norm and output head, as
the same tensors, so it adds no memory but its layers). The shipped Whisper drafts are such drafts (base's layers 0
and 5), distilled; ``seq2spec.drafts.distill`` distils one for any model on the user's own inputs.

``save_layer_draft`` writes the chosen layers' weights and which layers they were (megabytes, not the model);
``load_layer_draft`` rebuilds the draft around the big model it was made from.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

from safetensors.torch import load_file, save_file
from torch import nn
from transformers import PreTrainedModel

from seq2spec.decoding.positions import decoder_config

FORMAT = "seq2spec-layer-draft"
CONFIG_FILE = "layer_draft.json"
WEIGHTS_FILE = "layers.safetensors"
# how configurations name the decoder's depth (the last: a decoder's own part, or a model whose encoder has its own)
_LAYER_COUNT_NAMES = ("decoder_layers", "num_decoder_layers", "decoder_num_hidden_layers", "num_hidden_layers")


def decoder_layer_list(model: PreTrainedModel) -> nn.ModuleList:
    """The decoder's list of layers: the outermost ``ModuleList`` under the decoder (``layers``, T5's ``block``)."""
    decoder = model.get_decoder() if hasattr(model, "get_decoder") else None
    if decoder is None:
        raise TypeError(f"{type(model).__name__} has no decoder to take layers from")
    lists = [
        (name.count("."), name, module)
        for name, module in decoder.named_modules()
        if isinstance(module, nn.ModuleList) and len(module) > 0
    ]
    if not lists:
        raise TypeError(f"{type(model).__name__}'s decoder has no list of layers")
    return min(lists, key=lambda entry: entry[:2])[2]


def _layer_count_name(model: PreTrainedModel, count: int) -> str:
    config = decoder_config(model)
    for name in _LAYER_COUNT_NAMES:
        if getattr(config, name, None) == count:
            return name
    raise TypeError(
        f"{type(model).__name__}: its configuration names no decoder layer count equal to its {count} decoder layers "
        f"({', '.join(_LAYER_COUNT_NAMES)}), so a draft of fewer layers cannot be described"
    )


def chosen_layers(layers: tuple[int, ...] | list[int], count: int) -> tuple[int, ...]:
    """``layers`` as indices into ``count`` decoder layers (negative ones from the end), checked."""
    if not layers:
        raise ValueError("a layer draft needs at least one layer")
    resolved = []
    for layer in layers:
        if not isinstance(layer, int) or not -count <= layer < count:
            raise ValueError(f"layer {layer!r}: the big model's decoder has layers 0..{count - 1} (or -1..-{count})")
        resolved.append(layer % count)
    if len(set(resolved)) != len(resolved) or resolved != sorted(resolved):
        raise ValueError(f"layers {list(layers)}: give distinct layers in the order the decoder runs them")
    if len(resolved) == count:
        raise ValueError(f"layers {list(layers)}: that is every decoder layer; a draft must have fewer")
    return tuple(resolved)


def _renumber(layer: nn.Module, index: int) -> None:
    """Tell a copied layer its place in the draft: cache slots are indexed by ``layer_idx``."""
    for module in layer.modules():
        for name in ("layer_idx", "layer_id"):
            if isinstance(getattr(module, name, None), int):
                setattr(module, name, index)


def _give_position_bias(first: nn.Module, source: nn.Module) -> None:
    """T5-style decoders compute relative position biases in their first layer only: a draft whose first layer is a
    later one takes a copy of layer 0's bias table, so it numbers positions as the big model does."""
    owners = {
        name: module for name, module in source.named_modules() if getattr(module, "has_relative_attention_bias", False)
    }
    for name, module in first.named_modules():
        if name in owners and not getattr(module, "has_relative_attention_bias", True):
            module.relative_attention_bias = copy.deepcopy(owners[name].relative_attention_bias)
            module.has_relative_attention_bias = True


def layer_draft(big: PreTrainedModel, layers: tuple[int, ...] | list[int] = (0, -1)) -> PreTrainedModel:
    """A draft of ``big``'s class whose decoder runs copies of ``layers`` (indices of big's decoder layers, in
    order) and shares every other module and tensor with ``big``: the encoder module itself, so it reads big's
    encoder output."""
    big_layers = decoder_layer_list(big)
    picked = chosen_layers(layers, len(big_layers))
    count_name = _layer_count_name(big, len(big_layers))
    memo: dict[int, object] = {id(big.get_encoder()): big.get_encoder(), id(big_layers): nn.ModuleList()}
    for tensor in [*big.parameters(), *big.buffers()]:
        memo[id(tensor)] = tensor  # shared, not copied: the draft's own tensors are its layers only
    draft = copy.deepcopy(big, memo)
    own = [copy.deepcopy(big_layers[index]) for index in picked]
    for index, layer in enumerate(own):
        _renumber(layer, index)
    if picked[0] != 0:
        _give_position_bias(own[0], big_layers[0])
    path = next(name for name, module in big.named_modules() if module is big_layers)
    draft.get_submodule(path).extend(own)
    setattr(decoder_config(draft), count_name, len(picked))
    draft.config.seq2spec_layer_draft = {"layers": list(picked), "big_decoder_layers": len(big_layers)}
    return draft.eval()


def own_layer_list(draft: PreTrainedModel) -> nn.ModuleList:
    """The draft's own layers: the only tensors it does not share with its big model, the ones distillation trains."""
    if not isinstance(getattr(draft.config, "seq2spec_layer_draft", None), dict):
        raise TypeError(f"{type(draft).__name__} is not a layer draft (made by layer_draft)")
    return decoder_layer_list(draft)


def save_layer_draft(draft: PreTrainedModel, directory: str | Path) -> Path:
    """Write the draft's own layers (``layers.safetensors``) and which of the big model's layers they were."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    state = {name: tensor.detach().contiguous() for name, tensor in own_layer_list(draft).state_dict().items()}
    save_file(state, str(directory / WEIGHTS_FILE))
    description = {
        "format": FORMAT,
        **draft.config.seq2spec_layer_draft,
        "model_type": draft.config.model_type,
        "big_model": draft.config.name_or_path or None,
    }
    (directory / CONFIG_FILE).write_text(json.dumps(description, indent=1) + "\n", encoding="utf-8")
    return directory


def is_layer_draft_folder(path: object) -> bool:
    """True for a folder ``save_layer_draft`` wrote."""
    if not isinstance(path, str | Path) or not (Path(path) / CONFIG_FILE).is_file():
        return False
    try:
        return json.loads((Path(path) / CONFIG_FILE).read_text(encoding="utf-8")).get("format") == FORMAT
    except (OSError, ValueError):
        return False


def load_layer_draft(big: PreTrainedModel, directory: str | Path) -> PreTrainedModel:
    """The draft ``save_layer_draft`` wrote, rebuilt around ``big`` (of the model type and decoder depth it was made
    from), on big's device and in its dtype."""
    directory = Path(directory)
    description = json.loads((directory / CONFIG_FILE).read_text(encoding="utf-8"))
    count = len(decoder_layer_list(big))
    made_from = (description.get("model_type"), description.get("big_decoder_layers"))
    if made_from != (big.config.model_type, count):
        raise ValueError(
            f"{directory} holds a draft made from a {made_from[0]} model with {made_from[1]} decoder layers; this big "
            f"model is a {big.config.model_type} with {count}"
        )
    draft = layer_draft(big, description["layers"])
    state = load_file(str(directory / WEIGHTS_FILE), device=str(big.device))
    floating = {name: t.to(big.dtype) if t.is_floating_point() else t for name, t in state.items()}
    try:
        own_layer_list(draft).load_state_dict(floating)
    except RuntimeError as error:
        raise ValueError(f"{directory}: its layers do not fit this big model's ({error})") from None
    return draft
