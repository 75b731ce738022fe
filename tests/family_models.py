"""Tiny random models of every encoder-decoder family transformers maps for generation, built from their configs.

The families are read from transformers' ``MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES`` and
``MODEL_FOR_SPEECH_SEQ_2_SEQ_MAPPING_NAMES`` (those whose default configuration is an encoder-decoder), so a new
transformers release brings its families into the tests. Each default configuration is shrunk by attribute name
(hidden sizes, layers, heads, feed-forward widths, vocabularies, experts; token ids beyond the smaller vocabulary
moved inside it), the weights are drawn at unit scale (a default initialisation makes most families repeat one
token), and the end token is one the model emits at different steps in different rows, so that the rows of a
ragged batch end at different steps. The inputs come from the family's own feature extractor where one runs
offline, else from the configuration's dimensions.
"""

from __future__ import annotations

import copy
import itertools
import re
from dataclasses import dataclass
from functools import cache

import torch
from transformers import (
    CONFIG_MAPPING,
    AutoModelForSeq2SeqLM,
    AutoModelForSpeechSeq2Seq,
    PreTrainedConfig,
    PreTrainedModel,
)
from transformers.models.auto.modeling_auto import (
    MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES,
    MODEL_FOR_SPEECH_SEQ_2_SEQ_MAPPING_NAMES,
)

from seq2spec.decoding.proposal import DecodingBatch, Proposal

VOCABULARY = 256
_SIZES = (
    (re.compile(r"^(d_model|hidden_size|embed_dim|cross_(attention_)?hidden_size|output_hidden_size)$"), 64),
    (re.compile(r"layers$"), 2),
    (re.compile(r"^num_key_value_heads$"), 2),  # grouped-query attention where the family has it
    (re.compile(r"heads$"), 4),
    (re.compile(r"(ffn_dim|^d_ff|intermediate_size)$"), 128),
    (re.compile(r"^(head_dim|d_kv|cross_head_dim)$"), 16),
    (re.compile(r"^num_experts$"), 4),
)
_VOCABULARIES = re.compile(r"(^|_)vocab_size$")
_TOKENS = re.compile(r"_token_(id|index)$")


@dataclass(frozen=True)
class FamilyCase:
    """One family as one of the two mappings serves it: ``speech`` for the speech-to-text class."""

    model_type: str
    speech: bool

    @property
    def name(self) -> str:
        return f"{'speech' if self.speech else 'text'}:{self.model_type}"


def encoder_decoder_cases() -> list[FamilyCase]:
    """Every (family, mapping) whose default configuration is an encoder-decoder."""
    cases = []
    mappings = ((MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES, False), (MODEL_FOR_SPEECH_SEQ_2_SEQ_MAPPING_NAMES, True))
    for mapping, speech in mappings:
        for model_type in sorted(mapping):
            if _is_encoder_decoder(model_type):
                cases.append(FamilyCase(model_type, speech))
    return cases


@cache
def _is_encoder_decoder(model_type: str) -> bool:
    return bool(CONFIG_MAPPING[model_type]().is_encoder_decoder)


