import pytest

from aiayn import ConfigError, ModelConfig
from aiayn.config import PRESETS


@pytest.mark.parametrize("change,message", [
    (dict(d_model=500), r"d_model \(500\) must be divisible by n_heads \(8\)"),
    (dict(norm="middle"), r"norm \('middle'\) must be one of post, pre, sandwich"),
    (dict(dropout=1.0), r"dropout \(1.0\) must be in \[0, 1\)"),
    (dict(dropout=-0.1), r"dropout \(-0.1\)"),
    (dict(attn_dropout=2), r"attn_dropout \(2\)"),
    (dict(positions="rotary"), r"positions \('rotary'\) must be one of sinusoidal, learned"),
    (dict(activation="tanh"), r"activation \('tanh'\)"),
    (dict(n_heads=0), r"n_heads \(0\) must be a positive integer"),
    (dict(vocab_size=0), r"vocab_size \(0\)"),
    (dict(tgt_vocab_size=9000), r"share_embeddings \(True\) needs one shared vocabulary"),
    (dict(eos_id=0), r"special token ids must differ"),
    (dict(pad_id=9000), r"pad_id \(9000\) must be a token id"),
    (dict(pos_base=None), r"pos_base \(None\) must be a finite number greater than 1"),
    (dict(pos_base=float("inf")), r"pos_base \(inf\)"),
    (dict(layer_norm_eps=float("nan")), r"layer_norm_eps \(nan\) must be a finite positive"),
])
def test_bad_configuration_names_the_field_and_value(change, message):
    with pytest.raises(ValueError, match=message):
        ModelConfig(**change)


def test_unknown_key_suggests_the_nearest_valid_one():
    with pytest.raises(ConfigError,
                       match=r"unknown model config key 'd_modle'; did you mean 'd_model'"):
        ModelConfig.from_dict({"d_modle": 512})


def test_unknown_preset_lists_the_presets():
    with pytest.raises(ConfigError,
                       match="unknown preset 'huge': choose one of tiny, small, base, big"):
        ModelConfig.preset("huge")


def test_presets_follow_table_3():
    base, big = ModelConfig.preset("base"), ModelConfig.preset("big")
    assert (base.n_encoder_layers, base.d_model, base.n_heads, base.d_ff, base.dropout) == (
        6, 512, 8, 2048, 0.1)
    assert (big.d_model, big.n_heads, big.d_ff, big.dropout) == (1024, 16, 4096, 0.3)
    assert base.head_dim == 64 and base.norm == "post" and base.positions == "sinusoidal"
    small = ModelConfig.preset("small")
    assert (small.d_model, small.n_encoder_layers, small.n_heads, small.d_ff) == (256, 3, 4, 1024)
    assert set(PRESETS) == {"tiny", "small", "base", "big"}


def test_config_round_trips_through_json(tmp_path):
    cfg = ModelConfig.preset("small", vocab_size=123, norm="pre")
    cfg.save(tmp_path / "config.json")
    assert ModelConfig.load(tmp_path / "config.json") == cfg


def test_config_is_frozen():
    with pytest.raises(AttributeError):
        ModelConfig().d_model = 3  # type: ignore[misc]
