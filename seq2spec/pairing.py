"""Loading models by name and checking that a big model and its draft can work together."""

from __future__ import annotations

import difflib
import re
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from transformers import PreTrainedModel

from seq2spec.decoding.families import Family, family_of
from seq2spec.drafts.own_layers import is_layer_draft_folder, load_layer_draft
from seq2spec.drafts.vocabulary_map import VocabularyMap, vocabulary_map
from seq2spec.int8 import float_dtype, is_int8, is_int8_dtype, quantize_int8_pair
from seq2spec.whisper.draft import is_whisper_draft_folder, load_whisper_draft

ModelLike = PreTrainedModel | str
KEYWORDS = ("input-copy", "none")  # what --draft takes besides a model
_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")


def locate_pretrained(name: str, role: str = "model", *, model: bool = True) -> dict[str, Any]:
    """Check that ``name`` is a local model directory or a model the hub has (or has cached), quickly and with a
    message naming the problem; returns extra ``from_pretrained`` arguments (``local_files_only`` when the hub
    cannot be reached but the model is cached)."""
    path = Path(name).expanduser()
    if path.exists():
        if not path.is_dir() or (model and not (path / "config.json").is_file()):
            raise FileNotFoundError(f"{role} {name}: not a model directory (no config.json in it)")
        return {}
    close = difflib.get_close_matches(name.lower(), KEYWORDS, n=1, cutoff=0.75)
    if close and name not in KEYWORDS:
        raise FileNotFoundError(f"{role} {name!r}: no such directory or model; did you mean {close[0]!r}?")
    if name.startswith((".", "/", "~")) or name.endswith("/") or not _REPO_ID.match(name):
        raise FileNotFoundError(f"{role} {name}: no such model directory")
    from huggingface_hub import constants, model_info, try_to_load_from_cache
    from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError

    if constants.HF_HUB_OFFLINE:
        return {}
    try:
        model_info(name, timeout=10)
    except GatedRepoError:
        return {}  # it exists; from_pretrained says what access it needs
    except RepositoryNotFoundError:
        raise FileNotFoundError(
            f"{role} {name!r}: no such local directory, and the Hugging Face hub has no (public) model of that name"
        ) from None
    except Exception as error:  # noqa: BLE001 - the hub cannot be reached: a cached copy still serves
        if isinstance(try_to_load_from_cache(name, "config.json"), str):
            return {"local_files_only": True}
        raise OSError(
            f"{role} {name!r}: no such local directory, and the Hugging Face hub cannot be reached to fetch it "
            f"({type(error).__name__}); pass a local path, or download the model where the hub is reachable"
        ) from None
    return {}


def load_model(model: ModelLike, role: str, **load_kwargs: Any) -> PreTrainedModel:
    """``model`` itself, or the encoder-decoder (text or speech) that ``from_pretrained`` loads for a name or path."""
    if isinstance(model, str):
        from transformers import AutoConfig, AutoModelForSeq2SeqLM, AutoModelForSpeechSeq2Seq
        from transformers.models.auto.modeling_auto import (
            MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES,
            MODEL_FOR_SPEECH_SEQ_2_SEQ_MAPPING_NAMES,
        )

        found = locate_pretrained(model, role)
        model_type = AutoConfig.from_pretrained(model, **found).model_type
        # a family both mappings name (SeamlessM4T) loads as text-to-text, as AutoModelForSeq2SeqLM does
        speech = model_type in MODEL_FOR_SPEECH_SEQ_2_SEQ_MAPPING_NAMES and model_type not in (
            MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES
        )
        loader = AutoModelForSpeechSeq2Seq if speech else AutoModelForSeq2SeqLM
        return loader.from_pretrained(model, **found, **load_kwargs).eval()
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"{role} must be a transformers model or a name/path for from_pretrained, got {model!r}")
    return model


def special_ids(model: PreTrainedModel) -> dict[str, Any]:
    """The padding, end and decoder start tokens generate uses: the generation config's, else the model config's
    (a configuration may have no such field at all: T5Gemma's has no decoder start token)."""
    generation = model.generation_config
    config = model.config
    names = ("pad_token_id", "eos_token_id", "decoder_start_token_id")
    own = {name: getattr(generation, name, None) for name in names}
    return {name: own[name] if own[name] is not None else getattr(config, name, None) for name in names}


def output_vocabulary_size(model: PreTrainedModel) -> int:
    head = model.get_output_embeddings()
    # a draft head that scores a vocabulary subset still emits logits over the whole vocabulary
    return int(head.out_features if hasattr(head, "out_features") else head.weight.shape[0])


