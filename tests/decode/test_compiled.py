"""The compiled decoding steps (one row, many rows) against the eager one: same
log-probabilities, same beams, batch invariance, and eager decoding where compilation is
unavailable."""

import shutil
import time
from dataclasses import replace

import pytest
import torch
import torch._inductor.config as inductor

from aiayn import ModelConfig, Transformer
from aiayn.checkpoint import Checkpoint
from aiayn.decode.search import beam_search, greedy_search
from aiayn.runtime import compiled as compiled_module
from aiayn.runtime.compiled import CompiledSteps
from aiayn.runtime.cpu import for_inference
from aiayn.translate import DecodeOptions, Translator

from ..conftest import random_tokens, toy_pairs

pytestmark = pytest.mark.skipif(
    not torch._dynamo.is_dynamo_supported() or not (shutil.which("g++") or shutil.which("c++")),
    reason="torch.compile needs dynamo support and a C++ compiler here")


def _eager_compiled_and_100_sources(toy_model, seed):
    """The toy model for inference, eager (counting its steps in ``steps``) and compiled, and
    100 encoded source sentences."""
    model = Checkpoint.open(toy_model).model()
    eager = for_inference(model)
    step = eager.decode_step

    def counted(tgt, cache):
        eager.steps += 1
        return step(tgt, cache)
    eager.steps, eager.decode_step = 0, counted
    compiled = CompiledSteps(for_inference(model), warn=pytest.fail)
    translator = Translator(eager, Checkpoint.open(toy_model).tokenizer)
    return eager, compiled, [translator.codec.encode(s).ids for s, _ in toy_pairs(100, seed=seed)]


def _batch(sources, pad):
    """Source sentences as one padded (N, S) batch."""
    src = torch.full((len(sources), max(map(len, sources))), pad)
    for row, ids in zip(src, sources):
        row[:len(ids)] = torch.tensor(ids)
    return src


def test_compiled_beams_equal_eager_beams_on_100_sentences(toy_model):
    eager, compiled, sources = _eager_compiled_and_100_sources(toy_model, seed=3)
    for ids in sources:  # one sentence at a time: its first step one row, then its 4 beams
        src = torch.tensor([ids])
        want = beam_search(eager, src, beam=4, nbest=4)[0]
        got = beam_search(compiled, src, beam=4, nbest=4)[0]
        assert [h.tokens for h in got] == [h.tokens for h in want]
        assert [h.score for h in got] == pytest.approx([h.score for h in want], abs=1e-5)
    assert compiled.compiled_steps == eager.steps  # every step compiled, of both kinds


def test_compiled_steps_of_many_rows_equal_eager_steps_within_1e_5(toy_model):
    eager, compiled, sources = _eager_compiled_and_100_sources(toy_model, seed=9)
    src = _batch(sources[:3], eager.cfg.pad_id)
    generator = torch.Generator().manual_seed(0)
    with torch.inference_mode():
        memory, src_mask, _ = eager.encode(src)
        caches = [m.init_cache(memory, src_mask, 12) for m in (eager, compiled)]
        tokens = torch.full((3, 1), eager.cfg.bos_id)
        for step in range(10):
            want = eager.decode_step(tokens, caches[0]).log_softmax(-1)
            got = compiled.decode_step(tokens, caches[1])
            assert got.shape == want.shape
            assert (got - want).abs().max() <= 1e-5
            # beams that continue other beams of their sentence (the first step grows the
            # rows to 4 a sentence), then a sentence that leaves
            rows = tokens.size(0)
            if step == 0:
                keep, group = torch.arange(3).repeat_interleave(4), 4
            elif step == 6:
                keep, group = torch.arange(4, rows), 4
            else:
                base = torch.arange(rows) // 4 * 4
                keep, group = base + torch.randint(0, 4, (rows,), generator=generator), None
            for cache in caches:
                cache.reorder(keep, group=group)
            tokens = want[keep, -1].argmax(-1, keepdim=True)
    assert compiled.compiled_steps == 10 == eager.steps


