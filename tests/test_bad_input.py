"""Bad input to the prepare steps: one line naming the file and line, non-zero exit, no output left.

The real commands (lnrepro.cli.main) on real files: invalid UTF-8 on line 3 of a 5-line file, and
an empty file.
"""
import os
import subprocess
import sys

import pytest

from lnrepro.cli import main

BAD = b"one\ntwo\nthr\xe9e words\nfour\nfive\n"  # Latin-1 e-acute: line 3, column 4
GOOD = b"a\nb\nc\nd\ne\n"


def fail(argv, capsys):
    """Run lnrepro; it must exit non-zero with a one-line message on stderr, which is returned."""
    with pytest.raises(SystemExit) as e:
        main([str(a) for a in argv])
    message = str(e.value.code)
    assert e.value.code != 0 and "\n" not in message
    assert "Traceback" not in capsys.readouterr().err
    return message


def files(tmp_path, **contents):
    paths = {}
    for name, data in contents.items():
        paths[name] = tmp_path / f"{name}.txt"
        paths[name].write_bytes(data)
    return paths


def left(tmp_path, inputs):
    """Files in tmp_path other than the inputs (outputs and their .tmp files)."""
    return sorted(set(os.listdir(tmp_path)) - {p.name for p in inputs.values()})


def assert_names_line_3(message, path):
    assert f"{path}:3: not valid UTF-8 (byte 0xe9 at column 4)" in message


@pytest.mark.parametrize("threads", ["1", "2"])  # 2: the multi-process path (map_lines' Pool)
def test_tokenize_invalid_utf8(tmp_path, capsys, threads):
    f = files(tmp_path, bad=BAD)
    message = fail(["tokenize", "--lang", "en", "--threads", threads, "--input", f["bad"],
                    "--output", tmp_path / "out.tok"], capsys)
    assert message.startswith("lnrepro tokenize: ERROR: ")
    assert_names_line_3(message, f["bad"])
    assert left(tmp_path, f) == []


def test_tokenize_parallel_names_global_line(tmp_path, capsys):
    """A bad line many chunks into the file: its number in the whole file, not in a chunk or buffer."""
    lines = [f"line {i} \u00e9".encode() for i in range(1, 5001)]
    lines[3456] = b"ok \xc3\xa9 \xff"  # line 3457; the valid two-byte character before it counts as one column
    f = files(tmp_path, big=b"\n".join(lines) + b"\n")
    message = fail(["tokenize", "--lang", "en", "--threads", "2", "--input", f["big"],
                    "--output", tmp_path / "out.tok"], capsys)
    assert f"{f['big']}:3457: not valid UTF-8 (byte 0xff at column 6)" in message
    assert left(tmp_path, f) == []


def test_clean_invalid_utf8(tmp_path, capsys):
    f = files(tmp_path, good=GOOD, bad=BAD)
    message = fail(["clean", "--src-in", f["good"], "--tgt-in", f["bad"],
                    "--src-out", tmp_path / "out.src", "--tgt-out", tmp_path / "out.tgt"], capsys)
    assert_names_line_3(message, f["bad"])
    assert left(tmp_path, f) == []


def test_prepare_local_invalid_utf8(tmp_path, capsys):
    f = files(tmp_path, good=GOOD, bad=BAD)
    message = fail(["prepare-local", "--src-lang", "de", "--tgt-lang", "en", "--train", f["good"], f["good"],
                    "--test", f["bad"], f["good"], "--out-dir", tmp_path / "raw"], capsys)
    assert_names_line_3(message, f["bad"])
    assert left(tmp_path, f) == []


def test_bpe_learn_invalid_utf8(tmp_path, capsys):
    f = files(tmp_path, good=GOOD, bad=BAD)
    message = fail(["bpe-learn", "--inputs", f["good"], f["bad"], "--codes", tmp_path / "codes"], capsys)
    assert_names_line_3(message, f["bad"])
    assert left(tmp_path, f) == []


@pytest.mark.parametrize("threads", ["1", "2"])
def test_tokenize_empty(tmp_path, capsys, threads):
    f = files(tmp_path, empty=b"")
    message = fail(["tokenize", "--lang", "en", "--threads", threads, "--input", f["empty"],
                    "--output", tmp_path / "out.tok"], capsys)
    assert f"{f['empty']}: empty: no sentences" in message
    assert left(tmp_path, f) == []


