"""recipes/train_speller.py: growing the big model from the seed keeps its function; cutting the draft's decoder."""

from __future__ import annotations

import sys

import pytest
import torch
import train_speller  # noqa: E402

SEED = {"d_model": 32, "d_kv": 8, "num_heads": 4, "d_ff": 48, "num_layers": 2, "num_decoder_layers": 3}
BIG = {"d_model": 96, "d_kv": 8, "num_heads": 12, "d_ff": 128, "num_layers": 2, "num_decoder_layers": 3}


def trained_looking_seed():
    """A random seed whose norm weights and relative biases are not at their initial values, so that a widening
    that drops or mis-scales them shows in the logits."""
    model = train_speller.new_model(SEED, 3)
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if parameter.dim() == 1 or "relative_attention_bias" in name:
                parameter.add_(0.5 * torch.randn(parameter.shape, generator=generator))
    return model.eval()


def logits(model, source, target):
    with torch.no_grad():
        return model(input_ids=source, decoder_input_ids=target).logits


def test_widen_keeps_the_function_and_noise_breaks_the_symmetry():
    seed = trained_looking_seed()
    source, target = torch.randint(3, 2048, (3, 11)), torch.randint(3, 2048, (3, 7))
    expected = logits(seed, source, target)
    grown = train_speller.widen(seed, BIG, seed=0).eval()
    assert grown.config.d_model == 96 and grown.config.num_heads == 12 and grown.config.d_ff == 128
    torch.testing.assert_close(logits(grown, source, target), expected, atol=1e-4, rtol=1e-4)
    noisy = train_speller.widen(seed, BIG, seed=0, noise=0.01).eval()
    difference = (logits(noisy, source, target) - expected).abs().max()
    assert 0 < difference < 0.1 * expected.abs().max()
    repeated = noisy.encoder.block[0].layer[0].SelfAttention.q.weight[:, :32]
    assert not torch.equal(repeated, noisy.encoder.block[0].layer[0].SelfAttention.q.weight[:, 32:64])


def test_widen_refuses_shapes_it_cannot_grow_into():
    seed = trained_looking_seed()
    with pytest.raises(ValueError, match="d_model multiple"):
        train_speller.widen(seed, {**BIG, "d_model": 80}, seed=0)
    with pytest.raises(ValueError, match="same head size"):
        train_speller.widen(seed, {**BIG, "d_kv": 16}, seed=0)
    with pytest.raises(ValueError, match="feed-forward"):
        train_speller.widen(seed, {**BIG, "d_ff": 16}, seed=0)


def test_cut_decoder_keeps_the_chosen_layers_and_the_position_bias():
    seed = trained_looking_seed()
    cut = train_speller.cut_decoder(seed, (0, 2), seed=1)
    assert cut.config.num_decoder_layers == 2 and cut.config.d_model == seed.config.d_model
    for kept, origin in ((0, 0), (1, 2)):
        assert torch.equal(
            cut.decoder.block[kept].layer[2].DenseReluDense.wo.weight,
            seed.decoder.block[origin].layer[2].DenseReluDense.wo.weight,
        )
    bias = cut.decoder.block[0].layer[0].SelfAttention.relative_attention_bias.weight
    assert torch.equal(bias, seed.decoder.block[0].layer[0].SelfAttention.relative_attention_bias.weight)
    assert torch.equal(cut.shared.weight, seed.shared.weight)


SENTENCES = sorted(f"Sentence number {i} has {'some ' * (i % 5)}words in it." for i in range(200))
TYPOS = {"sentence": ["sentense"], "words": ["wrods"], "number": ["numbr"]}


def batch_stream(first: int, last: int):
    from transformers import ByT5Tokenizer

    corruptor = train_speller.speller_data.Corruptor(TYPOS, clean_share=0.3)
    copier = train_speller.speller_data.Corruptor(TYPOS, clean_share=1.0)
    return train_speller.BatchStream(ByT5Tokenizer(), SENTENCES, corruptor, copier, 3, 5, 4, first, last)


