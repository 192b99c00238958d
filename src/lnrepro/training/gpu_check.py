"""`lnrepro gpu-check`: one prepared check of the CUDA path at the papers' size, as one table.

GPU time comes rarely and briefly, so everything runs from one command, each stage a process of its
own with its own time limit (a crash or hang costs that stage only), in order of what matters most,
until an overall budget is spent; the table is rewritten after every stage, so a killed check still
leaves what it measured:

1. tests: `pytest -m cuda` (tests/test_cuda_path.py: fp16 with fairseq's loss scaler, bf16, SDPA,
   the fused/foreach optimizers, DDP's step, beam search, a run trained and decoded on the device);
2. train: a real `lnrepro train` of Liu et al.'s IWSLT recipe (Transformer-Clinic's "small" model,
   6+6, d 512, FFN 1024, 4 heads, 4,096-token batches, RAdam) for a fixed number of updates in fp16
   with the loss scaler (the Liu runs' precision) and in bf16, then `lnrepro evaluate` (beam 5);
3. bench: `lnrepro bench` at the IWSLT and the WMT-base size in fp32, bf16 and fp16: our model's
   training tokens/s against torch.nn.Transformer's, and MFU against the matmul peak measured in
   the same process;
4. plan: the cost plan's assumed throughput (lnrepro.analyses.plan.Throughput) against the
   measured updates/s.

`--size toy` runs the same stages at toy size on any device (CI runs it on the CPU).
"""
import csv
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

from ..core.toy_corpus import write_reversal_corpus

COLUMNS = ["stage", "item", "value", "unit", "detail"]
REPO = Path(__file__).resolve().parents[3]  # the checkout: tests/ beside src/
# IWSLT14 de-en at 4,096 tokens per update: the plan's estimate (lnrepro.analyses.plan:
# 160,239 pairs x 28 batch tokens per pair / 4,096), and its test set (fairseq's prepare-iwslt14.sh)
IWSLT14_PAIRS, IWSLT14_TEST_SENTENCES = 160_239, 6_750

# Liu et al.'s IWSLT recipe (config/config.yaml: liu_iwslt_pre_seed1, model iwslt_admin, the
# clinic_fp16 settings), Pre-LN so that a short run is stable in either precision
PAPER_TRAIN = {"enc-layers": 6, "dec-layers": 6, "d-model": 512, "ffn-dim": 1024, "heads": 4, "dropout": 0.3,
               "attn-dropout": 0.1, "act-dropout": 0.1, "share-all-embeddings": "true", "enc-norm": "pre",
               "dec-norm": "pre", "optimizer": "radam", "optimizer-impl": "fairseq", "lr": 7e-4, "warmup": 6000,
               "warmup-init-lr": 1e-7, "weight-decay": 1e-4, "max-tokens": 4096, "fp16-scale-window": 256,
               "threshold-loss-scale": 0.03125, "seed": 1}
TOY_TRAIN = {"enc-layers": 2, "dec-layers": 2, "d-model": 32, "ffn-dim": 64, "heads": 4, "dropout": 0.0,
             "enc-norm": "pre", "dec-norm": "pre", "lr": 2e-3, "schedule": "constant", "warmup": 0, "max-tokens": 200,
             "seed": 1}
TRAIN = {"paper": PAPER_TRAIN, "toy": TOY_TRAIN}
# bench sizes: the papers' IWSLT model (~10K joint BPE vocabulary) and WMT base (37K, Xiong et al.'s
# 8,192-token batches); sentences of 24 and 28 tokens, about the corpora's means
BENCH = {
    "paper": {"iwslt": {"d-model": 512, "ffn-dim": 1024, "heads": 4, "layers": 6, "vocab": 10_000,
                        "batch-tokens": 4096, "src-len": 24, "dropout": 0.1, "norm": "post"},
              "wmt_base": {"d-model": 512, "ffn-dim": 2048, "heads": 8, "layers": 6, "vocab": 37_000,
                           "batch-tokens": 8192, "src-len": 28, "dropout": 0.1, "norm": "post"}},
    "toy": {"iwslt": {"d-model": 16, "ffn-dim": 32, "heads": 2, "layers": 1, "vocab": 50, "batch-tokens": 64,
                      "src-len": 8, "steps": 2, "warmup-steps": 1, "repeats": 2, "decode-sentences": 4,
                      "peak-size": 128},
            "wmt_base": {"d-model": 16, "ffn-dim": 64, "heads": 4, "layers": 1, "vocab": 80, "batch-tokens": 64,
                         "src-len": 8, "steps": 2, "warmup-steps": 1, "repeats": 2, "decode-sentences": 4,
                         "peak-size": 128}},
}
PRECISIONS = ("bf16", "fp16", "fp32")


