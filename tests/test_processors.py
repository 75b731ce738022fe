import pytest
import torch
from transformers import LogitsProcessorList
from transformers.generation.logits_process import (
    SuppressTokensAtBeginLogitsProcessor,
    SuppressTokensLogitsProcessor,
    TemperatureLogitsWarper,
)

from seq2spec.decoding.processors import CachedSuppressTokens, CachedSuppressTokensAtBegin, with_cached_masks


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_cached_suppress_tokens_match_transformers(dtype):
    generator = torch.Generator().manual_seed(0)
    original = SuppressTokensLogitsProcessor([1, 5, 17, 99])
    cached = CachedSuppressTokens(original)
    for length in (1, 3, 4):
        ids = torch.randint(0, 100, (3, length), generator=generator)
        scores = torch.randn(3, 100, generator=generator).to(dtype)
        expected = original(ids, scores.clone())
        got = cached(ids, scores.clone())
        assert got.dtype == expected.dtype
        assert torch.equal(got, expected)
        assert torch.isinf(got[:, [1, 5, 17, 99]]).all() and torch.isfinite(got[:, 2]).all()


def test_cached_begin_suppress_follows_the_begin_index():
    generator = torch.Generator().manual_seed(1)
    original = SuppressTokensAtBeginLogitsProcessor([3, 7], begin_index=4)
    cached = CachedSuppressTokensAtBegin(original)
    for begin in (4, 2):
        original.set_begin_index(begin)
        cached.set_begin_index(begin)
        for length in (1, 2, 3, 4, 5):
            ids = torch.randint(0, 50, (2, length), generator=generator)
            scores = torch.randn(2, 50, generator=generator)
            expected = original(ids, scores.clone())
            assert torch.equal(cached(ids, scores.clone()), expected)
            assert torch.isinf(expected[:, 3]).all() == (length == begin)


def test_with_cached_masks_keeps_order_and_other_processors():
    temperature = TemperatureLogitsWarper(0.5)
    processors = LogitsProcessorList(
        [SuppressTokensAtBeginLogitsProcessor([2], begin_index=1), temperature, SuppressTokensLogitsProcessor([4])]
    )
    replaced = with_cached_masks(processors)
    assert [type(p) for p in replaced] == [CachedSuppressTokensAtBegin, TemperatureLogitsWarper, CachedSuppressTokens]
    assert replaced[1] is temperature
    ids = torch.zeros((2, 1), dtype=torch.long)
    scores = torch.randn(2, 10)
    assert torch.equal(replaced(ids, scores.clone()), processors(ids, scores.clone()))


def test_speculator_applies_suppress_tokens_as_generate_does(toy_models):
    """suppress_tokens / begin_suppress_tokens through the loop (cached masks) give generate's exact output."""
    from conftest import assert_same, greedy

    from seq2spec import Seq2SeqSpeculator
    from seq2spec.commands.toys import random_sources

    models = toy_models["t5"]
    big = models["big"]
    input_ids, mask = random_sources(5, seed=4, pad_id=big.generation_config.pad_token_id)
    plain = greedy(big, input_ids, mask, max_new_tokens=20)
    # suppress the tokens greedy emits most, and at the first step the token most rows start with
    tokens, counts = torch.unique(plain[:, 1:], return_counts=True)
    frequent = tokens[counts.argsort(descending=True)][:3].tolist()
    first = int(torch.mode(plain[:, 1]).values)
    arguments = {"suppress_tokens": frequent, "begin_suppress_tokens": [first], "max_new_tokens": 20}
    expected = greedy(big, input_ids, mask, **arguments)
    assert not torch.equal(expected, plain)
    speculator = Seq2SeqSpeculator(big, models["perturbed"])
    assert_same(speculator.generate(input_ids, mask, **arguments), expected)


@pytest.mark.parametrize("detect", [True, False])
@pytest.mark.parametrize("max_initial", [None, 3])
def test_whisper_timestamp_rules_match_transformers(detect, max_initial):
    from types import SimpleNamespace

    from transformers.generation.logits_process import WhisperTimeStampLogitsProcessor

    from seq2spec.decoding.processors import WhisperTimestampRules

    text, begin, vocabulary = 40, 43, 60  # eos 40, no-timestamps 42, timestamps 43..59
    config = SimpleNamespace(
        no_timestamps_token_id=begin - 1, eos_token_id=text, bos_token_id=41, max_initial_timestamp_index=max_initial
    )
    generator = torch.Generator().manual_seed(0)
    for begin_index in (1, 3):
        original = WhisperTimeStampLogitsProcessor(config, begin_index, _detect_timestamp_from_logprob=detect)
        original.max_initial_timestamp_index = max_initial
        ours = WhisperTimestampRules(original)
        for length in range(begin_index, begin_index + 7):
            # rows mixing text and timestamps, with pairs, single timestamps and none at all
            tokens = torch.randint(0, text, (12, length), generator=generator)
            stamps = torch.randint(begin, vocabulary, (12, length), generator=generator)
            use_stamp = torch.rand(12, length, generator=generator) < 0.4
            input_ids = torch.where(use_stamp, stamps, tokens)
            scores = torch.randn(12, vocabulary, generator=generator) * 3
            expected = original(input_ids, scores)
            actual = ours(input_ids, scores)
            assert torch.equal(actual, expected), (begin_index, length)


