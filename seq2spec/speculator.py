"""``Seq2SeqSpeculator``: loading, checks, batching by length, and the public calls."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import torch
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase

from seq2spec.drafts import CopyThenDraftProposer, DraftModelProposer, InputCopyProposer, NoDraft, Proposer
from seq2spec.families import Family, family_of
from seq2spec.generation_setup import plan_greedy_generation
from seq2spec.lean_t5 import LEAN_FAMILIES, LeanT5Decoder
from seq2spec.loop import speculative_decode
from seq2spec.options import Acceptance, SpeculationOptions, SpeculationStats
from seq2spec.runner import DecoderRunner
from seq2spec.verify import GreedyVerifier, SamplingVerifier, Verifier

ModelLike = PreTrainedModel | str
INPUT_COPY = "input-copy"


def _load_model(model: ModelLike, role: str, **load_kwargs: Any) -> PreTrainedModel:
    if isinstance(model, str):
        from transformers import AutoConfig, AutoModelForSpeechSeq2Seq

        speech = AutoConfig.from_pretrained(model).model_type == "whisper"
        loader = AutoModelForSpeechSeq2Seq if speech else AutoModelForSeq2SeqLM
        return loader.from_pretrained(model, **load_kwargs).eval()
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"{role} must be a transformers model or a name/path for from_pretrained, got {model!r}")
    return model


def _special_ids(model: PreTrainedModel) -> dict[str, Any]:
    generation = model.generation_config
    config = model.config
    return {
        "pad_token_id": generation.pad_token_id if generation.pad_token_id is not None else config.pad_token_id,
        "eos_token_id": generation.eos_token_id if generation.eos_token_id is not None else config.eos_token_id,
        "decoder_start_token_id": (
            generation.decoder_start_token_id
            if generation.decoder_start_token_id is not None
            else config.decoder_start_token_id
        ),
    }


def _output_vocabulary_size(model: PreTrainedModel) -> int:
    head = model.get_output_embeddings()
    # a draft head that scores a vocabulary subset still emits logits over the whole vocabulary
    return int(getattr(head, "out_features", head.weight.shape[0]))


def check_compatible(big: PreTrainedModel, small: PreTrainedModel) -> None:
    """A draft must speak the big model's vocabulary with the same special tokens."""
    big_vocab, small_vocab = _output_vocabulary_size(big), _output_vocabulary_size(small)
    if big_vocab != small_vocab:
        raise ValueError(
            f"big and draft models have different vocabularies ({big_vocab} vs {small_vocab} output tokens); "
            "the draft must share the big model's tokenizer"
        )
    big_ids, small_ids = _special_ids(big), _special_ids(small)
    differing = {name: (big_ids[name], small_ids[name]) for name in big_ids if big_ids[name] != small_ids[name]}
    if differing:
        detail = ", ".join(f"{name}: big {b!r} vs draft {s!r}" for name, (b, s) in differing.items())
        raise ValueError(f"big and draft models use different special-token ids ({detail})")


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
    if type(big_encoder) is not type(small_encoder):
        return False
    big_state, small_state = big_encoder.state_dict(), small_encoder.state_dict()
    if big_state.keys() != small_state.keys():
        return False
    return all(
        big_state[name].shape == small_state[name].shape
        and torch.equal(big_state[name], small_state[name].to(big_state[name].device, big_state[name].dtype))
        for name in big_state
    )


def _check_max_new_tokens(max_new_tokens: int | None) -> None:
    if max_new_tokens is None:
        return
    if not isinstance(max_new_tokens, int) or isinstance(max_new_tokens, bool):
        raise TypeError(f"max_new_tokens must be an int, got {type(max_new_tokens).__name__}")
    if max_new_tokens <= 0:
        raise ValueError(f"max_new_tokens must be positive, got {max_new_tokens}")


def _weight_state(parameter: torch.Tensor) -> tuple:
    """Where a weight lives and how often it was changed in place (inference tensors keep no count)."""
    try:
        version = parameter._version
    except RuntimeError:
        version = None
    return parameter.data_ptr(), version, parameter.dtype


