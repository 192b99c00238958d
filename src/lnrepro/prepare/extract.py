"""Unpack an archive (.tgz/.tar.gz/.tar/.tar.bz2/.tar.xz/.zip) safely into a new directory.

It never deletes what it did not create. OUT must be missing or an empty directory, and
neither the current directory, one of its parents, nor a directory holding the archive;
anything else is refused with one line naming it, nothing in it touched. The archive's sha256
is verified when one is given (a file placed by hand is checked here, the downloader checks
what it fetches); a mismatch leaves the archive untouched and says how to fix it. Every member
is checked before it is written: absolute names, `..` components, links that resolve outside
the target, hard links to anything not already extracted, and device files or FIFOs refuse
the whole archive, as does a name that is both a file and a folder. An archive that would
unpack to more than --max-bytes or more than --max-entries members (generous caps, far above
the real corpora's archives) is refused too: a zip before anything is written, a tar (read as
a stream) when it reaches the cap. Members go to `OUT.tmp`, made by this call (one that
already exists is refused, not removed) and renamed to OUT only when everything was
extracted, so a failure leaves nothing behind. Every failure is one line naming the archive
and the fix: a full disk says so (ENOSPC) and where, a corrupt archive (bad CRC, truncated)
says to fetch it again.
"""
import lzma
import os
import posixpath
import shutil
import stat
import sys
import tarfile
import zipfile
import zlib

from .fetching import DownloadError, disk_full, no_space, own_temporary, run_command, through_link, verify_present

# WMT14's largest archive (commoncrawl, 876 MB) unpacks to about 2.5 GB; dev.tgz, the one with the
# most members, has a few hundred. Far above both, far below what fills a disk by surprise.
MAX_BYTES = 64 << 30
MAX_ENTRIES = 100_000
UNITS = {"K": 10, "M": 20, "G": 30, "T": 40}


class UnsafeArchive(DownloadError):
    pass


def parse_size(text):
    """Bytes from '123', '64K', '1.5G' (powers of 1024)."""
    text = str(text).strip().upper().removesuffix("B")
    shift = UNITS.get(text[-1:], 0)
    try:
        return int(float(text[:-1] if shift else text) * (1 << shift))
    except ValueError:
        raise ValueError(f"not a size: {text!r} (bytes, or a number with K, M, G or T)") from None


def format_size(n):
    """The shortest exact spelling parse_size reads back: 65536 -> '64K'."""
    for unit, shift in sorted(UNITS.items(), key=lambda u: -u[1]):
        if n and n % (1 << shift) == 0:
            return f"{n >> shift}{unit}"
    return str(n)


class Budget:
    """The caps on one archive: each member is counted before it is written; past a cap the
    whole archive is refused with the command that unpacks it anyway."""

    def __init__(self, archive, out_dir, max_bytes=MAX_BYTES, max_entries=MAX_ENTRIES):
        self.archive, self.out_dir = archive, out_dir
        self.max_bytes, self.max_entries = max_bytes, max_entries
        self.bytes = self.entries = 0

    def take(self, size):
        self.entries += 1
        self.bytes += size
        if self.entries > self.max_entries:
            self._refuse(f"has more than {self.max_entries} entries", "--max-entries", str(self.max_entries),
                         str(max(self.entries, 2 * self.max_entries)))
        if self.bytes > self.max_bytes:
            cap = format_size(self.max_bytes)
            self._refuse(f"unpacks to more than {cap} bytes", "--max-bytes", cap,
                         format_size(max(self.bytes, 2 * self.max_bytes)))

    def _refuse(self, what, flag, cap, higher):
        raise UnsafeArchive(f"{self.archive}: {what} (the cap, {flag} {cap}); refusing to extract it, nothing "
                            f"was kept. If it is the right archive, unpack it with a higher cap: lnrepro extract "
                            f"--archive {self.archive} --out {self.out_dir} {flag} {higher}")


class Layout:
    """Which names are files and which folders: one name cannot be both (tar and unzip would fail
    half-way, or silently drop one of them)."""

    def __init__(self, archive):
        self.archive, self.kinds = archive, {}

    def add(self, name, kind):
        """kind: 'file', 'dir' or 'link' (a symlink: checked where it resolves, see _check_resolved)."""
        parts = name.split("/")
        for i in range(1, len(parts)):
            self._set("/".join(parts[:i]), "dir")
        self._set(name, kind)

    def _set(self, name, kind):
        seen = self.kinds.setdefault(name, kind)
        if {seen, kind} == {"file", "dir"}:
            raise UnsafeArchive(f"{self.archive}: '{name}' is both a file and a folder in the archive; refusing to "
                                f"extract (nothing was kept): the archive is malformed; delete {self.archive} and rerun to "
                                f"download a correct copy")


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


def _extract_tar(archive, dest, budget):
    n = 0
    seen = set()
    layout = Layout(archive)
    with tarfile.open(archive, "r:*") as tar:
        for m in tar:  # streams: members are read and written in one pass
            name = _check_tar_member(m, archive, seen)
            seen.add(name)
            budget.take(m.size if m.isfile() else 0)
            if not name:
                continue
            layout.add(name, "dir" if m.isdir() else "link" if m.issym() else "file")
            _check_resolved(m, name, dest, archive)  # also without tarfile's "data" filter (Python < 3.11.4)
            m.name = name
            if m.islnk():
                m.linkname = _safe_name(m.linkname, archive)
            kwargs = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
            tar.extract(m, dest, set_attrs=m.isfile(), **kwargs)
            n += m.isfile()
    return n