def shrink(config: PreTrainedConfig, taken: set[int] | None = None) -> PreTrainedConfig:
    """``config`` made tiny in place (sub-configurations too)."""
    taken = set() if taken is None else taken
    values = config.to_dict()
    for key, value in values.items():
        if isinstance(getattr(config, key, None), PreTrainedConfig):
            shrink(getattr(config, key), taken)
        elif _VOCABULARIES.search(key) and _is_int(value) and value > VOCABULARY:
            setattr(config, key, VOCABULARY)
    for key, value in values.items():
        if _TOKENS.search(key) and _is_int(value) and value >= VOCABULARY:
            replacement = VOCABULARY - 1
            while replacement in taken:
                replacement -= 1
            taken.add(replacement)
            setattr(config, key, replacement)
        elif key == "conv_dim" and isinstance(value, (list, tuple)):  # a wav2vec2-style feature encoder's channels
            setattr(config, key, type(value)(min(channels, 32) for channels in value))
        elif _is_int(value):
            for pattern, small in _SIZES:
                if pattern.search(key) and value > small:
                    setattr(config, key, small)
                    break
    return config


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def tiny_config(case: FamilyCase) -> PreTrainedConfig:
    config = shrink(CONFIG_MAPPING[case.model_type]())
    decoder = getattr(config, "decoder", None)
    if case.model_type.endswith("encoder-decoder") and isinstance(decoder, PreTrainedConfig):
        decoder.is_decoder = decoder.add_cross_attention = True  # what from_encoder_decoder_pretrained sets
        for name in ("pad_token_id", "eos_token_id"):
            setattr(config, name, getattr(decoder, name, None))
        start = decoder.bos_token_id if decoder.bos_token_id is not None else decoder.pad_token_id
        config.decoder_start_token_id = start
        if config.eos_token_id is None:  # a BERT decoder has no end token of its own: its [SEP]
            config.eos_token_id = decoder.eos_token_id = 102
    starts = (getattr(config, "decoder_start_token_id", None), getattr(config, "bos_token_id", None))
    if starts == (None, None) and getattr(config, "pad_token_id", None) is not None:
        config.decoder_start_token_id = config.pad_token_id  # as T5 checkpoints start from padding (T5Gemma: its bos)
    if not hasattr(config, "num_key_value_heads") and hasattr(config, "num_attention_heads"):
        config.num_key_value_heads = config.num_attention_heads  # published configs carry it; the default lacks it
    return config


def build(case: FamilyCase, *, seed: int = 0, gain: float = 1.0, untied: bool = False) -> PreTrainedModel:
    """The family's model with random weights: embeddings at unit scale, other matrices at ``gain`` times unit scale
    (a gain above 1 lets the layers outweigh the current token's embedding, which a head tied to the embeddings
    would otherwise repeat; ``untied``: the head gets weights of its own, for the same reason)."""
    loader = AutoModelForSpeechSeq2Seq if case.speech else AutoModelForSeq2SeqLM
    torch.manual_seed(seed)
    config = tiny_config(case)
    if untied:
        config.tie_word_embeddings = False
        for part in ("decoder", "text_config"):
            if isinstance(getattr(config, part, None), PreTrainedConfig):
                getattr(config, part).tie_word_embeddings = False
    model = loader.from_config(config).eval()
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for module in model.modules():
            for parameter in module.parameters(recurse=False):
                if not parameter.requires_grad or parameter.dim() < 2:
                    continue  # fixed sinusoid tables, norms and biases keep their values
                fan_in = parameter[0].numel()
                std = 1.0 if isinstance(module, torch.nn.Embedding) else gain * fan_in**-0.5
                parameter.copy_(torch.randn(parameter.shape, generator=generator) * std)
    return model


ROWS = 6
MAX_NEW_TOKENS = 20
_GAINS = (1.0, 3.0, 6.0)


@cache
def varied_model(case: FamilyCase) -> tuple[PreTrainedModel, dict]:
    """The first of a fixed sequence of builds (gain, untied head, seed) whose greedy outputs for ``example_inputs``
    vary: different content per row, several distinct tokens, and (with an end token chosen among the tokens the
    model emits, ``choose_end_token``) rows that end at different steps while another runs to the limit. Returns
    the model and its inputs (``generate_arguments`` included); raises if no build does."""
    tried = []
    for gain, untied, seed in itertools.product(_GAINS, (False, True), range(3)):
        if True:
            model = build(case, seed=seed, gain=gain, untied=untied)
            inputs = {**example_inputs(model, ROWS, seed), **generate_arguments(model)}
            if choose_end_token(model, inputs):
                summary = variety(greedy(model, inputs), model)
                if summary["lengths"] >= 2 and summary["tokens"] >= 6 and summary["rows"] >= 3:
                    return model, inputs
                tried.append((seed, gain, untied, summary))
            else:
                tried.append((seed, gain, untied, "no end token"))
    raise AssertionError(f"no varied build of {case.name}: {tried}")


