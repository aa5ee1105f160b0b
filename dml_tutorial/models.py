"""Embedding networks: a trunk, optional dropout, a linear embedding layer, L2 normalisation.

- :class:`MLP` for vectors (sub-clusters), :class:`ConvNet` for the offline images and signals (2-D for 8x8
  digits and MNIST, 1-D for MNIST-1D; the EPS paper's Appendix C MNIST net when ``width=(32, 64)``),
- :class:`GlyphNet` for the glyph test bed's 32x32 characters (test bed II),
- :class:`VGG9` for 32x32 images (DCDL paper, section 4: VGG-9 backbone, dropout 0.1, 64-d embedding),
- :class:`BackboneEmbedder` for the fine-grained datasets: a torchvision ResNet-50/34 or GoogLeNet with its
  classifier replaced by the embedding layer.

``model.embedding`` is the embedding layer and ``model.trunk`` the rest (ECAML applies its regulariser to the
former only). ``model(x)`` returns unit-norm embeddings; ``model(x, normalize=False)`` the raw ones.
"""

import torch
import torch.nn.functional as F
from torch import nn


class Embedder(nn.Module):
    def __init__(self, trunk: nn.Module, features: int, dim: int, dropout: float = 0.0, normalize: bool = True):
        super().__init__()
        self.trunk, self.dropout, self.normalize = trunk, nn.Dropout(dropout), normalize
        self.embedding = nn.Linear(features, dim)

    def features(self, x):
        return self.trunk(x)

    def forward(self, x, normalize: bool | None = None):
        h = self.features(x)
        if h.dtype in (torch.float16, torch.bfloat16):  # mixed precision (fit(amp=True)): only the trunk runs in
            h = h.float()                               # half precision, the embedding layer in float32
        # the embedding layer's input of this call, dropout applied: a term that must reach this layer only reads it
        # (regularizers.embedding_layer_only) instead of running the trunk again
        self.hidden = self.dropout(h)
        with torch.autocast(h.device.type, enabled=False):
            z = self.embedding(self.hidden)
        return F.normalize(z, dim=1) if (self.normalize if normalize is None else normalize) else z


class MLP(Embedder):
    """Two hidden layers of ``hidden`` units with ReLU, for inputs of ``in_dim`` features (flattened)."""

    def __init__(self, in_dim: int, dim: int = 2, hidden: int = 64, dropout: float = 0.0, normalize=True):
        trunk = nn.Sequential(nn.Flatten(), nn.Linear(in_dim, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU())
        super().__init__(trunk, hidden, dim, dropout, normalize)


class ConvNet(Embedder):
    """Small conv net: per entry of ``width`` a 3x3 conv + ReLU + batch norm, then 2x max-pooling, global average
    pooling, a hidden dense layer and the embedding. ``in_shape`` is ``(C, H, W)`` (2-D convs) or ``(C, L)``
    (1-D convs, MNIST-1D)."""

    def __init__(self, in_shape, dim: int = 64, width=(32, 64), hidden: int = 128, dropout=0.0, normalize=True):
        conv, bn, pool = ((nn.Conv2d, nn.BatchNorm2d, nn.MaxPool2d) if len(in_shape) == 3
                          else (nn.Conv1d, nn.BatchNorm1d, nn.MaxPool1d))
        layers, c = [], in_shape[0]
        for w in width:
            layers += [conv(c, w, 3, padding=1), nn.ReLU(), bn(w)]
            c = w
        pool_out = nn.AdaptiveAvgPool2d(2) if len(in_shape) == 3 else nn.AdaptiveAvgPool1d(4)
        layers += [pool(2), pool_out, nn.Flatten(), nn.Linear(c * 4, hidden), nn.ReLU()]
        super().__init__(nn.Sequential(*layers), hidden, dim, dropout, normalize)


class GlyphNet(Embedder):
    """The glyph test bed's small ConvNet (about 102k parameters at 32 px and 64-d): ``PixelUnshuffle(2)`` folds each
    2x2 block of pixels into channels (1 x 32 x 32 -> 4 x 16 x 16), then per entry of ``width`` a 3x3 conv, batch
    norm and ReLU, with 2x max-pooling after all but the last, global average pooling and the embedding layer."""

    def __init__(self, in_shape, dim: int = 64, width=(32, 64, 128), dropout=0.0, normalize=True):
        if len(in_shape) != 3 or in_shape[1] % 2 or in_shape[2] % 2:
            raise ValueError(f"GlyphNet takes images (C, H, W) of even height and width, got {tuple(in_shape)}")
        layers, c = [nn.PixelUnshuffle(2)], in_shape[0] * 4
        for i, w in enumerate(width):
            layers += [nn.Conv2d(c, w, 3, padding=1, bias=False), nn.BatchNorm2d(w), nn.ReLU(inplace=True)]
            layers += [nn.MaxPool2d(2)] if i < len(width) - 1 else []
            c = w
        super().__init__(nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten()), c, dim, dropout, normalize)


