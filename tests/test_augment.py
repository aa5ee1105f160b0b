"""Batched crop-and-flip against a per-image loop, and the GPU settings of the training loop (data on the device,
bfloat16 autocast, channels_last), which run on CPU too."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from dml_tutorial import augment, data, experiment, losses, models, sampling, train


def _which_crop(image, padded, padding):
    """(dy, dx, flipped) of every crop of ``padded`` equal to ``image``, by brute force."""
    h, w = image.shape[-2:]
    found = []
    for dy in range(2 * padding + 1):
        for dx in range(2 * padding + 1):
            crop = padded[:, dy:dy + h, dx:dx + w]
            found += [(dy, dx, flip) for flip, view in ((False, crop), (True, crop.flip(-1))) if torch.equal(image, view)]
    return found


def test_each_image_is_one_crop_of_its_padded_self_and_every_offset_occurs():
    g = torch.Generator().manual_seed(0)
    x = torch.rand(300, 3, 8, 6, generator=g)
    out = augment.random_crop_flip(x, padding=2, generator=g)
    assert out.shape == x.shape and out.dtype == x.dtype
    found = []
    for image, source in zip(out, F.pad(x, (2, 2, 2, 2))):
        matches = _which_crop(image, source, 2)
        assert len(matches) == 1, matches
        found += matches
    assert {(dy, dx) for dy, dx, _ in found} == {(dy, dx) for dy in range(5) for dx in range(5)}
    flipped = np.mean([f for _, _, f in found])
    assert 0.4 < flipped < 0.6


def test_no_padding_and_no_flip_is_the_identity_and_uint8_stays_uint8():
    x = torch.randint(0, 256, (5, 1, 4, 4), dtype=torch.uint8)
    assert torch.equal(augment.random_crop_flip(x, padding=0, flip=False), x)
    assert augment.random_crop_flip(x).dtype == torch.uint8


def test_seeded_generator_repeats():
    x = torch.rand(16, 3, 32, 32)
    a = augment.random_crop_flip(x, generator=torch.Generator().manual_seed(5))
    b = augment.random_crop_flip(x, generator=torch.Generator().manual_seed(5))
    assert torch.equal(a, b) and not torch.equal(a, x)


@pytest.mark.parametrize("x, padding", [(torch.rand(3, 8, 8), 4), (torch.rand(2, 3, 8, 8), -1)])
def test_bad_input_is_a_clear_error(x, padding):
    with pytest.raises(ValueError, match="expected a batch of images|padding must be non-negative"):
        augment.random_crop_flip(x, padding=padding)


def test_dataset_on_a_device_gives_the_same_batches():
    ds = data.ArrayDataset(torch.randint(0, 256, (10, 1, 4, 4), dtype=torch.uint8), np.arange(10) % 2)
    moved = ds.to("cpu")
    assert torch.equal(moved.batch([3, 1]), ds.batch([3, 1])) and moved.batch([0]).dtype == torch.float32
    assert np.array_equal(moved.labels, ds.labels)


CFG = {"model": "convnet", "dim": 8, "epochs": 2, "lr": 1e-3, "threads": 1}


@pytest.fixture(scope="module")
def images():
    return data.load_dataset("digits", split="samples", seed=0)


def _retrieve(images, **gpu):
    train.seed_everything(0)
    return experiment.train_and_retrieve(images, losses.triplet_loss, {**CFG, **gpu}, p=5, k=4, seed=0)


def test_data_on_device_and_augmentation_go_through_the_experiment(images):
    plain = _retrieve(images)
    assert torch.equal(plain.test_embeddings, _retrieve(images, data_on_device=True).test_embeddings)
    assert not torch.equal(plain.test_embeddings, _retrieve(images, augment="crop_flip").test_embeddings)
    with pytest.raises(ValueError, match="unknown augment 'mixup'"):
        _retrieve(images, augment="mixup")


def test_channels_last_changes_the_layout_not_the_update(images):
    """One step from the same weights in each layout gives the same weights up to rounding. (Longer runs drift
    apart: semi-hard mining turns 1e-6 differences into other triplets, and the trajectories separate. And with
    Adam, whose first step is lr x sign(gradient), the conv biases before batch norm, whose true gradient is 0,
    move by +-lr on rounding noise.)"""
    def one_step(channels_last):
        torch.manual_seed(0)
        model = models.make_model("convnet", (1, 8, 8), 8)
        sgd = torch.optim.SGD(model.parameters(), lr=0.1)
        train.fit(model, losses.triplet_loss, images.train, epochs=1, channels_last=channels_last, optimizer=sgd,
                  progress=False, sampler=sampling.PKSampler(images.train.labels, 5, 4, batches_per_epoch=1))
        return model

    plain, nhwc = one_step(False), one_step(True)
    conv = [m for m in nhwc.modules() if isinstance(m, torch.nn.Conv2d)][1].weight  # 32 -> 64 channels
    assert conv.is_contiguous(memory_format=torch.channels_last) and not conv.is_contiguous()
    for (name, a), b in zip(plain.state_dict().items(), nhwc.state_dict().values()):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-4, msg=name)


def test_amp_runs_the_trunk_in_bfloat16_and_the_embedding_in_float32(images):
    model = models.make_model("convnet", (1, 8, 8), 8)
    x = images.train.batch(np.arange(6))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert model.features(x).dtype == torch.bfloat16
        assert model(x).dtype == torch.float32
    history = train.fit(model, losses.triplet_loss, images.train, epochs=2, amp=True, progress=False,
                        sampler=sampling.PKSampler(images.train.labels, 5, 4, batches_per_epoch=5))
    assert all(np.isfinite(history["loss"])) and all(p.dtype == torch.float32 for p in model.parameters())
    run = _retrieve(images, amp=True)
    assert run.test_embeddings.dtype == torch.float32 and 0 <= run.metrics["R@1"] <= 1


def test_amp_uses_float16_with_loss_scaling_where_bfloat16_is_not_native(images, monkeypatch, tmp_path):
    assert train.amp_precision(torch.device("cpu")) == torch.bfloat16
    monkeypatch.setattr(train, "amp_precision", lambda device: torch.float16)  # as on a T4
    model = models.make_model("convnet", (1, 8, 8), 8)
    history = train.fit(model, losses.triplet_loss, images.train, epochs=2, amp=True, progress=False,
                        checkpoint=tmp_path / "fp16.pt",
                        sampler=sampling.PKSampler(images.train.labels, 5, 4, batches_per_epoch=5))
    assert all(np.isfinite(history["loss"]))
    scaler = torch.load(tmp_path / "fp16.pt", weights_only=False)["scaler"]
    assert scaler["scale"] > 0  # the GradScaler ran, and its state is checkpointed for resuming


def test_a_smaller_crop_without_padding_is_a_window_of_the_image_and_every_offset_occurs():
    """The fine-grained datasets' random 224 crop of 256-px images decoded once, on 6-px images cropped to 4:
    each output equals the slice of its input at some offset (a loop over the 3 x 3 offsets finds it)."""
    x = torch.arange(200 * 6 * 6, dtype=torch.float32).view(200, 1, 6, 6)
    out = augment.random_crop_flip(x, padding=0, size=4, flip=False, generator=torch.Generator().manual_seed(0))
    assert out.shape == (200, 1, 4, 4)
    offsets = set()
    for img, crop in zip(x, out):
        hits = [(i, j) for i in range(3) for j in range(3) if torch.equal(img[:, i:i + 4, j:j + 4], crop)]
        assert len(hits) == 1
        offsets.add(hits[0])
    assert len(offsets) == 9
    with pytest.raises(ValueError, match="does not fit"):
        augment.random_crop_flip(x, padding=0, size=7)


def test_center_crop_and_normalize_match_torchvision():
    from torchvision.transforms import CenterCrop, Normalize

    x = torch.rand(3, 3, 9, 8)
    assert torch.equal(augment.center_crop(x, 5), CenterCrop(5)(x))
    mean, std = (0.4, 0.5, 0.6), (0.2, 0.3, 0.25)
    assert torch.allclose(augment.normalize(x, mean, std), Normalize(mean, std)(x))
    assert torch.allclose(augment.normalize(x), Normalize(augment.IMAGENET_MEAN, augment.IMAGENET_STD)(x))
    with pytest.raises(ValueError, match="centre-crop"):
        augment.center_crop(x, 10)