def add_arguments(p):
    p.add_argument("--size", choices=("paper", "toy"), default="paper",
                   help="paper: the papers' model sizes (a GPU); toy: the same stages in seconds on any device")
    p.add_argument("--data", default=None,
                   help="binarized corpus to train on (its dictionaries, train/valid/test.pt); left out: a toy reversal corpus")
    p.add_argument("--reference", default=None, help="the test split's tokenized reference (with --data)")
    p.add_argument("--device", default="auto", help="auto (cuda if available), cuda or cpu")
    p.add_argument("--epochs", type=int, default=None, help="training rounds (paper: 3, toy: 2)")
    p.add_argument("--round-updates", type=int, default=None, help="updates per round (paper: 150, toy: 5)")
    p.add_argument("--budget-s", type=float, default=450, help="stages that would start after this many seconds are skipped")
    p.add_argument("--stages", default="tests,train,bench,plan", help="which stages, comma-separated")
    p.add_argument("--out", default="results/gpu_check", help="folder: gpu_check.csv, gpu_check.md and each stage's files")


class Check:
    """The table, rewritten after every stage, and the stages' processes."""

    def __init__(self, args):
        self.args, self.out = args, Path(args.out)
        self.out.mkdir(parents=True, exist_ok=True)
        self.rows, self.start = [], time.time()
        self.results = {}  # what the plan stage compares: per training and bench, the measured rates
        self.data, self.reference = corpus(args, self.out)
        self.env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p), "PYTHONUNBUFFERED": "1"}

    def row(self, stage, item, value, unit="", detail=""):
        self.rows.append({"stage": stage, "item": item, "value": value, "unit": unit, "detail": detail})
        self.write()

    def write(self):
        with open(self.out / "gpu_check.csv", "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=COLUMNS)
            writer.writeheader()
            writer.writerows(self.rows)
        (self.out / "gpu_check.md").write_text(markdown(self.rows))

    def left(self):
        return self.args.budget_s - (time.time() - self.start)

    def run(self, stage, name, cmd, limit):
        """Run cmd (its output in OUT/NAME.log); None if it ran and exited 0, else why not (a row says so)."""
        if self.left() < 10:
            self.row(stage, name, "skipped", "", f"budget of {self.args.budget_s:g} s spent")
            return "skipped"
        cut = self.left() < limit  # the budget ends first
        limit = min(limit, self.left())
        log = self.out / f"{name}.log"
        t0 = time.time()
        with open(log, "w") as f:
            try:
                proc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, env=self.env, timeout=limit, cwd=REPO)
            except subprocess.TimeoutExpired:
                if cut:  # not the stage's fault: what the budget left it was too short
                    self.row(stage, name, "cut off", "", f"by the budget after {limit:.0f} s; see {log.name}")
                    return "cut off"
                self.row(stage, name, "timed out", "s", f"killed after {limit:.0f} s; see {log.name}")
                return "timed out"
        print(f"gpu-check: {name}: exit {proc.returncode} in {time.time() - t0:.0f} s", file=sys.stderr, flush=True)
        if proc.returncode:
            tail = log.read_text(errors="replace").strip().splitlines()[-1:] or [""]
            self.row(stage, name, "failed", "", f"exit {proc.returncode}: {tail[0][-200:]} (see {log.name})")
            return "failed"
        return None


def lnrepro(*args):
    return [sys.executable, "-m", "lnrepro.cli", *map(str, args)]


def flags(settings):
    return [x for k, v in settings.items() for x in (f"--{k}", v)]


def device_row(check, device):
    import torch
    from ..core.device import pick_device
    dev = pick_device(device)
    name = torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu"
    check.row("device", "device", name, "", f"torch {torch.__version__}, CUDA {torch.version.cuda}, "
              f"python {sys.version.split()[0]}")
    return dev.type