def test_compiled_beams_of_a_batch_equal_eager_and_each_sentence_alone(toy_model):
    eager, compiled, sources = _eager_compiled_and_100_sources(toy_model, seed=8)
    sources = sources[:24]  # of different lengths: sentences leave the batch at different steps
    want = beam_search(eager, _batch(sources, eager.cfg.pad_id), beam=4, nbest=2)
    got = beam_search(compiled, _batch(sources, eager.cfg.pad_id), beam=4, nbest=2)
    assert [[h.tokens for h in hyps] for hyps in got] == [[h.tokens for h in hyps]
                                                         for hyps in want]
    for hyps_got, hyps_want in zip(got, want):
        assert [h.score for h in hyps_got] == pytest.approx([h.score for h in hyps_want],
                                                            abs=1e-5)
    assert compiled.compiled_steps == eager.steps
    for i in range(0, 24, 4):  # batch invariance: alone, the same hypotheses and scores
        alone = beam_search(compiled, torch.tensor([sources[i]]), beam=4, nbest=2)[0]
        assert [h.tokens for h in alone] == [h.tokens for h in got[i]]
        assert [h.score for h in alone] == pytest.approx([h.score for h in got[i]], abs=1e-5)
    assert compiled.failed is None


def test_compiled_greedy_sentences_equal_eager_greedy_on_100_sentences(toy_model):
    eager, compiled, sources = _eager_compiled_and_100_sources(toy_model, seed=5)
    limits = [{}, {"min_len": 6}, {"max_len_a": 0.0, "max_len_b": 3},  # EOS barred, forced
              {"min_len": 5, "max_len_a": 0.0, "max_len_b": 4}]  # forced although barred
    steps = 0
    for i, ids in enumerate(sources):  # the whole search of each sentence in compiled code
        src, options = torch.tensor([ids]), limits[i % len(limits)]
        want = greedy_search(eager, src, **options)[0]
        got = greedy_search(compiled, src, **options)[0]
        assert got.tokens == want.tokens
        assert got.score == pytest.approx(want.score, abs=1e-5)
        steps += len(want.tokens) + 1  # and EOS
    assert compiled.compiled_steps == steps


def test_a_sentence_decodes_the_same_compiled_alone_and_eager_in_a_batch(toy_model):
    alone = Translator.load(toy_model, compile=True)
    batched = Translator.load(toy_model)
    sentences = [s for s, _ in toy_pairs(12, seed=4)]
    for options in (DecodeOptions(beam=1), DecodeOptions(sample=True, seed=7, top_k=5)):
        together = batched.translate(sentences, options)  # one batch: eager steps
        one_by_one = replace(options, batch_tokens=1)  # a batch per sentence: compiled steps
        assert alone.translate(sentences, one_by_one) == together
    assert alone.model.compiled_steps > 0
    assert alone.model.failed is None


def test_a_batch_left_with_one_row_goes_on_compiled_with_that_row(toy_model):
    eager, compiled, sources = _eager_compiled_and_100_sources(toy_model, seed=6)
    short, long = min(sources, key=len), max(sources, key=len)
    pad = eager.cfg.pad_id
    src = torch.full((2, len(long)), pad)
    src[0, :len(short)], src[1] = torch.tensor(short), torch.tensor(long)
    options = {"min_len": len(long), "max_len_a": 1.0, "max_len_b": 0}  # each its own length
    want = greedy_search(eager, src, **options)
    got = greedy_search(compiled, src, **options)  # the first row leaves; the second goes on
    assert [h.tokens for h in got] == [h.tokens for h in want]
    assert [h.score for h in got] == pytest.approx([h.score for h in want], abs=1e-5)
    assert compiled.compiled_steps == eager.steps  # two rows, then one: both kinds compiled


def _packages_in(directory, monkeypatch):
    """Keep compiled steps in ``directory`` (Inductor's own caches stay shared)."""
    where = compiled_module._package_path
    monkeypatch.setattr(compiled_module, "_package_path",
                        lambda *args: directory / where(*args).name)