@pytest.mark.parametrize("workers", [0, 2])
def test_batch_stream_is_the_same_with_workers_and_when_resumed(workers):
    """Batches depend on (seed, step) only: worker processes and a resumed run see what one unbroken loop sees."""
    expected = [train_speller.make_batch(*stream_args(step)) for step in range(2, 9)]
    loader = torch.utils.data.DataLoader(batch_stream(2, 9), batch_size=None, num_workers=workers)
    got = list(loader)
    assert len(got) == len(expected)
    for (ids, mask, labels), (ids2, mask2, labels2) in zip(got, expected, strict=True):
        assert torch.equal(ids, ids2) and torch.equal(mask, mask2) and torch.equal(labels, labels2)
    first_step_sources = got[0][0]
    assert not torch.equal(first_step_sources, got[-1][0])  # the steps differ


def stream_args(step: int):
    stream = batch_stream(0, 1)
    noise = stream.copier if step < stream.copy_steps else stream.corruptor
    return stream.tokenizer, SENTENCES, noise, stream.seed, step, stream.batch_size


def test_sources_snapshot_is_read_back_without_the_system_corpus(tmp_path, monkeypatch):
    monkeypatch.setattr(train_speller.speller_data, "load_corpus", lambda: SENTENCES)
    monkeypatch.setattr(train_speller.speller_data, "load_typos", lambda: TYPOS)
    assert train_speller.load_sources(tmp_path) == {"corpus": SENTENCES, "typos": TYPOS}

    def unavailable():
        raise FileNotFoundError("no corpus on this machine")

    monkeypatch.setattr(train_speller.speller_data, "load_corpus", unavailable)
    training, held_out = train_speller.split_corpus(tmp_path)
    assert sorted(training + held_out) == SENTENCES and held_out
    assert train_speller.load_typos(tmp_path) == TYPOS


def test_model_card_lists_every_training_run(tmp_path):
    runs = [
        {"steps": [0, 3500], "planned_steps": 3500, "hardware": "CPU, 2 threads", "batch_size": 64, "peak_lr": 2e-4,
         "warmup": 300, "minutes": 44.5, "dropout": 0.0, "init_from": None},
        {"steps": [0, 649], "planned_steps": 1000, "hardware": "GPU", "batch_size": 512, "peak_lr": 3e-4,
         "warmup": 100, "minutes": 3.1, "dropout": 0.1, "init_from": "big_init.pt", "gloss_share": 0.5,
         "clean_share": 0.5},
    ]  # fmt: skip
    (tmp_path / "big_runs.jsonl").write_text("".join(train_speller.json.dumps(run) + "\n" for run in runs))
    (tmp_path / "seed_log.jsonl").write_text('{"step": 40, "elapsed_s": 60.0}\n')
    table, hours = train_speller.training_runs(tmp_path)
    lines = table.splitlines()
    assert len(lines) == 2 + 3  # header, rule, the seed (from its log) and the two big runs
    assert "| seed | 0-40 |" in lines[2] and "| 1.0 |" in lines[2]
    assert "| big | 0-3500 | CPU, 2 threads | 64 |" in lines[3] and "the widened seed" in lines[3]
    assert "0-649 (of 1000 planned: stopped early)" in lines[4] and "big_init.pt" in lines[4]
    assert "| 0% | 30% |" in lines[3]  # shares of batches from WordNet's definitions and of sentences left clean
    assert "| 50% | 50% |" in lines[4]
    assert hours == pytest.approx((1.0 + 44.5 + 3.1) / 60)


def test_init_weights_load_from_an_export_whose_tied_embeddings_are_stored_once(tmp_path):
    """--init-from accepts the shipped ``model.safetensors``: the export keeps the shared embedding once, and the
    encoder/decoder embeddings and the LM head are filled in from it."""
    model = trained_looking_seed()
    model.half().save_pretrained(tmp_path / "export")
    stored = tmp_path / "export" / "model.safetensors"
    from safetensors.torch import load_file

    assert "lm_head.weight" not in load_file(stored)
    restored = train_speller.new_model(SEED, 5)
    restored.load_state_dict(train_speller.load_weights(stored))
    source, target = torch.randint(3, 2048, (2, 9)), torch.randint(3, 2048, (2, 5))
    torch.testing.assert_close(logits(restored.eval(), source, target), logits(model.float(), source, target))


