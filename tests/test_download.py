"""Downloads against a local HTTP server that behaves like the real ones and like their failures: small archives in
the datasets' real layouts, a wrong checksum, a connection that drops mid-file (resumed with Range), server errors
(retried), a missing file (not retried), an archive without the expected layout; nothing half-done is left behind."""

import hashlib
import http.server
import io
import tarfile
import threading
import zipfile
from dataclasses import replace

import numpy as np
import pytest
from PIL import Image

from dml_tutorial import data
from dml_tutorial.data import download as dl


class Server:
    """Files by URL path, with behaviours: ``drop`` (send half of the file, then close; once), ``fail`` (answer
    500 that many times first), ``ignore_range``. Records every request's path and Range header."""

    def __init__(self):
        self.files, self.drop, self.fail, self.ignore_range, self.requests = {}, set(), {}, set(), []
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                body, rng = server.files.get(self.path), self.headers.get("Range")
                server.requests.append((self.path, rng))
                if server.fail.get(self.path, 0) > 0:
                    server.fail[self.path] -= 1
                    return self.send_error(500, "try again")
                if body is None:
                    return self.send_error(404, "no such file")
                start = int(rng.split("=")[1].rstrip("-")) if rng and self.path not in server.ignore_range else 0
                self.send_response(206 if start else 200)
                self.send_header("Content-Length", str(len(body) - start))
                self.end_headers()
                if self.path in server.drop:
                    server.drop.discard(self.path)
                    self.wfile.write(body[start:start + (len(body) - start) // 2])
                    self.wfile.flush()
                    self.connection.close()  # the client sees fewer bytes than announced
                    return
                self.wfile.write(body[start:])

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_port}"


@pytest.fixture
def server():
    s = Server()
    yield s
    s.httpd.shutdown()


def _jpg(value=0) -> bytes:
    out = io.BytesIO()
    Image.fromarray(np.full((6, 5, 3), value, np.uint8)).save(out, format="JPEG")
    return out.getvalue()


def cub_tgz() -> bytes:
    """CUB_200_2011.tgz in the real layout: CUB_200_2011/{images.txt, image_class_labels.txt, images/...}."""
    files = {"CUB_200_2011/images.txt": b"1 001.Albatross/a.jpg\n2 150.Sparrow/b.jpg\n",
             "CUB_200_2011/image_class_labels.txt": b"1 1\n2 150\n",
             "CUB_200_2011/images/001.Albatross/a.jpg": _jpg(10), "CUB_200_2011/images/150.Sparrow/b.jpg": _jpg(20)}
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for name, content in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(content)
            tar.addfile(info, io.BytesIO(content))
    return out.getvalue()


def cars_zip() -> bytes:
    """The Kaggle copy of Cars196: annotation CSVs and images in class folders, no top folder."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("anno_train.csv", "00001.jpg,1,2,30,40,1\n00002.jpg,1,2,30,40,98\n")
        z.writestr("anno_test.csv", "00001.jpg,1,2,30,40,99\n")
        z.writestr("car_data/car_data/train/AM General Hummer 2000/00001.jpg", _jpg(1))
        z.writestr("car_data/car_data/train/Ford F-150 2007/00002.jpg", _jpg(2))
        z.writestr("car_data/car_data/test/Ford GT 2006/00001.jpg", _jpg(3))
    return out.getvalue()


def _source(server, name, body, **changes):
    server.files[f"/{name}"] = body
    checks = {"size": len(body), "sha256": hashlib.sha256(body).hexdigest(), "md5": hashlib.md5(body).hexdigest()}
    return replace(dl.SOURCES[name], url=f"{server.url}/{name}", **{**checks, **changes})


def test_cub_downloads_checks_unpacks_and_loads(server, tmp_path, monkeypatch):
    body = cub_tgz()
    monkeypatch.setitem(dl.SOURCES, "cub200", _source(server, "cub200", body))
    s = data.load_dataset("cub200", root=tmp_path)
    assert list(s.train.labels) == [1] and list(s.test.labels) == [150] and s.test[0][0].size == (5, 6)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["CUB_200_2011"]  # no archive, no staging folder left
    data.load_dataset("cub200", root=tmp_path)
    assert len(server.requests) == 1  # there already: nothing downloaded again


def test_cars_from_the_kaggle_copy_without_a_top_folder(server, tmp_path, monkeypatch):
    body = cars_zip()
    monkeypatch.setitem(dl.SOURCES, "cars196", _source(server, "cars196", body, size=None, sha256=None, md5=None))
    s = data.load_dataset("cars196", root=tmp_path)
    assert list(s.train.labels) == [1, 98] and list(s.test.labels) == [99]
    assert s.test.paths[0].endswith("test/Ford GT 2006/00001.jpg")  # same file name as a training image


def test_wrong_checksum_is_refused_and_nothing_is_left(server, tmp_path):
    body = cub_tgz()
    source = replace(_source(server, "cub200", body), sha256="0" * 64)
    with pytest.raises(dl.DownloadError, match="not the expected one.*sha256.*expected 0000"):
        dl.fetch(source, tmp_path, backoff=0)
    assert list(tmp_path.iterdir()) == []


def test_a_dropped_connection_resumes_with_a_range_request(server, tmp_path):
    body = cub_tgz() * 20  # long enough to be cut in two
    server.files["/big"] = body
    server.drop.add("/big")
    path = dl.download(f"{server.url}/big", tmp_path / "big.tgz", size=len(body),
                       sha256=hashlib.sha256(body).hexdigest(), backoff=0, progress=False)
    assert path.read_bytes() == body
    assert server.requests == [("/big", None), ("/big", f"bytes={len(body) // 2}-")]


def test_a_server_that_ignores_range_is_read_again_from_the_start(server, tmp_path):
    body = b"x" * 1000
    server.files["/f"], server.ignore_range = body, {"/f"}
    (tmp_path / "f.part").write_bytes(b"y" * 300)  # left by an earlier, interrupted call
    dl.download(f"{server.url}/f", tmp_path / "f", size=1000, backoff=0, progress=False)
    assert (tmp_path / "f").read_bytes() == body


def test_server_errors_are_retried_and_a_missing_file_is_not(server, tmp_path):
    server.files["/flaky"], server.fail["/flaky"] = b"ok", 2
    assert dl.download(f"{server.url}/flaky", tmp_path / "a", backoff=0, progress=False).read_bytes() == b"ok"
    assert len(server.requests) == 3
    with pytest.raises(dl.DownloadError, match="answered 404"):
        dl.download(f"{server.url}/gone", tmp_path / "b", backoff=0, progress=False)
    assert len(server.requests) == 4
    server.files["/down"], server.fail["/down"] = b"ok", 10
    with pytest.raises(dl.DownloadError, match="answered 500.*3 attempts"):
        dl.download(f"{server.url}/down", tmp_path / "c", retries=2, backoff=0, progress=False)


def test_an_archive_without_the_expected_layout_leaves_no_dataset(server, tmp_path):
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("Stanford_Online_Products/readme.txt", "no lists here")
    source = _source(server, "sop", out.getvalue())
    with pytest.raises(dl.DownloadError, match=r"expected layout.*Ebay_train.txt"):
        dl.fetch(source, tmp_path, backoff=0)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["Stanford_Online_Products.zip"]  # kept to inspect


def test_loader_error_after_a_failed_download_names_path_url_and_the_manual_way(server, tmp_path, monkeypatch):
    monkeypatch.setitem(dl.SOURCES, "sop", replace(dl.SOURCES["sop"], url=f"{server.url}/missing"))
    with pytest.raises(FileNotFoundError, match=r"dataset 'sop' not found.*answered 404.*unzip"):
        data.load_dataset("sop", root=tmp_path)


def test_the_real_sources_carry_their_provenance():
    for name, source in dl.SOURCES.items():
        assert source.url.startswith("https://") and source.note and source.expect, name
        assert source.sha256 is None or len(source.sha256) == 64
    assert dl.SOURCES["cub200"].md5 == "97eceeb196236b17998738112f37df78"  # CaltechDATA's published md5


def _tar(members) -> tarfile.TarFile:
    """An in-memory tar of ``members``: ``(name, kind, link)`` with kind "file", "symlink" or "link"."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for name, kind, link in members:
            info = tarfile.TarInfo(name)
            if kind == "file":
                info.size = 2
                tar.addfile(info, io.BytesIO(b"ok"))
            else:
                info.type, info.linkname = (tarfile.SYMTYPE if kind == "symlink" else tarfile.LNKTYPE), link
                tar.addfile(info)
    out.seek(0)
    return tarfile.open(fileobj=out)


@pytest.mark.parametrize("has_filter", [True, False], ids=["data filter", "before the filter (Python < 3.10.12)"])
def test_unpacking_refuses_members_that_lead_out_of_the_folder(tmp_path, monkeypatch, has_filter):
    if not has_filter:
        monkeypatch.delattr(tarfile, "data_filter")
    refused = (tarfile.TarError, dl.DownloadError)  # the filter's errors, or ours
    dl._extract_tar(_tar([("a/b.txt", "file", ""), ("a/c.txt", "symlink", "b.txt")]), tmp_path / "ok")
    assert (tmp_path / "ok" / "a" / "b.txt").read_bytes() == b"ok"
    for bad in ([("../evil.txt", "file", "")], [("/abs.txt", "file", "")] if not has_filter else [],
                [("a/out", "symlink", "../../outside")], [("a/hard", "link", "../outside")]):
        if bad:
            with pytest.raises(refused):
                dl._extract_tar(_tar(bad), tmp_path / f"x{len(list(tmp_path.iterdir()))}")
    assert not (tmp_path / "evil.txt").exists() and not (tmp_path.parent / "evil.txt").exists()
