"""lnrepro.pipeline without Snakemake running: what the rule files ask of a config (run settings,
flags, paths, config checks with their one-line errors), on the real configs."""
import copy
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from lnrepro.pipeline import Pipeline  # noqa: E402
from workflow_helpers import pipeline_of  # noqa: E402


def pipeline(name="demo", edit=None):
    """The Pipeline of config/<name>.yaml (edited) after Pipeline.validate's first steps: the schema (its
    defaults filled in) and the sweeps' cells; a test then runs the check it is about."""
    config = yaml.safe_load((ROOT / "config" / f"{name}.yaml").read_text())
    if edit:
        edit(config)
    p = pipeline_of(config)
    p.checks.validate_config()
    p.sweeps.expand_sweeps()
    return p


@pytest.fixture(scope="module")
def paper():
    return pipeline("config")


def refusal(capsys, check):
    """The one line a config check prints before it stops the workflow (exit status 1)."""
    with pytest.raises(SystemExit) as stopped:
        check()
    assert stopped.value.code == 1
    return capsys.readouterr().err.splitlines()[0]


def test_importing_the_pipeline_loads_no_torch():
    code = "import sys, lnrepro.pipeline; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(ROOT / "src")}).stdout
    assert out.strip() == "False"


def test_a_run_merges_defaults_model_and_its_own_keys(paper):
    s = paper.runs.run_settings("liu_wmt_pre_6L")
    # train_defaults <- models.wmt_admin <- the run: its own keys win, `norm` sets both sides
    assert (s["enc_layers"], s["dec_layers"], s["enc_norm"], s["dec_norm"]) == (6, 6, "pre", "pre")
    assert s["optimizer"] == "radam" and s["lr"] == 1e-3
    # update_tokens 32768 on one GPU of 8192 tokens: the paper's batch by accumulating 4 passes
    assert s["update_freq"] == 4
    assert paper.runs.run_norms("liu_wmt_admin_6L") == ("admin", "admin")


def test_a_run_trains_with_the_flags_of_its_settings(paper):
    flags = paper.train.train_flags(types.SimpleNamespace(run="liu_wmt_admin_6L")).split()
    assert flags[flags.index("--update-freq") + 1] == "4"
    assert flags[flags.index("--enc-norm") + 1] == "admin"
    assert flags[flags.index("--admin-omega") + 1] == "results/admin/liu_wmt_admin_6L/omega.json"
    assert "--admin-omega" not in paper.train.train_flags(types.SimpleNamespace(run="liu_wmt_pre_6L"))


def test_paths_follow_the_corpus_and_its_merges(paper):
    corpus = paper.runs.run_corpus("liu_wmt_pre_6L")
    merges = paper.config["corpora"][corpus]["bpe_merges"]
    assert paper.runs.bin_files(corpus)["train"] == f"results/data/{corpus}/bpe{merges}/bin/train.pt"


def test_each_run_trains_on_its_own_dictionaries(paper):
    """Xiong et al.'s IWSLT runs on one dictionary per side, Liu et al.'s and the WMT14 runs on a joined one."""
    assert paper.runs.run_data_dir("adam_5e-4_warm4000") == "results/data/iwslt14/bpe10000/bin_separate"
    assert paper.runs.run_bin_files("adam_5e-4_warm4000")["dict"] == [
        "results/data/iwslt14/bpe10000/bin_separate/dict.src.txt", "results/data/iwslt14/bpe10000/bin_separate/dict.tgt.txt"]
    assert paper.runs.run_data_dir("liu_iwslt_pre_seed1") == "results/data/iwslt14/bpe10000/bin"
    assert paper.runs.run_bin_files("wmt_preln_7e-4_nowarm")["dict"] == "results/data/wmt14/bpe40000/bin/dict.txt"


