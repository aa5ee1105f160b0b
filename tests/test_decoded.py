"""Images decoded once (dml_tutorial.data.decoded): the same pixels as torchvision's Resize + CenterCrop of the
JPEG, a cache checked by its SHA-256, and clear errors."""

import numpy as np
import pytest
import torch
from PIL import Image

from dml_tutorial import augment, data
from dml_tutorial.augment import IMAGENET_STD
from dml_tutorial.data.core import ImageListDataset


@pytest.fixture(scope="module")
def jpegs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("images")
    rng = np.random.default_rng(0)
    paths = []
    for i, size in enumerate([(50, 30), (30, 50), (40, 40), (64, 20)]):
        path = folder / f"{i % 2:03d}.class" / f"{i}.jpg"
        path.parent.mkdir(exist_ok=True)
        Image.fromarray(rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8)).save(path, quality=95)
        paths.append(path)
    return ImageListDataset(paths, np.array([0, 0, 1, 1]), extras={"id": np.arange(4)})


def test_each_image_is_torchvisions_resize_and_centre_crop(jpegs):
    from torchvision.transforms import CenterCrop, PILToTensor, Resize

    decoded = data.decode_once(jpegs, size=16)
    assert decoded.x.shape == (4, 3, 16, 16) and decoded.x.dtype == torch.uint8
    assert np.array_equal(decoded.labels, jpegs.labels) and np.array_equal(decoded.extras["id"], np.arange(4))
    for path, x in zip(jpegs.paths, decoded.x):
        with Image.open(path) as img:
            expected = PILToTensor()(CenterCrop(16)(Resize(16)(img.convert("RGB"))))
        assert (x.int() - expected.int()).abs().max() <= 2  # PIL's resize vs torchvision's, both antialiased


def test_the_cache_is_read_when_its_checksum_matches_and_decoded_again_when_not(jpegs, tmp_path):
    first = data.decode_once(jpegs, size=16, cache=tmp_path)
    (array,) = tmp_path.glob("*.npy")
    checksum = array.with_suffix(".sha256")
    assert checksum.read_text().split()[0] == data.decoded.sha256(array)
    again = data.decode_once(jpegs, size=16, cache=tmp_path)
    assert torch.equal(first.x, again.x)
    checksum.write_text("0" * 64)  # a damaged or half-written copy
    repaired = data.decode_once(jpegs, size=16, cache=tmp_path)
    assert torch.equal(first.x, repaired.x) and checksum.read_text().split()[0] == data.decoded.sha256(array)
    data.decode_once(jpegs, size=8, cache=tmp_path)  # another size: another file
    assert len(list(tmp_path.glob("*.npy"))) == 2


def test_bad_inputs_are_clear_errors(jpegs):
    with pytest.raises(ValueError, match="ImageListDataset"):
        data.decode_once(data.ArrayDataset(torch.zeros(2, 1, 4, 4), [0, 1]))
    with pytest.raises(ValueError, match="size must be positive"):
        data.decode_once(jpegs, size=0)
    with pytest.raises(ValueError, match="empty"):
        data.decode_once(ImageListDataset([], np.array([], dtype=int)))


def test_decoded_views_are_torchvisions_evaluation_crop_and_a_random_crop_of_the_same_pixels(jpegs):
    """The evaluation view (``batch``) is what ``image_transforms(crop, train=False)`` makes of the JPEG (Resize to
    crop x 256/224, CenterCrop, Normalize), within PIL-vs-torchvision resizing and one pixel of offset (the centre
    of the centre square rounds a half pixel its own way: a 51-px side gives offset 19 against torchvision's 18);
    each training view is a crop x crop window of the decoded image, mirrored or not (checked against every
    offset)."""
    from torchvision.transforms import Normalize, Resize, ToTensor

    splits = data.Splits("fixture", "classes", jpegs, jpegs, "files")
    decoded = data.decode_splits(splits, crop=14)  # decoded at int(14 * 256 / 224) = 16 px
    assert isinstance(decoded.train, data.DecodedImages) and decoded.train.x.shape == (4, 3, 16, 16)
    assert decoded.source == "files, decoded once at 16 px"
    evaluation = decoded.test.batch(np.arange(4))
    expected = torch.stack([data.image_transforms(14, train=False)(Image.open(p).convert("RGB")) for p in jpegs.paths])
    assert evaluation.shape == expected.shape == (4, 3, 14, 14)
    tolerance = 2.5 / 255 / min(IMAGENET_STD)  # 2 grey levels, normalised
    exact = [(e - x).abs().max() <= tolerance for e, x in zip(evaluation, expected)]
    assert sum(exact) >= 3, exact  # three of the four fixtures round alike
    for path, view in zip(jpegs.paths, evaluation):
        resized = Normalize(augment.IMAGENET_MEAN, IMAGENET_STD)(ToTensor()(Resize(16)(Image.open(path).convert("RGB"))))
        top, left = round((resized.shape[1] - 14) / 2), round((resized.shape[2] - 14) / 2)
        shifted = [resized[:, top + i:top + i + 14, left + j:left + j + 14] for i in (-1, 0, 1) for j in (-1, 0, 1)
                   if 0 <= top + i <= resized.shape[1] - 14 and 0 <= left + j <= resized.shape[2] - 14]
        assert min((view - w).abs().max() for w in shifted) <= tolerance
    torch.manual_seed(0)
    views = decoded.train.training_batch(np.arange(4))
    assert views.shape == (4, 3, 14, 14)
    for x, view in zip(decoded.train.x, views):
        windows = [x[:, i:i + 14, j:j + 14] for i in range(3) for j in range(3)]
        windows = [decoded.train._normalised(w[None])[0] for w in windows + [w.flip(-1) for w in windows]]
        assert any(torch.equal(view, w) for w in windows)


