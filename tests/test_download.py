"""Fetching and unpacking the real corpora's archives: sha256, atomic output, clear failures,
and extraction that refuses archives writing outside their folder."""
import hashlib
import http.server
import io
import os
import signal
import tarfile
import threading
import time
import zipfile

import pytest

from lnrepro.cli import main
from lnrepro.prepare.download import Pace, download
from lnrepro.prepare.extract import UnsafeArchive, extract
from lnrepro.prepare.fetching import ChecksumError, DownloadError

UNREACHABLE = "http://127.0.0.1:9/de-en.tgz"  # the discard port: nothing listens, connection refused


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def leftovers(directory):
    return sorted(p.name for p in directory.iterdir())


def snapshot(root):
    """Every path below root with its bytes (None for a directory): equal means untouched."""
    return {str(p.relative_to(root)): None if p.is_dir() else p.read_bytes() for p in root.rglob("*")}


def cli_error(*argv):
    """The message `lnrepro ...` exits with."""
    with pytest.raises(SystemExit) as e:
        main(list(map(str, argv)))
    return str(e.value)


def make_tar(path, members):
    """members: [(name, bytes)] regular files, or TarInfo objects (links) as they are."""
    with tarfile.open(path, "w:gz") as tar:
        for m in members:
            if isinstance(m, tarfile.TarInfo):
                tar.addfile(m)
            else:
                info = tarfile.TarInfo(m[0])
                info.size = len(m[1])
                tar.addfile(info, io.BytesIO(m[1]))
    return path


def link(name, target, kind=tarfile.SYMTYPE):
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, target
    return info


# ---- download ---------------------------------------------------------------------------------
def test_download_file_url_verified_and_atomic(tmp_path):
    payload = b"de-en archive bytes\n" * 1000
    (tmp_path / "src.tgz").write_bytes(payload)
    out = tmp_path / "downloads" / "de-en.tgz"
    log = io.StringIO()
    assert download((tmp_path / "src.tgz").as_uri(), str(out), sha256(payload), log=log) == sha256(payload)
    assert out.read_bytes() == payload
    assert leftovers(out.parent) == ["de-en.tgz"]  # no .tmp
    assert f"sha256 {sha256(payload)}" in log.getvalue()
    # present and verified: nothing is fetched again, even from a source that is gone
    (tmp_path / "src.tgz").unlink()
    download((tmp_path / "src.tgz").as_uri(), str(out), sha256(payload), log=log)
    assert "already present" in log.getvalue()


def test_download_plain_path_without_sha_warns_with_the_hash(tmp_path, capsys):
    (tmp_path / "src.tgz").write_bytes(b"x")
    log = io.StringIO()
    download(str(tmp_path / "src.tgz"), str(tmp_path / "out.tgz"), None, log=log)
    assert "WARNING: no sha256 configured for out.tgz" in log.getvalue()
    assert f"sha256: {sha256(b'x')}" in log.getvalue()
    # and on the terminal (the job's stderr), where the log alone hid it
    assert f"lnrepro download: WARNING: no sha256 configured for out.tgz" in capsys.readouterr().err


def test_download_checksum_mismatch_keeps_nothing(tmp_path, capsys):
    (tmp_path / "src.tgz").write_bytes(b"corrupted")
    downloads = tmp_path / "downloads"
    wanted = "ab" * 32
    with pytest.raises(SystemExit) as e:
        main(["download", "--url", (tmp_path / "src.tgz").as_uri(), "--out", str(downloads / "de-en.tgz"),
              "--sha256", wanted, "--retries", "1", "--backoff", "0"])
    message = str(e.value)
    assert "sha256 mismatch for de-en.tgz" in message
    assert f"expected {wanted}" in message and f"actual   {sha256(b'corrupted')}" in message
    assert leftovers(downloads) == []  # neither the file nor its .tmp


def test_download_keeps_a_present_file_with_the_wrong_hash(tmp_path):
    """Nothing tells whether the tool or a person put it there: it stays, with a way out."""
    (tmp_path / "src.tgz").write_bytes(b"right")
    out = tmp_path / "de-en.tgz"
    out.write_bytes(b"placed by hand")
    before = snapshot(tmp_path)
    with pytest.raises(ChecksumError) as e:
        download(str(tmp_path / "src.tgz"), str(out), sha256(b"right"), log=io.StringIO())
    message = str(e.value)
    assert message.startswith(f"sha256 mismatch for {out}:")
    assert f"expected {sha256(b'right')}" in message and f"actual   {sha256(b'placed by hand')}" in message
    assert "left untouched" in message and "Delete it to download it again" in message
    assert snapshot(tmp_path) == before  # no .tmp either
    out.unlink()  # as the message says
    download(str(tmp_path / "src.tgz"), str(out), sha256(b"right"), log=io.StringIO())
    assert out.read_bytes() == b"right"


