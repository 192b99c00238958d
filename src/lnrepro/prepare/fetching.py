"""What the download and extract commands share: their one error type, the sha256 of a file they
did not create, temporaries they own, a full disk said as such, and running as a command that
fails with one message.
"""
import errno
import hashlib
import os
import signal
import sys
from contextlib import contextmanager

CHUNK = 1 << 20


class DownloadError(Exception):
    """A download that cannot succeed; the message is the whole explanation."""


class ChecksumError(DownloadError):
    pass


def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(CHUNK):
            h.update(block)
    return h.hexdigest()


def checksum_mismatch(what, expected, actual, outcome):
    """The one wording of a wrong sha256: both hashes, then what became of the file."""
    return f"sha256 mismatch for {what}:\n  expected {expected}\n  actual   {actual}\n{outcome}"


def verify_present(path, sha256):
    """The sha256 of a file this call did not create; a mismatch raises ChecksumError and
    leaves the file as it is (it may have been placed by hand: the tool cannot tell)."""
    actual = sha256_of(path)
    if sha256 and actual != sha256.lower():
        raise ChecksumError(checksum_mismatch(
            path, sha256.lower(), actual,
            "The file was left untouched (this run did not create it; it may have been placed by hand). "
            "Delete it to download it again, or correct the sha256 in the config."))
    return actual


def disk_full(e):
    return isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT)


def no_space(what, path, doing, e):
    """The one wording of a full disk (or quota): which file, which folder's disk, the fix."""
    where = os.path.dirname(os.path.abspath(path))
    return DownloadError(f"{what}: no space left on the disk holding {where} ({errno.errorcode[e.errno]}) "
                         f"while {doing}; nothing was kept: free space there (df -h {where}) and rerun")


def through_link(path):
    """The file a symbolic link points to (its target joined to the link's folder), so that a
    message names the file to fix, not the workflow's link to it; any other path as it is."""
    if not os.path.islink(path):
        return path
    return os.path.normpath(os.path.join(os.path.dirname(path), os.readlink(path)))


@contextmanager
def own_temporary(path, create, remove):
    """`path` made by create(path), removed by remove(path) if the block fails. create must
    fail on an existing path (os.mkdir, open(..., "x")): one that exists was not made by this
    call, so it is refused, never overwritten or removed."""
    try:
        create(path)
    except FileExistsError:
        raise DownloadError(f"{path} already exists and this run did not create it (left by an interrupted "
                            f"run?); it was left untouched: delete it yourself and rerun") from None
    try:
        yield path
    except BaseException:
        remove(path)
        raise


def log_line(log, msg):
    """One progress line to the log file, or to stderr without one."""
    print(msg, file=log or sys.stderr, flush=True)


@contextmanager
def _exit_on_sigterm(command):
    """A job its scheduler terminates (SIGTERM) still runs its clean-up, so it leaves no
    `OUT.tmp` behind that the next run would have to refuse."""
    def terminate(signum, frame):
        raise SystemExit(f"lnrepro {command}: terminated (SIGTERM)")
    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def run_command(command, log_path, work):
    """Run work(log) as `lnrepro COMMAND`: a DownloadError, or an OSError (a file that cannot be
    read or written), ends it with one message on stderr (and in the log, appended to log_path),
    never a traceback."""
    log = open(log_path, "a", encoding="utf-8") if log_path else None
    try:
        with _exit_on_sigterm(command):
            work(log)
    except (DownloadError, OSError) as e:
        if isinstance(e, OSError):  # not foreseen where it happened: the file and the system's reason
            e = f"{e.filename or 'a file'}: {e.strerror or e}; fix that file or its folder and rerun"
        message = f"lnrepro {command}: ERROR: {e}"
        if log:
            log_line(log, message)
        sys.exit(message)
    finally:
        if log:
            log.close()