def test_decoded_images_keep_their_views_through_subset_labels_and_device(jpegs):
    decoded = data.decode_splits(data.Splits("f", "classes", jpegs, jpegs, "files"), crop=12).train
    for same in (decoded.subset(decoded.labels == 0), decoded.with_labels([1, 0, 1, 0]), decoded.to("cpu")):
        assert isinstance(same, data.DecodedImages) and same.crop == 12
        assert same.batch([0]).shape == (1, 3, 12, 12)
    assert len(decoded.subset(decoded.labels == 0)) == 2
    with pytest.raises(ValueError, match="uint8"):
        data.DecodedImages(torch.zeros(2, 3, 8, 8), [0, 1])
    with pytest.raises(ValueError, match="does not fit"):
        data.DecodedImages(torch.zeros(2, 3, 8, 8, dtype=torch.uint8), [0, 1], crop=9)


def test_fit_and_the_unsupervised_pairs_train_on_random_crops_and_embed_the_centre(jpegs):
    """``train.fit`` asks a DecodedImages for its training view (random crops: two epochs see different inputs)
    and ``train.embed`` for the evaluation view; CBSwR's pairs are two independent draws of the random crop."""
    from dml_tutorial import clustering, models, sampling, train

    decoded = data.decode_splits(data.Splits("f", "classes", jpegs, jpegs, "files"), crop=12).train
    seen = []
    model = models.make_model("convnet", (3, 12, 12), 4)
    loss = lambda z, y: z.pow(2).sum() * 0.0 + z.sum() * 0.0
    original = model.forward

    def spy(x, **kw):
        seen.append(x.detach().clone())
        return original(x, **kw)

    model.forward = spy
    train.fit(model, loss, decoded, epochs=2, sampler=sampling.PKSampler(decoded.labels, p=2, k=2, seed=0),
              device="cpu", progress=False)
    assert len(seen) == 2 and all(x.shape == (4, 3, 12, 12) for x in seen)
    assert not torch.equal(seen[0], seen[1])  # another crop (or order) each epoch
    embedded = train.embed(model, decoded)
    assert torch.equal(seen[-1], decoded.batch(np.arange(4)))  # embed: the centre crop, in order
    assert embedded.shape == (4, 4)
    x, x_hat, _ = next(clustering._pairs(decoded, 4, None, torch.Generator().manual_seed(0), "cpu"))
    assert x.shape == x_hat.shape == (4, 3, 12, 12) and not torch.equal(x, x_hat)


def test_a_models_input_shape_is_the_crop_not_the_decoded_side(jpegs):
    decoded = data.decode_splits(data.Splits("f", "classes", jpegs, jpegs, "files"), crop=12).train
    assert data.input_shape(decoded) == (3, 12, 12) and decoded.x.shape[1:] == (3, 13, 13)


@pytest.mark.parametrize("device", [pytest.param("cpu"), pytest.param("cuda", marks=pytest.mark.skipif(
    not torch.cuda.is_available(), reason="no GPU on this machine"))])
def test_views_made_for_a_device_are_the_hosts_views_cropped_in_uint8_and_normalised_there(device):
    """Issue #88: the host crops in uint8 and the device converts and normalises; the views are those the host
    made before (float32, normalised on the host: benchmarks/bench_eval_views.py times both)."""
    g = torch.Generator().manual_seed(0)
    images = data.DecodedImages(torch.randint(0, 256, (6, 3, 20, 20), dtype=torch.uint8, generator=g),
                                np.arange(6), crop=16)
    idx = np.array([4, 0, 2])
    host = augment.normalize(augment.center_crop(images.x[idx], 16).float().div_(255.0), images.mean, images.std)
    there = images.batch(idx, device=device)
    assert there.device.type == device and there.dtype == torch.float32
    torch.testing.assert_close(there.cpu(), host, rtol=0, atol=1e-6)
    crops = [images.training_batch(idx, torch.Generator().manual_seed(1), device=d) for d in (None, device)]
    torch.testing.assert_close(crops[1].cpu(), crops[0], rtol=0, atol=1e-6)  # the same random crops and flips
    plain = data.ArrayDataset(images.x, images.labels)
    assert torch.equal(plain.batch(idx, device=device).cpu(), images.x[idx].float() / 255)