def test_download_refuses_a_tmp_it_did_not_create(tmp_path):
    (tmp_path / "src.tgz").write_bytes(b"right")
    (tmp_path / "de-en.tgz.tmp").write_bytes(b"not the tool's")
    before = snapshot(tmp_path)
    message = cli_error("download", "--url", tmp_path / "src.tgz", "--out", tmp_path / "de-en.tgz")
    assert message.startswith(f"lnrepro download: ERROR: {tmp_path / 'de-en.tgz.tmp'} already exists and "
                              f"this run did not create it") and "\n" not in message
    assert snapshot(tmp_path) == before


def test_unreachable_url_says_where_to_put_the_file(tmp_path):
    downloads = tmp_path / "resources" / "downloads"
    log = io.StringIO()
    with pytest.raises(DownloadError) as e:
        download(UNREACHABLE, str(downloads / "de-en.tgz"), "cd" * 32, retries=2, backoff=0, timeout=5, log=log)
    message = str(e.value)
    assert message.startswith(f"cannot download {UNREACHABLE} (")
    assert "2 attempts" in message and "no network access" in message
    assert f"wget -O {downloads / 'de-en.tgz'} '{UNREACHABLE}'" in message
    assert f"place the file there by hand:\n  {downloads / 'de-en.tgz'}" in message
    assert f"expected sha256: {'cd' * 32}" in message
    assert log.getvalue().count("failed") == 2  # each attempt logged, one message raised
    assert leftovers(downloads) == []


def test_unreachable_url_cli_message(tmp_path):
    with pytest.raises(SystemExit) as e:
        main(["download", "--url", UNREACHABLE, "--out", str(tmp_path / "de-en.tgz"),
              "--retries", "1", "--backoff", "0", "--timeout", "5"])
    assert str(e.value).startswith(f"lnrepro download: ERROR: cannot download {UNREACHABLE}")
    assert "by hand" in str(e.value) and leftovers(tmp_path) == []


class Server:
    """A real HTTP server on localhost: serves the files under `www`; the first `cut[name]`
    requests for a name get its body cut off (Content-Length or chunked)."""

    def __init__(self, www):
        self.www, self.cut, self.requests = www, {}, []
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):
                name = self.path.lstrip("/")
                server.requests.append(name)
                if not (server.www / name).is_file():
                    self.send_error(404)
                    return
                body = (server.www / name).read_bytes()
                cuts = server.cut.get(name)
                mode = cuts.pop(0) if cuts else None
                self.send_response(200)
                if mode == "drip":  # a byte at a time, each well inside any socket timeout
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    try:
                        for i in range(len(body)):
                            self.wfile.write(body[i:i + 1])
                            self.wfile.flush()
                            time.sleep(0.02)
                    except OSError:  # the client gave up
                        pass
                elif mode == "chunked":
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    self.wfile.write(b"%x\r\n" % len(body) + body[:10])
                else:
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body[:10] if mode == "length" else body)
                self.close_connection = True

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"


@pytest.fixture
def server(tmp_path):
    (tmp_path / "www").mkdir()
    s = Server(tmp_path / "www")
    threading.Thread(target=s.httpd.serve_forever, args=(0.05,), daemon=True).start()
    yield s
    s.httpd.shutdown()
    s.httpd.server_close()


def test_download_over_http(server, tmp_path):
    payload = bytes(range(256)) * 5000
    (server.www / "de-en.tgz").write_bytes(payload)
    out = tmp_path / "got" / "de-en.tgz"
    download(f"{server.url}/de-en.tgz", str(out), sha256(payload), log=io.StringIO())
    assert out.read_bytes() == payload
    # a 404 is not retried: one clear error, nothing kept
    with pytest.raises(DownloadError, match="HTTP 404") as e:
        download(f"{server.url}/missing.tgz", str(tmp_path / "got" / "missing.tgz"), retries=3, backoff=5,
                 log=io.StringIO())
    assert f"{server.url}/missing.tgz" in str(e.value)
    assert server.requests == ["de-en.tgz", "missing.tgz"]
    assert leftovers(out.parent) == ["de-en.tgz"]


