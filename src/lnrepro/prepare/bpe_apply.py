"""Segment tokenized text with learned BPE codes (subword-nmt apply-bpe, "@@ " separator)."""
from subword_nmt.apply_bpe import BPE

from . import map_lines

_state = {}  # per worker process: the BPE model, loaded once


def _init(codes_path):
    with open(codes_path, encoding="utf-8") as codes:
        _state["bpe"] = BPE(codes)


def _apply_chunk(lines):
    bpe = _state["bpe"]
    return [bpe.process_line(line) for line in lines]


def apply_bpe_file(codes_path, in_path, out_path, threads=1):
    # every split goes through here, and split-valid only warns when its valid part is empty
    return map_lines(_apply_chunk, in_path, out_path, threads, _init, (codes_path,), empty="warn")


def add_arguments(p):
    p.add_argument("--codes", required=True, help="BPE codes from lnrepro bpe-learn")
    p.add_argument("--input", required=True, help="text file to read")
    p.add_argument("--output", required=True, help="text file to write")
    p.add_argument("--threads", type=int, default=1, help="worker processes")


def run(args):
    apply_bpe_file(args.codes, args.input, args.output, args.threads)
