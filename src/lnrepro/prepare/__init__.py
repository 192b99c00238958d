"""Data preparation as fairseq's examples/translation/prepare-iwslt14.sh does it.

One module per step (tokenize, clean, lowercase, split-valid, bpe-learn, bpe-apply,
binarize). The helpers here are shared by them: line reading with Unix line semantics
(bad input, i.e. bytes that are not UTF-8 or an empty file, is an InputError naming the file
and line), atomic output files, and an order-preserving, memory-bounded parallel line map.
"""
import codecs
import multiprocessing
import os
import sys
from collections import deque
from contextlib import ExitStack, contextmanager
from itertools import chain, islice


class InputError(ValueError):
    """Input a step cannot use (not UTF-8, empty), with the file and line in the message.

    `lnrepro` prints it as one line and exits non-zero (see cli.main)."""


def _decode_error(path):
    """InputError naming the first line of path that is not valid UTF-8 and where in it.

    Text-mode reading decodes a buffer at a time, so its error's position is one inside
    that buffer: the file is scanned again (in binary, only on this error path) to find
    the line."""
    with open(path, "rb") as f:
        for number, raw in enumerate(f, start=1):
            if number == 1 and raw.startswith(codecs.BOM_UTF8):  # read_lines strips it: not a column
                raw = raw[len(codecs.BOM_UTF8):]
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError as e:
                column = len(raw[:e.start].decode("utf-8")) + 1
                return InputError(f"{path}:{number}: not valid UTF-8 (byte 0x{raw[e.start]:02x} at column "
                                  f"{column}); convert the file to UTF-8, e.g. with iconv -t UTF-8")
    return InputError(f"{path}: not valid UTF-8")  # changed while being read


def empty_input(path, what="sentences", hint="check the path, or the step that wrote the file"):
    return InputError(f"{path}: empty: no {what}; {hint}")


def warn(message):
    print(f"WARNING: {message}", file=sys.stderr)


def read_lines(path, empty=None):
    """Lines of a UTF-8 file without their trailing newline.

    newline="\\n" splits on \\n only, like Perl's <FH>; the default universal-newline
    mode would also split on a stray \\r and silently change the line count.
    Bytes that are not UTF-8 raise InputError naming the file, line and column.
    A file without lines raises InputError if empty="error", prints a warning if
    empty="warn", and is read as no lines if empty is None.
    A UTF-8 byte order mark at the file's start (as Windows editors write) is not text: utf-8-sig
    drops it, where utf-8 would glue U+FEFF to the first word and make it a vocabulary token.
    """
    with open(path, encoding="utf-8-sig", newline="\n") as f:
        try:
            first = next(f, None)  # the empty check costs nothing per line
            if first is None:
                if empty == "error":
                    raise empty_input(path)
                if empty == "warn":
                    warn(f"{path}: empty: no sentences (its output is empty too)")
                return
            for line in chain([first], f):
                yield line[:-1] if line.endswith("\n") else line
        except UnicodeDecodeError:
            raise _decode_error(path) from None


def read_parallel(paths, empty=None):
    """Tuples of corresponding lines of several files; ValueError if line counts differ.

    empty: as read_lines's, for each file."""
    iterators = [read_lines(p, empty) for p in paths]
    count = 0
    while True:
        row = [next(it, None) for it in iterators]
        if all(line is None for line in row):
            return
        if any(line is None for line in row):
            counts = [count + (line is not None) + sum(1 for _ in it)
                      for line, it in zip(row, iterators)]
            detail = ", ".join(f"{p}: {n}" for p, n in zip(paths, counts))
            raise ValueError(f"parallel files have different line counts ({detail})")
        count += 1
        yield tuple(row)


@contextmanager
def atomic_path(path):
    """A temporary name (`path.tmp`) to write; renamed to `path` only on success.

    A killed or failing job thus never leaves a partial output that a workflow
    manager would mistake for a finished one.
    """
    tmp = f"{path}.tmp"
    try:
        yield tmp
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
    os.replace(tmp, path)


@contextmanager
def atomic_open(path):
    """Text file (UTF-8, \\n line ends) that appears at `path` only once complete."""
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8", newline="\n") as f:
        yield f


@contextmanager
def atomic_open_all(paths):
    """atomic_open for several files at once: all appear, or none."""
    with ExitStack() as stack:
        yield [stack.enter_context(atomic_open(p)) for p in paths]


def write_lines(f, lines):
    for line in lines:
        f.write(line)
        f.write("\n")


def _chunks(iterable, size):
    it = iter(iterable)
    while chunk := list(islice(it, size)):
        yield chunk


def map_lines(func, in_path, out_path, threads=1, initializer=None, initargs=(),
              chunk_size=500, empty=None):
    """Write func(chunk of lines) for consecutive chunks of in_path to out_path.

    func maps a list of lines to a list of the same length (top-level, so picklable);
    per-process state (a tokenizer, BPE codes) is built once by initializer(*initargs).
    Chunks go to a process pool, at most 4 per worker in flight, and are written in
    input order: memory stays bounded however large the file is. (Pool.imap would
    let its feeder thread run ahead of the writer without limit.)
    Lines are read in this process (read_lines, `empty` as its), so an input error
    names the line's number in the whole file. Returns the number of lines written.
    """
    n = 0
    # the state is built here first: an initializer that fails (malformed BPE codes) stops the
    # command once, where in a Pool the workers would die and be restarted without end
    if initializer:
        initializer(*initargs)
    with atomic_open(out_path) as out:
        if threads <= 1:
            for chunk in _chunks(read_lines(in_path, empty), chunk_size):
                write_lines(out, func(chunk))
                n += len(chunk)
            return n
        with multiprocessing.Pool(threads, initializer, initargs) as pool:
            pending = deque()
            for chunk in _chunks(read_lines(in_path, empty), chunk_size):
                pending.append(pool.apply_async(func, (chunk,)))
                n += len(chunk)
                if len(pending) >= 4 * threads:
                    write_lines(out, pending.popleft().get())
            while pending:
                write_lines(out, pending.popleft().get())
    return n
