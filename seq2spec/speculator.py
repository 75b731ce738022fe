"""``Seq2SeqSpeculator``: a big model and its draft, decoded together; the public calls and batching by length."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import torch
from transformers import GenerationConfig, PreTrainedModel, PreTrainedTokenizerBase

from seq2spec.capital_check import DEFAULT_INITIAL_MARGIN, DEFAULT_MARGIN, CapitalCheck, output_scorer
from seq2spec.classical import SpellCheckedSource
from seq2spec.decoding.exact import ExactForwards
from seq2spec.decoding.families import Family, family_of
from seq2spec.decoding.head import BigModelHead
from seq2spec.decoding.proposal import Proposer
from seq2spec.decoding.search import SpeculativeSearch
from seq2spec.drafts.factory import ProposerFactory
from seq2spec.int8 import float_dtype, is_int8_dtype, quantize_int8_pair
from seq2spec.options import SpeculationOptions, SpeculationStats, recommended_options
from seq2spec.pairing import (
    ModelLike,
    check_compatible,
    check_shared_vocabulary,
    encoders_match,
    load_model,
    locate_pretrained,
)
from seq2spec.text_pieces import PiecedTexts
from seq2spec.text_steps import TextSteps

if TYPE_CHECKING:
    from seq2spec.whisper.transcription import WhisperDecoding

INPUT_COPY = "input-copy"
# generate() arguments that would select another decoding method or feed one the loop does not have
_REFUSED_GENERATE_ARGUMENTS = (
    "assistant_model",
    "streamer",
    "negative_prompt_ids",
    "negative_prompt_attention_mask",
    "custom_generate",
    "synced_gpus",
)
_GENERATE_ARGUMENTS = ("generation_config", "logits_processor", "stopping_criteria", "prefix_allowed_tokens_fn")


class InputTooLongError(ValueError):
    """A text longer than the model accepts: ``index`` in the call's texts, its ``tokens``, the model's ``limit``."""

    def __init__(self, message: str, index: int, tokens: int, limit: int) -> None:
        super().__init__(message)
        self.index, self.tokens, self.limit = index, tokens, limit


class _ModelDefault:
    """Default of ``correct(split_longer_than=)``: the model's own limit, ``Seq2SeqSpeculator.split_longer_than``."""

    def __repr__(self) -> str:
        return "<the model's own limit>"


MODEL_DEFAULT = _ModelDefault()


def _correct_pieces(
    texts: list[str],
    originals: list[str],
    limit: int | None,
    decode: Callable[[list[str], list[str]], list[str]],
) -> list[str]:
    """``decode(texts, originals)``, or for texts longer than ``limit`` characters ``decode`` of their sentence
    pieces and the same pieces of ``originals`` (the texts as written: ``texts`` may differ from them in case only,
    so both are cut alike)."""
    if limit is None or all(len(text) <= limit for text in texts):
        return decode(texts, originals)
    pieced = PiecedTexts.of(texts, limit)
    original_pieces = PiecedTexts.of(originals, limit).pieces
    if len(original_pieces) != len(pieced.pieces):
        raise RuntimeError("the texts as written and as the model reads them were cut into different pieces")
    try:
        decoded = decode(pieced.pieces, original_pieces)
    except InputTooLongError as error:  # a piece (a sentence or a clause) over the limit: name its text
        owner = pieced.owners[error.index]
        raise InputTooLongError(
            f"texts[{owner}] has a piece of {error.tokens} tokens, more than the model's {error.limit}-token "
            f"input limit; shorten it or pass truncate=True to keep the first {error.limit} tokens of each piece",
            owner,
            error.tokens,
            error.limit,
        ) from error
    return pieced.join(decoded)


class _Shipped:
    """The default of ``small``: the shipped speller's tuned proposer when ``big`` is the shipped model too, else no
    draft."""

    def __repr__(self) -> str:
        return "<shipped default>"


SHIPPED = _Shipped()


def _load_dtype(device: str | torch.device | None, dtype: torch.dtype | str | None) -> dict[str, Any]:
    """``from_pretrained``'s dtype for a model loaded by name: ``dtype`` when given, float32 for a CPU (a checkpoint
    stored in float16 would otherwise run in float16, slow on most CPUs and with coarser rounding), else the
    checkpoint's own."""
    if dtype is not None:
        return {"dtype": float_dtype(dtype)}
    return {"dtype": torch.float32} if device is None or torch.device(device).type == "cpu" else {}