def _zip_members(z, archive, budget):
    """(info, name) of every member to write, all checked (names, types, clashes, caps) before
    any is written: a zip's directory lists them all."""
    members = []
    layout = Layout(archive)
    for info in z.infolist():
        name = _safe_name(info.filename, archive)
        mode = info.external_attr >> 16
        if stat.S_ISLNK(mode):
            raise UnsafeArchive(f"{archive}: member '{info.filename}' is a symlink; refusing to extract")
        # no file-type bits (Python's ZipFile.writestr writes 0o600) is a plain file, as for unzip
        if stat.S_IFMT(mode) and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            raise UnsafeArchive(f"{archive}: member '{info.filename}' is not a regular file; refusing to extract")
        budget.take(0 if info.is_dir() else info.file_size)  # zipfile never reads past file_size
        if name:
            layout.add(name, "dir" if info.is_dir() else "file")
            members.append((info, name))
    return members


def _extract_zip(archive, dest, budget):
    n = 0
    with zipfile.ZipFile(archive) as z:
        for info, name in _zip_members(z, archive, budget):
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
    """Check a file's sha256; a mismatch raises ChecksumError and leaves the file in place."""
    actual = verify_present(archive, sha256)
    if not sha256:
        print(f"WARNING: {archive}: no sha256 configured, not verified (sha256 {actual})", file=log)
    return actual


def _within(path, root):
    return os.path.commonpath([root, path]) == root


def _check_out(out_dir, archive):
    """Refuse an OUT whose contents the final rename would put at risk; only a missing or
    empty directory is safe. Raises DownloadError (one line, naming OUT)."""
    out = os.path.realpath(out_dir)
    if _within(os.path.realpath(os.getcwd()), out):
        why = "is the current directory or one of its parents"
    elif _within(os.path.realpath(archive), out):
        why = f"is or contains the archive {archive}"
    elif os.path.islink(out_dir) or (os.path.lexists(out_dir) and not os.path.isdir(out_dir)):
        why = "exists and is not a directory"
    elif os.path.isdir(out_dir) and os.listdir(out_dir):
        why = "exists and is not empty"
    else:
        return
    raise DownloadError(f"--out {out_dir} {why}; refusing to extract there (nothing in it was touched): "
                        f"name a new or empty directory")


def _unpack(archive, dest, budget):
    """Every member into dest; returns the file count. A failure is one DownloadError: the disk
    (full, or not writable) told apart from the archive (corrupt: a bad CRC, a truncated stream)."""
    try:
        if zipfile.is_zipfile(archive):
            return _extract_zip(archive, dest, budget)
        return _extract_tar(archive, dest, budget)
    except (tarfile.TarError, EOFError, OSError, zlib.error, lzma.LZMAError, zipfile.BadZipFile) as e:
        if isinstance(e, tarfile.FilterError if hasattr(tarfile, "FilterError") else ()):
            raise UnsafeArchive(f"{archive}: {e}; refusing to extract") from e
        if disk_full(e):
            raise no_space(archive, budget.out_dir, f"unpacking (after {budget.bytes} bytes)", e) from e
        if isinstance(e, OSError) and e.errno is not None:  # gzip's and bz2's bad data have none
            raise DownloadError(f"{archive}: cannot write into {os.path.dirname(os.path.abspath(budget.out_dir))} "
                                f"({e.strerror}); nothing was kept: fix that folder and rerun") from e
        raise DownloadError(f"{archive}: not a readable tar/zip archive ({e}); corrupt or truncated? "
                            f"delete {archive} and rerun to download it again") from e


def _move(tmp, out_dir):
    """rename(2) replaces an empty directory only: a file put into OUT meanwhile stays safe."""
    try:
        os.replace(tmp, out_dir)
    except OSError as e:
        raise DownloadError(f"--out {out_dir}: cannot move the extracted files there ({e.strerror}); "
                            f"nothing in it was touched") from e


def extract(archive, out_dir, sha256=None, log=sys.stderr, max_bytes=MAX_BYTES, max_entries=MAX_ENTRIES):
    """Verify, then unpack archive into out_dir (missing, or an empty directory). Returns the file count.
    archive may be the workflow's link to it (download --link): messages name the file itself."""
    archive = through_link(archive)
    if not os.path.isfile(archive):
        raise DownloadError(f"{archive}: no such file")
    _check_out(out_dir, archive)
    actual = verify(archive, sha256, log)
    tmp = f"{os.path.normpath(out_dir)}.tmp"
    os.makedirs(os.path.dirname(os.path.abspath(tmp)), exist_ok=True)
    with own_temporary(tmp, os.mkdir, lambda path: shutil.rmtree(path, ignore_errors=True)):
        n = _unpack(archive, tmp, Budget(archive, out_dir, max_bytes, max_entries))
        _move(tmp, out_dir)
    print(f"extract: {archive} (sha256 {actual}): {n} files -> {out_dir}", file=log)
    return n


def add_arguments(p):
    p.add_argument("--archive", required=True, help="the .tgz/.tar/.zip file")
    p.add_argument("--out", required=True, help="directory to create (or an empty one to fill)")
    p.add_argument("--sha256", default=None, help="expected sha256 of the archive (hex); left out: not checked")
    p.add_argument("--log", default=None,
                   help="messages go here (appended); an error also to stderr; left out: stderr only")
    p.add_argument("--max-bytes", type=parse_size, default=format_size(MAX_BYTES),  # argparse parses it too
                   help="refuse an archive that unpacks to more (bytes, or a number with K, M, G or T)")
    p.add_argument("--max-entries", type=int, default=MAX_ENTRIES, help="refuse an archive with more members")


def run(args):
    run_command("extract", args.log, lambda log: extract(args.archive, args.out, args.sha256, log or sys.stderr,
                                                         args.max_bytes, args.max_entries))
