"""Fetch one file (an archive of a corpus) to a path, verified by its sha256.

Sources: http(s):// and file:// URLs and plain paths. The bytes go to `OUT.tmp` and are
renamed to OUT only once complete and verified, so an interrupted download never looks
finished. Never delete what the tool did not create: a fetched file whose sha256 is wrong
was made by this call and is removed; an OUT already present (downloaded before, or placed
by hand) is verified and, when its sha256 is wrong, left untouched with an error saying how
to fix it; an `OUT.tmp` this call did not create is refused, not overwritten. Network errors
are retried with exponential backoff; when every attempt fails, one message says which URL
could not be fetched and where to put the file by hand (a cluster's compute nodes often have
no network while its login node does).

With --link, a symbolic link to OUT is made once OUT is verified: the workflow's output. Snakemake
removes a job's outputs before it reruns the job (after the URL or sha256 in the config changed);
it then removes only the link, and the file it points to, downloaded or placed by hand, is
verified again against the new sha256 and kept.
"""
import hashlib
import http.client
import os
import time
import urllib.error
import urllib.parse
import urllib.request

from .fetching import (CHUNK, ChecksumError, DownloadError, checksum_mismatch, disk_full, log_line, no_space,
                       own_temporary, run_command, verify_present)


class _Retryable(Exception):
    pass


def _create_file(path):
    open(path, "xb").close()


def _local_path(url):
    """The filesystem path of a file:// URL or plain path; None for network URLs."""
    parsed = urllib.parse.urlparse(url)
    if parsed.scheme == "file":
        return urllib.request.url2pathname(parsed.path)
    if parsed.scheme in ("http", "https", "ftp"):
        return None
    if parsed.scheme and len(parsed.scheme) > 1:
        raise DownloadError(f"unsupported URL scheme '{parsed.scheme}:' in {url} (http, https, file or a path)")
    return url


class Pace:
    """When a download must stop: past its deadline (seconds since the first attempt, over all attempts),
    or slower than min_rate bytes/s on average once an attempt has run `grace` seconds. The socket
    timeout alone never cut off a server that drips a byte at a time under it."""

    def __init__(self, deadline, min_rate, grace=120.0):
        self.end, self.min_rate, self.grace = time.monotonic() + deadline, min_rate, grace
        self.deadline = deadline

    def check(self, started, n):
        now = time.monotonic()
        if now > self.end:
            raise DownloadError(f"stopped after the download's deadline of {self.deadline:.0f} s ({n} bytes of this "
                                f"attempt): raise --deadline for a slow link, or fetch the file by hand")
        if now - started > self.grace and n / (now - started) < self.min_rate:
            raise _Retryable(f"too slow: {n / (now - started):.0f} bytes/s over {now - started:.0f} s "
                             f"(under {self.min_rate:.0f})")


def _copy_stream(src, dst, expected_size=None, pace=None):
    """Copy src to the open file dst; returns (bytes, sha256)."""
    h, n, started = hashlib.sha256(), 0, time.monotonic()
    read = getattr(src, "read1", src.read)  # what has arrived, not a whole chunk: a drip is seen as one
    while block := read(CHUNK):
        try:
            dst.write(block)
        except OSError as e:  # not a network error: retrying would not help, and it must not say so
            out = dst.name.removesuffix(".tmp")  # the file being written is OUT.tmp
            if disk_full(e):
                raise no_space(out, out, f"downloading (after {n} bytes)", e) from e
            raise DownloadError(f"{out}: cannot write ({e.strerror}); fix its folder and rerun") from e
        h.update(block)
        n += len(block)
        if pace:
            pace.check(started, n)
    if expected_size is not None and n != expected_size:
        raise _Retryable(f"connection closed after {n} of {expected_size} bytes")
    return n, h.hexdigest()


def _fetch_once(url, tmp, timeout, pace=None):
    local = _local_path(url)
    with open(tmp, "wb") as out:
        if local is not None:
            if not os.path.isfile(local):
                raise DownloadError(f"{url}: no such file")
            with open(local, "rb") as src:
                return _copy_stream(src, out)
        try:
            with urllib.request.urlopen(url, timeout=timeout) as response:
                length = response.headers.get("Content-Length")
                return _copy_stream(response, out, int(length) if length and length.isdigit() else None, pace)
        except urllib.error.HTTPError as e:
            if e.code in (408, 429) or e.code >= 500:
                raise _Retryable(f"HTTP {e.code} {e.reason}") from e
            raise DownloadError(f"{url}: HTTP {e.code} {e.reason}") from e
        except (urllib.error.URLError, OSError, TimeoutError) as e:
            reason = getattr(e, "reason", e)
            raise _Retryable(str(reason)) from e
        except http.client.HTTPException as e:  # e.g. IncompleteRead: a chunked body cut off
            raise _Retryable(str(e) or type(e).__name__) from e