@pytest.mark.parametrize("max_initial", [None, 3])
def test_ragged_processing_equals_each_row_on_its_own_prefix(max_initial):
    """process_ragged on right-padded rows of different lengths gives each row the scores that a call on that row's
    own prefix gives (the loop processes all rows of a round in one call this way)."""
    from types import SimpleNamespace

    from transformers.generation.logits_process import WhisperTimeStampLogitsProcessor

    from seq2spec.decoding.processors import WhisperTimestampRules

    text, begin, vocabulary, begin_index = 40, 43, 60, 2
    config = SimpleNamespace(
        no_timestamps_token_id=begin - 1, eos_token_id=text, bos_token_id=41, max_initial_timestamp_index=max_initial
    )
    timestamps = WhisperTimeStampLogitsProcessor(config, begin_index, _detect_timestamp_from_logprob=True)
    timestamps.max_initial_timestamp_index = max_initial
    processors = [
        CachedSuppressTokens(SuppressTokensLogitsProcessor([1, 5, 17])),
        CachedSuppressTokensAtBegin(SuppressTokensAtBeginLogitsProcessor([3, 7, 44], begin_index=begin_index)),
        WhisperTimestampRules(timestamps),
    ]
    generator = torch.Generator().manual_seed(2)
    rows, width = 16, begin_index + 6
    tokens = torch.randint(0, text, (rows, width), generator=generator)
    stamps = torch.randint(begin, vocabulary, (rows, width), generator=generator)
    prefixes = torch.where(torch.rand(rows, width, generator=generator) < 0.4, stamps, tokens)
    lengths = torch.randint(begin_index, width + 1, (rows,), generator=generator)
    assert len(lengths.unique()) > 3
    scores = torch.randn(rows, vocabulary, generator=generator) * 3
    for processor in processors:
        ragged = processor.process_ragged(prefixes, lengths, scores.clone())
        for row in range(rows):
            own = processor(prefixes[row : row + 1, : int(lengths[row])], scores[row : row + 1].clone())
            assert torch.equal(ragged[row : row + 1], own), (type(processor).__name__, row, int(lengths[row]))


def test_prefix_processor_ragged_and_grouped_paths_agree():
    """The loop's processing of candidate positions: one ragged call per position (Whisper's processors) and the
    per-length groups (any other processor list) give the same scores, with or without host lengths."""
    from seq2spec.decoding.sequences import PrefixProcessor, TokenBuffer

    generator = torch.Generator().manual_seed(3)
    prompt = torch.randint(0, 30, (6, 2), generator=generator)
    buffer = TokenBuffer(prompt, capacity=12, pad_id=0)
    counts = torch.tensor([0, 1, 2, 3, 1, 4])
    buffer.append(torch.arange(6), torch.randint(0, 30, (6, 5), generator=generator), counts)
    suppress = [
        CachedSuppressTokens(SuppressTokensLogitsProcessor([1, 5])),
        CachedSuppressTokensAtBegin(SuppressTokensAtBeginLogitsProcessor([3, 7], begin_index=3)),
    ]
    ragged = PrefixProcessor(LogitsProcessorList(suppress), buffer)
    grouped = PrefixProcessor(LogitsProcessorList([*suppress, TemperatureLogitsWarper(1.0)]), buffer)
    assert ragged.ragged and not grouped.ragged
    rows = torch.tensor([5, 0, 3, 1])
    candidates = torch.randint(0, 30, (4, 3), generator=generator)
    scores = torch.randn(4, 4, 30, generator=generator)
    host = (2 + counts[rows]).tolist()
    expected = ragged.positions(rows, candidates, scores.clone(), host)
    assert torch.isinf(expected).any()
    assert torch.equal(grouped.positions(rows, candidates, scores.clone(), host), expected)
    assert torch.equal(grouped.positions(rows, candidates, scores.clone()), expected)
    assert torch.equal(ragged.step(rows, candidates, scores[:, 3].clone(), host), expected[:, 3])


