"""helpers.models."""

import pytest
import torch

from helpers.models import small_cnn


def test_small_cnn_takes_uint8_images_and_normalises_them():
    net = small_cnn([0.5, 0.5, 0.5], [0.25, 0.25, 0.25]).eval()
    images = torch.randint(0, 256, (4, 3, 32, 32), dtype=torch.uint8)
    assert net(images).shape == (4, 2)
    assert torch.allclose(net(images), net(images.float() / 255), atol=1e-6)
    assert sum(p.numel() for p in net.parameters()) == 97_938
    assert small_cnn([0] * 3, [1] * 3, width=8, classes=10)(images).shape == (4, 10)


@pytest.mark.parametrize("kwargs", [{"mean": [0.5], "std": [1, 1, 1]}, {"width": 0}])
def test_small_cnn_rejects_bad_arguments(kwargs):
    args = {"mean": [0.5] * 3, "std": [0.2] * 3, **kwargs}
    with pytest.raises(ValueError):
        small_cnn(**args)