def draft_vocabulary(
    big: PreTrainedModel, small: PreTrainedModel, big_tokenizer: Any = None, small_tokenizer: Any = None
) -> VocabularyMap | None:
    """None where the draft speaks the big model's vocabulary (the same output size and special tokens, and, with
    ``small_tokenizer`` given, the same ids for the same texts); else the map of its tokens onto the big model's by
    their text (``vocabulary_map.py``), from the tokenizers given or those of the models' names. A ``ValueError``
    names what is missing or why the draft cannot serve."""
    big_vocab, small_vocab = output_vocabulary_size(big), output_vocabulary_size(small)
    big_ids, small_ids = special_ids(big), special_ids(small)
    differing = {name: (big_ids[name], small_ids[name]) for name in big_ids if big_ids[name] != small_ids[name]}
    if big_vocab == small_vocab and not differing and small_tokenizer is None:
        return None
    if big_vocab != small_vocab:
        problem = f"big and draft models have different vocabularies ({big_vocab} vs {small_vocab} output tokens)"
    elif differing:
        detail = ", ".join(f"{name}: big {b!r} vs draft {s!r}" for name, (b, s) in differing.items())
        problem = f"big and draft models use different special-token ids ({detail})"
    else:
        problem = "a draft_tokenizer was given"
    try:
        tokenizers = [
            _text_tokenizer(given, model, role)
            for given, model, role in ((big_tokenizer, big, "big"), (small_tokenizer, small, "draft"))
        ]
    except ValueError as error:
        raise ValueError(
            f"{problem}; a draft with another tokenizer proposes through its tokens' text, which needs both "
            f"tokenizers ({error}): pass tokenizer= and draft_tokenizer=, or load the models by name"
        ) from None
    vocabulary = vocabulary_map(*tokenizers, big, small, (big_vocab, small_vocab))
    return None if vocabulary.is_identity and not differing else vocabulary


def _text_tokenizer(given: Any, model: PreTrainedModel, role: str) -> Any:
    """A model's tokenizer: ``given`` (a processor's own tokenizer, one loaded by name) or the model's name's."""
    if given is None:
        given = getattr(model, "name_or_path", None) or None
        if given is None:
            raise ValueError(f"no tokenizer for the {role} model, which has no name")
    if isinstance(given, str):
        given = load_tokenizer(given)
    from transformers import ProcessorMixin

    if isinstance(given, ProcessorMixin):
        given = given.tokenizer
    if not callable(getattr(given, "get_vocab", None)):
        raise ValueError(f"the {role} model's tokenizer {type(given).__name__} has no get_vocab()")
    return given


def check_shared_vocabulary(model: PreTrainedModel) -> None:
    """Input-copy drafting proposes source token ids as output ids: both sides must use one vocabulary."""
    encoder_embedding = model.get_encoder().get_input_embeddings()
    decoder_embedding = model.get_decoder().get_input_embeddings()
    same = encoder_embedding is decoder_embedding or (
        encoder_embedding.weight.shape == decoder_embedding.weight.shape
        and torch.equal(encoder_embedding.weight, decoder_embedding.weight)
    )
    if not same:
        raise ValueError(
            "draft='input-copy' needs source and target to share one tokenizer/vocabulary, but this model's "
            "encoder and decoder use different embeddings"
        )


def encoders_match(big: PreTrainedModel, small: PreTrainedModel) -> bool:
    """True when the draft's encoder is the big model's, as a module or weight for weight."""
    big_encoder, small_encoder = big.get_encoder(), small.get_encoder()
    if big_encoder is small_encoder:
        return True
    if type(big_encoder) is not type(small_encoder) or is_int8(big_encoder) or is_int8(small_encoder):
        return False  # int8 layers keep their weights out of state_dict: no comparison by weights
    big_state, small_state = big_encoder.state_dict(), small_encoder.state_dict()
    if big_state.keys() != small_state.keys():
        return False
    return all(
        big_state[name].shape == small_state[name].shape
        and torch.equal(big_state[name], small_state[name].to(big_state[name].device, big_state[name].dtype))
        for name in big_state
    )


