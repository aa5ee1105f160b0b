"""Images decoded once (dml_tutorial.data.decoded): the same pixels as torchvision's Resize + CenterCrop of the
JPEG, a cache checked by its SHA-256, and clear errors."""

import numpy as np
import pytest
import torch
from PIL import Image

from dml_tutorial import data
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
