"""Every error a user meets before any job runs is one line, then a few of detail (issue 31): a name
the config looks up and lacks (with the closest one), a default config that is not there, a target
this config cannot make. Dry runs of the real workflow in a scratch copy, a few seconds each."""
import json
import os
import re

import pytest
import yaml

from workflow_helpers import ROOT, pipeline_of, snakemake, workflow_copy


def demo_run_count():
    """The demo's runs as its checks see them: `runs:` and every sweep's cells (lnrepro.pipeline.sweeps)."""
    p = pipeline_of(yaml.safe_load((ROOT / "config" / "demo.yaml").read_text()))
    p.validate()
    return len(p.config["runs"])


def edited_config(workdir, edit):
    cfg = yaml.safe_load((ROOT / "config" / "demo.yaml").read_text())
    edit(cfg)
    (workdir / "edited.yaml").write_text(yaml.safe_dump(cfg))
    return "edited.yaml"


def failed_lines(proc):
    """The lines a failed dry run printed; it must have printed few and no Python frame."""
    lines = (proc.stdout + proc.stderr).splitlines()
    assert proc.returncode != 0
    assert len(lines) < 10 and not any(line.lstrip().startswith("File ") for line in lines), "\n".join(lines)
    return lines


@pytest.mark.medium
@pytest.mark.parametrize("edit, first, detail", [
    (lambda c: c["runs"]["adam_5e-4_nowarm"].update(corpus="deen2"),
     "config: runs.adam_5e-4_nowarm.corpus: 'deen2' is not a corpus (did you mean 'deen'?)",
     "  corpora: deen, ende"),
    # a figure's run among the demo's 44: the closest first, not all of them
    (lambda c: c["figures"]["fig2"]["panels"][0]["runs"].append("adam_5e-4_nowarn"),
     "config: figures.fig2.panels[0].runs: 'adam_5e-4_nowarn' is not a run (did you mean 'adam_5e-4_nowarm'?)",
     "  runs: adam_5e-4_nowarm, adam_1e-3_nowarm, adam_5e-4_warm500, adam_5e-4_warm4000, sgd_5e-3_nowarm, "
     f"preln_5e-4_nowarm and {demo_run_count() - 6} more"),
], ids=["run_corpus", "figure_run"])
def test_an_unknown_name_is_one_line_with_the_closest(tmp_path, edit, first, detail):
    workflow_copy(tmp_path)
    proc = snakemake(tmp_path, "-n", "--configfile", edited_config(tmp_path, edit), check=False)
    assert failed_lines(proc) == [first, "", detail]
    assert not (tmp_path / "results").exists()


@pytest.mark.medium
def test_a_missing_default_config_is_one_line_naming_the_configs(tmp_path):
    """No --configfile in a folder without config/demo.yaml (e.g. -d elsewhere): Snakemake said
    "Workflow defines configfile config/demo.yaml but it is not present" from a Snakefile frame."""
    workflow_copy(tmp_path)
    (tmp_path / "config" / "demo.yaml").unlink()
    lines = failed_lines(snakemake(tmp_path, "-n", check=False))
    configs = " | ".join(str(tmp_path / "config" / c) for c in ("config.yaml", "own_corpus.example.yaml"))
    assert lines == [f"config: no --configfile, and the default config/demo.yaml is not in {tmp_path}; "
                     f"name one: --configfile {configs}"]


@pytest.mark.medium
def test_an_unknown_target_is_one_line_with_the_targets_that_exist(tmp_path):
    """Snakemake said "No rule to produce results/figures/fig99.pdf" and no figure it can make."""
    workflow_copy(tmp_path)
    lines = failed_lines(snakemake(tmp_path, "-n", "results/figures/fig99.pdf", check=False))
    assert lines[0] == "target results/figures/fig99.pdf: no rule makes it with this config " \
                       "(did you mean 'results/figures/fig5.pdf'?)"
    listed = " ".join(line.strip() for line in lines[2:])
    assert listed.startswith("this config's figures and tables: results/figures/: fig2.pdf, fig3.pdf,")
    assert "liu_fig11.pdf" in listed and "results/tables/: admin_table1.md, admin_table2.md" in listed
    assert not (tmp_path / "results").exists()


