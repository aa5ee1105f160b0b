"""Downloads that check what they get: retries with resume, size and checksum, and an unpacking step that never
leaves a half-extracted dataset under the name a loader reads.

    fetch(SOURCES["cub200"], "data")  # -> data/CUB_200_2011, or a clear error and nothing half-done

A :class:`Source` says where an archive lives, its size and checksum (SHA-256, and MD5 where the publisher gives
that), the folder it unpacks to and a few paths that must exist afterwards. :func:`download` writes to
``<file>.part`` and renames only a complete, verified file; an interrupted transfer resumes from where it stopped
(HTTP ``Range``) on the next attempt or the next call. :func:`fetch` unpacks into a hidden ``.<folder>.partial``
directory and renames it into place only when the expected files are there.

The torchvision datasets (MNIST, Fashion-MNIST, CIFAR, STL-10, Omniglot, Flowers102) keep torchvision's own
download, which checks md5 too; this module covers the fine-grained retrieval datasets that torchvision cannot
fetch.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import shutil
import sys
import tarfile
import time
import urllib.error
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm


class DownloadError(RuntimeError):
    """A download that could not complete (after its retries), or whose content is not what was expected."""


@dataclass(frozen=True)
class Source:
    """An archive on the web: ``url``, the local ``filename``, its ``size`` in bytes and ``sha256`` / ``md5``
    (``None`` where nobody publishes one: then ``expect`` is the only check), the ``folder`` it unpacks to under
    the data root, the ``expect``-ed paths inside that folder, and ``note``: where URL and checksums come from."""

    name: str
    url: str
    filename: str
    folder: str
    size: int | None = None
    sha256: str | None = None
    md5: str | None = None
    expect: tuple = ()
    note: str = ""


SOURCES = {
    "cub200": Source(
        "cub200", "https://data.caltech.edu/records/65de6-vp158/files/CUB_200_2011.tgz", "CUB_200_2011.tgz",
        "CUB_200_2011", size=1_150_585_339,
        sha256="0c685df5597a8b24909f6a7c9db6d11e008733779a671760afef78feb49bf081",
        md5="97eceeb196236b17998738112f37df78", expect=("images.txt", "image_class_labels.txt", "images"),
        note="CaltechDATA, the dataset's home since the visipedia URL died; checksums as CaltechDATA and TFDS give "
             "them. The server redirects to short-lived signed URLs and can be slow: resume covers that."),
    "cars196": Source(
        "cars196", "https://www.kaggle.com/api/v1/datasets/download/jutrera/stanford-car-dataset-by-classes-folder",
        "stanford-car-dataset-by-classes-folder.zip", "cars196",
        expect=("anno_train.csv", "anno_test.csv", "car_data/car_data/train", "car_data/car_data/test"),
        note="the Kaggle mirror that pytorch-metric-learning uses (Stanford's own site is gone); no checksum is "
             "published for it, so the check is its contents: both annotation files, and the loader finds every image "
             "they list."),
    "sop": Source(
        "sop", "https://drive.usercontent.google.com/download?id=1TclrpQOF_ullUP99wk_gjGN8pKvtErG8&export=download"
               "&authuser=0&confirm=t", "Stanford_Online_Products.zip", "Stanford_Online_Products",
        size=3_083_860_082, sha256="b04fa78210e69fab050ce73939550e1cd0f96890bdd98ec9fee732c3b756ef48",
        expect=("Ebay_train.txt", "Ebay_test.txt"),
        note="the Google Drive copy that pytorch-metric-learning uses; size and SHA-256 are those of Stanford's "
             "original zip, which the copy is expected to be (not verifiable from our offline machines)."),
}

RETRYABLE = (urllib.error.URLError, http.client.HTTPException, ConnectionError, TimeoutError)


def _hash(path: Path, algorithm: str) -> str:
    digest = hashlib.new(algorithm)
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _transfer(url: str, part: Path, timeout: float, progress: bool) -> int | None:
    """Append what the server still has to send to ``part`` (a ``Range`` request when part of it is there);
    returns the total size the server announced, if it did."""
    have = part.stat().st_size if part.exists() else 0
    headers = {"User-Agent": "dml-tutorial"} | ({"Range": f"bytes={have}-"} if have else {})
    with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=timeout) as response:
        if have and response.status != 206:  # the server ignored the range: start again from the first byte
            have = 0
        length = response.headers.get("Content-Length")
        total = have + int(length) if length is not None else None
        with open(part, "ab" if have else "wb") as f, tqdm(total=total, initial=have, unit="B", unit_scale=True,
                                                           desc=part.name[:-5], disable=not progress,
                                                           file=sys.stderr, mininterval=1.0) as bar:
            for block in iter(lambda: response.read(1 << 20), b""):
                f.write(block)
                bar.update(len(block))
    return total


def download(url: str, path, *, size: int | None = None, sha256: str | None = None, md5: str | None = None,
             retries: int = 4, backoff: float = 2.0, timeout: float = 60.0, progress: bool = True) -> Path:
    """Download ``url`` to ``path`` through ``<path>.part``: up to ``retries`` more attempts after a network error,
    a server error (5xx) or a connection that closed early, each resuming where the last stopped, waiting
    ``backoff`` x 2^attempt seconds between them; then the size and checksums are checked and the file renamed into
    place. A client error (4xx) is not retried. Raises :class:`DownloadError` naming the URL and what went wrong; a
    file whose checksum is wrong is deleted, a partial one kept for the next call to resume."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_name(path.name + ".part")
    for attempt in range(retries + 1):
        try:
            announced = _transfer(url, part, timeout, progress)
            got = part.stat().st_size
            expected = size if size is not None else announced
            if expected is None or got >= expected:
                break
            problem = f"the connection closed after {got:,} of {expected:,} bytes"
        except urllib.error.HTTPError as err:
            if err.code < 500:
                raise DownloadError(f"{url}: the server answered {err.code} {err.reason}; the file may have moved "
                                    "(see dml_tutorial/data/download.py for the source and its provenance)") from err
            problem = f"the server answered {err.code} {err.reason}"
        except RETRYABLE as err:
            problem = f"{type(err).__name__}: {err}"
        if attempt == retries:
            raise DownloadError(f"{url}: {problem}, {retries + 1} attempts; call again to resume from "
                                f"{part.stat().st_size if part.exists() else 0:,} bytes ({part})")
        time.sleep(backoff * 2**attempt)
    got = part.stat().st_size
    wrong = [f"size {got:,} bytes, expected {size:,}"] if size is not None and got != size else []
    for algorithm, expected in (("sha256", sha256), ("md5", md5)):
        if expected and not wrong and _hash(part, algorithm) != expected:
            wrong.append(f"{algorithm} {_hash(part, algorithm)}, expected {expected}")
    if wrong:
        part.unlink()
        raise DownloadError(f"{url}: the downloaded file is not the expected one ({'; '.join(wrong)}); deleted it")
    os.replace(part, path)
    return path