def test_word_outcomes_sorts_each_word_and_sets_unaligned_sentences_apart():
    noisy = ["Teh cat sat on teh mat", "a b c", "I seen it"]
    references = ["The cat sat on the mat", "a b c", "I saw it"]
    outputs = ["The cat sit on teh mut", "a b", "I seen it"]
    counts = train_speller.word_outcomes(noisy, references, outputs)
    assert counts == {"fixed": 1, "left": 2, "changed": 0, "kept": 4, "broke": 2, "unaligned": 1}
    assert train_speller.word_outcomes(["Thsi"], ["This"], ["Thus"])["changed"] == 1
    table = train_speller.word_table(counts)
    assert "| 3 | 33.3% | 66.7% | 0.0% |" in table and "| 6 | 66.7% | 33.3% |" in table
    assert train_speller.word_table(None) == ""


def test_training_text_draws_the_gloss_share_of_batches_from_the_glosses():
    sentences = [f"corpus sentence {i}" for i in range(100)]
    glosses = [f"a gloss {i}" for i in range(100)]
    text = train_speller.TrainingText(sentences, glosses, gloss_share=0.25)
    rng = train_speller.random.Random(0)
    batches = [text.pick(rng, 4) for _ in range(2000)]
    from_glosses = [all(s.startswith("a gloss") for s in b) for b in batches]
    assert all(f or all(s.startswith("corpus") for s in b) for f, b in zip(from_glosses, batches, strict=True))
    assert 0.2 < sum(from_glosses) / len(batches) < 0.3
    # without glosses (or a share of 0) the batches are what a plain sentence list gives, step for step
    plain = [train_speller.make_batch(*stream_args(step)) for step in range(3)]
    stream = batch_stream(0, 1)
    text_only = train_speller.TrainingText(SENTENCES, glosses, gloss_share=0.0)
    for step, expected in enumerate(plain):
        noise = stream.copier if step < stream.copy_steps else stream.corruptor
        got = train_speller.make_batch(stream.tokenizer, text_only, noise, stream.seed, step, stream.batch_size)
        assert all(torch.equal(a, b) for a, b in zip(got, expected, strict=True))


def test_training_text_leaves_out_held_out_glosses(tmp_path, monkeypatch):
    glosses = [f"a definition of word number {i}" for i in range(400)]
    monkeypatch.setattr(train_speller.speller_data, "load_corpus", lambda: SENTENCES)
    monkeypatch.setattr(train_speller.speller_data, "load_typos", lambda: TYPOS)
    monkeypatch.setattr(train_speller.speller_data, "wordnet_glosses", lambda: glosses)
    args = train_speller.argparse.Namespace(work_dir=tmp_path, gloss_share=0.5, gloss_form="definitions")
    text = train_speller.training_text(args)
    held_out = [g for g in glosses if train_speller.speller_data.is_held_out(g)]
    assert held_out and not set(held_out) & set(text.glosses)
    assert sorted(text.glosses + held_out) == sorted(glosses)
    assert [len(g) for g in text.glosses] == sorted(len(g) for g in text.glosses)
    no_glosses = train_speller.argparse.Namespace(work_dir=tmp_path, gloss_share=0.0, gloss_form="definitions")
    assert train_speller.training_text(no_glosses).glosses == []


@pytest.mark.parametrize("flag", ["--gloss-share", "--clean-share"])
def test_shares_outside_zero_to_one_are_refused(flag, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["train_speller.py", flag, "1.5", "--stage", "eval"])
    with pytest.raises(SystemExit):
        train_speller.main()
    assert f"{flag} 1.5: a share must lie in [0, 1]" in capsys.readouterr().err