def test_clean_empty(tmp_path, capsys):
    f = files(tmp_path, empty=b"", good=GOOD)
    message = fail(["clean", "--src-in", f["good"], "--tgt-in", f["empty"],
                    "--src-out", tmp_path / "out.src", "--tgt-out", tmp_path / "out.tgt"], capsys)
    assert f"{f['empty']}: empty: no sentences" in message
    assert left(tmp_path, f) == []


def test_clean_no_pair_left(tmp_path, capsys):
    f = files(tmp_path, one=b"a\n", seven=b"a b c d e f g\n")  # ratio 7 > 1.5: dropped
    message = fail(["clean", "--src-in", f["one"], "--tgt-in", f["seven"],
                    "--src-out", tmp_path / "out.src", "--tgt-out", tmp_path / "out.tgt"], capsys)
    assert f"{f['one']}, {f['seven']}: empty: no pairs after cleaning (of 1)" in message
    assert left(tmp_path, f) == []


def test_bpe_learn_empty(tmp_path, capsys):
    f = files(tmp_path, empty=b"", good=GOOD)
    message = fail(["bpe-learn", "--inputs", f["good"], f["empty"], "--codes", tmp_path / "codes"], capsys)
    assert f"{f['empty']}: empty: no sentences" in message and "max()" not in message
    assert left(tmp_path, f) == []


def test_bpe_learn_nothing_to_merge(tmp_path, capsys):
    f = files(tmp_path, blank=b"\n  \n\n")
    message = fail(["bpe-learn", "--inputs", f["blank"], "--codes", tmp_path / "codes"], capsys)
    assert str(f["blank"]) in message and "no word of two or more characters" in message
    assert left(tmp_path, f) == []


def test_prepare_local_empty(tmp_path, capsys):
    f = files(tmp_path, empty=b"", good=GOOD)
    message = fail(["prepare-local", "--src-lang", "de", "--tgt-lang", "en", "--train", f["empty"], f["empty"],
                    "--test", f["good"], f["good"], "--out-dir", tmp_path / "raw"], capsys)
    assert f"{f['empty']}: empty: no sentences" in message
    assert left(tmp_path, f) == []


def test_bpe_apply_empty_warns(tmp_path, capsys):
    """Empty is legitimate here (split-valid only warns about an empty valid part): a warning, an empty output."""
    f = files(tmp_path, empty=b"", codes=b"a b\n")
    assert main(["bpe-apply", "--codes", str(f["codes"]), "--input", str(f["empty"]),
                 "--output", str(tmp_path / "out.bpe")]) == 0
    assert f"WARNING: {f['empty']}: empty: no sentences" in capsys.readouterr().err
    assert (tmp_path / "out.bpe").read_bytes() == b""


def test_split_valid_empty_valid_part_warns(tmp_path, capsys):
    f = files(tmp_path, a=b"x\ny\n", b=b"u\nv\n")
    outs = [tmp_path / n for n in ("ta", "tb", "va", "vb")]
    assert main(["split-valid", "--every", "23", "--inputs", str(f["a"]), str(f["b"]),
                 "--train-outputs", str(outs[0]), str(outs[1]), "--valid-outputs", str(outs[2]), str(outs[3])]) == 0
    assert "the valid split is empty" in capsys.readouterr().err
    assert outs[0].read_bytes() == b"x\ny\n" and outs[2].read_bytes() == b""


def test_bpe_apply_malformed_codes_stops_with_workers_too(tmp_path):
    """A Pool restarts workers that die in their initializer without end (this hung before): the
    codes are loaded once before the workers start, so the command stops with subword-nmt's error."""
    f = files(tmp_path, codes=b"#version: 0.2\nthree fields here\n", text=GOOD)
    proc = subprocess.run([sys.executable, "-m", "lnrepro.cli", "bpe-apply", "--codes", f["codes"], "--input",
                           f["text"], "--output", tmp_path / "out.txt", "--threads", "2"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and "invalid line 2 in BPE codes file" in proc.stderr
    assert left(tmp_path, f) == []
