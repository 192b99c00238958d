"""Unpack an archive (.tgz/.tar.gz/.tar/.tar.bz2/.tar.xz/.zip) safely into a new directory.

The archive's sha256 is verified first when one is given (a file placed by hand is checked
here, the downloader checks what it fetches); a mismatch removes the archive. Every member is
checked before it is written: absolute names, `..` components, links that resolve outside the
target, hard links to anything not already extracted, and device files or FIFOs refuse the
whole archive. Members go to `OUT.tmp`, renamed to OUT only when everything was extracted, so
a failure leaves nothing behind.
"""
import os
import posixpath
import shutil
import stat
import sys
import tarfile
import zipfile
import zlib

from .download import ChecksumError, DownloadError, sha256_of


class UnsafeArchive(DownloadError):
    pass


def _safe_name(name, archive):
    """The member's normalised relative path; raises UnsafeArchive."""
    if name.startswith("/") or name.startswith("\\") or (len(name) > 1 and name[1] == ":"):
        raise UnsafeArchive(f"{archive}: member '{name}' has an absolute path; refusing to extract")
    parts = [p for p in name.replace("\\", "/").split("/") if p not in ("", ".")]
    if ".." in parts:
        raise UnsafeArchive(f"{archive}: member '{name}' has a '..' component; refusing to extract")
    return "/".join(parts)


def _inside(target):
    """Whether a normalised posix path stays inside the extraction root."""
    norm = posixpath.normpath(target)
    return not (norm == ".." or norm.startswith("../") or norm.startswith("/"))


def _check_tar_member(m, archive, seen):
    name = _safe_name(m.name, archive)
    if m.issym():
        target = m.linkname
        if target.startswith("/") or not _inside(posixpath.join(posixpath.dirname(name), target)):
            raise UnsafeArchive(f"{archive}: symlink '{m.name}' -> '{target}' points outside the "
                                f"target directory; refusing to extract")
    elif m.islnk():
        target = _safe_name(m.linkname, archive)
        if target not in seen:
            raise UnsafeArchive(f"{archive}: hard link '{m.name}' -> '{m.linkname}' does not point to "
                                f"a file extracted before it; refusing to extract")
    elif m.ischr() or m.isblk() or m.isfifo() or m.isdev():
        raise UnsafeArchive(f"{archive}: member '{m.name}' is a device file or FIFO; refusing to extract")
    elif not (m.isfile() or m.isdir()):
        raise UnsafeArchive(f"{archive}: member '{m.name}' has unsupported type {m.type!r}; refusing to extract")
    return name


def _check_resolved(m, name, dest, archive):
    """Where the member really lands, and where a symlink really points, resolving the links
    extracted before it (a link to "." makes "a/.." look inside while it is the parent)."""
    root = os.path.realpath(dest)
    parent = os.path.realpath(os.path.join(root, os.path.dirname(name)))
    for path in [parent] + ([os.path.realpath(os.path.join(parent, m.linkname))] if m.issym() else []):
        if os.path.commonpath([root, path]) != root:
            raise UnsafeArchive(f"{archive}: member '{m.name}' resolves outside the target directory "
                                f"through a link before it; refusing to extract")


def _extract_tar(archive, dest):
    n = 0
    seen = set()
    with tarfile.open(archive, "r:*") as tar:
        for m in tar:  # streams: members are read and written in one pass
            name = _check_tar_member(m, archive, seen)
            seen.add(name)
            if not name:
                continue
            _check_resolved(m, name, dest, archive)  # also without tarfile's "data" filter (Python < 3.11.4)
            m.name = name
            if m.islnk():
                m.linkname = _safe_name(m.linkname, archive)
            kwargs = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
            tar.extract(m, dest, set_attrs=m.isfile(), **kwargs)
            n += m.isfile()
    return n


def _extract_zip(archive, dest):
    n = 0
    with zipfile.ZipFile(archive) as z:
        for info in z.infolist():
            name = _safe_name(info.filename, archive)
            mode = info.external_attr >> 16
            if stat.S_ISLNK(mode):
                raise UnsafeArchive(f"{archive}: member '{info.filename}' is a symlink; refusing to extract")
            # no file-type bits (Python's ZipFile.writestr writes 0o600) is a plain file, as for unzip
            if stat.S_IFMT(mode) and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                raise UnsafeArchive(f"{archive}: member '{info.filename}' is not a regular file; refusing to extract")
            if not name:
                continue
            path = os.path.join(dest, *name.split("/"))
            if info.is_dir():
                os.makedirs(path, exist_ok=True)
                continue
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with z.open(info) as src, open(path, "wb") as out:
                shutil.copyfileobj(src, out, 1 << 20)
            n += 1
    return n


def verify(archive, sha256, log=sys.stderr):
    """Check a file's sha256; on a mismatch remove it and raise ChecksumError."""
    actual = sha256_of(archive)
    if sha256 and actual != sha256.lower():
        os.remove(archive)
        raise ChecksumError(
            f"sha256 mismatch for {archive}:\n  expected {sha256.lower()}\n  actual   {actual}\n"
            f"The file was removed; rerun to download it again, or place the right file there.")
    if not sha256:
        print(f"WARNING: {archive}: no sha256 configured, not verified (sha256 {actual})", file=log)
    return actual


def extract(archive, out_dir, sha256=None, log=sys.stderr):
    """Verify, then unpack archive into out_dir (created; must not exist). Returns the file count."""
    if not os.path.isfile(archive):
        raise DownloadError(f"{archive}: no such file")
    actual = verify(archive, sha256, log)
    tmp = f"{out_dir.rstrip('/')}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    try:
        if zipfile.is_zipfile(archive):
            n = _extract_zip(archive, tmp)
        else:
            try:
                n = _extract_tar(archive, tmp)
            except (tarfile.TarError, EOFError, OSError, zlib.error) as e:
                if isinstance(e, tarfile.FilterError if hasattr(tarfile, "FilterError") else ()):
                    raise UnsafeArchive(f"{archive}: {e}; refusing to extract") from e
                raise DownloadError(f"{archive}: not a readable tar/zip archive ({e}); "
                                    f"corrupt or truncated? Remove it and rerun.") from e
        if os.path.exists(out_dir):
            shutil.rmtree(out_dir)
        os.replace(tmp, out_dir)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"extract: {archive} (sha256 {actual}): {n} files -> {out_dir}", file=log)
    return n


def add_arguments(p):
    p.add_argument("--archive", required=True)
    p.add_argument("--out", required=True, help="directory to create")
    p.add_argument("--sha256", default=None, help="expected sha256 of the archive (hex)")
    p.add_argument("--log", default=None, help="messages go here (appended); an error also to stderr")


def run(args):
    log = open(args.log, "a", encoding="utf-8") if args.log else None
    try:
        extract(args.archive, args.out, args.sha256, log or sys.stderr)
    except DownloadError as e:
        message = f"lnrepro extract: ERROR: {e}"
        if log:
            print(message, file=log, flush=True)
        sys.exit(message)
    finally:
        if log:
            log.close()