@pytest.mark.medium
def test_an_exponent_without_a_dot_is_named_with_its_fix(tmp_path):
    """`lr: 2e-3` is text to YAML 1.1 (PyYAML): "is not of type number" said nothing of why."""
    workflow_copy(tmp_path)
    text = (ROOT / "config" / "demo.yaml").read_text()
    line = next(x for x in text.splitlines() if x.startswith("  adam_5e-4_nowarm:"))
    (tmp_path / "typo.yaml").write_text(text.replace(line, "  adam_5e-4_nowarm: {lr: 2e-3, warmup: 1}"))
    lines = failed_lines(snakemake(tmp_path, "-n", "--configfile", "typo.yaml", check=False))
    assert lines[0] == ("config: runs.adam_5e-4_nowarm.lr: '2e-3' is not of type number: YAML reads 2e-3 as text, "
                        "write 2.0e-3"), lines


@pytest.mark.medium
def test_a_figure_named_without_its_folder_is_one_line_naming_its_file(tmp_path):
    """`snakemake fig4` printed Snakemake's MissingRuleException with its traceback."""
    workflow_copy(tmp_path)
    lines = failed_lines(snakemake(tmp_path, "-n", "fig4", check=False))
    assert lines[0] == "target fig4: no rule of that name (did you mean 'results/figures/fig4.pdf'?)", lines
    assert snakemake(tmp_path, "-n", "check_theory", "--cores", "1", check=False).returncode == 0  # a rule: as it was


@pytest.mark.medium
def test_an_error_of_the_claims_file_is_one_line(tmp_path):
    """config/claims.yaml's own cross-references: a WorkflowError with frames of claims.smk before."""
    workflow_copy(tmp_path)
    path = tmp_path / "config" / "claims.yaml"
    claims = yaml.safe_load(path.read_text())
    claims["claims"]["warmup_essential_adam_5e-4"]["figure"] = "fig2x"
    path.write_text(yaml.safe_dump(claims))
    assert failed_lines(snakemake(tmp_path, "-n", check=False)) == [
        "config/claims.yaml: claims.warmup_essential_adam_5e-4.figure: 'fig2x' has no entry in places (did you mean 'fig2'?)"]


@pytest.mark.xfail(strict=True, reason="Snakemake 9.27.1 opens each --configfile in its command line (cli.py "
                   "args_to_api -> ConfigSettings -> load_configfile) before it reads the Snakefile, so no code of "
                   "this workflow runs: its FileNotFoundError is printed with 25 lines of Snakemake's frames")
@pytest.mark.medium
def test_a_config_file_that_does_not_exist_is_one_line(tmp_path):
    workflow_copy(tmp_path)
    assert len(failed_lines(snakemake(tmp_path, "-n", "--configfile", "config/nope.yaml", check=False))) == 1


@pytest.mark.medium
def test_a_probed_run_that_trains_post_ln_by_default_is_taken(tmp_path):
    """gradient_probe.run checks what the run trains with: a Post-LN run with warm-up by the trainer's
    defaults (no enc_norm, dec_norm, warmup of its own) is not refused."""
    workflow_copy(tmp_path)
    def defaults_only(cfg):  # the demo's train_defaults set norm: post and warmup: the trainer's defaults instead
        for key in ("norm", "warmup"):
            cfg["train_defaults"].pop(key)
        for run in cfg["runs"].values():
            if not {"enc_norm", "dec_norm"} & set(run):
                run.setdefault("norm", "post")  # every other run as before
        cfg["runs"][cfg["gradient_probe"]["run"]] = {"lr": 1.0e-3, "epochs": 20}
    assert snakemake(tmp_path, "-n", "results/figures/fig3.pdf", "--configfile", edited_config(tmp_path, defaults_only)).returncode == 0


