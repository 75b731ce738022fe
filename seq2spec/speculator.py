"""``Seq2SeqSpeculator``: a big model and its draft, decoded together; the public calls."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any

import torch
from transformers import PreTrainedTokenizerBase

from seq2spec.arguments import (
    check_generation_arguments,
    check_positive_int,
    check_texts,
    encoder_inputs,
    sampling_generator,
)
from seq2spec.decoding.fast.attention_kernels import in_attention_kernels
from seq2spec.decoding.fast.exact import ExactForwards
from seq2spec.decoding.fast.head import BigModelHead
from seq2spec.decoding.fast.layout_check import LayoutCheck
from seq2spec.decoding.proposal import Proposer
from seq2spec.decoding.search import SpeculativeSearch
from seq2spec.drafts.factory import ProposerFactory
from seq2spec.drafts.row_groups import LanguageRoutedProposers
from seq2spec.options import SpeculationOptions, SpeculationStats, recommended_options
from seq2spec.pairing import ModelLike, ModelPair, check_shared_vocabulary, load_processor, load_tokenizer
from seq2spec.spelling.capital_check import output_scorer
from seq2spec.spelling.classical import SpellCheckedSource
from seq2spec.spelling.decode import TextDecoder, source_limit
from seq2spec.spelling.pipeline import InputTooLongError, SpellingPipeline
from seq2spec.spelling.settings import SpellingSettings, settings_of

if TYPE_CHECKING:
    from seq2spec.decoding.families import Family
    from seq2spec.whisper.request import TranscriptionRequest

__all__ = ["INPUT_COPY", "InputTooLongError", "Seq2SeqSpeculator"]

INPUT_COPY = "input-copy"


class _Shipped:
    """The default of ``draft``: the shipped speller's tuned proposer when ``big`` is the shipped model too, else no
    draft."""

    def __repr__(self) -> str:
        return "<shipped default>"


SHIPPED = _Shipped()


def _is_proposer(value: object) -> bool:
    return not isinstance(value, (str, torch.nn.Module)) and isinstance(value, Proposer)


def _language_code(language: Any) -> str | None:
    """Whisper's code for a language given as a code, a name or a token (``"fr"``, ``"French"``, ``"<|fr|>"``)."""
    from transformers.models.whisper.tokenization_whisper import TO_LANGUAGE_CODE

    if not isinstance(language, str):
        return None
    code = language.lower().strip("<|>")
    return TO_LANGUAGE_CODE.get(code, code)


class _LanguageSpeculators:
    """Language code -> a speculator of ``speculator``'s big model with that language's draft: one per draft (a model
    or a name), however many languages use it, sharing the big model's checked fast paths. A folder saved by
    ``save_whisper_draft`` (checked now) is loaded when a clip of one of its languages first needs it, so a run that
    meets none of them never holds it; other drafts are loaded now."""

    def __init__(
        self,
        speculator: Seq2SeqSpeculator,
        drafts: dict[str, ModelLike],
        tokenizer: Any,
        options: SpeculationOptions | None,
        changes: dict[str, Any],
    ) -> None:
        from seq2spec.whisper.draft import check_draft_fits, is_whisper_draft_folder

        def make(draft: ModelLike) -> Seq2SeqSpeculator:
            other = Seq2SeqSpeculator(speculator.big, draft, tokenizer, options=options, **changes)
            other._big_head, other._exact_forwards = speculator._big_head, speculator._exact_forwards
            other._layout_check = speculator._layout_check
            return other

        self._make = make
        self._key_of = {code: draft if isinstance(draft, str) else id(draft) for code, draft in drafts.items()}
        self._drafts = {self._key_of[code]: draft for code, draft in drafts.items()}
        self._made: dict[Any, Seq2SeqSpeculator] = {}
        for key, draft in self._drafts.items():
            if is_whisper_draft_folder(draft):  # loaded when first needed; one made for another model refused now
                check_draft_fits(speculator.big, draft)
            else:
                self._made[key] = make(draft)

    def __bool__(self) -> bool:
        return bool(self._key_of)

    def factories(self, default: Seq2SeqSpeculator) -> dict[int, Callable[[], ProposerFactory]]:
        """Language token id -> (when first called) the proposer factory of that language's draft, for the search to
        route each row by the language its prompt holds."""
        lang_to_id = getattr(default.big.generation_config, "lang_to_id", None) or {}

        def factory(code: str) -> ProposerFactory:
            speculator = self.get(code, default)
            speculator._proposers.options = speculator.options
            return speculator._proposers

        return {
            lang_to_id[f"<|{code}|>"]: partial(factory, code) for code in self._key_of if f"<|{code}|>" in lang_to_id
        }

    def get(self, code: str | None, default: Seq2SeqSpeculator) -> Seq2SeqSpeculator:
        key = self._key_of.get(code)
        if key is None:
            return default
        if key not in self._made:
            self._made[key] = self._make(self._drafts[key])
        return self._made[key]