def test_by_default_decoding_builds_its_steps_in_the_background_and_decodes_meanwhile(
        monkeypatch):
    """Without a flag, a model shape whose steps are not on disk decodes eagerly while a
    separate process builds them; once they are there, the same model decodes compiled,
    with the eager steps' results."""
    monkeypatch.delenv("AIAYN_COMPILE")
    # with the final norm, and swish (OPUS-MT's activation); the next test loads the step
    # this one builds
    cfg = ModelConfig.preset("tiny", vocab_size=50, norm="pre", activation="swish")
    model = for_inference(Transformer(cfg))
    threads = torch.get_num_threads()
    path, encoder = (compiled_module._package_path(model, threads, kind)
                     for kind in ("step", "encode"))
    for kept in (p.with_suffix(s) for p in (path, encoder) for s in (".pt2", ".log")):
        kept.unlink(missing_ok=True)  # built by an earlier run: the steps are not on disk
    assert compiled_module.auto_compile("cpu") == (True, "")
    steps = CompiledSteps(model, background=True, warn=pytest.fail)
    steps.RECHECK = 0.0
    src = random_tokens(1, 8, vocab=50)
    eager = greedy_search(model, src)[0]
    meanwhile = greedy_search(steps, src)[0]
    assert meanwhile.tokens == eager.tokens and steps.compiled_steps == 0
    for _ in range(600):  # the builder: a fresh process
        if path.exists() and not path.with_suffix(".building").exists():
            break
        time.sleep(0.5)
    assert path.exists(), path.with_suffix(".log").read_text()
    assert "built" in path.with_suffix(".log").read_text()
    assert not encoder.exists()  # the encoder waits for a step kind
    compiled = greedy_search(steps, src)[0]
    assert compiled.tokens == eager.tokens and steps.compiled_steps > 0
    assert compiled.score == pytest.approx(eager.score, abs=1e-5)
    done = steps.compiled_steps
    with torch.inference_mode():  # step by step, the log-probabilities within 1e-5
        memory, src_mask, _ = model.encode(src)
        eager_cache = model.init_cache(memory, src_mask, 20)
        compiled_cache = steps.init_cache(memory, src_mask, 20)
        tokens = torch.tensor([[cfg.bos_id]])
        for _ in range(12):
            want = model.decode_step(tokens, eager_cache).log_softmax(-1)
            got = steps.decode_step(tokens, compiled_cache)
            assert got.shape == want.shape == (1, 1, 50)
            assert (got - want).abs().max() <= 1e-5
            assert compiled_cache.length == eager_cache.length
            tokens = want[:, -1].argmax(-1, keepdim=True)
    assert steps.compiled_steps == done + 12


def test_one_compilation_serves_every_model_of_its_shape_each_with_its_own_weights(
        monkeypatch):
    # the shape of the test before, whose step is on disk now
    cfg = ModelConfig.preset("tiny", vocab_size=50, norm="pre", activation="swish")
    torch.manual_seed(1)
    first = for_inference(Transformer(cfg))
    torch.manual_seed(2)
    second = for_inference(Transformer(cfg))
    src = random_tokens(1, 8, vocab=50)
    step = CompiledSteps(first, warn=pytest.fail)
    with torch.inference_mode():  # compiled here, or loaded if an earlier test compiled it
        memory, src_mask, _ = first.encode(src)
        step.decode_step(torch.tensor([[cfg.bos_id]]), step.init_cache(memory, src_mask, 4))
    assert step.compiled_steps == 1
    monkeypatch.setattr(compiled_module, "_compile_package",
                        lambda *args: pytest.fail("compiled again"))
    again = CompiledSteps(second, warn=pytest.fail)
    with torch.inference_mode():
        memory, src_mask, _ = second.encode(src)
        eager_cache = second.init_cache(memory, src_mask, 10)
        compiled_cache = again.init_cache(memory, src_mask, 10)
        tokens = torch.tensor([[cfg.bos_id]])
        for _ in range(6):  # the second model's weights, through the library on disk
            want = second.decode_step(tokens, eager_cache).log_softmax(-1)
            got = again.decode_step(tokens, compiled_cache)
            assert (got - want).abs().max() <= 1e-5
            tokens = want[:, -1].argmax(-1, keepdim=True)
    assert again.compiled_steps == 6


