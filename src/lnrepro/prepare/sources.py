"""Shared steps of the real-corpus recipes: finding archive members, `<seg>` extraction, and
writing a corpus's raw directory (train/valid/test per language) all at once or not at all."""
import os
import re
import shutil
import sys
from contextlib import contextmanager

# GNU sed's \s in a UTF-8 locale (glibc's "space" class: no no-break spaces)
SED_SPACE = "[ \t\n\x0b\x0c\r\u1680\u2000-\u2006\u2008-\u200a\u2028\u2029\u205f\u3000]"
_SEG_OPEN = re.compile(r'<seg id="[0-9]*">' + SED_SPACE + "*")
_SEG_CLOSE = re.compile(SED_SPACE + r"*</seg>" + SED_SPACE + "*")


def seg_text(lines):
    """The recipes' `grep '<seg id' | sed -e 's/<seg id="[0-9]*">\\s*//g'
    | sed -e 's/\\s*<\\/seg>\\s*//g' | sed -e "s/\\’/\\'/g"` on an XML/SGML file's lines."""
    for line in lines:
        if "<seg id" in line:
            yield _SEG_CLOSE.sub("", _SEG_OPEN.sub("", line)).replace("\u2019", "'")


class MissingMember(FileNotFoundError):
    pass


def find_member(roots, relpath):
    """roots[i]/relpath for the first root that has it; else a unique file of that name anywhere
    below the roots (an archive repacked with another top folder); else MissingMember."""
    for root in roots:
        path = os.path.join(root, relpath)
        if os.path.isfile(path):
            return path
    base = os.path.basename(relpath)
    hits = sorted(os.path.join(d, base) for root in roots for d, _, files in os.walk(root) if base in files)
    if len(hits) == 1:
        return hits[0]
    where = ", ".join(roots)
    if hits:
        raise MissingMember(f"'{relpath}' is ambiguous below {where}: {hits}")
    raise MissingMember(f"no '{relpath}' below {where} (is the right archive configured?)")


def find_any(roots, names):
    """The first of several candidate relative paths or file names that exists below the roots."""
    errors = []
    for name in names:
        try:
            return find_member(roots, name)
        except MissingMember as e:
            errors.append(str(e))
    raise MissingMember(" / ".join(errors))


@contextmanager
def raw_directory(out_dir):
    """A temporary directory that becomes out_dir only if the block succeeds."""
    out_dir = out_dir.rstrip("/")
    tmp = f"{out_dir}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    try:
        yield tmp
        if os.path.exists(out_dir):
            shutil.rmtree(out_dir)
        os.replace(tmp, out_dir)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def write_parallel(paths, columns, what):
    """Write parallel line streams (one iterable per file); ValueError if their lengths differ.
    Returns the line count."""
    iterators = [iter(c) for c in columns]
    files = [open(p, "w", encoding="utf-8", newline="\n") for p in paths]
    n = 0
    try:
        while True:
            row = [next(it, None) for it in iterators]
            if all(x is None for x in row):
                return n
            if any(x is None for x in row):
                rest = [n + (x is not None) + sum(1 for _ in it) for x, it in zip(row, iterators)]
                raise ValueError(f"{what}: the sides have different line counts "
                                 f"({', '.join(f'{os.path.basename(p)}: {k}' for p, k in zip(paths, rest))})")
            for f, line in zip(files, row):
                f.write(line)
                f.write("\n")
            n += 1
    finally:
        for f in files:
            f.close()


def log(msg):
    print(msg, file=sys.stderr, flush=True)