def test_gloss_form_headwords_trains_on_the_dictionary_entries(tmp_path, monkeypatch):
    definitions = [f"a definition of word number {i}" for i in range(50)]
    entries = [f"word{i}, other{i}: a definition of word number {i}" for i in range(50)]
    monkeypatch.setattr(train_speller.speller_data, "load_corpus", lambda: SENTENCES)
    monkeypatch.setattr(train_speller.speller_data, "load_typos", lambda: TYPOS)
    monkeypatch.setattr(train_speller.speller_data, "wordnet_glosses", lambda: definitions)
    monkeypatch.setattr(train_speller.speller_data, "wordnet_headword_entries", lambda: entries)
    args = train_speller.argparse.Namespace(work_dir=tmp_path, gloss_share=0.5, gloss_form="headwords")
    text = train_speller.training_text(args)
    assert text.glosses and set(text.glosses) <= set(entries)
    assert (tmp_path / "headwords.json.gz").exists() and not (tmp_path / "glosses.json.gz").exists()
    plain = train_speller.training_text(train_speller.argparse.Namespace(**{**vars(args), "gloss_form": "definitions"}))
    assert set(plain.glosses) <= set(definitions)
    run = {"gloss_share": 0.5, "gloss_form": "headwords"}
    assert train_speller.gloss_column(run) == "50% (headwords)"
    assert train_speller.gloss_column({"gloss_share": 0.5}) == "50%"
    assert train_speller.gloss_column({"gloss_share": 0.0, "gloss_form": "headwords"}) == "0%"


def test_validation_sentences_lie_outside_the_evaluation_sets():
    held_out = [f"Held-out sentence number {i} is here." for i in range(300)]
    pairs, clean = train_speller.evaluation_sets(held_out, TYPOS, seed=7, size=60)
    evaluation = {reference for _, reference in pairs} | set(clean)
    val_pairs, val_clean = train_speller.validation_sets(held_out, TYPOS, seed=7, eval_size=60, size=80)
    validation = [reference for _, reference in val_pairs] + val_clean
    assert len(val_pairs) == len(val_clean) == 80 and len(set(validation)) == 160
    assert not evaluation & set(validation) and set(validation) <= set(held_out)
    assert all(noisy != reference for noisy, reference in val_pairs)  # every validation pair carries an error
    assert train_speller.validation_sets(held_out, TYPOS, seed=7, eval_size=60, size=80) == (val_pairs, val_clean)
    with pytest.raises(ValueError, match="too few"):
        train_speller.validation_sets(held_out, TYPOS, seed=7, eval_size=60, size=100)


def test_export_keeps_the_run_history_and_a_continuing_work_dir_takes_it_over(tmp_path):
    old, new, export = tmp_path / "old", tmp_path / "new", tmp_path / "export"
    for path in (old, new, export / "big"):
        path.mkdir(parents=True)
    seed_run = {"steps": [0, 4000], "minutes": 18.2}
    big_runs = [{"steps": [0, 3500], "minutes": 44.5}, {"steps": [0, 2000], "minutes": 3.1, "init_from": "x"}]
    (old / "seed_runs.jsonl").write_text(train_speller.json.dumps(seed_run) + "\n")
    (old / "big_runs.jsonl").write_text("".join(train_speller.json.dumps(run) + "\n" for run in big_runs))
    train_speller.write_history(old, export)
    weights = export / "big" / "model.safetensors"
    train_speller.inherit_history(new, weights)
    assert train_speller.training_runs(new) == train_speller.training_runs(old)
    train_speller.inherit_history(new, weights)  # a resumed run does not take the history over twice
    assert train_speller.training_runs(new) == train_speller.training_runs(old)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    train_speller.inherit_history(elsewhere, tmp_path / "plain" / "big" / "model.safetensors")  # no history there
    assert not list(elsewhere.iterdir())


