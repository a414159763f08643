import pytest
import torch

from aiayn import LanguageModel, ModelConfig
from aiayn.decode.sampling import filter_logits, sample


def lm() -> LanguageModel:
    torch.manual_seed(0)
    return LanguageModel(ModelConfig.preset("tiny", vocab_size=30)).eval()


def test_sampling_is_reproducible_with_a_seed():
    model, prompt = lm(), torch.tensor([[5, 6, 7]])
    a = sample(model, prompt, max_new_tokens=20, seed=3, stop_at_eos=False)
    b = sample(model, prompt, max_new_tokens=20, seed=3, stop_at_eos=False)
    c = sample(model, prompt, max_new_tokens=20, seed=4, stop_at_eos=False)
    assert a == b and a != c and len(a[0]) == 20


def test_top_k_keeps_the_k_most_likely():
    logits = torch.tensor([[1.0, 5.0, 3.0, 4.0, 2.0]])
    kept = torch.isfinite(filter_logits(logits, top_k=2))
    assert kept.tolist() == [[False, True, False, True, False]]


def test_top_p_keeps_the_smallest_set_reaching_p():
    probs = torch.tensor([[0.5, 0.3, 0.15, 0.05]])
    kept = torch.isfinite(filter_logits(probs.log(), top_p=0.75))
    assert kept.tolist() == [[True, True, False, False]]
    kept = torch.isfinite(filter_logits(probs.log(), top_p=0.1))
    assert kept.tolist() == [[True, False, False, False]]  # the best token always stays


def test_samples_stay_within_top_k():
    model, prompt = lm(), torch.tensor([[5, 6]])
    with torch.no_grad():
        allowed = set(model(prompt)[0, -1].topk(3).indices.tolist())
    for seed in range(20):
        first = sample(model, prompt, max_new_tokens=1, top_k=3, seed=seed, stop_at_eos=False)
        assert first[0][0] in allowed


def test_temperature_zero_is_greedy():
    model, prompt = lm(), torch.tensor([[5, 6, 7]])
    out = sample(model, prompt, max_new_tokens=5, temperature=0, stop_at_eos=False)[0]
    tokens = prompt.tolist()[0]
    for token in out:
        with torch.no_grad():
            logits = model(torch.tensor([tokens]))[0, -1]
        logits[0] = float("-inf")
        assert token == int(logits.argmax())
        tokens.append(token)


def test_bad_sampling_settings_are_errors():
    with pytest.raises(ValueError, match=r"top_p \(1.5\)"):
        sample(lm(), torch.tensor([[5]]), top_p=1.5)