def choose_end_token(model: PreTrainedModel, inputs: dict) -> bool:
    """Make the model's end token one it emits in some rows, first at different steps, and not in another row (so
    that one runs to the length limit); False where no emitted token does that."""
    config = model.generation_config
    old = config.eos_token_id
    forced = getattr(config, "forced_eos_token_id", None)
    config.eos_token_id, config.forced_eos_token_id = None, None
    try:
        free = greedy(model, inputs)
    finally:
        config.eos_token_id, config.forced_eos_token_id = old, forced
    body = free[:, -MAX_NEW_TOKENS:]
    avoid = {config.pad_token_id, config.decoder_start_token_id, config.bos_token_id}
    best, best_score = None, 0
    for token in body.unique().tolist():
        if token in avoid:
            continue
        firsts = [row.index(token) for row in body.tolist() if token in row]
        if len(firsts) == body.shape[0] or len(set(firsts)) < 2:
            continue
        score = len(set(firsts)) * 100 + len(firsts)
        if score > best_score:
            best, best_score = token, score
    if best is None:
        return False
    config.eos_token_id = best
    if forced is not None:
        config.forced_eos_token_id = best
    return True


def greedy(model: PreTrainedModel, inputs: dict, max_new_tokens: int = MAX_NEW_TOKENS) -> torch.Tensor:
    """The reference: the model's own greedy generate."""
    return model.generate(**inputs, do_sample=False, num_beams=1, max_new_tokens=max_new_tokens)


def variety(sequences: torch.Tensor, model: PreTrainedModel) -> dict[str, int]:
    """Distinct output lengths (up to the first end or padding token), distinct generated tokens and distinct rows of
    a greedy output."""
    config = model.generation_config
    eos = config.eos_token_id
    stops = [token for token in (eos if isinstance(eos, list) else [eos]) + [config.pad_token_id] if token is not None]
    body = sequences[:, 1:]
    ends = torch.isin(body, torch.tensor(stops))
    lengths = torch.where(ends.any(dim=1), ends.long().argmax(dim=1), body.shape[1])
    return {
        "lengths": lengths.unique().numel(),
        "tokens": body.unique().numel(),
        "rows": len({tuple(row) for row in body.tolist()}),
    }


def end_token(model: PreTrainedModel) -> int | None:
    eos = model.generation_config.eos_token_id
    return eos[0] if isinstance(eos, list) else eos


def one_layer_draft(case: FamilyCase, big: PreTrainedModel, *, seed: int = 100) -> PreTrainedModel:
    """A model of the same family and vocabulary with one layer wherever the big one has several (its own encoder,
    other weights): a draft that rarely agrees, with the big model's generation settings."""
    config = tiny_config(case)
    if hasattr(big.config, "tie_word_embeddings"):
        config.tie_word_embeddings = big.config.tie_word_embeddings
    _one_layer(config)
    loader = AutoModelForSpeechSeq2Seq if case.speech else AutoModelForSeq2SeqLM
    torch.manual_seed(seed)
    draft = loader.from_config(config).eval()
    draft.generation_config = copy.deepcopy(big.generation_config)
    return draft


def _one_layer(config: PreTrainedConfig) -> None:
    for key, value in config.to_dict().items():
        if isinstance(getattr(config, key, None), PreTrainedConfig):
            _one_layer(getattr(config, key))
        elif key.endswith("layers") and "conv" not in key and _is_int(value) and value > 1:
            setattr(config, key, 1)


def perturbed(model: PreTrainedModel, *, seed: int = 1, noise: float = 0.05) -> PreTrainedModel:
    """A copy whose decoder weights carry noise: a draft that agrees with ``model`` part of the time."""
    generator = torch.Generator().manual_seed(seed)
    draft = copy.deepcopy(model)
    with torch.no_grad():
        for name, parameter in draft.named_parameters():
            if parameter.requires_grad and ("decoder" in name or "head" in name):
                parameter.add_(torch.randn(parameter.shape, generator=generator) * noise * parameter.float().std())
    return draft.eval()


def example_inputs(model: PreTrainedModel, rows: int, seed: int) -> dict[str, torch.Tensor]:
    """A ragged batch the model's encoder reads: token ids of several lengths, or audio of several durations
    through the family's feature extractor."""
    generator = torch.Generator().manual_seed(seed)
    name = model.main_input_name
    if name == "inputs":  # a SpeechEncoderDecoderModel reads what its encoder reads
        name = model.get_encoder().main_input_name
    config = model.config
    if name == "input_ids" and config.model_type != "pop2piano":
        return _token_batch(model, rows, generator)
    seconds = [0.5 + 0.25 * (row % 3) for row in range(rows)]
    audio = [torch.randn(int(16000 * s), generator=generator).numpy() * 0.1 for s in seconds]
    extractor = feature_extractor(model)
    if extractor is not None:
        features = extractor(audio, sampling_rate=16000, return_tensors="pt", padding=True)
        wanted = ("input_features", "input_values", "attention_mask")
        return {key: value for key, value in features.items() if key in wanted}
    if config.model_type == "pop2piano":  # its feature extractor needs essentia: features of the encoder's width
        return {"input_features": torch.randn(rows, 24, config.d_model, generator=generator)}
    length = max(len(clip) for clip in audio)
    values = torch.zeros(rows, length)
    mask = torch.zeros(rows, length, dtype=torch.long)
    for row, clip in enumerate(audio):
        values[row, : len(clip)] = torch.from_numpy(clip)
        mask[row, : len(clip)] = 1
    return {name: values, "attention_mask": mask}


