import torch

from aiayn.model import causal_mask, padding_mask


def test_masks_follow_true_means_attend():
    tokens = torch.tensor([[5, 6, 0]])
    assert padding_mask(tokens, 0).tolist() == [[[[True, True, False]]]]
    assert causal_mask(3)[0, 0].tolist() == [[True, False, False], [True, True, False],
                                             [True, True, True]]
    assert causal_mask(2, offset=2)[0, 0].tolist() == [[True, True, True, False],
                                                        [True, True, True, True]]