class Seq2SeqSpeculator:
    """Batched speculative greedy decoding for encoder-decoder models; output identical to ``big.generate``.

    ``big`` and ``small`` are transformers encoder-decoder models, or names/paths for ``from_pretrained``.
    With ``big=None`` the shipped spelling corrector and its distilled draft are used (``small`` may still name
    another draft). Otherwise ``small=None`` runs the loop without a draft (plain greedy decoding).
    ``device`` and ``dtype`` apply to models loaded by name; a draft loaded by name follows the big model.
    ``draft`` is another name for ``small``; ``draft="input-copy"`` proposes each row's own source tokens (no
    draft model: for correction tasks, where the output mostly repeats the input).
    ``lean_draft=False`` runs a T5/MT5 draft through transformers' forward instead of seq2spec's lean decoder step
    (see ``SpeculationOptions``; either way the output is the big model's).
    """

    def __init__(
        self,
        big: ModelLike | None = None,
        small: ModelLike | None = None,
        tokenizer: PreTrainedTokenizerBase | str | None = None,
        *,
        draft: ModelLike | None = None,
        num_draft_tokens: int = 5,
        adaptive: bool = True,
        min_draft_tokens: int = 1,
        max_draft_tokens: int = 16,
        acceptance: Acceptance = "per-row",
        min_draft_confidence: float = 0.0,
        lean_draft: bool = True,
        input_copy: bool = False,
        max_copy_tokens: int = 32,
        device: str | torch.device | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        self.options = SpeculationOptions(
            num_draft_tokens=num_draft_tokens,
            adaptive=adaptive,
            min_draft_tokens=min_draft_tokens,
            max_draft_tokens=max_draft_tokens,
            acceptance=acceptance,
            min_draft_confidence=min_draft_confidence,
            lean_draft=lean_draft,
        )
        if draft is not None:
            if small is not None:
                raise TypeError("pass the draft as small= or as draft=, not both")
            small = draft
        if not isinstance(max_copy_tokens, int) or isinstance(max_copy_tokens, bool) or max_copy_tokens < 1:
            raise ValueError(f"max_copy_tokens must be a positive integer, got {max_copy_tokens!r}")
        self.max_copy_tokens = max_copy_tokens
        copy_only = isinstance(small, str) and small == INPUT_COPY
        if copy_only:
            small = None
        self.input_copy = copy_only or bool(input_copy)
        self.copy_with_draft = bool(input_copy) and not copy_only
        if big is None:
            from seq2spec.default_models import load_speller

            big, default_small, default_tokenizer = load_speller(device=device, dtype=dtype)
            small = default_small if small is None and not copy_only else small
            tokenizer = default_tokenizer if tokenizer is None else tokenizer
        self.big = _load_model(big, "big")
        if isinstance(big, str) and (device is not None or dtype is not None):
            self.big = self.big.to(device=device, dtype=dtype)
        self.big_family: Family = family_of(self.big, "big")
        if self.input_copy:
            check_shared_vocabulary(self.big)
        self.small: PreTrainedModel | None = None
        self.small_family: Family | None = None
        self.shares_encoder = False
        if small is not None:
            self.small = (
                _load_model(small, "small").to(self.big.device, self.big.dtype)
                if isinstance(small, str)
                else _load_model(small, "small")
            )
            self.small_family = family_of(self.small, "small")
            check_compatible(self.big, self.small)
            # a decoder-only assistant has no encoder: it reads the big model's encoder output
            self.shares_encoder = self.small_family.decoder_only or encoders_match(self.big, self.small)
        elif self.copy_with_draft:
            raise ValueError("input_copy=True combines copying with a draft model, but no draft model was given")
        for role, model in (("big", self.big), ("small", self.small)):
            if model is not None and model.training:
                warnings.warn(
                    f"the {role} model is in training mode (dropout active); call .eval() first", stacklevel=2
                )
        self._tokenizer = tokenizer if not isinstance(tokenizer, str) else AutoTokenizer.from_pretrained(tokenizer)
        self._tokenizer_source = big if isinstance(big, str) else None
        self.last_stats = SpeculationStats()
        self._lean_draft: tuple[tuple, LeanT5Decoder | None] = ((), None)

    def _lean_draft_step(self) -> LeanT5Decoder | None:
        """The draft's lean decoder step, rebuilt (and re-checked against transformers) whenever the draft's
        weights, device, dtype or mode changed since the last call."""
        if self.small is None or not self.options.lean_draft or self.small_family.model_type not in LEAN_FAMILIES:
            return None
        key = (self.small.training, *(_weight_state(p) for p in self.small.parameters()))
        if key != self._lean_draft[0]:
            self._lean_draft = (key, LeanT5Decoder.checked(self.small))
        return self._lean_draft[1]

    # ------------------------------------------------------------------ public calls

    @property
    def tokenizer(self) -> PreTrainedTokenizerBase:
        if self._tokenizer is None:
            source = self._tokenizer_source or getattr(self.big, "name_or_path", None)
            if not source:
                raise ValueError("no tokenizer: pass tokenizer= to Seq2SeqSpeculator (the big model has no name)")
            try:
                self._tokenizer = AutoTokenizer.from_pretrained(source)
            except Exception as error:  # noqa: BLE001 - re-raised with the fix named
                raise ValueError(
                    f"could not load a tokenizer for the big model from {source!r}; pass tokenizer="
                ) from error
        return self._tokenizer

    @torch.inference_mode()
    def generate(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        max_new_tokens: int | None = None,
        *,
        input_features: torch.Tensor | None = None,
        generator: torch.Generator | None = None,
        seed: int | None = None,
        **generation_kwargs: Any,
    ) -> torch.Tensor:
        """Same tensor as ``big.generate(input_ids, attention_mask=..., max_new_tokens=..., do_sample=False)``.

        With ``do_sample=True`` (and ``temperature``, ``top_k``, ``top_p``, ...) this is speculative sampling:
        each row's tokens follow the distribution ``big.generate(do_sample=True, ...)`` samples from. Pass
        ``seed`` or a ``generator`` (on the big model's device) for reproducible runs.

        Whisper: pass ``input_features`` and Whisper's own arguments (``language``, ``task``, ``return_timestamps``,
        long-form ``attention_mask``, ...); the result is what ``big.generate`` returns for them (greedy).
        """
        if self.big_family.model_type == "whisper":
            return self._generate_whisper(input_features, input_ids, attention_mask, max_new_tokens, generation_kwargs)
        if input_features is not None:
            raise TypeError("input_features is for Whisper models; this big model takes input_ids")
        if input_ids is None:
            raise TypeError("generate() needs input_ids")
        input_ids, attention_mask = self._check_batch(input_ids, attention_mask)
        _check_max_new_tokens(max_new_tokens)
        plan = plan_greedy_generation(self.big, input_ids, max_new_tokens, generation_kwargs, allow_sampling=True)
        generator = self._sampling_generator(plan.do_sample, generator, seed)
        stats = SpeculationStats()
        output = self._generate_batch(input_ids, attention_mask, plan, stats, generator)
        self.last_stats = stats
        return output

    @property
    def processor(self):
        """Whisper's processor (feature extractor + tokenizer): passed as ``tokenizer=``, or loaded by name."""
        from transformers import ProcessorMixin

        if isinstance(self._tokenizer, ProcessorMixin):
            return self._tokenizer
        source = self._tokenizer_source or getattr(self.big, "name_or_path", None)
        if not source:
            raise ValueError("no processor: pass tokenizer=WhisperProcessor(...) to Seq2SeqSpeculator")
        from transformers import AutoProcessor

        try:
            self._tokenizer = AutoProcessor.from_pretrained(source)
        except Exception as error:  # noqa: BLE001 - re-raised with the fix named
            raise ValueError(f"could not load a processor from {source!r}; pass tokenizer=WhisperProcessor") from error
        return self._tokenizer

    def transcribe(
        self,
        audio: Any,
        sampling_rate: int | None = None,
        language: str | None = None,
        task: str = "transcribe",
        return_timestamps: bool = False,
        batch_size: int = 16,
        max_new_tokens: int | None = None,
        progress: bool = False,
    ) -> Any:
        """Transcribe audio with the big Whisper model's greedy output (exactly ``big.generate``'s tokens).

        ``audio``: a file path, a 1-D (or ``[frames, channels]``) array, or a list of them. Arrays need their
        ``sampling_rate`` (mixed down and resampled to 16 kHz with soxr); files are read with soundfile. Clips are
        sorted by duration into batches of ``batch_size``; clips longer than 30 s are decoded long-form (Whisper's
        sequential windows, timestamps on). Returns a string per clip, or with ``return_timestamps`` a dict
        ``{"text", "segments": [{"start", "end", "text"}]}``; a single input gives a single result.
        """
        import numpy as np

        from seq2spec.audio import load_audio, to_mono_16k

        if self.big_family.model_type != "whisper":
            raise TypeError(f"transcribe() needs a Whisper model; the big model is {self.big_family.model_type!r}")
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
        single = not isinstance(audio, (list, tuple))
        items = [audio] if single else list(audio)
        clips = []
        for index, item in enumerate(items):
            if isinstance(item, (str, Path)):
                clips.append(load_audio(item))
                continue
            if isinstance(item, torch.Tensor):
                item = item.detach().cpu().numpy()
            if not isinstance(item, np.ndarray):
                raise TypeError(f"audio[{index}] is {type(item).__name__}; expected a path or an array of samples")
            if sampling_rate is None:
                raise ValueError("sampling_rate is required when audio is given as arrays")
            if item.size == 0:
                raise ValueError(f"audio[{index}] is empty")
            clips.append(to_mono_16k(item, sampling_rate))
        from seq2spec.transcription import transcribe_clips

        total = SpeculationStats()

        def generate(input_features, attention_mask, **kwargs):
            output = self.generate(input_features=input_features, attention_mask=attention_mask, **kwargs)
            total.merge(self.last_stats)
            return output

        results = transcribe_clips(
            clips,
            self.processor,
            generate,
            multilingual=bool(getattr(self.big.generation_config, "is_multilingual", False)),
            language=language,
            task=task,
            return_timestamps=return_timestamps,
            batch_size=batch_size,
            max_new_tokens=max_new_tokens,
            progress=progress,
        )
        self.last_stats = total
        return results[0] if single else results

    def correct(
        self,
        texts: Iterable[str],
        batch_size: int = 32,
        max_new_tokens: int | None = None,
        prefix: str | None = None,
        *,
        truncate: bool = False,
        progress: bool = False,
        **generation_kwargs: Any,
    ) -> list[str]:
        """Decode each text with the big model's greedy output, in the caller's order.

        Inputs are sorted by token length into batches of ``batch_size``. A text longer than the model accepts
        raises ``ValueError`` unless ``truncate=True``, which keeps its first tokens (the limit, end token included).
        ``progress=True`` shows a progress bar over the batches.
        """
        texts = self._check_texts(texts)
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
        if prefix is not None and not isinstance(prefix, str):
            raise TypeError(f"prefix must be a string, got {type(prefix).__name__}")
        _check_max_new_tokens(max_new_tokens)
        self.last_stats = total = SpeculationStats()
        if not texts:
            return []
        tokenizer = self.tokenizer
        sources = [prefix + text if prefix else text for text in texts]
        encoded = self._encode_within_limit(tokenizer, sources, truncate)
        order = sorted(range(len(texts)), key=lambda index: len(encoded[index]))
        results: list[str] = [""] * len(texts)
        starts = range(0, len(order), batch_size)
        if progress:
            from tqdm import tqdm

            starts = tqdm(starts, desc="seq2spec batches", unit="batch", file=sys.stderr)
        for start in starts:
            chunk = order[start : start + batch_size]
            batch = tokenizer.pad({"input_ids": [encoded[i] for i in chunk]}, return_tensors="pt")
            outputs = self.generate(
                batch["input_ids"], batch["attention_mask"], max_new_tokens=max_new_tokens, **generation_kwargs
            )
            total.merge(self.last_stats)
            for index, text in zip(chunk, tokenizer.batch_decode(outputs, skip_special_tokens=True), strict=True):
                results[index] = text
        self.last_stats = total
        return results

    # ------------------------------------------------------------------ internals

    def _generate_whisper(
        self,
        input_features: torch.Tensor | None,
        input_ids: torch.Tensor | None,
        attention_mask: torch.Tensor | None,
        max_new_tokens: int | None,
        generation_kwargs: dict[str, Any],
    ) -> torch.Tensor:
        """Whisper's own ``generate`` (prompt, language, timestamps, long-form windows) with its inner greedy search
        replaced by the speculative loop (see ``whisper_support.inner_generate_replaced``)."""
        from seq2spec.whisper_support import inner_generate_replaced

        features = input_features if input_features is not None else input_ids
        if not isinstance(features, torch.Tensor) or features.dim() != 3 or not features.is_floating_point():
            shape = tuple(features.shape) if isinstance(features, torch.Tensor) else type(features).__name__
            raise ValueError(f"Whisper needs input_features as a float [batch, mel bins, frames] tensor, got {shape}")
        _check_max_new_tokens(max_new_tokens)
        if generation_kwargs.get("do_sample") or generation_kwargs.get("num_beams", 1) != 1:
            raise ValueError("Seq2SeqSpeculator reproduces Whisper's greedy decoding only (no sampling or beams)")
        total = SpeculationStats()

        def decode(inputs, plan) -> torch.Tensor:
            stats = SpeculationStats()
            output = self._generate_batch(inputs, None, plan, stats)
            total.merge(stats)
            return output

        features = features.to(self.big.device, self.big.dtype)
        if attention_mask is not None:
            generation_kwargs["attention_mask"] = attention_mask.to(self.big.device)
        if max_new_tokens is not None:
            generation_kwargs["max_new_tokens"] = max_new_tokens
        with inner_generate_replaced(self.big, decode):
            output = self.big.generate(features, **generation_kwargs)
        self.last_stats = total
        return output

    def _sampling_generator(
        self, do_sample: bool, generator: torch.Generator | None, seed: int | None
    ) -> torch.Generator | None:
        if not do_sample:
            if generator is not None or seed is not None:
                raise ValueError("generator= and seed= only apply with do_sample=True")
            return None
        if generator is not None and seed is not None:
            raise ValueError("pass seed= or generator=, not both")
        if seed is not None:
            return torch.Generator(device=self.big.device).manual_seed(seed)
        if generator is not None:
            if not isinstance(generator, torch.Generator):
                raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")
            if torch.device(generator.device).type != self.big.device.type:
                raise ValueError(
                    f"generator is on {generator.device} but the big model is on {self.big.device}; "
                    "create it with torch.Generator(device=...) on the model's device"
                )
        return generator

    def _generate_batch(
        self, input_ids, attention_mask, plan, stats: SpeculationStats, generator: torch.Generator | None = None
    ) -> torch.Tensor:
        big_encoder_output = self.big.get_encoder()(
            **{self.big_family.encoder_input_name: input_ids}, attention_mask=attention_mask, return_dict=True
        ).last_hidden_state
        stats.big_encoder_calls += 1
        big_runner = DecoderRunner(self.big, self.big_family, big_encoder_output, attention_mask)
        proposer: Proposer = NoDraft()
        draft_budget = 0
        sources = self._source_rows(input_ids, attention_mask) if self.input_copy else []
        if self.input_copy and self.small is None:
            proposer = InputCopyProposer(
                sources,
                plan.pad_token_id,
                self.options.num_draft_tokens,
                self.options.min_draft_tokens,
                self.max_copy_tokens,
                device=input_ids.device,
            )
            draft_budget = self.max_copy_tokens
        elif self.small is not None:
            draft_device, draft_dtype = self.small.device, self.small.dtype
            if self.shares_encoder:
                draft_encoder_output = big_encoder_output.to(draft_device, draft_dtype)
            else:
                draft_input = input_ids.to(draft_device)
                if draft_input.is_floating_point():
                    draft_input = draft_input.to(draft_dtype)
                draft_encoder_output = self.small.get_encoder()(
                    **{self.small_family.encoder_input_name: draft_input},
                    attention_mask=None if attention_mask is None else attention_mask.to(draft_device),
                    return_dict=True,
                ).last_hidden_state
                stats.draft_encoder_calls += 1
            draft_mask = None if attention_mask is None else attention_mask.to(draft_device)
            draft_runner = DecoderRunner(
                self.small, self.small_family, draft_encoder_output, draft_mask, self._lean_draft_step()
            )
            if self.copy_with_draft:
                proposer = CopyThenDraftProposer(
                    draft_runner,
                    sources,
                    plan.pad_token_id,
                    plan.eos_token_ids,
                    initial_length=self.options.num_draft_tokens,
                    min_length=self.options.min_draft_tokens,
                    max_length=self.options.max_draft_tokens,
                    max_copy_length=self.max_copy_tokens,
                )
                draft_budget = max(self.max_copy_tokens, self.options.max_draft_tokens)
            else:
                proposer = DraftModelProposer(
                    draft_runner,
                    plan.eos_token_ids,
                    sample=plan.do_sample,
                    generator=generator,
                    min_confidence=self.options.min_draft_confidence,
                )
                draft_budget = self.options.max_draft_tokens
        limits = [f.max_target_length for f in (self.big_family, self.small_family) if f and f.max_target_length]
        verifier: Verifier = (
            SamplingVerifier(generator, self.options.acceptance)
            if plan.do_sample
            else GreedyVerifier(self.options.acceptance)
        )
        return speculative_decode(
            big_runner, proposer, plan, self.options, stats, draft_budget, min(limits) if limits else None, verifier
        )

    @staticmethod
    def _source_rows(input_ids: torch.Tensor, attention_mask: torch.Tensor | None) -> list[list[int]]:
        """Each row's source tokens without padding (what input-copy drafting copies from)."""
        if attention_mask is None:
            return input_ids.tolist()
        return [
            [token for token, keep in zip(ids, mask, strict=True) if keep]
            for ids, mask in zip(input_ids.tolist(), attention_mask.tolist(), strict=True)
        ]

    def _check_batch(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        if not isinstance(input_ids, torch.Tensor):
            raise TypeError(f"input_ids must be a torch.Tensor of token ids, got {type(input_ids).__name__}")
        if input_ids.dim() != 2 or input_ids.shape[0] == 0 or input_ids.shape[1] == 0:
            raise ValueError(
                f"input_ids must be a non-empty [batch, length] tensor, got shape {tuple(input_ids.shape)}"
            )
        if input_ids.dtype.is_floating_point or input_ids.dtype == torch.bool:
            raise TypeError(f"input_ids must hold integer token ids, got dtype {input_ids.dtype}")
        if attention_mask is not None:
            if not isinstance(attention_mask, torch.Tensor) or attention_mask.shape != input_ids.shape:
                shape = tuple(attention_mask.shape) if isinstance(attention_mask, torch.Tensor) else attention_mask
                raise ValueError(
                    f"attention_mask must be a tensor shaped like input_ids {tuple(input_ids.shape)}, got {shape}"
                )
            attention_mask = attention_mask.to(self.big.device)
        limit = self.big_family.max_source_length
        if limit is not None and input_ids.shape[1] > limit:
            raise ValueError(
                f"input_ids has {input_ids.shape[1]} tokens per row, more than the model's {limit} source positions"
            )
        return input_ids.to(self.big.device), attention_mask

    @staticmethod
    def _check_texts(texts: Iterable[str]) -> list[str]:
        if isinstance(texts, (str, bytes)):
            raise TypeError("texts must be a list of strings, not a single string: wrap it in a list")
        try:
            texts = list(texts)
        except TypeError:
            raise TypeError(f"texts must be an iterable of strings, got {type(texts).__name__}") from None
        for index, text in enumerate(texts):
            if not isinstance(text, str):
                raise TypeError(f"texts[{index}] is {type(text).__name__}, expected str")
        return texts

    def _source_limit(self) -> int | None:
        limits = [self.big_family.max_source_length]
        model_max = getattr(self.tokenizer, "model_max_length", None)
        if isinstance(model_max, int) and model_max < 1_000_000:
            limits.append(model_max)
        limits = [limit for limit in limits if limit]
        return min(limits) if limits else None

    def _encode_within_limit(
        self, tokenizer: PreTrainedTokenizerBase, sources: list[str], truncate: bool
    ) -> list[list[int]]:
        encoded = [tokenizer(source)["input_ids"] for source in sources]
        limit = self._source_limit()
        too_long = [index for index, ids in enumerate(encoded) if limit is not None and len(ids) > limit]
        if too_long and not truncate:
            first = too_long[0]
            raise ValueError(
                f"{len(too_long)} text(s) exceed the model's {limit}-token input limit (texts[{first}] has "
                f"{len(encoded[first])} tokens); shorten them or pass truncate=True to keep the first {limit} tokens"
            )
        for index in too_long:  # the tokenizer's own truncation keeps its end-of-source token
            encoded[index] = tokenizer(sources[index], truncation=True, max_length=limit)["input_ids"]
        return encoded