def _make_proposer(speculator: Seq2SeqSpeculator) -> Callable[..., Any]:
    """The search's proposer factory: the speculator's own, or with ``language_drafts`` one that routes each row to
    the draft of the language its prompt holds (given or detected by Whisper's ``generate``)."""
    if not speculator._by_language:
        return speculator._proposers
    return LanguageRoutedProposers(speculator._proposers, speculator._by_language.factories(speculator))


def _checked_language_drafts(drafts: Mapping[str, ModelLike] | None, model_type: str) -> dict[str, ModelLike]:
    """``language_drafts`` by Whisper's language code; refused for a big model other than Whisper."""
    if not drafts:
        return {}
    if model_type != "whisper":
        raise ValueError(f"language_drafts are for Whisper models; the big model is {model_type}")
    from seq2spec.whisper.languages import whisper_language

    named = {code: os.fspath(draft) if isinstance(draft, os.PathLike) else draft for code, draft in drafts.items()}
    return {whisper_language(code, "language_drafts"): draft for code, draft in named.items()}


def _check_text_options(prefix: object, spelling: object) -> None:
    if prefix is not None and not isinstance(prefix, str):
        raise TypeError(f"prefix must be a string, got {type(prefix).__name__}")
    if spelling is not None and not isinstance(spelling, SpellingSettings):
        raise TypeError(f"spelling must be a SpellingSettings, got {type(spelling).__name__}")


def _check_text_language(spelling_changes: dict[str, Any], family: Family) -> None:
    """``language=`` is the spelling setting of ``correct``'s texts: a TypeError for a speech model, whose language
    is ``transcribe``'s."""
    if "language" in spelling_changes and family.encoder_input_name != "input_ids":
        raise TypeError(
            "language= is the language of correct's texts; a speech model's is transcribe's: "
            "spec.transcribe(audio, language='fr')"
        )


def _check_settings(options: object, spelling: object, changes: dict[str, Any]) -> None:
    if "small" in changes:
        raise TypeError("pass the draft as draft= (or second, after the big model), not small=")
    for name, value, kind in (("options", options, SpeculationOptions), ("spelling", spelling, SpellingSettings)):
        if value is not None and not isinstance(value, kind):
            raise TypeError(f"{name} must be a {kind.__name__}, got {type(value).__name__}")


def _check_copy_choices(options: SpeculationOptions, copy_only: bool, draft: object, big: object) -> None:
    """Input copy needs one vocabulary on both sides, ``input_copy`` a draft model, ``spellcheck_copy`` a copy."""
    if options.input_copy and draft is None and not copy_only:
        raise ValueError("input_copy=True combines copying with a draft model, but no draft model was given")
    if copy_only or options.input_copy:
        check_shared_vocabulary(big)
    elif options.spellcheck_copy:
        raise ValueError(
            "spellcheck_copy changes what input copy copies from: use it with input copy (draft='input-copy', "
            "or --draft input-copy; input_copy=True, or --input-copy, beside a draft model)"
        )