def load_dtype(device: str | torch.device | None, dtype: torch.dtype | str | None) -> dict[str, Any]:
    """``from_pretrained``'s dtype for a model loaded by name: ``dtype`` when given, float32 for a CPU (a checkpoint
    stored in float16 would otherwise run in float16, slow on most CPUs and with coarser rounding), else the
    checkpoint's own."""
    if dtype is not None:
        return {"dtype": float_dtype(dtype)}
    return {"dtype": torch.float32} if device is None or torch.device(device).type == "cpu" else {}


@dataclass
class ModelPair:
    """A big model and its draft model (if any), checked to work together."""

    big: PreTrainedModel
    big_family: Family
    draft: PreTrainedModel | None = None
    draft_family: Family | None = None
    shares_encoder: bool = False  # the draft reads the big model's encoder output
    vocabulary: VocabularyMap | None = None  # a draft of another vocabulary: its tokens matched to the big model's

    @classmethod
    def load(
        cls,
        big: ModelLike,
        draft: ModelLike | None,
        device: str | torch.device | None = None,
        dtype: torch.dtype | str | None = None,
        tokenizers: tuple[Any, Any] = (None, None),
    ) -> ModelPair:
        """The pair from models or names: a model loaded by name takes ``device`` and ``dtype`` (``"int8"``: the
        int8 mode), a draft loaded by name follows the big model. ``tokenizers`` (big's, draft's; None: by the
        models' names) match a draft's tokens to the big model's where their vocabularies differ."""
        int8 = is_int8_dtype(dtype)
        loaded_by_name = isinstance(big, str)
        if int8 and not loaded_by_name:
            raise ValueError(
                "dtype applies to models loaded by name; quantise your own models with "
                "seq2spec.int8.quantize_int8_pair(big, draft) (or quantize_int8(big)) before passing them"
            )
        model = load_model(big, "big", **load_dtype(device, dtype))
        if loaded_by_name and (device is not None or dtype is not None):
            model = model.to(device=device, dtype=float_dtype(dtype))
        pair = cls(model, family_of(model, "big"))
        if draft is not None and is_whisper_draft_folder(draft):  # save_whisper_draft's folder: it shares big's modules
            if model.config.model_type != "whisper":
                kind = model.config.model_type
                raise ValueError(f"{draft} holds a draft for a Whisper model; the big model is {kind}")
            pair.draft = load_whisper_draft(model, draft)
            pair.draft_family = family_of(pair.draft, "draft")
            pair.shares_encoder = True
        elif draft is not None and is_layer_draft_folder(draft):  # save_layer_draft's: the big model's own layers
            pair.draft = load_layer_draft(model, draft)
            pair.draft_family = family_of(pair.draft, "draft")
            pair.shares_encoder = True
        elif draft is not None:
            loaded = load_model(draft, "draft")
            pair.draft = loaded.to(model.device, model.dtype) if isinstance(draft, str) else loaded
            pair.draft_family = family_of(pair.draft, "draft")
            pair.vocabulary = draft_vocabulary(model, pair.draft, *tokenizers)
            # a decoder-only assistant has no encoder: it reads the big model's encoder output
            pair.shares_encoder = pair.draft_family.decoder_only or encoders_match(model, pair.draft)
        if int8 and loaded_by_name:
            quantize_int8_pair(model, pair.draft if isinstance(draft, str) else None)
        for role, member in (("big", pair.big), ("draft", pair.draft)):
            if member is not None and member.training:
                message = f"the {role} model is in training mode (dropout active); call .eval() first"
                warnings.warn(message, stacklevel=3)
        return pair

    @property
    def position_limit(self) -> int | None:
        """The fewest decoder positions either model has (None: no limit)."""
        limits = [f.max_target_length for f in (self.big_family, self.draft_family) if f and f.max_target_length]
        return min(limits) if limits else None


def load_tokenizer(source: str):
    """The tokenizer ``from_pretrained`` loads for a model name or path; a failure names the fix."""
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(source, **locate_pretrained(source, "tokenizer", model=False))
    except Exception as error:  # noqa: BLE001 - re-raised with the fix named
        raise ValueError(f"could not load a tokenizer from {source!r}; pass tokenizer=") from error


def load_processor(source: str):
    """A speech model's processor (feature extractor + tokenizer) for a model name or path; a failure names the
    fix."""
    from transformers import AutoProcessor

    try:
        return AutoProcessor.from_pretrained(source, **locate_pretrained(source, "processor", model=False))
    except Exception as error:  # noqa: BLE001 - re-raised with the fix named
        raise ValueError(
            f"could not load a processor from {source!r}; pass tokenizer= the model's processor (WhisperProcessor, ...)"
        ) from error