def test_the_plan_fine_tunes_only_the_bert_runs_the_dag_fine_tunes(paper, tmp_path, monkeypatch):
    """Post-LN BERT at lr 3e-4 is pre-trained for its divergence claim, not fine-tuned (Fig 5 draws two runs)."""
    assert "bert_postln_3e-4" in paper.runs.bert_runs() and paper.bert.finetuned_runs() == ["bert_postln", "bert_preln"]
    assert not any("bert_postln_3e-4" in f for f in paper.bert.fig5_summaries())
    monkeypatch.chdir(tmp_path)  # a long spec is written under .snakemake/ of the working dir
    spec = paper.plan.plan_spec(None)
    spec = yaml.safe_load(Path(spec[1:]).read_text()) if spec.startswith("@") else yaml.safe_load(spec)
    assert set(spec["bert"]["finetune_rounds"]) == {"bert_postln", "bert_preln"}


def test_the_real_configs_pass_every_check(paper):
    for p in (pipeline("demo"), paper):
        p.checks.check_config()
        p.checks.check_trainable()
        p.admin.check_admin_config()
        p.admin.check_admin_run_settings()
        p.probe.check_probe_config()
        p.claims.check_claims_config()


def test_an_unknown_corpus_is_one_line_with_the_closest_name(capsys):
    p = pipeline(edit=lambda c: c["runs"]["adam_5e-4_nowarm"].update(corpus="deen2"))
    assert refusal(capsys, p.checks.check_config) == \
        "config: runs.adam_5e-4_nowarm.corpus: 'deen2' is not a corpus (did you mean 'deen'?)"


def test_a_norm_pair_the_model_cannot_build_is_refused(capsys):
    p = pipeline(edit=lambda c: c["runs"]["adam_5e-4_nowarm"].update(enc_norm="admin", dec_norm="pre"))
    assert refusal(capsys, p.checks.check_config).startswith(
        "config: runs.adam_5e-4_nowarm: enc_norm/dec_norm admin/pre cannot be built")


def test_a_schema_error_names_the_key(capsys):
    def typo(c):
        c["train_defaults"]["warmpu"] = 10
    assert refusal(capsys, lambda: pipeline(edit=typo)) == \
        "config: train_defaults: unknown key 'warmpu' (did you mean 'warmup'?)"


def test_an_update_norm_pair_past_the_runs_epochs_is_a_planning_error(capsys):
    def late_pair(c):
        c["admin"]["update_norms"]["fig11"]["epochs"] = [1, 100]
    p = pipeline(edit=late_pair)
    epochs = p.runs.run_settings("liu_wmt_pre_6L")["epochs"]
    assert refusal(capsys, p.admin.check_admin_run_settings) == (
        f"config: admin.update_norms.fig11.epochs: the pair (100, 101) reads the checkpoint of epoch 101, "
        f"but liu_wmt_pre_6L trains {epochs} epochs")
    last = copy.deepcopy(p.config)
    last["admin"]["update_norms"]["fig11"]["epochs"] = [epochs - 1]  # the last pair a run writes
    Pipeline(last, p.workflow).admin.check_admin_run_settings()


# ---- the checkpoints later steps read, declared to the DAG (issue 32, item 3) -------------------
class Trained:
    """Snakemake's `checkpoints.train`/`.pretrain` after training: each run's manifest (metrics.csv),
    fabricated with `epochs` rows of 100 updates, each naming its checkpoint."""

    def __init__(self, root, epochs):
        self.root, self.epochs = root, epochs

    def get(self, run):
        metrics = self.root / run / "metrics.csv"
        if not metrics.exists():
            metrics.parent.mkdir(parents=True)
            rows = [f"{e},{100 * e},checkpoints/epoch{e}.pt" for e in range(1, self.epochs + 1)]
            metrics.write_text("epoch,updates,checkpoint\n" + "\n".join(rows) + "\n")
        return types.SimpleNamespace(output=[str(metrics)])