@pytest.mark.parametrize("cut", ["length", "chunked"])
def test_download_retries_a_connection_cut_off(server, tmp_path, cut):
    payload = b"0123456789" * 1000
    (server.www / "a.tgz").write_bytes(payload)
    server.cut["a.tgz"] = [cut, cut]
    log = io.StringIO()
    download(f"{server.url}/a.tgz", str(tmp_path / "a.tgz"), sha256(payload), retries=3, backoff=0, log=log)
    assert (tmp_path / "a.tgz").read_bytes() == payload
    assert server.requests == ["a.tgz"] * 3 and log.getvalue().count("failed") == 2
    # cut off every time: one DownloadError after the last attempt, not a traceback
    server.cut["b.tgz"] = [cut] * 2
    (server.www / "b.tgz").write_bytes(payload)
    with pytest.raises(DownloadError, match="2 attempts"):
        download(f"{server.url}/b.tgz", str(tmp_path / "b.tgz"), retries=2, backoff=0, log=io.StringIO())
    assert leftovers(tmp_path) == ["a.tgz", "www"]


@pytest.mark.medium
def test_a_server_that_drips_is_cut_off_by_rate_then_by_deadline(server, tmp_path):
    """One byte at a time under the socket timeout was never cut off (issue 42): an attempt slower than
    min_rate once past its grace is retried, and the whole download stops at its deadline."""
    (server.www / "slow.tgz").write_bytes(b"x" * 5000)
    url, t0 = f"{server.url}/slow.tgz", time.monotonic()
    server.cut["slow.tgz"] = ["drip"] * 2
    with pytest.raises(DownloadError, match=r"too slow: \d+ bytes/s over \d+ s \(under 1000\); 2 attempts"):
        download(url, str(tmp_path / "a.tgz"), retries=2, backoff=0, log=io.StringIO(),
                 pace=Pace(deadline=60, min_rate=1000, grace=0.5))
    assert time.monotonic() - t0 < 10
    server.cut["slow.tgz"] = ["drip"] * 3
    with pytest.raises(DownloadError, match="stopped after the download's deadline of 2 s"):
        download(url, str(tmp_path / "b.tgz"), retries=3, backoff=0, log=io.StringIO(), pace=Pace(deadline=2, min_rate=0))
    assert time.monotonic() - t0 < 20
    assert leftovers(tmp_path) == ["www"]  # neither the file nor its .tmp


def test_download_makes_at_least_one_attempt(server, tmp_path):
    (server.www / "a.tgz").write_bytes(b"a")
    download(f"{server.url}/a.tgz", str(tmp_path / "a.tgz"), retries=0, log=io.StringIO())
    assert (tmp_path / "a.tgz").read_bytes() == b"a"


# ---- extract ----------------------------------------------------------------------------------
def test_extract_verifies_and_unpacks(tmp_path):
    archive = make_tar(tmp_path / "de-en.tgz", [("de-en/train.tags.de-en.de", b"Hallo\n"),
                                                ("de-en/sub/x.en", b"Hi\n")])
    n = extract(str(archive), str(tmp_path / "de-en"), sha256(archive.read_bytes()), log=io.StringIO())
    assert n == 2
    assert (tmp_path / "de-en" / "de-en" / "train.tags.de-en.de").read_bytes() == b"Hallo\n"
    assert leftovers(tmp_path) == ["de-en", "de-en.tgz"]


def test_extract_checksum_mismatch_leaves_a_hand_placed_archive(tmp_path):
    archive = make_tar(tmp_path / "de-en.tgz", [("de-en/a", b"a")])
    before = snapshot(tmp_path)
    message = cli_error("extract", "--archive", archive, "--out", tmp_path / "out", "--sha256", "00" * 32)
    assert message.startswith(f"lnrepro extract: ERROR: sha256 mismatch for {archive}:")
    assert f"expected {'00' * 32}" in message and f"actual   {sha256(archive.read_bytes())}" in message
    assert "The file was left untouched" in message
    assert "Delete it to download it again, or correct the sha256" in message
    assert snapshot(tmp_path) == before  # the archive as it was; no out/, no out.tmp/