def tests_stage(check, device):
    junit = check.out / "tests.xml"
    tests = REPO / "tests" / "test_cuda_path.py"
    if not tests.exists():
        check.row("tests", "pytest -m cuda", "skipped", "", f"{tests} not found (an installed package)")
        return
    cmd = [sys.executable, "-m", "pytest", "-m", "cuda", "-q", "-p", "no:cacheprovider", f"--junitxml={junit}",
           str(tests)]
    if importlib.util.find_spec("pytest_timeout"):  # a hung test (an NCCL init, say) fails alone
        cmd += ["--timeout", "60"]
    failed = check.run("tests", "pytest_cuda", cmd, 180)
    if failed in ("skipped", "timed out", "cut off") or not junit.exists():
        return
    suite = ET.parse(junit).getroot()
    suite = suite if suite.tag == "testsuite" else suite.find("testsuite")
    counts = {k: int(suite.get(k, 0)) for k in ("tests", "failures", "errors", "skipped")}
    broken = [c.get("name") for c in suite.iter("testcase") if c.find("failure") is not None or c.find("error") is not None]
    check.row("tests", "pytest -m cuda: passed", counts["tests"] - counts["failures"] - counts["errors"] - counts["skipped"],
              f"of {counts['tests']}", f"on {device}; failed: {', '.join(broken) or 'none'}")


def corpus(args, out):
    """(data dir, tokenized test reference): the given corpus, or a toy one written into OUT."""
    if args.data:
        return Path(args.data), Path(args.reference or Path(args.data) / "test.ref")
    data = write_reversal_corpus(out / "toy_corpus")
    return data, data / "test.ref"


def train_stage(check, device, precision):
    args, size = check.args, check.args.size
    epochs = args.epochs or (3 if size == "paper" else 2)
    updates = args.round_updates or (150 if size == "paper" else 5)
    run = check.out / f"train_{precision}"
    settings = {**TRAIN[size], "precision": precision, "device": device,
                "epochs": epochs, "max-round-updates": updates, "log-interval": 5}
    if check.run("train", f"train_{precision}", lnrepro("train", "--data", check.data, "--out", run, *flags(settings)), 200):
        return
    rows = list(csv.DictReader(open(run / "metrics.csv")))
    steady = rows[1:] or rows  # the first round pays for start-up (allocation, kernel selection)
    per_s = statistics.median((int(b["updates"]) - int(a["updates"])) / float(b["wall_s"])
                              for a, b in zip([{"updates": 0}] + rows, rows) if b in steady)
    tok_s = statistics.median(float(r["tokens_per_s"]) for r in steady)
    item = f"train {precision}"
    check.row("train", f"{item}: updates/s", round(per_s, 3), "updates/s",
              f"median of rounds {steady[0]['epoch']}-{steady[-1]['epoch']}, {updates} updates each; {tok_s:,.0f} tokens/s")
    check.row("train", f"{item}: loss curve", " ".join(f"{float(r['train_loss']):.2f}" for r in rows),
              "bits/token", "train loss per round; valid: " + " ".join(f"{float(r['valid_loss']):.2f}" for r in rows))
    if precision == "fp16":
        check.row("train", f"{item}: loss scale", " ".join(r["loss_scale"] for r in rows), "",
                  "at each round's end (fairseq's 2**7 start, window 256, threshold 0.03125)")
    if size == "paper":
        # an IWSLT14 epoch: its pairs at the plan's 28 batch tokens per pair, in 4,096-token updates
        epoch_updates = IWSLT14_PAIRS * 28 / 4096
        check.row("train", f"{item}: IWSLT14 epoch", round(epoch_updates / per_s / 60, 2), "minutes",
                  f"{epoch_updates:,.0f} updates of 4,096 tokens at the measured updates/s")
    check.results[f"train_{precision}"] = {"updates_per_s": per_s, "tokens_per_s": tok_s,
                                           "max_tokens": settings["max-tokens"], "run": run}
    evaluate(check, device, precision, run)


def evaluate(check, device, precision, run):
    bleu = check.out / f"bleu_{precision}.csv"
    cmd = lnrepro("evaluate", "--metrics", run / "metrics.csv", "--data", check.data, "--reference", check.reference, "--device",
                  device, "--beam", 5, "--lenpen", 1.0, "--max-len-a", 1.2, "--max-len-b", 10, "--average-last", 1,
                  "--out", bleu)
    if check.run("decode", f"evaluate_{precision}", cmd, 150):
        return
    r = next(csv.DictReader(open(bleu)))
    per_s, n = float(r["sentences_per_s"]), int(r["sentences"])
    check.row("decode", f"beam 5 after train {precision}: sentences/s", round(per_s, 1), "sentences/s",
              f"{n:,} test sentences, batches of 128, autocast off (fp32); BLEU {float(r['bleu']):.2f} after "
              f"{r['epoch']} rounds")
    if check.args.size == "paper":
        check.row("decode", f"beam 5 after train {precision}: IWSLT14 test set", round(IWSLT14_TEST_SENTENCES / per_s, 1),
                  "s", f"{IWSLT14_TEST_SENTENCES:,} sentences at the measured rate")