def _unpack(archive: Path, into: Path) -> None:
    if tarfile.is_tarfile(archive):
        with tarfile.open(archive) as tar:
            _extract_tar(tar, into)
    elif zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as z:
            z.extractall(into)  # zipfile drops absolute paths and ".." itself
    else:
        raise DownloadError(f"{archive} is neither a tar nor a zip archive")


def _extract_tar(tar: tarfile.TarFile, into: Path) -> None:
    """Unpack ``tar`` into ``into`` with no absolute path, no member or link leading out of the folder and no device
    file: the ``"data"`` extraction filter where Python has it (3.10.12, 3.11.4, 3.12 and later); on older patch
    releases the same refusals checked here, member by member, before extracting."""
    if hasattr(tarfile, "data_filter"):
        tar.extractall(into, filter="data")
        return
    root = Path(into).resolve()

    def inside(name: str, base: Path = root) -> bool:
        target = (base / name).resolve()
        return not Path(name).is_absolute() and (target == root or root in target.parents)

    for member in tar.getmembers():
        linked = member.issym() and not inside(member.linkname, (root / member.name).parent)
        if not inside(member.name) or linked or (member.islnk() and not inside(member.linkname)) or \
                member.isdev():
            raise DownloadError(f"refusing to unpack {member.name!r}: it leads out of {into} or is a device file")
    tar.extractall(into)


def fetch(source: Source, root="data", *, keep_archive: bool = False, **options) -> Path:
    """``root/<source.folder>``, downloaded and unpacked first if it is not there (``options`` go to
    :func:`download`). The archive unpacks into ``root/.<folder>.partial`` (its own top folder, if it has one
    named ``folder``, is taken as the dataset), the ``expect``-ed paths are checked there, and only then is it
    renamed to ``root/<folder>``; the archive is deleted afterwards unless ``keep_archive``."""
    root = Path(root)
    target = root / source.folder
    if target.is_dir() and all((target / p).exists() for p in source.expect):
        return target
    if target.exists():
        raise DownloadError(f"{target} exists but lacks {[p for p in source.expect if not (target / p).exists()]}: "
                            "remove it (an incomplete copy) and call again")
    archive = root / source.filename
    if not archive.exists():
        print(f"downloading {source.name}: {source.url}"
              + (f" ({source.size / 1e9:.2f} GB)" if source.size else ""), file=sys.stderr, flush=True)
        download(source.url, archive, size=source.size, sha256=source.sha256, md5=source.md5, **options)
    staging = root / f".{source.folder}.partial"
    shutil.rmtree(staging, ignore_errors=True)
    try:
        _unpack(archive, staging)
        unpacked = staging / source.folder if (staging / source.folder).is_dir() else staging
        missing = [p for p in source.expect if not (unpacked / p).exists()]
        if missing:
            raise DownloadError(f"{archive} does not hold the expected layout: {missing} missing after unpacking")
        os.replace(unpacked, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    if not keep_archive:
        archive.unlink()
    return target