@pytest.mark.parametrize("out", [".", "{cwd}", "..", "../sub/..", "{work}"])
def test_extract_refuses_the_current_directory_and_its_parents(tmp_path, monkeypatch, out):
    cwd = tmp_path / "work" / "sub"
    cwd.mkdir(parents=True)
    make_tar(cwd / "de-en.tgz", [("de-en/a", b"a")])
    (cwd / "notes.txt").write_bytes(b"mine")
    (tmp_path / "work" / "other.txt").write_bytes(b"mine too")
    monkeypatch.chdir(cwd)
    out = out.format(cwd=cwd, work=tmp_path / "work")
    before = snapshot(tmp_path)
    assert cli_error("extract", "--archive", "de-en.tgz", "--out", out) == (
        f"lnrepro extract: ERROR: --out {out} is the current directory or one of its parents; "
        f"refusing to extract there (nothing in it was touched): name a new or empty directory")
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("out", ["data", "data/de-en.tgz", "data/../data/"])
def test_extract_refuses_an_out_holding_the_archive(tmp_path, monkeypatch, out):
    (tmp_path / "data").mkdir()
    (tmp_path / "run").mkdir()
    make_tar(tmp_path / "data" / "de-en.tgz", [("de-en/a", b"a")])
    monkeypatch.chdir(tmp_path / "run")
    before = snapshot(tmp_path)
    message = cli_error("extract", "--archive", tmp_path / "data/de-en.tgz", "--out", tmp_path / out)
    assert message.startswith(f"lnrepro extract: ERROR: --out {tmp_path / out} is or contains the archive ")
    assert "\n" not in message and snapshot(tmp_path) == before


def test_extract_refuses_an_out_with_content_and_leaves_it_alone(tmp_path):
    archive = make_tar(tmp_path / "de-en.tgz", [("de-en/a", b"a")])
    (tmp_path / "full" / "sub").mkdir(parents=True)
    (tmp_path / "full" / "sub" / "keep.txt").write_bytes(b"mine")
    (tmp_path / "file").write_bytes(b"a file")
    (tmp_path / "empty").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "empty")
    before = snapshot(tmp_path)
    for out, why in [("full", "exists and is not empty"), ("file", "exists and is not a directory"),
                     ("link", "exists and is not a directory")]:
        message = cli_error("extract", "--archive", archive, "--out", tmp_path / out)
        assert message.startswith(f"lnrepro extract: ERROR: --out {tmp_path / out} {why}; refusing to extract")
        assert "\n" not in message
    assert snapshot(tmp_path) == before


def test_extract_fills_an_existing_empty_out(tmp_path):
    archive = make_tar(tmp_path / "de-en.tgz", [("de-en/a", b"a")])
    (tmp_path / "de-en").mkdir()
    assert extract(str(archive), f"{tmp_path / 'de-en'}/", log=io.StringIO()) == 1
    assert (tmp_path / "de-en" / "de-en" / "a").read_bytes() == b"a"
    assert leftovers(tmp_path) == ["de-en", "de-en.tgz"]


def test_extract_never_removes_an_out_tmp_it_did_not_create(tmp_path):
    archive = make_tar(tmp_path / "de-en.tgz", [("de-en/a", b"a")])
    (tmp_path / "de-en.tmp").mkdir()
    (tmp_path / "de-en.tmp" / "work.txt").write_bytes(b"mine")
    before = snapshot(tmp_path)
    message = cli_error("extract", "--archive", archive, "--out", tmp_path / "de-en")
    assert message.startswith(f"lnrepro extract: ERROR: {tmp_path / 'de-en.tmp'} already exists and "
                              f"this run did not create it") and "\n" not in message
    assert snapshot(tmp_path) == before


def test_extract_terminated_removes_its_own_tmp(tmp_path, monkeypatch):
    """A scheduler's SIGTERM still cleans up, so the rerun finds no OUT.tmp to refuse."""
    archive = make_tar(tmp_path / "de-en.tgz", [("de-en/a", b"a")])

    def killed(archive, dest, budget):
        (tmp_path / "de-en.tmp" / "partial").write_bytes(b"x")
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(10)  # the handler interrupts this

    monkeypatch.setattr("lnrepro.prepare.extract._unpack", killed)
    handler = signal.getsignal(signal.SIGTERM)
    assert "terminated (SIGTERM)" in cli_error("extract", "--archive", archive, "--out", tmp_path / "de-en")
    assert leftovers(tmp_path) == ["de-en.tgz"] and signal.getsignal(signal.SIGTERM) == handler