def _whisper_processors(begin_index: int = 2) -> LogitsProcessorList:
    from types import SimpleNamespace

    from transformers.generation.logits_process import WhisperTimeStampLogitsProcessor

    from seq2spec.decoding.processors import WhisperTimestampRules

    text, begin = 40, 43  # eos 40, no-timestamps 42, timestamps 43..59
    config = SimpleNamespace(
        no_timestamps_token_id=begin - 1, eos_token_id=text, bos_token_id=41, max_initial_timestamp_index=3
    )
    timestamps = WhisperTimeStampLogitsProcessor(config, begin_index, _detect_timestamp_from_logprob=True)
    timestamps.max_initial_timestamp_index = 3
    return LogitsProcessorList(
        [
            CachedSuppressTokens(SuppressTokensLogitsProcessor([1, 5, 17])),
            CachedSuppressTokensAtBegin(SuppressTokensAtBeginLogitsProcessor([3, 7, 44], begin_index=begin_index)),
            WhisperTimestampRules(timestamps),
        ]
    )


def test_captured_step_processing_equals_the_eager_step():
    """A draft step's processing over fixed tensors (all batch rows, prefixes as wide as a row can reach), which a
    CUDA device replays as a graph, gives the eager step's scores: rows of different lengths, finished rows left out
    of the step, candidates running past the buffer's capacity, and every step of a proposal."""
    from seq2spec.decoding.fast.captured_processing import capturable
    from seq2spec.decoding.sequences import PrefixProcessor, TokenBuffer

    generator = torch.Generator().manual_seed(4)
    processors = _whisper_processors()
    assert capturable(processors) and not capturable(LogitsProcessorList([TemperatureLogitsWarper(0.5)]))
    assert not capturable(LogitsProcessorList())
    prompt = torch.randint(0, 40, (6, 2), generator=generator)
    buffer = TokenBuffer(prompt, capacity=10, pad_id=0)
    new = torch.where(
        torch.rand(6, 7, generator=generator) < 0.4,
        torch.randint(43, 60, (6, 7), generator=generator),
        torch.randint(0, 40, (6, 7), generator=generator),
    )
    counts = torch.tensor([0, 1, 2, 7, 3, 5])
    buffer.append(torch.arange(6), new, counts)
    eager = PrefixProcessor(processors, buffer)
    captured = PrefixProcessor(processors, buffer, capture_steps=True)
    rows = torch.tensor([5, 0, 3, 1])  # rows 2 and 4 have finished
    host = (2 + counts[rows]).tolist()
    for step in range(6):  # candidates: row 3 (9 tokens) runs past the capacity of 10 from the second step on
        candidates = torch.where(
            torch.rand(4, step, generator=generator) < 0.5,
            torch.randint(43, 60, (4, step), generator=generator),
            torch.randint(0, 40, (4, step), generator=generator),
        )
        scores = torch.randn(4, 60, generator=generator) * 3
        expected = eager.step(rows, candidates, scores.clone(), host)
        actual = captured.step(rows, candidates, scores.clone(), host)
        assert torch.equal(actual, expected), step
        assert captured.capture_steps and captured._captured is not None  # the fixed-tensor path stayed in use
    assert torch.isinf(expected).any()


def test_captured_step_processing_that_disagrees_stays_eager(monkeypatch):
    from seq2spec.decoding.fast import captured_processing
    from seq2spec.decoding.sequences import PrefixProcessor, TokenBuffer

    buffer = TokenBuffer(torch.randint(0, 40, (3, 2), generator=torch.Generator().manual_seed(5)), 8, pad_id=0)
    processor = PrefixProcessor(_whisper_processors(), buffer, capture_steps=True)
    original = captured_processing.CapturedStepProcessing._process

    def skewed(self):  # processing that forgets a suppressed token
        original(self)
        self.scores[:, 5] = 0.0

    monkeypatch.setattr(captured_processing.CapturedStepProcessing, "_process", skewed)
    rows, candidates = torch.arange(3), torch.zeros((3, 1), dtype=torch.long)
    scores = torch.randn(3, 60, generator=torch.Generator().manual_seed(6))
    expected = PrefixProcessor(_whisper_processors(), buffer).step(rows, candidates, scores.clone())
    assert torch.equal(processor.step(rows, candidates, scores.clone()), expected)  # the eager result
    assert not processor.capture_steps and processor._captured is None
    assert torch.equal(processor.step(rows, candidates, scores.clone()), expected)
