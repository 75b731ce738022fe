"""Speculative sampling keeps the big model's sampling distribution.

The reference is exact: the probability of every possible first-three-token outcome is computed from the big
model's own logits (temperature, then top-k, as ``generate`` applies them). Samples from the speculator are
compared with it by a chi-square goodness-of-fit test, and so are samples from ``big.generate(do_sample=True)``
(which validates the reference). The same test rejects the argmax-of-residual mistake, which shows it has the
power to catch a wrong acceptance rule.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import pytest
import torch
from toy_helpers import perturbed_copy

import seq2spec.decoding.search as search_module
from seq2spec import Seq2SeqSpeculator
from seq2spec.commands.toys import random_sources
from seq2spec.decoding.verify import SamplingVerifier

HORIZON = 3
TEMPERATURE = 1.3
TOP_K = 3
SAMPLES = 12_000
SAMPLING = {"do_sample": True, "temperature": TEMPERATURE, "top_k": TOP_K, "max_new_tokens": HORIZON}


@pytest.fixture(scope="module")
def setup(toy_models):
    """The big model, a draft that differs from it markedly (so that rejections and residuals matter), a source."""
    big = toy_models["t5"]["big"]
    draft = perturbed_copy(big, seed=7, relative_noise=0.1)
    source = random_sources(1, seed=11)[0][:, :12]
    kinds = []

    def record_processors(model, input_ids, logits_processor, **_):  # what generate hands its decoding method
        kinds.extend(sorted(type(processor).__name__ for processor in logits_processor))
        return input_ids

    big.generate(source, custom_generate=record_processors, **SAMPLING)
    assert kinds == ["TemperatureLogitsWarper", "TopKLogitsWarper"], kinds  # what exact_distribution models
    return big, draft, source, exact_distribution(big, source)


@torch.inference_mode()
def exact_distribution(big, source: torch.Tensor) -> dict[tuple[int, ...], float]:
    """Probability of each outcome (the first tokens up to HORIZON, or up to and including EOS)."""
    encoder_output = big.get_encoder()(input_ids=source)
    start, eos = big.generation_config.decoder_start_token_id, big.generation_config.eos_token_id

    def next_distribution(prefix: tuple[int, ...]) -> torch.Tensor:
        decoder_input = torch.tensor([[start, *prefix]])
        logits = big(encoder_outputs=encoder_output, decoder_input_ids=decoder_input).logits[0, -1].float()
        scores = logits / TEMPERATURE
        threshold = scores.topk(TOP_K).values[-1]
        return torch.softmax(scores.masked_fill(scores < threshold, float("-inf")), dim=-1)

    return outcome_probabilities(next_distribution, HORIZON, eos)


def outcome_probabilities(
    next_distribution: Callable[[tuple[int, ...]], torch.Tensor], horizon: int, eos: int, min_probability: float = 0.0
) -> dict[tuple[int, ...], float]:
    """Probability of every outcome (the first ``horizon`` tokens, or up to and including EOS), expanding each
    prefix over the tokens ``next_distribution(prefix)`` gives more than ``min_probability``."""
    outcomes: dict[tuple[int, ...], float] = {}

    def expand(prefix: tuple[int, ...], probability: float) -> None:
        if len(prefix) == horizon or (prefix and prefix[-1] == eos):
            outcomes[prefix] = probability
            return
        distribution = next_distribution(prefix)
        for token in (distribution > min_probability).nonzero().flatten().tolist():
            expand((*prefix, token), probability * float(distribution[token]))

    expand((), 1.0)
    return outcomes


def outcomes_of(generated: torch.Tensor, eos: int) -> list[tuple[int, ...]]:
    result = []
    for row in generated[:, 1:].tolist():
        tokens: list[int] = []
        for token in row[:HORIZON]:
            tokens.append(token)
            if token == eos:
                break
        result.append(tuple(tokens))
    return result


def chi_square_p_value(samples: list[tuple[int, ...]], expected: dict[tuple[int, ...], float]) -> float:
    """Goodness of fit; outcomes expected fewer than 5 times are pooled with anything unexpected."""
    counts: dict[tuple[int, ...], int] = {}
    for outcome in samples:
        counts[outcome] = counts.get(outcome, 0) + 1
    total = len(samples)
    statistic, cells, pooled_expected, pooled_observed = 0.0, 0, 0.0, 0
    for outcome, probability in expected.items():
        if probability * total >= 5:
            statistic += (counts.get(outcome, 0) - probability * total) ** 2 / (probability * total)
            cells += 1
        else:
            pooled_expected += probability * total
            pooled_observed += counts.get(outcome, 0)
    pooled_observed += sum(count for outcome, count in counts.items() if outcome not in expected)
    if pooled_expected > 0:
        statistic += (pooled_observed - pooled_expected) ** 2 / pooled_expected
        cells += 1
    elif pooled_observed:
        return 0.0  # an outcome with probability zero was sampled
    degrees = cells - 1
    return float(torch.special.gammaincc(torch.tensor(degrees / 2.0), torch.tensor(statistic / 2.0)))


def test_reference_is_exact(setup):
    """big.generate's own sampling fits the computed distribution (the reference is right)."""
    big, _, source, expected = setup
    assert len(expected) >= 10  # a distribution with real spread
    torch.manual_seed(0)
    generated = big.generate(source.repeat(SAMPLES, 1), **SAMPLING)
    p_value = chi_square_p_value(outcomes_of(generated, big.generation_config.eos_token_id), expected)
    assert p_value > 1e-4, p_value