def test_validate_stage_scores_the_big_checkpoint_and_appends_its_figures(tmp_path, monkeypatch):
    from transformers import ByT5Tokenizer

    held_out_sentences = [f"Held-out sentence number {i} is here." for i in range(120)]
    # a tiny "big" model, as deep as its encoder (transformers 5's generate sizes its cache by the encoder's depth)
    shape = {**SEED, "num_decoder_layers": SEED["num_layers"]}
    monkeypatch.setattr(train_speller, "BIG_SHAPE", shape)
    monkeypatch.setattr(train_speller, "VOCAB_SIZE", 259)  # ByT5's bytes and specials: every output decodes
    monkeypatch.setattr(train_speller, "split_corpus", lambda work_dir: (SENTENCES, held_out_sentences))
    monkeypatch.setattr(train_speller, "load_typos", lambda work_dir: TYPOS)
    ByT5Tokenizer().save_pretrained(tmp_path / "tokenizer")
    model = train_speller.new_model(shape, 3)
    torch.save({"model": model.state_dict(), "optimizer": None, "step": 123}, tmp_path / "big.ckpt")
    args = train_speller.argparse.Namespace(work_dir=tmp_path, device="cpu", seed=0, eval_size=20, validation_size=30)
    first = train_speller.stage_validate(args)
    assert first["big_step"] == 123 and first["sentences"] == [30, 30]
    assert first["cer_input"] > 0 and first["cer_big"] >= 0 and 0 <= first["clean_unchanged_big"] <= 1
    assert not first["fold_capitals"] and not first["keep_dictionary_words"]  # the record says how it was decoded
    train_speller.stage_validate(args)
    lines = (tmp_path / "validation.jsonl").read_text().splitlines()
    assert [train_speller.json.loads(line) for line in lines] == [first, first]  # appended; the same model scores alike


@pytest.mark.parametrize("flag", ["--eval-size", "--validation-size", "--quick-eval-size"])
def test_empty_evaluation_sets_are_refused(flag, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["train_speller.py", flag, "0", "--stage", "validate"])
    with pytest.raises(SystemExit):
        train_speller.main()
    assert f"{flag} 0: needs at least 1 sentence of each kind" in capsys.readouterr().err


def test_average_stage_mixes_the_checkpoint_with_its_start_once_and_the_card_says_so(tmp_path):
    start = train_speller.new_model(BIG, 1)
    start.half().save_pretrained(tmp_path / "export")  # the shipped form: float16, tied embeddings stored once
    start_weights = train_speller.load_weights(tmp_path / "export" / "model.safetensors")
    tuned = {key: value + 1.0 for key, value in start_weights.items()}
    torch.save({"model": tuned, "optimizer": {"state": {}}, "step": 1500, "elapsed": 9.0}, tmp_path / "big.ckpt")
    weights_path = tmp_path / "export" / "model.safetensors"
    run = {"steps": [0, 1500], "planned_steps": 1500, "hardware": "CPU, 1 thread", "batch_size": 64,
           "peak_lr": 1e-4, "warmup": 100, "minutes": 76.3, "init_from": str(weights_path)}  # fmt: skip
    (tmp_path / "big_runs.jsonl").write_text(train_speller.json.dumps(run) + "\n")
    args = train_speller.argparse.Namespace(work_dir=tmp_path, average_with=weights_path, average_weight=0.25)
    train_speller.stage_average(args)

    state = torch.load(tmp_path / "big.ckpt")
    assert state["step"] == 1500 and state["optimizer"] is None and state["average_weight"] == 0.25
    for key, value in state["model"].items():
        torch.testing.assert_close(value, start_weights[key] + 0.25, rtol=0, atol=1e-6)
    model = train_speller.new_model(BIG, 2)
    model.load_state_dict(state["model"])  # loads as the later stages load it
    with pytest.raises(SystemExit, match="already an average"):
        train_speller.stage_average(args)  # a second average would mix twice
    table, hours = train_speller.training_runs(tmp_path)
    assert "| big | weights averaged |" in table.splitlines()[-1]
    assert "25% the run above + 75% the weights it started from" in table
    assert hours == pytest.approx(76.3 / 60)