def test_extract_rejects_a_truncated_archive(tmp_path):
    data = make_tar(tmp_path / "full.tgz", [("de-en/a", bytes(range(256)) * 400)]).read_bytes()
    (tmp_path / "cut.tgz").write_bytes(data[: len(data) // 2])
    with pytest.raises(DownloadError, match="corrupt or truncated"):
        extract(str(tmp_path / "cut.tgz"), str(tmp_path / "out"), log=io.StringIO())
    assert leftovers(tmp_path) == ["cut.tgz", "full.tgz"]


UNSAFE = [
    ("absolute", lambda root: [(str(root / "evil.txt"), b"x")], "absolute path"),
    ("dotdot", lambda root: [("de-en/../../evil.txt", b"x")], "'..' component"),
    ("symlink out", lambda root: [link("de-en/link", "../../evil.txt")], "points outside"),
    ("absolute symlink", lambda root: [link("de-en/link", str(root / "evil.txt"))], "points outside"),
    # the classic: a link to a directory outside, then a file written through it
    ("file through symlink", lambda root: [link("de-en/dir", str(root)), ("de-en/dir/evil.txt", b"x")],
     "points outside"),
    # a link to "." makes "dir/.." textually inside but really the folder's parent
    ("symlink chain", lambda root: [link("de-en/here", "."), link("de-en/here/up", "../.."),
                                    ("de-en/here/up/evil.txt", b"x")], "outside|refusing"),
    ("hard link out", lambda root: [link("de-en/hard", "../evil.txt", tarfile.LNKTYPE)], "'..' component"),
    ("fifo", lambda root: [link("de-en/pipe", "", tarfile.FIFOTYPE)], "device file or FIFO"),
]


@pytest.mark.parametrize("data_filter", [True, False], ids=["data filter", "older Python"])
@pytest.mark.parametrize("kind, members, message", UNSAFE, ids=[u[0] for u in UNSAFE])
def test_extract_refuses_unsafe_tar_members(tmp_path, monkeypatch, kind, members, message, data_filter):
    if not data_filter:  # as on Python < 3.11.4: tarfile has no "data" extraction filter
        monkeypatch.delattr(tarfile, "data_filter", raising=False)
    work = tmp_path / "work"
    work.mkdir()
    # a harmless member first: it must not be left behind either
    archive = make_tar(work / "bad.tgz", [("de-en/ok.txt", b"fine")] + members(tmp_path))
    with pytest.raises(UnsafeArchive, match=message):
        extract(str(archive), str(work / "bad"), log=io.StringIO())
    assert leftovers(work) == ["bad.tgz"]  # no bad/, no bad.tmp/
    assert leftovers(tmp_path) == ["work"]  # nothing written outside


def test_extract_refuses_unsafe_zip_and_cli_says_so(tmp_path):
    with zipfile.ZipFile(tmp_path / "bad.zip", "w") as z:
        z.writestr("de-en/ok.txt", "fine")
        z.writestr("../evil.txt", "x")
    message = cli_error("extract", "--archive", tmp_path / "bad.zip", "--out", tmp_path / "bad")
    assert "lnrepro extract: ERROR:" in message and "refusing to extract" in message
    assert leftovers(tmp_path) == ["bad.zip"]


# ---- failures say what happened and where, in one line; nothing half-extracted -------------------
def one_line_error(*argv):
    message = cli_error(*argv)
    assert "\n" not in message and "Traceback" not in message, message
    return message


def make_zip(path, members, compression=zipfile.ZIP_STORED):
    with zipfile.ZipFile(path, "w", compression) as z:
        for name, data in members:
            z.writestr(name, data)
    return path


@pytest.fixture
def small_disk(tmp_path):
    """A 1 MiB tmpfs: a real full disk (ENOSPC)."""
    mount = tmp_path / "small_disk"
    mount.mkdir()
    if os.system(f"mount -t tmpfs -o size=1m tmpfs {mount} 2>/dev/null") != 0:
        pytest.skip("cannot mount a tmpfs here (not root?)")
    yield mount
    os.system(f"umount {mount}")


@pytest.mark.parametrize("kind", ["tgz", "zip"])
def test_extract_on_a_full_disk_says_the_disk_is_full(tmp_path, small_disk, kind):
    big = bytes(3 << 20)  # 3 MiB of zeros: a tiny archive that does not fit on a 1 MiB disk
    members = [("de-en/README", b"small"), ("de-en/train.tags.de-en.de", big)]
    archive = make_tar(tmp_path / "de-en.tgz", members) if kind == "tgz" else \
        make_zip(tmp_path / "de-en.zip", members, zipfile.ZIP_DEFLATED)
    before = archive.read_bytes()
    message = one_line_error("extract", "--archive", archive, "--out", small_disk / "de-en")
    assert message.startswith(f"lnrepro extract: ERROR: {archive}: no space left on the disk holding {small_disk} "
                              f"(ENOSPC) while unpacking")
    assert "corrupt" not in message and "free space" in message
    assert leftovers(small_disk) == []  # no de-en/, no de-en.tmp/
    assert archive.read_bytes() == before  # a good archive is never blamed, nor touched


def test_download_on_a_full_disk_says_so_and_is_not_retried(tmp_path, small_disk):
    (tmp_path / "src.tgz").write_bytes(os.urandom(3 << 20))
    log = io.StringIO()
    with pytest.raises(DownloadError) as e:
        download((tmp_path / "src.tgz").as_uri(), str(small_disk / "de-en.tgz"), retries=3, backoff=0, log=log)
    assert str(e.value).startswith(f"{small_disk / 'de-en.tgz'}: no space left on the disk holding {small_disk} "
                                   f"(ENOSPC) while downloading")
    assert "attempt 2" not in log.getvalue() and leftovers(small_disk) == []


def test_extract_zip_with_a_crc_error_is_one_message(tmp_path):
    archive = make_zip(tmp_path / "RTE.zip", [("RTE/train.tsv", b"index\tsentence1\n" * 100)])
    data = bytearray(archive.read_bytes())
    data[data.index(b"index\tsentence1") + 5] ^= 0xFF  # one payload byte changed: the CRC no longer matches
    archive.write_bytes(bytes(data))
    message = one_line_error("extract", "--archive", archive, "--out", tmp_path / "RTE")
    assert message.startswith(f"lnrepro extract: ERROR: {archive}: not a readable tar/zip archive (")
    assert "CRC" in message and f"delete {archive} and rerun to download it again" in message
    assert leftovers(tmp_path) == ["RTE.zip"]


CLASHES = [("a file, then a file inside it", [("de-en/a", b"x"), ("de-en/a/b", b"y")]),
           ("a folder, then a file of its name", [("de-en/a/b", b"y"), ("de-en/a", b"x")])]


@pytest.mark.parametrize("kind", ["tgz", "zip"])
@pytest.mark.parametrize("case, members", CLASHES, ids=[c[0] for c in CLASHES])
def test_extract_names_a_file_folder_clash(tmp_path, kind, case, members):
    archive = make_tar(tmp_path / "de-en.tgz", members) if kind == "tgz" else make_zip(tmp_path / "de-en.zip", members)
    message = one_line_error("extract", "--archive", archive, "--out", tmp_path / "de-en")
    assert message.startswith(f"lnrepro extract: ERROR: {archive}: 'de-en/a' is both a file and a folder in "
                              f"the archive; refusing to extract")
    assert "nothing was kept" in message
    assert leftovers(tmp_path) == [archive.name]


def test_download_to_a_directory_is_one_message(tmp_path):
    (tmp_path / "src.tgz").write_bytes(b"right")
    (tmp_path / "downloads").mkdir()
    before = snapshot(tmp_path)
    message = one_line_error("download", "--url", tmp_path / "src.tgz", "--out", tmp_path / "downloads")
    assert message == (f"lnrepro download: ERROR: --out {tmp_path / 'downloads'} is a directory: name the file "
                       f"to write, e.g. --out {tmp_path / 'downloads' / 'src.tgz'}")
    assert snapshot(tmp_path) == before


# ---- caps on what an archive may unpack to --------------------------------------------------------
def test_extract_caps_are_far_above_the_real_archives():
    from lnrepro.prepare.extract import MAX_BYTES, MAX_ENTRIES
    # WMT14's largest archive (commoncrawl) unpacks to about 2.5 GB; dev.tgz has a few hundred files
    assert MAX_BYTES >= 20 << 30 and MAX_ENTRIES >= 10_000


@pytest.mark.parametrize("kind", ["tgz", "zip"])
@pytest.mark.parametrize("flag, value, why", [("--max-bytes", "1K", "unpacks to more than 1K bytes"),
                                              ("--max-entries", "3", "has more than 3 entries")])
def test_extract_refuses_an_archive_over_a_cap(tmp_path, kind, flag, value, why):
    members = [(f"de-en/{i}.txt", bytes(300)) for i in range(5)]
    archive = make_tar(tmp_path / "de-en.tgz", members) if kind == "tgz" else make_zip(tmp_path / "de-en.zip", members)
    message = one_line_error("extract", "--archive", archive, "--out", tmp_path / "de-en", flag, value)
    assert message.startswith(f"lnrepro extract: ERROR: {archive}: {why} (the cap, {flag} {value}); "
                              f"refusing to extract it, nothing was kept")
    assert message.endswith(f"unpack it with a higher cap: lnrepro extract --archive {archive} "
                            f"--out {tmp_path / 'de-en'} {flag} {'2K' if flag == '--max-bytes' else '6'}")
    assert leftovers(tmp_path) == [archive.name]
    # a higher cap unpacks it
    main(["extract", "--archive", str(archive), "--out", str(tmp_path / "de-en"), flag, "1M" if flag == "--max-bytes" else "5"])
    assert len(list((tmp_path / "de-en" / "de-en").iterdir())) == 5


# ---- the workflow: a rerun never deletes a file in resources/downloads/ ---------------------------
@pytest.mark.slow
def test_rerun_after_editing_the_sha256_keeps_the_archive_placed_by_hand(tmp_path):
    """The offline route: a download that failed, the archive copied into resources/downloads/ by
    hand, then its sha256 pinned in the config (or corrected, as the mismatch message advises).
    The edit reruns download_archive; Snakemake removes that job's output first, which must not
    be the archive."""
    import yaml
    from workflow_helpers import ROOT, snakemake, workflow_copy
    (tmp_path / "wf").mkdir()
    workdir = workflow_copy(tmp_path / "wf")
    archive = make_tar(tmp_path / "de-en.tgz", [("de-en/train.tags.de-en.de", b"Hallo.\n")])
    placed = workdir / "resources" / "downloads" / "de-en.tgz"
    paper = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())

    def run(pinned):
        cfg = {"corpora": {"iwslt14": {**paper["corpora"]["iwslt14"],
                                       "archives": [{"url": UNREACHABLE, "sha256": pinned}]}}}
        (workdir / "offline.yaml").write_text(yaml.safe_dump(cfg))
        proc = snakemake(workdir, "resources/extracted/de-en", "--cores", "1", "--configfile", "offline.yaml",
                         check=False)
        return proc.returncode, proc.stdout + proc.stderr

    rc, output = run(None)  # offline: the download fails and says where to put the file
    assert rc != 0 and f"place the file there by hand:\n  {placed}" in output
    placed.parent.mkdir(parents=True, exist_ok=True)
    placed.write_bytes(archive.read_bytes())
    assert run(None)[0] == 0
    rc, output = run(sha256(archive.read_bytes()))  # pinned: download_archive reruns, verifies, keeps it
    assert rc == 0, output[-3000:]
    assert placed.read_bytes() == archive.read_bytes()
    assert (workdir / "resources/extracted/de-en/de-en/train.tags.de-en.de").read_bytes() == b"Hallo.\n"
    rc, output = run("ab" * 32)  # a wrong sha256: refused, named, and the file still kept
    assert rc != 0 and "Traceback" not in output
    assert f"sha256 mismatch for resources/downloads/de-en.tgz:\n  expected {'ab' * 32}" in output
    assert "correct the sha256 in the config" in output
    assert placed.read_bytes() == archive.read_bytes()
    assert sorted(p.name for p in placed.parent.iterdir()) == ["de-en.tgz"]
    # another file put there by hand: unpacking names it; deleted as advised, it is fetched again
    assert run(sha256(archive.read_bytes()))[0] == 0
    time.sleep(1)  # a newer modification time than the extracted folder's
    make_tar(placed, [("de-en/other", b"x")])
    rc, output = run(sha256(archive.read_bytes()))
    assert rc != 0 and "lnrepro extract: ERROR: sha256 mismatch for resources/downloads/de-en.tgz:" in output
    assert "Delete it to download it again" in output and placed.exists()
    placed.unlink()
    rc, output = run(sha256(archive.read_bytes()))
    assert rc != 0 and f"cannot download {UNREACHABLE}" in output and "modification time" not in output