def readers(p):
    """(run, the checkpoints it declares) of every job of the config that reads checkpoints."""
    jobs = []
    for f in p.retention.eval_files():
        n = re.fullmatch(r"results/eval/(.+)/bleu_avg(\d+)\.csv", f)
        if n:
            jobs.append((n.group(1), p.checkpoint_reads.last_checkpoints(types.SimpleNamespace(run=n.group(1), n=n.group(2)))))
    run = p.probe.probe_cfg()["run"]
    jobs.append((run, p.checkpoint_reads.probed_checkpoint(types.SimpleNamespace(run=run))))
    for fig in p.config["admin"]["layer_dependency"]:
        jobs.append((None, p.checkpoint_reads.dependency_checkpoints(types.SimpleNamespace(ldfig=fig))))
    for fig in p.config["admin"]["update_norms"]:
        jobs.append((None, p.checkpoint_reads.update_norm_checkpoints(types.SimpleNamespace(unfig=fig))))
    for f in p.bert.fig5_summaries():
        run, task, r = re.fullmatch(r"results/finetune/(.+)/(.+)/round(\d+)\.summary\.csv", f).groups()
        jobs.append((run, p.checkpoint_reads.finetuned_checkpoint(types.SimpleNamespace(run=run, task=task, round=r))))
    return jobs


def test_each_reader_declares_the_checkpoints_it_reads_and_retention_keeps_them(tmp_path):
    from lnrepro.retention import needed_epochs, trained_checkpoints

    p = pipeline("config")
    epochs = 40  # Fig 11 draws the pairs from (39, 40): every one is written
    p.checkpoint_reads.checkpoints = types.SimpleNamespace(train=Trained(tmp_path / "train", epochs),
                                          pretrain=Trained(tmp_path / "pretrain", epochs))
    jobs = readers(p)
    declared = [f for _, files in jobs for f in files]
    names = {re.sub(r"^.*/(train|pretrain)/", "", f) for f in declared}
    # the paper's readers: averaged BLEU (last 10), Fig 3 after warm-up (8000 updates: epoch 80 > 40,
    # so the last), Figs 7-8 (the last), Figs 3/11 (pairs 1-2, 10-11, 20-21, 39-40), Fig 5's rounds
    assert "liu_wmt_admin_6L/checkpoints/epoch31.pt" in names and "liu_wmt_admin_6L/checkpoints/epoch30.pt" not in names
    assert {f"liu_wmt_pre_6L_sgd/checkpoints/epoch{e}.pt" for e in (1, 2, 10, 11, 20, 21, 39, 40)} <= names
    assert "liu_wmt_pre_6L_sgd/checkpoints/epoch3.pt" not in names
    assert all(f.startswith(str(tmp_path)) for f in declared)
    # what `lnrepro retain` keeps of each run (keep: needed) holds every checkpoint a reader declares
    for run, (_, needs) in p.retention.checkpoint_readers().items():
        metrics = (p.checkpoint_reads.checkpoints.pretrain if run in p.runs.bert_runs() else p.checkpoint_reads.checkpoints.train).get(run=run).output[0]
        listed = trained_checkpoints(metrics)
        kept = {str(path) for e, _, path in listed if e in needed_epochs(needs, [(e, u) for e, u, _ in listed])}
        assert {f for f in declared if f.startswith(str(Path(metrics).parent) + "/")} <= kept, run


def test_a_reader_waits_for_its_trainings_manifest():
    """Before a run has trained, Snakemake's checkpoint raises and plans the reader after it."""
    from snakemake.exceptions import IncompleteCheckpointException

    p = pipeline("demo")

    class Untrained:
        def get(self, run):
            raise IncompleteCheckpointException(None, f"results/train/{run}/metrics.csv")

    p.checkpoint_reads.checkpoints = types.SimpleNamespace(train=Untrained(), pretrain=Untrained())
    with pytest.raises(IncompleteCheckpointException):
        p.checkpoint_reads.probed_checkpoint(types.SimpleNamespace(run=p.probe.probe_cfg()["run"]))


def test_a_sections_checks_run_once_when_it_is_first_read(capsys):
    def bad_lr_grid(c):
        c["admin"]["lr_grid"]["cells"][0]["run"] = "nope_run"
    p = pipeline(edit=bad_lr_grid)
    assert p.runs.run_settings("adam_5e-4_nowarm")["corpus"] == "deen"  # the runs' part reads no admin:
    assert refusal(capsys, p.admin.admin_cfg).startswith("config: admin.lr_grid: 'nope_run' is not a run")
    good = pipeline()
    good.admin.admin_cfg()
    good.config["admin"]["lr_grid"]["cells"][0]["run"] = "nope_run"  # after the check: not checked again
    assert good.admin.admin_cfg("lr_grid")["cells"][0]["run"] == "nope_run"
