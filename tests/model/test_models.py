
import pytest
import torch

from aiayn import EncoderModel, LanguageModel, ModelConfig, Transformer
from tests.conftest import VOCAB, assert_float32_close, random_tokens

OPTIONS = [dict(norm=n, positions=p, activation=a)
           for n in ("post", "pre", "sandwich") for p in ("sinusoidal", "learned")
           for a in ("relu", "gelu")]


def test_decoder_cannot_see_the_future(tiny_cfg):
    model = Transformer(tiny_cfg).eval()
    src, tgt = random_tokens(2, 7), random_tokens(2, 8)
    before = model(src, tgt)
    for t in range(1, 8):
        changed = tgt.clone()
        changed[:, t] = (changed[:, t] + 1 - 4) % (VOCAB - 4) + 4
        after = model(src, changed)
        assert torch.equal(after[:, :t], before[:, :t]), f"position {t} leaked backwards"
        assert not torch.equal(after[:, t], before[:, t])


def test_language_model_cannot_see_the_future(tiny_cfg):
    model = LanguageModel(tiny_cfg).eval()
    tokens = random_tokens(2, 8)
    before = model(tokens)
    changed = tokens.clone()
    changed[:, 5] = 7 if tokens[0, 5] != 7 else 8
    assert torch.equal(model(changed)[:, :5], before[:, :5])


@pytest.mark.parametrize("norm", ["post", "pre", "sandwich"])
def test_appending_padding_leaves_real_positions_unchanged(norm):
    cfg = ModelConfig.preset("tiny", vocab_size=VOCAB, norm=norm)
    model = Transformer(cfg).eval()
    src, tgt = random_tokens(2, 6, lengths=[6, 4]), random_tokens(2, 5, lengths=[5, 3])
    logits = model(src, tgt)
    padded = model(torch.cat([src, torch.zeros(2, 5, dtype=torch.long)], 1),
                   torch.cat([tgt, torch.zeros(2, 4, dtype=torch.long)], 1))
    real = tgt != 0
    assert_float32_close(padded[:, :5][real], logits[real])


def test_encoder_model_pooling_ignores_padding(tiny_cfg):
    model = EncoderModel(tiny_cfg, num_classes=3).eval()
    src = random_tokens(2, 6, lengths=[6, 4])
    out = model(src)
    longer = model(torch.cat([src, torch.zeros(2, 3, dtype=torch.long)], 1))
    assert out.hidden.shape == (2, 6, tiny_cfg.d_model) and out.logits.shape == (2, 3)
    assert_float32_close(longer.pooled, out.pooled)
    assert_float32_close(out.pooled[1], out.hidden[1, :4].mean(0))


@pytest.mark.parametrize("preset,paper", [("base", 65e6), ("big", 213e6)])
def test_parameter_counts_match_the_paper(preset, paper):
    with torch.device("meta"):
        model = Transformer(ModelConfig.preset(preset, vocab_size=37000))
    count = sum(p.numel() for p in model.parameters())
    assert abs(count - paper) / paper < 0.05, count


def test_three_way_weight_tying(tiny_cfg):
    model = Transformer(tiny_cfg)
    assert model.src_embed.token.weight is model.tgt_embed.token.weight
    assert model.output_proj.weight is model.tgt_embed.token.weight
    untied = Transformer(tiny_cfg.replace(share_embeddings=False, tie_output=False,
                                          tgt_vocab_size=50))
    assert untied.src_embed.token.weight is not untied.tgt_embed.token.weight
    assert untied.output_proj.weight.shape == (50, 32)


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: "-".join(o.values()))
def test_every_option_trains_and_gradients_reach_every_parameter(options):
    cfg = ModelConfig.preset("tiny", vocab_size=VOCAB, dropout=0.1, attn_dropout=0.1,
                             ffn_dropout=0.1, **options)
    src, tgt = random_tokens(2, 6, lengths=[6, 4]), random_tokens(2, 5)
    for model, loss in (
        (m := Transformer(cfg), lambda: m(src, tgt).logsumexp(-1).mean()),
        (lm := LanguageModel(cfg), lambda: lm(tgt).logsumexp(-1).mean()),
        (enc := EncoderModel(cfg, num_classes=2), lambda: enc(src).logits.square().mean()),
    ):
        loss().backward()
        for name, p in model.named_parameters():
            assert p.grad is not None and p.grad.abs().sum() > 0, name


@pytest.mark.parametrize("preset", ["tiny", "small", "base", "big"])
def test_every_preset_builds_and_runs(preset):
    cfg = ModelConfig.preset(preset, vocab_size=100)
    model = Transformer(cfg)
    logits = model(random_tokens(1, 4, 100), random_tokens(1, 3, 100))
    assert logits.shape == (1, 3, 100)
    logits.sum().backward()


def test_attention_weights_are_returned_on_request(tiny_cfg):
    model = Transformer(tiny_cfg).eval()
    src, tgt = random_tokens(2, 6, lengths=[6, 3]), random_tokens(2, 4)
    logits, weights = model(src, tgt, return_weights=True)
    assert_float32_close(logits, model(src, tgt))
    assert [w.shape for w in weights.encoder] == [(2, 4, 6, 6)] * 2
    assert [w.shape for w in weights.decoder] == [(2, 4, 4, 4)] * 2
    assert [w.shape for w in weights.cross] == [(2, 4, 4, 6)] * 2
    assert torch.all(weights.cross[0][1, :, :, 3:] == 0)
    assert torch.all(weights.decoder[1].triu(1) == 0)