def bench_stage(check, device, name, precision):
    csv_out = check.out / f"bench_{name}_{precision}.csv"
    cmd = lnrepro("bench", "--device", device, "--precision", precision, "--beam", 5, "--out", csv_out,
                  *flags(BENCH[check.args.size][name]))
    if check.run("bench", f"bench_{name}_{precision}", cmd, 120):
        return
    r = {row["metric"]: row for row in csv.DictReader(open(csv_out))}
    tok = r["train_tokens_per_s"]
    check.row("bench", f"{name} {precision}: train tokens/s", round(float(tok["ours"])), "target tokens/s",
              f"torch.nn.Transformer {float(tok['reference']):,.0f} (ours/ref {float(tok['ratio']):.2f}); {tok['config']}")
    mfu, peak = r["train_mfu"], float(r["matmul_peak_gflops"]["ours"]) / 1e3
    check.row("bench", f"{name} {precision}: MFU", round(float(mfu["ours"]), 3), "of peak",
              f"ref {float(mfu['reference']):.3f}; measured {precision} matmul peak {peak:,.3g} TFLOP/s; matmul kernels "
              f"at the model's shapes {float(r['matmul_kernel_fraction_of_peak']['ours']):.2f} of it")
    dec = r["decode_beam5_sentences_per_s"]
    check.row("bench", f"{name} {precision}: beam 5 sentences/s", round(float(dec["ours"]), 1), "sentences/s",
              f"cached search vs a search recomputing the prefix {float(dec['reference']):,.1f} (x{float(dec['ratio']):.1f})")
    check.results[f"bench_{name}_{precision}"] = {"peak_tflops": peak, "mfu": float(mfu["ours"])}


def plan_stage(check):
    """The plan's time per update (lnrepro.analyses.plan.Throughput: the longer of the measured H200 step,
    scaled by layers, and 6 x parameters x tokens per update at peak x MFU) against the measured: on
    another GPU or host, the config's `plan: {updates_per_s}` to set from it."""
    from ..analyses.plan import Throughput, translation_params
    from ..core.data import vocab_sizes
    settings = {k.replace("-", "_"): v for k, v in TRAIN[check.args.size].items()}
    settings["share_all_embeddings"] = settings.get("share_all_embeddings") == "true"
    params = translation_params(settings, *vocab_sizes(check.data))
    th = Throughput()
    layers = settings["enc_layers"] + settings["dec_layers"]
    for precision in PRECISIONS:
        measured = check.results.get(f"train_{precision}")
        if not measured:
            continue
        pass_s, bound = th.train_pass(layers, params, measured["max_tokens"], precision)
        planned = 1 / pass_s
        peak = th.peak_tflops[precision] * 1e12
        mfu = 6 * params * measured["max_tokens"] * measured["updates_per_s"] / peak
        check.row("plan", f"train {precision}: updates/s planned vs measured", float(f"{planned:.4g}"), "updates/s",
                  f"measured {measured['updates_per_s']:.3f} ({measured['updates_per_s'] / planned:.2f}x the plan: "
                  f"{bound}-bound, {th.source[precision]}); MFU {mfu:.3f} of {peak / 1e12:g} TFLOP/s; set the config's "
                  f"plan.updates_per_s.{precision} from it; {params / 1e6:.1f}M parameters")


def markdown(rows):
    lines = ["| stage | item | value | unit | detail |", "|---|---|---|---|---|"]
    lines += [f"| {r['stage']} | {r['item']} | {r['value']} | {r['unit']} | {r['detail']} |" for r in rows]
    return "\n".join(lines) + "\n"


def print_table(rows):
    width = max(len(r["item"]) for r in rows)
    for r in rows:
        print(f"{r['stage']:7s} {r['item']:{width}s} {str(r['value']):>14s} {r['unit']:18s} {r['detail']}")


def run(args):
    check = Check(args)
    stages = set(args.stages.split(","))
    device = device_row(check, args.device)
    if "tests" in stages:
        tests_stage(check, device)
    if "train" in stages:
        for precision in ("fp16", "bf16"):
            train_stage(check, device, precision)
    if "bench" in stages:
        for precision in PRECISIONS:  # the precisions the papers' GPUs would use first
            for name in ("iwslt", "wmt_base"):
                bench_stage(check, device, name, precision)
    if "plan" in stages:
        plan_stage(check)
    check.row("device", "gpu-check wall time", round(time.time() - check.start), "s", f"budget {args.budget_s:g} s")
    print_table(check.rows)
    (check.out / "results.json").write_text(json.dumps(check.results, default=str, indent=1))
    return 1 if any(r["value"] in ("failed", "timed out") for r in check.rows) else 0