@pytest.mark.medium
def test_a_section_is_checked_when_a_target_needs_it(tmp_path):
    """An error of the admin: section stops the targets that read it, in one line, and not Fig 4's
    plan (lnrepro.pipeline.sections.Sections.checked); before, every plan stopped at it."""
    workflow_copy(tmp_path)
    config = edited_config(tmp_path, lambda c: c["admin"]["lr_grid"]["cells"][0].update(run="nope_run"))
    fig4 = snakemake(tmp_path, "-n", "results/figures/fig4.pdf", "--configfile", config, check=False)
    assert fig4.returncode == 0 and "plot_figure" in fig4.stdout
    error = "config: admin.lr_grid: 'nope_run' is not a run"
    assert failed_lines(snakemake(tmp_path, "-n", "--configfile", config, check=False))[0] == error  # rule all
    # a target that reads it: planning stops at the line, after Snakemake's banner, without a frame
    fig10 = snakemake(tmp_path, "-n", "results/figures/liu_fig10.pdf", "--configfile", config, check=False)
    lines = (fig10.stdout + fig10.stderr).splitlines()
    assert fig10.returncode == 1 and error in lines and not any(line.lstrip().startswith("File ") for line in lines)


# ---- issue 42: a name becomes a path and a word of a command; config text is untrusted ----------
def renamed(section, old, new):
    """Rename a key of a config section (and every reference to it that the edit names)."""
    def edit(cfg):
        part = cfg
        for key in section:
            part = part[key]
        part[new] = part.pop(old)
    return edit


def refer_runs_corpus(old, new):
    def edit(cfg):
        renamed(("corpora",), old, new)(cfg)
        for run in cfg["runs"].values():
            if run.get("corpus", "deen") == old:
                run["corpus"] = new
    return edit


HOSTILE = "`touch PWNED`"
@pytest.mark.parametrize("edit, where", [
    (renamed(("figures",), "fig2", "../../../../escaped"), "figures"),
    (renamed(("figures",), "fig2", HOSTILE), "figures"),
    (refer_runs_corpus("ende", "../ende"), "corpora"),
    (renamed(("runs",), "adam_5e-4_nowarm", ".."), "runs"),
    (renamed(("runs",), "adam_5e-4_nowarm", "-rf"), "runs"),
    (renamed(("models",), "liu_demo", "a/b"), "models"),
    (renamed(("bert", "runs"), "bert_preln", "x;y"), "bert.runs"),
], ids=["figure_dotdot", "figure_backtick", "corpus_dotdot", "run_dotdot", "run_dash", "model_slash",
        "bert_run_semicolon"])
@pytest.mark.medium
def test_a_name_that_is_not_a_plain_word_is_refused_before_any_job(tmp_path, edit, where):
    """A figure named ../../x wrote outside the work folder and one with a backtick ran its command
    (issue 42): every section's names are plain words, checked with the schema, in one line."""
    work = tmp_path / "work"
    work.mkdir()
    workflow_copy(work)
    proc = snakemake(work, "-n", "--configfile", edited_config(work, edit), check=False)
    lines = failed_lines(proc)
    assert lines[0].startswith(f"config: {where}: ") and "is not a usable name" in lines[0], lines
    assert not (work / "results").exists() and not (work / "PWNED").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["work"]  # nothing beside the work folder


@pytest.mark.medium
def test_a_download_named_by_its_url_must_be_a_plain_file_name(tmp_path):
    """An archive's file name defaults to its URL's last part: a backtick there reached a command."""
    workflow_copy(tmp_path)
    cfg = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    url = "https://example.org/`touch PWNED`.tgz"
    cfg["corpora"]["iwslt14"]["archives"][0]["url"] = url
    (tmp_path / "hostile.yaml").write_text(yaml.safe_dump(cfg))
    lines = failed_lines(snakemake(tmp_path, "-n", "--configfile", "hostile.yaml", check=False))
    assert lines[0] == ("config: corpora.iwslt14.archives: the file name '`touch PWNED`.tgz' taken from "
                        f"{url!r} is not a usable file name (letters, digits and _ . + -, starting with a letter or "
                        "digit): give the entry a `file:`"), lines
    assert not (tmp_path / "PWNED").exists() and not (tmp_path / "results").exists()


@pytest.mark.medium
def test_a_key_given_twice_is_refused_with_its_line(tmp_path):
    """YAML keeps a duplicate key's last value: `lr` 1e-3 then 5e-1 trained at 0.5 without a word."""
    workflow_copy(tmp_path)
    text = (ROOT / "config" / "demo.yaml").read_text()
    run = "  adam_5e-4_nowarm: {lr: 1.0e-3, warmup: 1}\n"
    assert run in text
    (tmp_path / "twice.yaml").write_text(text.replace(run, "  adam_5e-4_nowarm:\n    lr: 1.0e-3\n    warmup: 1\n    lr: 5.0e-1\n"))
    line = text[:text.index(run)].count("\n") + 4  # the second `lr`
    lines = failed_lines(snakemake(tmp_path, "-n", "--configfile", "twice.yaml", check=False))
    assert lines == [f"config: twice.yaml line {line}: key 'lr' is given twice in one mapping; YAML would keep the "
                     "last one silently: give it once"], lines
    assert not (tmp_path / "results").exists()