def test_without_a_compiler_decoding_warns_once_and_runs_eagerly(tmp_path, monkeypatch):
    _packages_in(tmp_path, monkeypatch)  # nothing compiled before
    model = for_inference(Transformer(ModelConfig.preset("tiny", vocab_size=40)))
    warnings = []
    compiled = CompiledSteps(model, warn=warnings.append)
    src = random_tokens(3, 7)
    with inductor.patch({"cpp.cxx": ("/nonexistent/c++",), "fx_graph_cache": False}):
        got = [greedy_search(compiled, src[i:i + 1])[0].tokens for i in range(3)]
    assert got == [h.tokens for h in greedy_search(model, src)]
    assert len(warnings) == 1 and "compiled decoding step is unavailable" in warnings[0]
    assert "C++ compiler" in warnings[0]
    assert compiled.compiled_steps == 0


def test_steps_of_many_rows_run_eagerly_without_onednn():
    model = for_inference(Transformer(ModelConfig.preset("tiny", vocab_size=40)))
    compiled = CompiledSteps(model, warn=pytest.fail)
    src = random_tokens(4, 6)
    with torch.backends.mkldnn.flags(enabled=False):  # the compiled step's products: oneDNN's
        assert [h.tokens for h in greedy_search(compiled, src)] == [
            h.tokens for h in greedy_search(model, src)]
    assert compiled.compiled_steps == 0  # four rows: eager


def test_compiled_int8_encoder_and_steps_equal_eager_ones_with_swish():
    # swish, OPUS-MT's activation, where the steps of many rows had applied ReLU; the
    # float32 steps share that code (encoder_rows, rows_step) with another product
    torch.manual_seed(0)
    cfg = ModelConfig.preset("tiny", vocab_size=50, activation="swish", norm="pre")
    model = Transformer(cfg)
    for p in model.parameters():  # weights large enough for the activation to matter
        p.data.normal_(0, 0.3)
    eager = for_inference(model, int8=True)
    compiled = CompiledSteps(for_inference(model, int8=True), warn=pytest.fail)
    src = random_tokens(3, 7, vocab=50)
    src[1, 5:] = cfg.pad_id
    # in int8 a float32 rounding difference before a row is quantized can move one value to
    # the next int8 level: scores agree to that, not to float32 rounding
    tol = 1e-2
    with torch.inference_mode():
        memory = eager.encode(src)[0]
        torch.testing.assert_close(compiled.encode(src)[0], memory, rtol=0, atol=1e-5)
        for i in range(3):  # one row: the compiled step of one row
            want, got = greedy_search(eager, src[i:i + 1])[0], greedy_search(compiled,
                                                                              src[i:i + 1])[0]
            assert got.tokens == want.tokens and got.score == pytest.approx(want.score,
                                                                            abs=tol)
        want, got = beam_search(eager, src, beam=3), beam_search(compiled, src, beam=3)
    assert [h[0].tokens for h in got] == [h[0].tokens for h in want]
    assert [h[0].score for h in got] == pytest.approx([h[0].score for h in want], abs=tol)
    assert compiled.compiled_steps > 0


def test_translate_compile_flag_gives_the_same_output(toy_model, tmp_path, capsys):
    from aiayn.cli import main
    (tmp_path / "in.txt").write_text("".join(s + "\n" for s, _ in toy_pairs(5, seed=6)))
    outputs = []
    for flags in ([], ["--compile"]):
        assert main(["translate", "--checkpoint", str(toy_model), "-i", str(tmp_path / "in.txt"),
                     "--beam", "1", "--batch-tokens", "1", *flags]) == 0
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1] and len(outputs[0].splitlines()) == 5