class Seq2SeqSpeculator:
    """Batched speculative decoding for encoder-decoder models; output identical to ``big.generate``.

    ``big`` is a transformers encoder-decoder (any family of its seq2seq and speech-seq2seq generation mappings but the
    few refused by name: T5, BART, Marian, NLLB, Pegasus, Whisper, Moonshine, ...) or a name/path for
    ``from_pretrained``; with ``big=None`` the shipped spelling corrector is used. ``draft`` proposes the candidates: a
    draft model (or its name/path) sharing the big model's vocabulary or, with another tokenizer, proposing through its
    tokens' text (``draft_tokenizer``, else its name's: Whisper tiny for large-v3; ``drafts/vocabulary_map.py``), a
    draft of the big model's own layers or its folder (``drafts.layer_draft``, ``seq2spec distill-draft``),
    ``"input-copy"`` to copy from each row's own source, a ``Proposer`` object of your own, or None for no draft at all.
    By default the shipped big model proposes by input copy from a spell-checked source (``spellcheck_copy``), its
    fastest proposer (``default_models.shipped_speller``; its distilled draft: ``load_speller()[1]``); others, none.

    ``options`` (``SpeculationOptions``) say how candidates are proposed, ``spelling`` (``SpellingSettings``) which
    text steps ``correct`` takes around the model; keyword arguments such as ``num_draft_tokens=8`` or
    ``fold_capitals=False`` change single fields of either. A model that carries tuned options or settings (the
    shipped ones do) supplies the defaults. ``device`` and ``dtype`` apply to models loaded by name (without
    ``dtype``: float32 on a CPU, the checkpoint's own dtype elsewhere); a draft loaded by name follows the big one.
    ``dtype="int8"`` is the int8 mode on a CPU (``seq2spec.int8``): the output is then that of the int8 big model's
    own ``generate``. ``language_drafts`` (Whisper): a draft per language code (``{"fr": french_draft}``, models,
    names or ``save_whisper_draft`` folders) that ``transcribe`` proposes with for clips given that language or, given
    none, in which Whisper detects it (detected as its ``generate`` detects, before decoding); other clips use
    ``draft``; each takes this one's options, and is loaded now (a ``save_whisper_draft`` folder: when first used).
    """

    def __init__(
        self,
        big: ModelLike | None = None,
        draft: ModelLike | Proposer | None | _Shipped = SHIPPED,
        tokenizer: PreTrainedTokenizerBase | str | None = None,
        *,
        options: SpeculationOptions | None = None,
        spelling: SpellingSettings | None = None,
        device: str | torch.device | None = None,
        dtype: torch.dtype | str | None = None,
        language_drafts: Mapping[str, ModelLike] | None = None,
        draft_tokenizer: PreTrainedTokenizerBase | str | None = None,
        **changes: Any,
    ) -> None:
        _check_settings(options, spelling, changes)
        shipped_options: dict[str, Any] = {}  # the shipped speller's tuned options, when it proposes by default
        if big is None:
            from seq2spec.default_models import shipped_speller

            shipped = shipped_speller(device=device, dtype=dtype)
            if draft is SHIPPED:
                draft, shipped_options = shipped.draft, dict(shipped.options)
            big, tokenizer = shipped.big, shipped.tokenizer if tokenizer is None else tokenizer
            device = dtype = None  # applied by the loader
        copy_only = isinstance(draft, str) and draft == INPUT_COPY
        proposer = draft if _is_proposer(draft) else None
        model_draft = None if copy_only or proposer is not None or draft is SHIPPED else draft
        pair = ModelPair.load(big, model_draft, device, dtype, tokenizers=(tokenizer, draft_tokenizer))
        self.big, self.big_family, self.draft, self._pair = pair.big, pair.big_family, pair.draft, pair
        spelling_changes = {name: changes.pop(name) for name in SpellingSettings.field_names() if name in changes}
        _check_text_language(spelling_changes, pair.big_family)
        languages = _checked_language_drafts(language_drafts, pair.big_family.model_type)
        self.spelling = (spelling or settings_of(self.big)).updated(**spelling_changes)
        tuned = {**recommended_options(self.draft), **shipped_options}
        self.options = (options or SpeculationOptions(**tuned)).updated(**changes)
        _check_copy_choices(self.options, copy_only, self.draft, self.big)
        self._proposers = ProposerFactory(
            self.options,
            draft=self.draft,
            family=pair.draft_family,
            shares_encoder=pair.shares_encoder,
            copy=copy_only or self.options.input_copy,
            proposer=proposer,
            big=self.big,
            vocabulary=pair.vocabulary,
        )
        self._tokenizer = load_tokenizer(tokenizer) if isinstance(tokenizer, str) else tokenizer
        self._tokenizer_source = big if isinstance(big, str) else None
        self.last_stats = SpeculationStats()
        self._big_head = BigModelHead()  # the big model's head, its fastest bit-exact product per shape (CPU)
        self._exact_forwards = ExactForwards()  # the big model's forward without transformers' per-call work
        self._layout_check = LayoutCheck()  # the big decoder checked in the speculative layout once per state
        self._by_language = _LanguageSpeculators(self, languages, self._tokenizer, options, changes)
        self._spellcheck: SpellCheckedSource | None = None  # the copy source of spellcheck_copy, made on first use

    @property
    def shares_encoder(self) -> bool:
        """Whether the draft model reads the big model's encoder output."""
        return self._pair.shares_encoder

    @property
    def tokenizer(self) -> PreTrainedTokenizerBase:
        if self._tokenizer is None:
            self._tokenizer = load_tokenizer(self._model_source("tokenizer"))
        return self._tokenizer

    @property
    def processor(self):
        """A speech model's processor (feature extractor + tokenizer): passed as ``tokenizer=``, or loaded by name."""
        from transformers import ProcessorMixin

        if not isinstance(self._tokenizer, ProcessorMixin):
            self._tokenizer = load_processor(self._model_source("processor"))
        return self._tokenizer

    def _model_source(self, what: str) -> str:
        source = self._tokenizer_source or getattr(self.big, "name_or_path", None)
        if not source:
            raise ValueError(f"no {what}: pass tokenizer= to Seq2SeqSpeculator (the big model has no name)")
        return source

    # ------------------------------------------------------------------ decoding

    def _search(self, generator: torch.Generator | None) -> SpeculativeSearch:
        self._proposers.options = self.options
        self._proposers.copy_rewrite = self._spellchecked_source() if self.options.spellcheck_copy else None
        return SpeculativeSearch(
            self.big_family,
            _make_proposer(self),
            acceptance=self.options.acceptance,
            position_limit=self._pair.position_limit,
            generator=generator,
            head=self._big_head,
            exact=self._exact_forwards if self.options.exact_big_forward else None,
            capture_draft_processing=self.options.draft_cuda_graphs,
            layout_check=self._layout_check,
        )

    def _spellchecked_source(self) -> SpellCheckedSource:
        if self._spellcheck is None or self._spellcheck.tokenizer is not self.tokenizer:
            self._spellcheck = SpellCheckedSource(self.tokenizer)
        return self._spellcheck

    @torch.inference_mode()
    @in_attention_kernels
    def generate(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        max_new_tokens: int | None = None,
        *,
        input_features: torch.Tensor | None = None,
        input_values: torch.Tensor | None = None,
        generator: torch.Generator | None = None,
        seed: int | None = None,
        **generation_kwargs: Any,
    ) -> Any:
        """Same tensor as ``big.generate(input_ids, attention_mask=..., max_new_tokens=..., do_sample=False)``.

        The encoder reads ``input_ids`` (text), ``input_features`` (Whisper, Speech2Text, ...) or ``input_values``
        (raw audio: Moonshine, SpeechT5, ...). ``generation_kwargs`` are ``generate``'s (``GenerationConfig`` fields
        such as ``forced_bos_token_id``, a decoder prompt as ``decoder_input_ids``, ``logits_processor``, a family's
        own ``generate`` arguments, ...). With ``do_sample=True`` (and ``temperature``, ``top_k``, ``top_p``, ...)
        this is speculative sampling: each row's tokens follow the distribution ``big.generate(do_sample=True, ...)``
        samples from. Pass ``seed`` or a ``generator`` (on the big model's device) for reproducible runs.

        Whisper: pass ``input_features`` and Whisper's own arguments (``language``, ``task``, ``return_timestamps``,
        long-form ``attention_mask``, ``prompt_ids``, ``condition_on_prev_tokens``, temperature fallback with
        ``temperature=(0.0, 0.2, ...)`` and its thresholds, ``return_dict_in_generate``/``output_scores``, ...); the
        result is what ``big.generate`` returns for them. Greedy passes are token for token ``big.generate``'s; a
        fallback pass at a temperature above 0 samples from the big model's distribution (``seed``/``generator``).
        """
        check_positive_int("max_new_tokens", max_new_tokens, optional=True)
        device = self.big.device
        if self.big_family.model_type == "whisper":
            from seq2spec.whisper.generate import generate_whisper, samples

            if input_values is not None:
                raise TypeError("Whisper reads input_features (log-mel), not input_values")
            search = self._search(sampling_generator(samples(generation_kwargs), generator, seed, device))
            features = input_features if input_features is not None else input_ids
            output = generate_whisper(
                self.big, features, search, attention_mask=attention_mask, max_new_tokens=max_new_tokens,
                **generation_kwargs,
            )  # fmt: skip
        else:
            inputs, attention_mask = encoder_inputs(
                self.big, self.big_family.max_source_length, input_ids, input_features, input_values, attention_mask
            )
            check_generation_arguments(generation_kwargs, self.big)
            config = generation_kwargs.get("generation_config") or self.big.generation_config
            do_sample = bool(generation_kwargs.get("do_sample", config.do_sample))
            search = self._search(sampling_generator(do_sample, generator, seed, device))
            if max_new_tokens is not None:  # None would override the generation config's own limit
                generation_kwargs["max_new_tokens"] = max_new_tokens
            output = self.big.generate(
                **inputs, attention_mask=attention_mask, custom_generate=search, **generation_kwargs
            )
        self.last_stats = search.stats
        return output

    # ------------------------------------------------------------------ texts and audio

    def correct(
        self,
        texts: Iterable[str],
        batch_size: int = 32,
        max_new_tokens: int | None = None,
        prefix: str | None = None,
        *,
        truncate: bool = False,
        progress: bool = False,
        spelling: SpellingSettings | None = None,
        **changes: Any,
    ) -> list[str]:
        """Decode each text with the big model's greedy output, in the caller's order.

        Inputs are sorted by token length into batches of ``batch_size``. A text longer than the model accepts
        raises ``InputTooLongError`` (a ``ValueError``) unless ``truncate=True``, which keeps its first tokens (the
        limit, end token included). ``progress=True`` shows a progress bar over the batches.

        The text steps around the model are ``spelling`` (``SpellingSettings``; default: this speculator's
        ``spelling``, the model's own settings): keyword arguments named after its fields (``split_longer_than``,
        ``fold_capitals``, ``check_capitals``, ``keep_dictionary_words``, ...) change single ones for this call.
        Every other keyword argument goes to ``generate``. What the model reads it decodes to its greedy output.
        """
        texts = check_texts(texts)
        check_positive_int("batch_size", batch_size)
        check_positive_int("max_new_tokens", max_new_tokens, optional=True)
        _check_text_options(prefix, spelling)
        spelling_changes = {name: changes.pop(name) for name in SpellingSettings.field_names() if name in changes}
        settings = (spelling or self.spelling).updated(**spelling_changes)
        self.last_stats = total = SpeculationStats()

        def generate(input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
            output = self.generate(input_ids, attention_mask, max_new_tokens=max_new_tokens, **changes)
            total.merge(self.last_stats)
            return output

        tokenizer = self.tokenizer
        limit = self._source_limit()
        decode = TextDecoder(tokenizer, generate, batch_size, prefix, limit, truncate, progress)
        score = output_scorer(self.big, tokenizer, prefix) if settings.checks_scores else None
        results = SpellingPipeline(settings, decode, score, tokenizer)(texts)
        self.last_stats = total
        return results

    def _source_limit(self) -> int | None:
        return source_limit(self.tokenizer, self.big_family.max_source_length)

    def transcribe(
        self,
        audio: Any,
        sampling_rate: int | None = None,
        request: TranscriptionRequest | None = None,
        *,
        progress: bool | Callable[[float], None] = False,
        **changes: Any,
    ) -> Any:
        """Transcribe audio with the big model's greedy output (exactly ``big.generate``'s tokens).

        ``audio``: a file path, a 1-D (or ``[frames, channels]``) array, or a list of them. Arrays need their
        ``sampling_rate`` (mixed down and resampled to 16 kHz with soxr); files are read with soundfile. ``request``
        (``TranscriptionRequest``: language, task, timestamps, long form, batch size, ...; keyword arguments such as
        ``language="fr"`` or ``long_form="batched"`` change single fields of it) says what to return: a string per
        clip, or with ``return_timestamps`` a dict ``{"text", "segments": [{"start", "end", "text"}]}``; a single
        input gives a single result. Clips are sorted by duration into batches; with Whisper, clips longer than 30 s
        are decoded long-form. ``progress``: True shows a bar over seconds of audio; a callable is called with the
        seconds newly decoded. Another speech encoder-decoder (Moonshine, Speech2Text, ...) reads each clip whole
        through its processor's feature extractor; the request's fields that belong to Whisper are refused for it
        by name.
        """
        from seq2spec.whisper.other_models import check_speech_model, transcribe_other_model
        from seq2spec.whisper.request import TranscriptionRequest, fallback_seed
        from seq2spec.whisper.transcription import prepare_clips, transcribe_clips

        request = TranscriptionRequest.of(request, changes)
        family = self.big_family
        whisper = family.model_type == "whisper"
        if not whisper:
            check_speech_model(family.model_type, family.encoder_input_name, request)
        clips, single = prepare_clips(audio, sampling_rate, lazy=whisper)
        total = SpeculationStats()
        seed = fallback_seed(request.decoding)

        def generate(*arguments, **options):
            output = self.generate(*arguments, seed=seed, **options)
            total.merge(self.last_stats)
            return output

        if whisper:
            multilingual = bool(getattr(self.big.generation_config, "is_multilingual", False))
            results = transcribe_clips(clips, self.processor, generate, request, multilingual=multilingual,
                                       progress=progress)  # fmt: skip
        else:
            results = transcribe_other_model(
                clips, self.processor, generate, model_type=family.model_type, encoder_input=family.encoder_input_name,
                batch_size=request.batch_size, max_new_tokens=request.max_new_tokens, progress=progress,
            )  # fmt: skip
        self.last_stats = total
        return results[0] if single else results

    def detect_language(self, audio: Any, sampling_rate: int | None = None) -> Any:
        """The language code Whisper detects in each clip (``audio`` as ``transcribe`` takes it), as its ``generate``
        detects it when given no language: a code per clip, or one for a single input."""
        from seq2spec.whisper.transcription import detect_languages

        return detect_languages(self, audio, sampling_rate)

    def for_language(self, language: Any) -> Seq2SeqSpeculator:
        """The speculator for ``language`` (with its draft of ``language_drafts``), for a list the one all share."""
        if isinstance(language, (list, tuple)):
            chosen = {id(other): other for other in map(self.for_language, language)}
            return next(iter(chosen.values())) if len(chosen) == 1 else self
        return self._by_language.get(_language_code(language), self) if self._by_language else self