@pytest.mark.parametrize("acceptance", ["per-row", "batch-min"])
def test_speculative_sampling_keeps_the_distribution(setup, acceptance):
    big, draft, source, expected = setup
    speculator = Seq2SeqSpeculator(big, draft, num_draft_tokens=2, adaptive=False, acceptance=acceptance)
    generated = speculator.generate(source.repeat(SAMPLES, 1), seed=1, **SAMPLING)
    if acceptance == "per-row":  # both acceptances and rejections happen
        assert 0.2 < speculator.last_stats.acceptance_rate < 0.95, speculator.last_stats.acceptance_rate
    # batch-min over this many rows keeps no candidate: rows that would have kept theirs emit it as the bonus
    p_value = chi_square_p_value(outcomes_of(generated, big.generation_config.eos_token_id), expected)
    assert p_value > 1e-4, p_value


def test_deterministic_proposals_keep_the_distribution(setup):
    """Input-copy candidates are a one-hot draft distribution: accept with probability p(x)."""
    big, _, source, expected = setup
    speculator = Seq2SeqSpeculator(big, draft="input-copy", num_draft_tokens=2)
    generated = speculator.generate(source.repeat(SAMPLES, 1), seed=2, **SAMPLING)
    p_value = chi_square_p_value(outcomes_of(generated, big.generation_config.eos_token_id), expected)
    assert p_value > 1e-4, p_value


def test_argmax_of_residual_is_caught(setup, monkeypatch):
    """The common mistake (argmax of p - q after a rejection) fails the same test."""
    big, draft, source, expected = setup
    monkeypatch.setattr(search_module, "SamplingVerifier", functools.partial(SamplingVerifier, residual="argmax"))
    speculator = Seq2SeqSpeculator(big, draft, num_draft_tokens=2, adaptive=False)
    generated = speculator.generate(source.repeat(SAMPLES, 1), seed=1, **SAMPLING)
    assert 0.2 < speculator.last_stats.acceptance_rate < 0.95, speculator.last_stats.acceptance_rate
    p_value = chi_square_p_value(outcomes_of(generated, big.generation_config.eos_token_id), expected)
    assert p_value < 1e-8, p_value


def test_seeded_runs_repeat(toy_models):
    big, draft = toy_models["bart"]["big"], toy_models["bart"]["perturbed"]
    input_ids, attention_mask = random_sources(6, seed=3)
    speculator = Seq2SeqSpeculator(big, draft)
    kwargs = {"do_sample": True, "top_p": 0.9, "max_new_tokens": 20}
    first = speculator.generate(input_ids, attention_mask, seed=5, **kwargs)
    again = speculator.generate(input_ids, attention_mask, generator=torch.Generator().manual_seed(5), **kwargs)
    other = speculator.generate(input_ids, attention_mask, seed=6, **kwargs)
    assert torch.equal(first, again)
    assert not torch.equal(first, other)


def test_sampling_arguments_are_checked(toy_models):
    big = toy_models["t5"]["big"]
    input_ids, attention_mask = random_sources(2, seed=3)
    speculator = Seq2SeqSpeculator(big, toy_models["t5"]["perturbed"])
    with pytest.raises(ValueError, match="only apply when sampling"):
        speculator.generate(input_ids, attention_mask, seed=1)
    with pytest.raises(ValueError, match="not both"):
        speculator.generate(input_ids, attention_mask, do_sample=True, seed=1, generator=torch.Generator())
    with pytest.raises(TypeError, match="torch.Generator"):
        speculator.generate(input_ids, attention_mask, do_sample=True, generator=5)
    with pytest.raises(ValueError, match="num_beams"):
        speculator.generate(input_ids, attention_mask, do_sample=True, num_beams=2)
