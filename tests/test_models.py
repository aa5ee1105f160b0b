import pytest
import torch

from dml_tutorial import models


@pytest.mark.parametrize("model,x", [
    (models.MLP(10, dim=3), torch.randn(4, 10)),
    (models.ConvNet((1, 8, 8), dim=16), torch.randn(4, 1, 8, 8)),
    (models.ConvNet((1, 40), dim=16), torch.randn(4, 1, 40)),
    (models.ConvNet((1, 28, 28), dim=2, width=(32, 64), hidden=128), torch.randn(4, 1, 28, 28)),
    (models.VGG9(), torch.randn(2, 3, 32, 32)),
])
def test_embeddings_are_unit_norm_with_the_requested_dimension(model, x):
    model.eval()
    z = model(x)
    assert z.shape == (len(x), model.embedding.out_features)
    assert torch.allclose(z.norm(dim=1), torch.ones(len(x)), atol=1e-5)
    assert not torch.allclose(model(x, normalize=False).norm(dim=1), torch.ones(len(x)))


def test_vgg9_has_the_dcdl_defaults():
    m = models.VGG9()
    assert m.embedding.out_features == 64 and m.dropout.p == 0.1
    convs = [l for l in m.trunk if isinstance(l, torch.nn.Conv2d)]
    linears = [l for l in m.modules() if isinstance(l, torch.nn.Linear)]
    assert len(convs) + len(linears) == 9


def test_dropout_is_before_the_embedding_layer():
    m = models.MLP(5, dim=2, dropout=0.5)
    m.train()
    x = torch.randn(64, 5)
    assert not torch.equal(m(x), m(x))
    m.eval()
    assert torch.equal(m(x), m(x))


@pytest.mark.parametrize("arch", ["resnet50", "resnet34", "googlenet"])
def test_backbone_embedder_from_scratch(arch):
    m = models.BackboneEmbedder(arch, dim=32, pretrained=False).eval()
    assert m(torch.randn(1, 3, 64, 64)).shape == (1, 32)


def test_missing_pretrained_weights_give_a_clear_message(monkeypatch, tmp_path):
    import torchvision.models._api as tv_api

    monkeypatch.setenv("TORCH_HOME", str(tmp_path))  # an empty cache: the weights would have to be downloaded

    def offline(*args, **kwargs):
        raise OSError("network is unreachable")

    monkeypatch.setattr(tv_api, "load_state_dict_from_url", offline)  # what WeightsEnum.get_state_dict calls
    with pytest.raises(RuntimeError, match="pretrained=False"):
        models.BackboneEmbedder("resnet34", pretrained=True)


def test_make_model_names():
    assert isinstance(models.make_model("convnet", (1, 8, 8), 8), models.ConvNet)
    with pytest.raises(ValueError, match="unknown model"):
        models.make_model("transformer", (1, 8, 8), 8)


def test_glyphnet_is_the_test_beds_small_convnet():
    """PixelUnshuffle(2) to 4 x 16 x 16, conv3x3-BN-ReLU blocks of 32/64/128 (no conv bias: batch norm follows),
    max-pooling after the first two, global average pooling, linear to 64: its parameters counted layer by layer."""
    model = models.make_model("glyphnet", (1, 32, 32), 64)
    convs = 4 * 32 * 9 + 32 * 64 * 9 + 64 * 128 * 9
    norms = 2 * (32 + 64 + 128)
    assert sum(p.numel() for p in model.parameters()) == convs + norms + 128 * 64 + 64
    z = model(torch.rand(7, 1, 32, 32))
    assert z.shape == (7, 64) and torch.allclose(z.norm(dim=1), torch.ones(7))
    assert model.trunk[0].__class__.__name__ == "PixelUnshuffle"
    with pytest.raises(ValueError, match="even height"):
        models.make_model("glyphnet", (1, 31, 32), 64)