def _is_proposer(value: object) -> bool:
    return not isinstance(value, (str, torch.nn.Module)) and isinstance(value, Proposer)


def _check_max_new_tokens(max_new_tokens: int | None) -> None:
    if max_new_tokens is None:
        return
    if not isinstance(max_new_tokens, int) or isinstance(max_new_tokens, bool):
        raise TypeError(f"max_new_tokens must be an int, got {type(max_new_tokens).__name__}")
    if max_new_tokens <= 0:
        raise ValueError(f"max_new_tokens must be positive, got {max_new_tokens}")


def _check_generation_arguments(arguments: dict[str, Any]) -> None:
    known = GenerationConfig().to_dict()
    for name in _REFUSED_GENERATE_ARGUMENTS:
        if arguments.get(name) is not None:
            raise ValueError(f"{name} is not supported by Seq2SeqSpeculator.generate")
    unexpected = sorted(name for name in arguments if name not in known and name not in _GENERATE_ARGUMENTS)
    if unexpected:
        raise TypeError(
            f"unexpected generation arguments {unexpected}: Seq2SeqSpeculator.generate accepts GenerationConfig "
            "fields (for example min_new_tokens, no_repeat_ngram_size, repetition_penalty)"
        )


class Seq2SeqSpeculator:
    """Batched speculative decoding for encoder-decoder models; output identical to ``big.generate``.

    ``big`` is a transformers encoder-decoder (T5, MT5, BART, mBART, Whisper) or a name/path for ``from_pretrained``;
    with ``big=None`` the shipped spelling corrector is used. ``small`` (or ``draft=``) proposes the candidates:
    a draft model (or its name/path) sharing the big model's vocabulary, ``"input-copy"`` to copy from each row's own
    source, a ``Proposer`` object of your own, or None for no draft at all. By default the shipped big model proposes
    by input copy from a spell-checked source (``spellcheck_copy``), the fastest proposer measured with it; its
    distilled draft is ``seq2spec.default_models.load_speller()[1]``. Another big model gets no draft by default.

    ``options`` (``SpeculationOptions``) say how candidates are proposed; keyword arguments such as
    ``num_draft_tokens=8`` change single fields. A draft that carries tuned options (the shipped ones do) supplies
    the defaults. ``device`` and ``dtype`` apply to models loaded by name (without ``dtype``: float32 on a CPU, the
    checkpoint's own dtype elsewhere); a draft loaded by name follows the big one.
    ``dtype="int8"`` is the int8 mode on a CPU (``seq2spec.int8``): the output is then that of the int8 big model's
    own ``generate``.
    """

    def __init__(
        self,
        big: ModelLike | None = None,
        small: ModelLike | Proposer | None | _Shipped = SHIPPED,
        tokenizer: PreTrainedTokenizerBase | str | None = None,
        *,
        draft: ModelLike | Proposer | None | _Shipped = SHIPPED,
        options: SpeculationOptions | None = None,
        device: str | torch.device | None = None,
        dtype: torch.dtype | str | None = None,
        **option_changes: Any,
    ) -> None:
        if draft is not SHIPPED:
            if small is not SHIPPED:
                raise TypeError("pass the draft as small= or as draft=, not both")
            small = draft
        if options is not None and not isinstance(options, SpeculationOptions):
            raise TypeError(f"options must be a SpeculationOptions, got {type(options).__name__}")
        shipped_options: dict[str, Any] = {}  # the shipped speller's tuned options, when it proposes by default
        if big is None and small is SHIPPED:
            from seq2spec.default_models import SPELLER_DEFAULT_OPTIONS, SPELLER_DEFAULT_PROPOSER

            small, shipped_options = SPELLER_DEFAULT_PROPOSER, dict(SPELLER_DEFAULT_OPTIONS)
        copy_only = isinstance(small, str) and small == INPUT_COPY
        proposer = small if _is_proposer(small) else None
        if copy_only or proposer is not None:
            small = None
        # texts the model is not made for come back unchanged (the shipped speller: English-only)
        self.returns_unchanged: Callable[[str], bool] | None = None
        # correct() decodes longer texts in sentence pieces (the shipped speller trained on sentences)
        self.split_longer_than: int | None = None
        # correct() gives capitalised near-dictionary words to the model in lower case, and puts back dictionary
        # words the model made into non-words (the shipped speller)
        self.fold_capitals = False
        self.keep_dictionary_words = False
        # correct() gives a capitalised word the model left as a non-word its dictionary neighbour when the model
        # scores that nearly as high (the shipped speller), within this many nats of its own output (the second for
        # a word that starts a sentence)
        self.check_capitals = False
        self.capital_check_margin = DEFAULT_MARGIN
        self.capital_check_initial_margin = DEFAULT_INITIAL_MARGIN
        int8 = is_int8_dtype(dtype)
        if int8 and not (big is None or isinstance(big, str)):
            raise ValueError(
                "dtype applies to models loaded by name; quantise your own models with "
                "seq2spec.int8.quantize_int8_pair(big, draft) (or quantize_int8(big)) before passing them"
            )
        if big is None:
            from seq2spec.default_models import SPELLER_SENTENCE_CHARS, load_speller, not_for_the_speller

            big, _, shipped_tokenizer = load_speller(device=device, dtype=dtype)
            self.returns_unchanged = not_for_the_speller
            self.split_longer_than = SPELLER_SENTENCE_CHARS
            self.fold_capitals = True
            self.keep_dictionary_words = True
            self.check_capitals = True
            tokenizer = shipped_tokenizer if tokenizer is None else tokenizer
        elif small is SHIPPED:
            small = None
        loaded_by_name = isinstance(big, str)
        self.big = load_model(big, "big", **_load_dtype(device, dtype))
        if loaded_by_name and (device is not None or dtype is not None):
            self.big = self.big.to(device=device, dtype=float_dtype(dtype))
        self.big_family: Family = family_of(self.big, "big")
        self.small: PreTrainedModel | None = None
        self.small_family: Family | None = None
        self.shares_encoder = False
        if small is not None:
            loaded = load_model(small, "small")
            self.small = loaded.to(self.big.device, self.big.dtype) if isinstance(small, str) else loaded
            self.small_family = family_of(self.small, "small")
            check_compatible(self.big, self.small)
            # a decoder-only assistant has no encoder: it reads the big model's encoder output
            self.shares_encoder = self.small_family.decoder_only or encoders_match(self.big, self.small)
        if int8 and loaded_by_name:
            quantize_int8_pair(self.big, self.small if isinstance(small, str) else None)
        tuned = {**recommended_options(self.small), **shipped_options}
        base = options if options is not None else SpeculationOptions(**tuned)
        self.options = base.updated(**option_changes)
        if self.options.input_copy and self.small is None and not copy_only:
            raise ValueError("input_copy=True combines copying with a draft model, but no draft model was given")
        if copy_only or self.options.input_copy:
            check_shared_vocabulary(self.big)
        elif self.options.spellcheck_copy:
            raise ValueError(
                "spellcheck_copy changes what input copy copies from: use it with input copy (draft='input-copy', "
                "or --draft input-copy; input_copy=True, or --input-copy, beside a draft model)"
            )
        for role, model in (("big", self.big), ("small", self.small)):
            if model is not None and model.training:
                warnings.warn(
                    f"the {role} model is in training mode (dropout active); call .eval() first", stacklevel=2
                )
        self._proposers = ProposerFactory(
            self.options,
            draft=self.small,
            family=self.small_family,
            shares_encoder=self.shares_encoder,
            copy=copy_only or self.options.input_copy,
            proposer=proposer,
            big=self.big,
        )
        self._tokenizer = tokenizer if not isinstance(tokenizer, str) else self._load_tokenizer(tokenizer)
        self._tokenizer_source = big if isinstance(big, str) else None
        self.last_stats = SpeculationStats()
        self._big_head = BigModelHead()  # the big model's head, sliced where found bit-exact (CPU)
        self._exact_forwards = ExactForwards()  # the big model's forward without transformers' per-call work
        self._spellcheck: SpellCheckedSource | None = None  # the copy source of spellcheck_copy, made on first use

    # ------------------------------------------------------------------ tokenizer and processor

    @staticmethod
    def _load_tokenizer(source: str) -> PreTrainedTokenizerBase:
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(source, **locate_pretrained(source, "tokenizer", model=False))

    @property
    def tokenizer(self) -> PreTrainedTokenizerBase:
        if self._tokenizer is None:
            source = self._tokenizer_source or getattr(self.big, "name_or_path", None)
            if not source:
                raise ValueError("no tokenizer: pass tokenizer= to Seq2SeqSpeculator (the big model has no name)")
            try:
                self._tokenizer = self._load_tokenizer(source)
            except Exception as error:  # noqa: BLE001 - re-raised with the fix named
                raise ValueError(
                    f"could not load a tokenizer for the big model from {source!r}; pass tokenizer="
                ) from error
        return self._tokenizer

    @property
    def processor(self):
        """Whisper's processor (feature extractor + tokenizer): passed as ``tokenizer=``, or loaded by name."""
        from transformers import AutoProcessor, ProcessorMixin

        if isinstance(self._tokenizer, ProcessorMixin):
            return self._tokenizer
        source = self._tokenizer_source or getattr(self.big, "name_or_path", None)
        if not source:
            raise ValueError("no processor: pass tokenizer=WhisperProcessor(...) to Seq2SeqSpeculator")
        try:
            self._tokenizer = AutoProcessor.from_pretrained(
                source, **locate_pretrained(source, "processor", model=False)
            )
        except Exception as error:  # noqa: BLE001 - re-raised with the fix named
            raise ValueError(f"could not load a processor from {source!r}; pass tokenizer=WhisperProcessor") from error
        return self._tokenizer

    # ------------------------------------------------------------------ decoding

    def _search(self, generator: torch.Generator | None) -> SpeculativeSearch:
        limits = [f.max_target_length for f in (self.big_family, self.small_family) if f and f.max_target_length]
        self._proposers.options = self.options
        self._proposers.copy_rewrite = self._spellchecked_source() if self.options.spellcheck_copy else None
        return SpeculativeSearch(
            self.big_family,
            self._proposers,
            acceptance=self.options.acceptance,
            position_limit=min(limits) if limits else None,
            generator=generator,
            head=self._big_head,
            exact=self._exact_forwards if self.options.exact_big_forward else None,
            capture_draft_processing=self.options.draft_cuda_graphs,
        )

    def _spellchecked_source(self) -> SpellCheckedSource:
        if self._spellcheck is None or self._spellcheck.tokenizer is not self.tokenizer:
            self._spellcheck = SpellCheckedSource(self.tokenizer)
        return self._spellcheck

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
    ) -> Any:
        """Same tensor as ``big.generate(input_ids, attention_mask=..., max_new_tokens=..., do_sample=False)``.

        ``generation_kwargs`` are ``generate``'s (``GenerationConfig`` fields, ``logits_processor``, ...). With
        ``do_sample=True`` (and ``temperature``, ``top_k``, ``top_p``, ...) this is speculative sampling: each row's
        tokens follow the distribution ``big.generate(do_sample=True, ...)`` samples from. Pass ``seed`` or a
        ``generator`` (on the big model's device) for reproducible runs.

        Whisper: pass ``input_features`` and Whisper's own arguments (``language``, ``task``, ``return_timestamps``,
        long-form ``attention_mask``, ``prompt_ids``, ``condition_on_prev_tokens``, temperature fallback with
        ``temperature=(0.0, 0.2, ...)`` and its thresholds, ``return_dict_in_generate``/``output_scores``, ...); the
        result is what ``big.generate`` returns for them. Greedy passes are token for token ``big.generate``'s; a
        fallback pass at a temperature above 0 samples from the big model's distribution (``seed``/``generator``).
        """
        _check_max_new_tokens(max_new_tokens)
        if self.big_family.model_type == "whisper":
            from seq2spec.whisper.generate import generate_whisper, samples

            search = self._search(self._sampling_generator(samples(generation_kwargs), generator, seed))
            output = generate_whisper(
                self.big,
                input_features if input_features is not None else input_ids,
                search,
                attention_mask=attention_mask,
                max_new_tokens=max_new_tokens,
                **generation_kwargs,
            )
            self.last_stats = search.stats
            return output
        if input_features is not None:
            raise TypeError("input_features is for Whisper models; this big model takes input_ids")
        if input_ids is None:
            raise TypeError("generate() needs input_ids")
        input_ids, attention_mask = self._check_batch(input_ids, attention_mask)
        _check_generation_arguments(generation_kwargs)
        config = generation_kwargs.get("generation_config") or self.big.generation_config
        do_sample = bool(generation_kwargs.get("do_sample", config.do_sample))
        search = self._search(self._sampling_generator(do_sample, generator, seed))
        if max_new_tokens is not None:  # None would override the generation config's own limit
            generation_kwargs["max_new_tokens"] = max_new_tokens
        output = self.big.generate(
            input_ids, attention_mask=attention_mask, custom_generate=search, **generation_kwargs
        )
        self.last_stats = search.stats
        return output

    def _sampling_generator(
        self, do_sample: bool, generator: torch.Generator | None, seed: int | None
    ) -> torch.Generator | None:
        if not do_sample:
            if generator is not None or seed is not None:
                raise ValueError(
                    "generator= and seed= only apply when sampling (do_sample=True, or a Whisper temperature above 0)"
                )
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
        split_longer_than: int | None | _ModelDefault = MODEL_DEFAULT,
        fold_capitals: bool | _ModelDefault = MODEL_DEFAULT,
        keep_dictionary_words: bool | _ModelDefault = MODEL_DEFAULT,
        check_capitals: bool | _ModelDefault = MODEL_DEFAULT,
        **generation_kwargs: Any,
    ) -> list[str]:
        """Decode each text with the big model's greedy output, in the caller's order.

        Inputs are sorted by token length into batches of ``batch_size``. A text longer than the model accepts
        raises ``InputTooLongError`` (a ``ValueError``) unless ``truncate=True``, which keeps its first tokens (the
        limit, end token included). ``progress=True`` shows a progress bar over the batches. With the shipped
        speller, text that is mostly in a script other than Latin comes back unchanged (it is English-only).

        ``split_longer_than``: a text longer than this many characters is decoded in pieces (one sentence each; a
        longer sentence cut at clause punctuation, then between words) and put back together with its whitespace
        as it was; each piece is then the big model's greedy output for that piece. By default, the model's own
        limit: the shipped speller's 140 (the longest sentence it trained on), none for other models; ``None``
        decodes every text whole.

        ``fold_capitals``: a capitalised word that is not in symspellpy's English dictionary but close to a word
        that is ("Evory") goes to the model in lower case, and the model's word in its place gets the capital back
        (``seq2spec.capitals``); the model's output is its greedy output for the text so written. By default on for
        the shipped speller, which fixes typos in capitalised words far less often otherwise; off for other models.

        ``keep_dictionary_words``: where the model replaced a dictionary word of the text with a word the dictionary
        does not know ("Staff" -> "Satuff"), the word comes back as the text wrote it (``seq2spec.dictionary_words``);
        every other change is the model's. By default on for the shipped speller, off for other models.

        ``check_capitals``: a capitalised word the dictionary does not know, which the model left as a non-word
        ("Lnog", "Erosiin" -> "Erosin"), takes the dictionary word one edit away when the big model scores its
        output with that word at most ``capital_check_margin`` nats (6.5; ``capital_check_initial_margin``, 11, for
        a word that starts a sentence) below its own output (``seq2spec.capital_check``; two teacher-forced scores
        per such word); names the model is sure of stay. By default on for the shipped speller, off for other
        models.
        """
        texts = _check_texts(texts)
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
        if prefix is not None and not isinstance(prefix, str):
            raise TypeError(f"prefix must be a string, got {type(prefix).__name__}")
        _check_max_new_tokens(max_new_tokens)
        limit = self.split_longer_than if isinstance(split_longer_than, _ModelDefault) else split_longer_than
        if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 1):
            raise ValueError(f"split_longer_than must be a positive number of characters or None, got {limit!r}")
        steps = TextSteps(
            fold_capitals=self.fold_capitals if isinstance(fold_capitals, _ModelDefault) else fold_capitals,
            keep_dictionary_words=(
                self.keep_dictionary_words
                if isinstance(keep_dictionary_words, _ModelDefault)
                else keep_dictionary_words
            ),
        )
        check = self.check_capitals if isinstance(check_capitals, _ModelDefault) else check_capitals
        if not isinstance(check, bool):
            raise TypeError(f"check_capitals must be True or False, got {check!r}")
        checker = None
        if check:
            checker = CapitalCheck(
                output_scorer(self.big, self.tokenizer, prefix),
                self.capital_check_margin,
                initial_margin=self.capital_check_initial_margin,
            )

        def decode(pieces: list[str], originals: list[str]) -> list[str]:
            outputs = self._correct_whole(
                pieces, batch_size, max_new_tokens, prefix, truncate, progress, generation_kwargs
            )
            if checker is None:
                return outputs
            unchanged = self.returns_unchanged
            checked = [i for i, piece in enumerate(pieces) if unchanged is None or not unchanged(piece)]
            results = checker(
                [originals[i] for i in checked], [pieces[i] for i in checked], [outputs[i] for i in checked]
            )
            for index, result in zip(checked, results, strict=True):
                outputs[index] = result
            return outputs

        return steps.run(texts, lambda written: _correct_pieces(written, texts, limit, decode))

    def _correct_whole(
        self,
        texts: list[str],
        batch_size: int,
        max_new_tokens: int | None,
        prefix: str | None,
        truncate: bool,
        progress: bool,
        generation_kwargs: dict[str, Any],
    ) -> list[str]:
        self.last_stats = total = SpeculationStats()
        results: list[str] = list(texts)
        kept = self.returns_unchanged
        decoded = [index for index, text in enumerate(texts) if kept is None or not kept(text)]
        if not decoded:
            return results
        tokenizer = self.tokenizer
        sources = [prefix + texts[index] if prefix else texts[index] for index in decoded]
        encoded = dict(zip(decoded, self._encode_within_limit(tokenizer, sources, truncate, decoded), strict=True))
        order = sorted(decoded, key=lambda index: len(encoded[index]))
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

    def transcribe(
        self,
        audio: Any,
        sampling_rate: int | None = None,
        language: str | None = None,
        task: str = "transcribe",
        return_timestamps: bool = False,
        batch_size: int = 16,
        max_new_tokens: int | None = None,
        progress: bool | Callable[[float], None] = False,
        decoding: WhisperDecoding | None = None,
        word_timestamps: bool = False,
    ) -> Any:
        """Transcribe audio with the big Whisper model's greedy output (exactly ``big.generate``'s tokens).

        ``audio``: a file path, a 1-D (or ``[frames, channels]``) array, or a list of them. Arrays need their
        ``sampling_rate`` (mixed down and resampled to 16 kHz with soxr); files are read with soundfile. Clips are
        sorted by duration into batches of ``batch_size``; clips longer than 30 s are decoded long-form (Whisper's
        sequential windows, timestamps on). Returns a string per clip, or with ``return_timestamps`` a dict
        ``{"text", "segments": [{"start", "end", "text"}]}``; a single input gives a single result. ``progress``:
        True shows a bar over seconds of audio; a callable is called with the seconds newly decoded.
        ``decoding`` (``WhisperDecoding``) turns on openai-whisper's temperature fallback, conditioning on previous
        text, or an initial prompt; its passes at temperature 0 remain ``big.generate``'s tokens.
        ``word_timestamps``: results are dicts with ``"words"`` too, ``[{"word", "start", "end"}]``, timed by
        Whisper's cross-attention alignment as ``big.generate(return_token_timestamps=True)`` times them.
        """
        from seq2spec.whisper.transcription import prepare_clips, transcribe_clips

        if self.big_family.model_type != "whisper":
            raise TypeError(f"transcribe() needs a Whisper model; the big model is {self.big_family.model_type!r}")
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
        clips, single = prepare_clips(audio, sampling_rate)
        total = SpeculationStats()

        seed = decoding.seed if decoding is not None and decoding.temperature_fallback else None

        def generate(input_features, attention_mask, **kwargs):
            output = self.generate(input_features=input_features, attention_mask=attention_mask, seed=seed, **kwargs)
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
            decoding=decoding,
            word_timestamps=word_timestamps,
        )
        self.last_stats = total
        return results[0] if single else results

    def _source_limit(self) -> int | None:
        limits = [self.big_family.max_source_length]
        model_max = getattr(self.tokenizer, "model_max_length", None)
        if isinstance(model_max, int) and model_max < 1_000_000:
            limits.append(model_max)
        limits = [limit for limit in limits if limit]
        return min(limits) if limits else None

    def _encode_within_limit(
        self, tokenizer: PreTrainedTokenizerBase, sources: list[str], truncate: bool, indices: list[int]
    ) -> list[list[int]]:
        """Token ids of ``sources`` (the caller's ``texts[indices[i]]``), within the model's input limit."""
        encoded = [tokenizer(source, verbose=False)["input_ids"] for source in sources]
        limit = self._source_limit()
        too_long = [index for index, ids in enumerate(encoded) if limit is not None and len(ids) > limit]
        if too_long and not truncate:
            first, tokens = indices[too_long[0]], len(encoded[too_long[0]])
            raise InputTooLongError(
                f"{len(too_long)} text(s) exceed the model's {limit}-token input limit (texts[{first}] has "
                f"{tokens} tokens); shorten them or pass truncate=True to keep the first {limit} tokens",
                first,
                tokens,
                limit,
            )
        for index in too_long:  # the tokenizer's own truncation keeps its end-of-source token
            encoded[index] = tokenizer(sources[index], truncation=True, max_length=limit)["input_ids"]
        return encoded


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