def manual_placement_hint(url, out, sha256):
    dest = os.path.abspath(out)
    pinned = f"\n  expected sha256: {sha256}" if sha256 else ""
    return (f"Download it on a machine with network access (e.g. the cluster's login node):\n"
            f"  wget -O {dest} '{url}'\n"
            f"or place the file there by hand:\n  {dest}{pinned}\n"
            f"then rerun Snakemake; it is verified and nothing is downloaded again.")


def make_link(out, link):
    """link -> out, a relative symbolic link. A link already there is replaced (a link holds no
    data); anything else at that path is refused, untouched."""
    if os.path.lexists(link) and not os.path.islink(link):
        raise DownloadError(f"--link {link} exists and is not a symbolic link; it was left untouched: "
                            f"move it away and rerun")
    os.makedirs(os.path.dirname(os.path.abspath(link)), exist_ok=True)
    if os.path.islink(link):
        os.remove(link)
    os.symlink(os.path.relpath(os.path.abspath(out), os.path.dirname(os.path.abspath(link))), link)


def download(url, out, sha256=None, retries=3, backoff=1.0, timeout=60, log=None, link=None, pace=None):
    """Fetch url to out (atomically); returns the file's sha256. Raises DownloadError.

    An out already present is only verified, never replaced or removed; what is removed on a
    failure is only what this call created (OUT.tmp, the fetched bytes). link: made to point
    to out once out is verified (see the module's docstring)."""
    if os.path.isdir(out):
        name = os.path.basename(urllib.parse.urlparse(url).path.rstrip("/")) or "FILE"
        raise DownloadError(f"--out {out} is a directory: name the file to write, e.g. --out {os.path.join(out, name)}")
    actual = _download(url, out, sha256.lower() if sha256 else None, max(1, retries), backoff, timeout, log, pace)
    if link:
        make_link(out, link)
    return actual


def _download(url, out, sha256, retries, backoff, timeout, log, pace):
    name = os.path.basename(out)
    if os.path.exists(out):  # no marker tells whether this tool wrote it: a mismatch keeps it
        actual = verify_present(out, sha256)
        log_line(log, f"download: {out} already present (sha256 {actual}); nothing downloaded")
        return actual
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    errors = []
    with own_temporary(f"{out}.tmp", _create_file, os.remove) as tmp:
        for attempt in range(1, retries + 1):
            try:
                log_line(log, f"download: {url} -> {out} (attempt {attempt}/{retries})")
                t0 = time.time()
                size, actual = _fetch_once(url, tmp, timeout, pace)
                break
            except _Retryable as e:
                errors.append(str(e))
                log_line(log, f"download: attempt {attempt} failed: {e}")
                if attempt < retries:
                    time.sleep(backoff * 2 ** (attempt - 1))
        else:
            raise DownloadError(
                f"cannot download {url} ({errors[-1]}; {retries} attempts).\n"
                f"This machine may have no network access. " + manual_placement_hint(url, out, sha256))
        if sha256 is not None and actual != sha256:  # fetched by this call: removing it loses nothing
            raise ChecksumError(checksum_mismatch(
                f"{name} from {url}", sha256, actual,
                "The downloaded file was removed (nothing is kept). Check the URL and the sha256 in the config."))
        os.replace(tmp, out)
    rate = size / max(time.time() - t0, 1e-6) / 1e6
    log_line(log, f"download: {name}: {size} bytes ({rate:.1f} MB/s), sha256 {actual}")
    if sha256 is None:  # on the terminal too (the job's stderr), not in the log only
        warning = f"WARNING: no sha256 configured for {name}: not verified. To pin it, set\n  sha256: {actual}\nfor {url} in the config."
        log_line(log, warning)
        if log:
            log_line(None, f"lnrepro download: {warning}")
    return actual


def add_arguments(p):
    p.add_argument("--url", required=True, help="http(s):// or file:// URL, or a path")
    p.add_argument("--out", required=True, help="destination file")
    p.add_argument("--sha256", default=None, help="expected sha256 (hex); unchecked if omitted")
    p.add_argument("--retries", type=int, default=3, help="attempts on network errors")
    p.add_argument("--backoff", type=float, default=2.0,
                   help="seconds before the 2nd attempt, doubled for each further one")
    p.add_argument("--timeout", type=float, default=60, help="socket timeout in seconds")
    p.add_argument("--deadline", type=float, default=86400,
                   help="seconds for the whole download, every attempt included (default a day)")
    p.add_argument("--min-rate", type=float, default=1000,
                   help="bytes/s an attempt must average once it has run 2 minutes, else it is retried")
    p.add_argument("--log", default=None,
                   help="progress goes here (appended); a failure is also printed to stderr")
    p.add_argument("--link", default=None,
                   help="once OUT is verified, make this path a symbolic link to it (the workflow's "
                        "output: removing and remaking it never touches OUT)")


def run(args):
    run_command("download", args.log, lambda log: download(
        args.url, args.out, args.sha256, args.retries, args.backoff, args.timeout, log, args.link,
        Pace(args.deadline, args.min_rate)))