class VGG9(Embedder):
    """VGG-style net for 32x32 images: conv channels 64-64-M-128-128-M-256-256-256-M (3x3, batch norm, ReLU), a
    512-unit dense layer and the embedding layer: nine weight layers. The DCDL paper names "VGG-9" without its
    layout; this is the usual CIFAR variant. Defaults: 64-d embedding, dropout 0.1 before it (DCDL section 4)."""

    def __init__(self, dim: int = 64, dropout: float = 0.1, in_channels: int = 3, normalize=True):
        layers, c = [], in_channels
        for v in (64, 64, "M", 128, 128, "M", 256, 256, 256, "M"):
            if v == "M":
                layers.append(nn.MaxPool2d(2))
            else:
                layers += [nn.Conv2d(c, v, 3, padding=1), nn.BatchNorm2d(v), nn.ReLU(inplace=True)]
                c = v
        layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(c, 512), nn.ReLU(inplace=True)]
        super().__init__(nn.Sequential(*layers), 512, dim, dropout, normalize)


BACKBONES = {"resnet50": ("resnet50", "ResNet50_Weights"), "resnet34": ("resnet34", "ResNet34_Weights"),
             "googlenet": ("googlenet", "GoogLeNet_Weights")}


class BackboneEmbedder(Embedder):
    """A torchvision backbone (global average pooled features) + a linear embedding layer.

    ``pretrained=True`` loads the ImageNet weights through torchvision (downloaded once to the torch hub cache);
    without internet access this fails with a message saying so, and ``pretrained=False`` trains from scratch."""

    def __init__(self, arch: str = "resnet50", dim: int = 128, pretrained: bool = True, dropout=0.0, normalize=True):
        import torchvision

        if arch not in BACKBONES:
            raise ValueError(f"unknown backbone {arch!r}; choose one of {sorted(BACKBONES)}")
        fn, weights_enum = BACKBONES[arch]
        weights = getattr(torchvision.models, weights_enum).DEFAULT if pretrained else None
        kwargs = {"aux_logits": False, "init_weights": True} if arch == "googlenet" and not pretrained else {}
        try:
            net = getattr(torchvision.models, fn)(weights=weights, **kwargs)
        except (OSError, RuntimeError) as err:  # URLError is an OSError
            raise RuntimeError(f"could not load ImageNet weights for {arch} ({err}); check the internet connection "
                               "or put the weight file in the torch hub cache, or pass pretrained=False") from err
        features = net.fc.in_features
        net.fc = nn.Identity()
        super().__init__(net, features, dim, dropout, normalize)


def count_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def from_settings(cfg: dict, in_shape, **changes) -> Embedder:
    """The model a profile's settings name: ``cfg["model"]`` for inputs of ``in_shape`` with ``cfg["dim"]``,
    ``dropout``, ``normalize`` (default True) and, where the profile sets it, the MLP's ``hidden`` width (the
    glyph test bed's 1,024-pixel inputs need more than the default 64); ``changes`` override any of them."""
    options = {"dropout": cfg.get("dropout", 0.0), "normalize": cfg.get("normalize", True)}
    if cfg.get("hidden") is not None:
        options["hidden"] = cfg["hidden"]
    options.update(changes)
    return make_model(cfg["model"], in_shape, cfg["dim"], **options)


def make_model(name: str, in_shape, dim: int, dropout: float = 0.0, **kwargs) -> Embedder:
    """Build a model by the name a profile uses: ``mlp``, ``convnet``, ``glyphnet``, ``vgg9``, or a backbone name."""
    import math

    if name == "mlp":
        return MLP(math.prod(in_shape), dim, dropout=dropout, **kwargs)
    if name == "convnet":
        return ConvNet(in_shape, dim, dropout=dropout, **kwargs)
    if name == "glyphnet":
        return GlyphNet(in_shape, dim, dropout=dropout, **kwargs)
    if name == "vgg9":
        return VGG9(dim, dropout, in_channels=in_shape[0], **kwargs)
    if name in BACKBONES:
        return BackboneEmbedder(name, dim, dropout=dropout, **kwargs)
    raise ValueError(f"unknown model {name!r}; choose mlp, convnet, glyphnet, vgg9 or one of {sorted(BACKBONES)}")