def _token_batch(model: PreTrainedModel, rows: int, generator: torch.Generator) -> dict[str, torch.Tensor]:
    config = model.config
    pad = config.pad_token_id if config.pad_token_id is not None else 0
    vocabulary = int(model.get_input_embeddings().weight.shape[0])
    width = 12
    lengths = torch.randint(3, width + 1, (rows,), generator=generator)
    lengths[0] = width
    ids = torch.randint(5, vocabulary, (rows, width), generator=generator)
    mask = (torch.arange(width)[None, :] < lengths[:, None]).long()
    return {"input_ids": ids * mask + pad * (1 - mask), "attention_mask": mask}


def feature_extractor(model: PreTrainedModel):
    """The family's feature extractor at the model's feature width, or None where it has none that runs offline."""
    import transformers
    from transformers.models.auto.feature_extraction_auto import FEATURE_EXTRACTOR_MAPPING_NAMES

    class_name = FEATURE_EXTRACTOR_MAPPING_NAMES.get(model.config.model_type)
    if class_name is None:
        return None
    try:
        extractor = getattr(transformers, class_name)()
    except ImportError:
        return None
    width = _feature_width(model.config)
    if width is not None and getattr(extractor, "feature_size", None) not in (None, 1, width):
        extractor = getattr(transformers, class_name)(feature_size=width)
    return extractor


def _feature_width(config: PreTrainedConfig) -> int | None:
    for part in (config, getattr(config, "encoder_config", None)):
        if part is not None and _is_int(getattr(part, "num_mel_bins", None)):
            return part.num_mel_bins
    return None


def generate_arguments(model: PreTrainedModel) -> dict:
    """What a family's generate needs beyond its inputs (Pop2Piano: a composer's conditioning token)."""
    if model.config.model_type == "pop2piano":
        size = model.config.composer_vocab_size
        tokens = {f"composer{i + 1}": VOCABULARY - 20 + i for i in range(size)}
        model.generation_config.composer_to_feature_token = tokens
        return {"composer": "composer1"}
    return {}


class RaggedThenNothing:
    """Every third round proposes three tokens, greedy's own for even rows and a wrong one for odd rows (so rows keep
    different numbers), and the two rounds after it propose nothing, as a paused draft does: single tokens fed to a
    cache whose rows are padded differently."""

    def __init__(self, expected: torch.Tensor) -> None:
        self.expected = expected

    def start(self, batch: DecodingBatch) -> None:
        width = batch.prompt.shape[1]
        with_prompt = torch.equal(self.expected[:, :width].to(batch.prompt.device), batch.prompt)
        self.rows = list(range(batch.rows))
        self.positions = [width if with_prompt else 0] * batch.rows  # each row's next token in ``expected``
        self.round = 0

    def propose(self, max_tokens: int, process: object) -> Proposal:
        count = min(3, max_tokens) if self.round % 3 == 0 else 0
        self.round += 1
        tokens = torch.zeros((len(self.rows), count), dtype=torch.long)
        for index, (row, position) in enumerate(zip(self.rows, self.positions, strict=True)):
            own = self.expected[row, position : position + count]
            if row % 2 == 0:
                tokens[index, : len(own)] = own
        return Proposal(tokens)

    def accept(self, accepted: list[int], bonus: torch.Tensor) -> None:
        self.positions = [position + count + 1 for position, count in zip(self.positions, accepted, strict=True)]

    def select(self, rows: list[int]) -> None:
        self.rows = [self.rows[row] for row in rows]
        self.positions = [self.positions[row] for row in rows]