@pytest.mark.parametrize("weight", ["0", "1", "1.5"])
def test_average_weights_outside_zero_to_one_are_refused(weight, tmp_path, monkeypatch):
    argv = ["train_speller.py", "--stage", "average", "--work-dir", str(tmp_path), "--average-with", "x.safetensors"]
    monkeypatch.setattr(sys, "argv", [*argv, "--average-weight", weight])
    with pytest.raises(SystemExit, match="must lie strictly between 0 and 1"):
        train_speller.main()


def test_average_weights_refuses_models_of_other_shapes():
    big = train_speller.new_model(BIG, 1).state_dict()
    seed = train_speller.new_model(SEED, 1).state_dict()
    with pytest.raises(ValueError, match="shape"):
        train_speller.average_weights(big, seed, 0.5)


def dictionary_of(*words: str):
    """A word corrector as ``fold_capitals`` reads one: a word one letter off a known word gets that word."""
    import difflib

    def correct(word: str) -> str | None:
        if word in words:
            return word
        close = difflib.get_close_matches(word, words, n=1, cutoff=0.8)
        return close[0] if close else None

    return correct


def test_fold_pair_lowers_a_folded_word_in_source_and_target_alike():
    fold_pair = train_speller.speller_text.fold_pair
    correct = dictionary_of("however", "debian", "system", "fine")
    assert fold_pair("Hoever, the Debia system is fine.", "However, the Debian system is fine.", correct) == (
        "hoever, the debia system is fine.",
        "however, the debian system is fine.",
    )
    # a dictionary word keeps its capital; so does every word of a pair whose words do not line up one for one
    assert fold_pair("Debian systm is fine.", "Debian system is fine.", correct) == (
        "Debian systm is fine.",
        "Debian system is fine.",
    )
    assert fold_pair("Hoever, itis fine.", "However, it is fine.", correct) == (
        "Hoever, itis fine.",
        "However, it is fine.",
    )
    # a target word in mixed case would not come back as written after the capital is restored: left alone
    assert fold_pair("Debia runs.", "DebIan runs.", correct) == ("Debia runs.", "DebIan runs.")


def test_folded_noise_batches_train_on_the_folded_pairs():
    from transformers import ByT5Tokenizer

    sentences = ["Sentence one is here.", "Sentence two is there."]
    noise = train_speller.speller_text.FoldedNoise(
        lambda sentence, rng: sentence.replace("Sentence", "Sentense"), dictionary_of("sentence", "here", "there")
    )
    tokenizer = ByT5Tokenizer()
    source, _, labels = train_speller.make_batch(tokenizer, sentences, noise, seed=0, step=0, batch_size=2)
    labels[labels == -100] = tokenizer.pad_token_id
    sources = sorted(tokenizer.batch_decode(source, skip_special_tokens=True))
    targets = sorted(tokenizer.batch_decode(labels, skip_special_tokens=True))
    assert sources == ["sentense one is here.", "sentense two is there."]
    assert targets == ["sentence one is here.", "sentence two is there."]
    plain = train_speller.make_batch(tokenizer, sentences, noise.noise, seed=0, step=0, batch_size=2)
    assert sorted(tokenizer.batch_decode(plain[0], skip_special_tokens=True))[0].startswith("Sentense")


def test_the_card_says_how_the_held_out_figures_were_decoded():
    assert train_speller.decoded_as({}) == ""
    both = train_speller.decoded_as({"fold_capitals": True, "keep_dictionary_words": True})
    assert both == "; capitals folded and dictionary words kept, as `correct` runs the model"
    assert train_speller.decoded_as({"keep_dictionary_words": True}).startswith("; dictionary words kept,")


@pytest.mark.parametrize("script", ["train_speller.py", "tune_text_steps.py"])
def test_the_speller_recipes_run_as_scripts(script):
    """Run as a user runs them (no test path set up): their imports of the recipes' own modules and of the data
    sets' makers in recipes/data resolve."""
    import subprocess
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "recipes" / script
    done = subprocess.run([sys.executable, str(path), "--help"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "usage:" in done.stdout