def test_the_demo_merge_keys_are_not_duplicates():
    """`<<: *liu_recipe` then `warmup: 292` overrides the recipe's warm-up: that is what a merge is for."""
    from lnrepro.pipeline.config_text import duplicate_key
    for name in ("demo.yaml", "config.yaml", "claims.yaml"):
        assert duplicate_key(ROOT / "config" / name) is None, name


def alias_bomb(levels, width=10):
    """width**levels values from a few lines: each level's list holds the level below width times."""
    lines = [f"a0: &a0 [{', '.join(['x'] * width)}]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * width)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


@pytest.mark.medium
def test_an_alias_bomb_is_refused_within_seconds(tmp_path):
    """10^9 values in 9 lines hung planning (Snakemake's validate printed the expansion, >1.7 GB):
    refused before anything walks it."""
    workflow_copy(tmp_path)
    (tmp_path / "bomb.yaml").write_text((ROOT / "config" / "demo.yaml").read_text() + "lol:\n" + "".join(
        f"  {line}\n" for line in alias_bomb(9).splitlines()))
    proc = snakemake(tmp_path, "-n", "--configfile", "bomb.yaml", check=False, timeout=120)
    assert failed_lines(proc)[0] == ("config: the config expands to over 100,000 values (aliases repeated inside "
                                     "aliases?); the papers' config has ~2,100: refused before anything reads it")


@pytest.mark.medium
def test_a_huge_text_is_refused_naming_its_key(tmp_path):
    """A 200 KB `paper:` text passed planning, then its figure's job failed: "Argument list too long"."""
    workflow_copy(tmp_path)
    edit = lambda c: c["figures"]["fig2"].update(paper="x" * 200_000)  # noqa: E731
    lines = failed_lines(snakemake(tmp_path, "-n", "--configfile", edited_config(tmp_path, edit), check=False))
    assert lines == ["config: figures.fig2.paper: a text of 200,000 characters, over the 4,000 any setting needs "
                     "(config text travels in job commands and the report)"], lines


@pytest.mark.medium
def test_a_spec_over_the_argument_limit_travels_by_file(tmp_path):
    """Linux caps one argument at 128 KiB: 1,000 more runs made the plan's --spec ~700 KB, and its job
    failed with "lnrepro: Argument list too long". Now it goes by file."""
    workflow_copy(tmp_path)

    def edit(cfg):
        for i in range(1000):
            cfg["runs"][f"extra_{i:04d}"] = {**cfg["runs"]["adam_1e-3_nowarm"], "lr": 1e-3 + i * 1e-6}
    snakemake(tmp_path, "results/plan.csv", "--configfile", edited_config(tmp_path, edit), "--cores", "1")
    specs = list((tmp_path / ".snakemake" / "lnrepro" / "specs").glob("*.json"))
    assert len(specs) == 1 and specs[0].stat().st_size > 128 * 1024
    planned = [row.split(",")[1] for row in (tmp_path / "results" / "plan.csv").read_text().splitlines()
               if row.startswith("run,")]
    demo_runs = yaml.safe_load((ROOT / "config" / "demo.yaml").read_text())["runs"]
    assert {f"extra_{i:04d}" for i in range(1000)} | set(demo_runs) <= set(planned)


def test_a_long_spec_is_a_file_named_by_its_content(tmp_path):
    from lnrepro.args import json_object
    from lnrepro.pipeline.spec_argument import INLINE_MAX, spec_argument
    assert spec_argument({"b": 1, "a": [2]}, tmp_path) == '{"a": [2], "b": 1}'  # short: the text, keys sorted
    long = {"runs": {f"r{i}": {"lr": i} for i in range(INLINE_MAX // 10)}}
    arg = spec_argument(long, tmp_path)
    assert arg.startswith(f"@{tmp_path}/") and spec_argument(dict(reversed(long.items())), tmp_path) == arg
    assert json.loads(json_object("runs")(arg)) == long  # what the command reads: the same spec
    path = arg[1:]
    with open(path, "w") as f:
        f.write('{"runs": {}}')  # edited since: written again when the job is planned
    assert spec_argument(long, tmp_path) == arg and json.loads(open(path).read()) == long
    assert [p.name for p in tmp_path.iterdir()] == [os.path.basename(path)]  # no temporary file left


def test_config_text_checks_count_without_expanding():
    from lnrepro.pipeline.config_text import expanded_size, longest_text
    bomb = yaml.safe_load(alias_bomb(9))
    assert expanded_size(bomb, 10**6) > 10**6  # counted, not expanded: this returns at once
    assert expanded_size(yaml.safe_load(alias_bomb(3)), 10**6) == 1 + 11 + 111 + 1111  # the root, then each list: itself and its items
    cyclic = []
    cyclic.append(cyclic)
    assert expanded_size(cyclic, 50) > 50
    assert longest_text({"a": ["xy", {"bbb": "z" * 7}]}) == ("a[1].bbb", 7)


@pytest.mark.medium
def test_planning_notes_unpinned_and_plain_http_downloads(tmp_path):
    """With sha256 null the hash to pin went to a job's log only, and plain http passed in silence."""
    workflow_copy(tmp_path)
    cfg = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    cfg["corpora"]["iwslt14"]["archives"][0]["url"] = "http://example.org/de-en.tgz"
    (tmp_path / "notes.yaml").write_text(yaml.safe_dump(cfg))
    err = snakemake(tmp_path, "results/plan.md", "-n", "--configfile", "notes.yaml").stderr
    assert ("lnrepro: note: downloads over plain http, which anyone on the path can change (1; use https where the "
            "host serves it): corpora.iwslt14.archives http://example.org/de-en.tgz\n") in err
    entries = [a for c in cfg["corpora"].values() for a in c.get("archives", [])]
    assert "lnrepro: note: downloads without a sha256, used unverified (" in err
    assert "corpora.iwslt14.archives de-en.tgz; " in err
    # the papers' config as it stands: every download https
    err = snakemake(tmp_path, "-n", "results/plan.md", "--configfile", str(ROOT / "config" / "config.yaml")).stderr
    assert "plain http" not in err and entries


@pytest.mark.medium
def test_values_far_outside_the_papers_are_noted_when_planned(tmp_path):
    """epochs 1,000,000 (ETA 186 h, a disk of checkpoints), beam 1000 and n_train 1e9 passed planning
    without a word (issue 42): each gets a note, the epochs one with its checkpoints' size."""
    workflow_copy(tmp_path)

    def edit(c):
        c["runs"]["adam_5e-4_nowarm"]["epochs"] = 1_000_000
        c["corpora"]["deen"]["decode"]["beam"] = 1000
        c["corpora"]["ende"]["generator"]["n_train"] = 10**9
    proc = snakemake(tmp_path, "-n", "--configfile", edited_config(tmp_path, edit))
    notes = [line for line in proc.stderr.splitlines() if line.startswith("lnrepro: note: config ")]
    assert len(notes) == 3, notes
    disk = re.fullmatch(r"lnrepro: note: config runs\.adam_5e-4_nowarm\.epochs: 1,000,000, over 1,000 \(the papers' "
                        r"longest run trains 100\): ~([\d,.]+) GB of its checkpoints under checkpoints\.keep all; "
                        r"`snakemake results/plan\.md` prices every run", notes[0])
    assert disk and float(disk.group(1).replace(",", "")) > 1000, notes[0]  # ~0.6M fp32 weights a checkpoint
    assert notes[1] == ("lnrepro: note: config corpora.deen.decode.beam: 1,000, over 50 (the papers decode with 4-5): "
                        "decoding's memory and time grow with it")
    assert notes[2] == ("lnrepro: note: config corpora.ende.generator.n_train: 1,000,000,000, over 10,000,000 (WMT14 "
                        "has ~4.5M pairs): the generator holds the corpus in memory")
    # the demo plans without a note of this kind
    assert not [line for line in snakemake(tmp_path, "-n").stderr.splitlines() if line.startswith("lnrepro: note: config ")]
