"""A module of your own for ``gpuplan simulate --module examples.my_model:build``: ``build`` returns the module and
an example input (here positional arguments and keyword arguments). gpuplan calls it under ``FakeTensorMode``, so
nothing here allocates real memory, and runs one step of the module on that input."""

import torch
from torch import nn


class TinyViT(nn.Module):
    """Patches of a 224 x 224 image through six pre-norm transformer layers and a classifier."""

    def __init__(self, width: int = 384, layers: int = 6, heads: int = 6, classes: int = 1000):
        super().__init__()
        self.patches = nn.Conv2d(3, width, kernel_size=16, stride=16)
        layer = nn.TransformerEncoderLayer(width, heads, 4 * width, batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers)
        self.head = nn.Linear(width, classes)

    def forward(self, images):
        x = self.patches(images).flatten(2).transpose(1, 2)
        return self.head(self.encoder(x).mean(dim=1))


def build():
    return TinyViT(), ((torch.randn(32, 3, 224, 224),), {})