def test_without_torch_compile_the_model_warns_once_and_decodes_eagerly(monkeypatch, tmp_path):
    monkeypatch.setattr(torch._dynamo, "is_dynamo_supported", lambda: False)  # no export
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path))  # nothing compiled there
    model = for_inference(Transformer(ModelConfig.preset("tiny", vocab_size=40)))
    warnings = []
    compiled = CompiledSteps(model, warn=warnings.append)
    src = random_tokens(1, 6)
    assert greedy_search(compiled, src)[0].tokens == greedy_search(model, src)[0].tokens
    assert compiled.compiled_steps == 0 and len(warnings) == 1
    assert "unavailable (RuntimeError: Dynamo does not support Python" in warnings[0]


def test_a_weight_changed_in_place_reaches_the_compiled_step_of_many_rows(toy_model):
    eager, compiled, sources = _eager_compiled_and_100_sources(toy_model, seed=10)
    src = _batch(sources[:4], eager.cfg.pad_id)
    beam_search(compiled, src, beam=4)  # compiled and bound with the weights as they were
    with torch.no_grad():  # the compiled model shares the eager one's parameters
        eager.decoder.layers[0].ffn.linear1.weight.mul_(1.5)
    want = beam_search(eager, src, beam=4, nbest=2)
    got = beam_search(compiled, src, beam=4, nbest=2)
    for hyps_got, hyps_want in zip(got, want):
        assert [h.tokens for h in hyps_got] == [h.tokens for h in hyps_want]
        assert [h.score for h in hyps_got] == pytest.approx([h.score for h in hyps_want],
                                                            abs=1e-5)
    assert compiled.failed is None


def test_the_compiled_step_is_named_by_the_model_code_it_was_compiled_from(monkeypatch):
    """A kept compilation is found again only while the model's code is the same: a change to
    any model file names another one."""
    from pathlib import Path
    model = for_inference(Transformer(ModelConfig.preset("tiny", vocab_size=50)))
    before = compiled_module._package_path(model, 2)
    read, attention = Path.read_bytes, Path(compiled_module.__file__).parents[1] / "model"
    monkeypatch.setattr(Path, "read_bytes", lambda self: read(self) + (
        b"# changed" if self == attention / "attention.py" else b""))
    assert compiled_module._package_path(model, 2) != before


def test_without_a_compiler_the_default_decodes_eagerly_and_says_so_once(
        tiny_checkpoint, monkeypatch, capsys):
    monkeypatch.delenv("AIAYN_COMPILE")
    monkeypatch.setattr(compiled_module, "cxx_compiler", lambda: None)
    first = Translator.load(tiny_checkpoint)
    Translator.load(tiny_checkpoint)
    assert not isinstance(first.model, CompiledSteps)
    said = capsys.readouterr().err
    assert said.count("no C++ compiler found") == 1 and "--no-compile" in said
    monkeypatch.setenv("AIAYN_COMPILE", "0")
    assert compiled_module.auto_compile("cpu") == (False, "")


def test_a_translator_with_compiled_steps_scores_aligns_and_draws_attention_as_without(
        tiny_checkpoint):
    compiled, eager = Translator.load(tiny_checkpoint, compile=True), Translator.load(
        tiny_checkpoint, compile=False)
    assert isinstance(compiled.model, CompiledSteps)
    source, target = "alpha beta gamma", "delta epsilon"
    want, got = eager.attention(source, target), compiled.attention(source, target)
    assert got.tgt_tokens == want.tgt_tokens
    for a, b in zip(got.cross, want.cross):
        torch.testing.assert_close(a, b)
    assert compiled.align(source, target) == eager.align(source, target)
    assert compiled.score([source], [target])[0].total == pytest.approx(
        eager.score([source], [target])[0].total, abs=1e-4)
