"""Each figure's scale note (parse time; no torch): the config's `scale_note` (the demo's "DEMO SCALE
..."), then what the runs that figure draws trained, from their settings, so the line under a
figure's title is true for that figure. One note for all figures said "lrs x2, warm-ups in epochs"
on Fig 3, the theory checks, BERT's Fig 5 and every Liu et al. figure, where it was false.

Said for the drawn runs: their depth and width, data and length; where a run's name carries the
paper's lr or warm-up (Xiong et al.'s runs: adam_5e-4_warm4000) and it trains another, the factor
and the mapping; otherwise the lrs and warm-ups it trains. For models probed at initialization,
their depths and width.
"""
import re
import shlex

from lnrepro.settings import TRAIN_DEFAULTS, lr_text

LR_IN_NAME = re.compile(r"_(\d+(?:\.\d+)?e-\d+)(?=_|$)")  # adam_5e-4_warm4000, wmt_postln_1.5e-3_warm4000
WARMUP_IN_NAME = re.compile(r"_(no)?warm(\d*)(?=_|$)")  # _warm4000; _nowarm: the paper's "no warm-up"


def number(x):
    """290, 2, 1.5: a count or a factor as short as it allows (an lr: lr_text, every significant digit)."""
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def span(values, unit=""):
    """'8 epochs', '8-20 epochs': the range of a few values."""
    low, high = min(values), max(values)
    text = number(low) if low == high else f"{number(low)}-{number(high)}"
    return f"{text}{unit}"


def joined(values):
    return " / ".join(dict.fromkeys(values))


class ScaleNote:
    def __init__(self, config, admin, figures, probe, runs, sweeps):
        self.config = config
        self.admin = admin
        self.figures = figures
        self.probe = probe
        self.runs = runs
        self.sweeps = sweeps

    def flag(self, kind):
        """A figure rule's --scale-note param: the note for what `kind`'s job draws (see DRAWN);
        nothing where the config has no scale_note (config/config.yaml: the papers' scale)."""
        def flag(wildcards):
            prefix = self.config.get("scale_note")
            if not prefix:
                return ""
            runs, init = self.DRAWN[kind](self, wildcards)
            facts = ([self.trained_facts(runs)] if runs else []) + ([self.init_facts(*init)] if init else [])
            return f"--scale-note {shlex.quote(': '.join([prefix, '; '.join(facts)]) if facts else prefix)}"
        return flag

    # ---- what each figure rule draws: (trained runs, (depths, width) of models at initialization) ----
    def drawn_by_figure(self, wildcards):
        return self.figures.figure_runs(wildcards.fig), None

    def drawn_by_gradient_probe(self, wildcards):
        return [self.probe.probe_cfg()["run"]], (self.probe.probe_layers(), self.width(self.probe.probe_settings()))

    def drawn_by_theory(self, wildcards):
        t = self.config["theory"]
        return [], ([t["layers"], *t["depths"]], t["d_model"])

    def drawn_by_fig5(self, wildcards):
        return self.runs.bert_section()["fig5"]["runs"], None

    def drawn_by_vanishing(self, wildcards):
        return [], ([self.admin.admin_cfg("gradients")["layers"]], self.width(self.admin.admin_probe_settings("gradients")))

    def drawn_by_output_change(self, wildcards):
        return [], (self.admin.admin_cfg("output_change")["depths"], self.width(self.admin.admin_probe_settings("output_change")))

    def drawn_by_lr_grid(self, wildcards):
        return self.admin.table_runs("lr_grid"), None

    def drawn_by_dependency(self, wildcards):
        return self.admin.dependency_cfg(wildcards)["runs"], None

    def drawn_by_update_norms(self, wildcards):
        return self.admin.update_norms_cfg(wildcards)["runs"], None

    def drawn_by_sweep(self, wildcards):
        return self.sweeps.sweep_runs(wildcards.sweep), None

    DRAWN = {"sweep": drawn_by_sweep, "figure": drawn_by_figure, "gradient_probe": drawn_by_gradient_probe, "theory": drawn_by_theory,
             "fig5": drawn_by_fig5, "vanishing": drawn_by_vanishing, "output_change": drawn_by_output_change,
             "lr_grid": drawn_by_lr_grid, "dependency": drawn_by_dependency, "update_norms": drawn_by_update_norms}

    # ---- the facts ----
    def width(self, settings):
        return {**TRAIN_DEFAULTS, **settings}["d_model"]

    def init_facts(self, depths, width):
        return f"models at initialization, {span(depths, ' layers')} per side, d={width}"

    def trained_facts(self, runs):
        settings = {run: {**TRAIN_DEFAULTS, **self.runs.run_settings(run)} for run in runs}
        bert = [run for run in runs if run not in self.config["runs"]]
        facts = [self.shape(settings, bert), self.data_and_length(settings, bert)]
        return ", ".join(facts + self.lrs_and_warmups(settings))

    def shape(self, settings, bert):
        if bert:
            return f"{span([s['layers'] for s in settings.values()], '-layer')} BERT, d={joined(str(s['d_model']) for s in settings.values())}"
        pairs = sorted({(s["enc_layers"], s["dec_layers"]) for s in settings.values()})
        depth = f"{pairs[0][0]}+{pairs[0][1]}" if len(pairs) == 1 else f"{pairs[0][0]}+{pairs[0][1]} to {pairs[-1][0]}+{pairs[-1][1]}"
        return f"{depth} layers, d={joined(str(s['d_model']) for s in settings.values())}"

    def data_and_length(self, settings, bert):
        if bert:
            return f"generated documents, {span([s['max_updates'] for s in settings.values()], ' updates')}"
        corpora = dict.fromkeys(s["corpus"] for s in settings.values())
        generated = all(self.runs.corpus_cfg(c)["source"] == "generated" for c in corpora)
        data = f"{'generated ' if generated else ''}{joined(corpora)} data"
        return f"{data}, {span([s['epochs'] for s in settings.values()], ' epochs')}"

    def lrs_and_warmups(self, settings):
        """The lr factor and warm-up mapping of runs named for the paper's values (a factor of 1: the lr
        named is the lr trained, said as such); the trained lrs and warm-ups of the others."""
        factors, mapped, lrs, warmups = set(), {}, [], []
        for run, s in settings.items():
            named_lr, named_warmup = LR_IN_NAME.search(run), WARMUP_IN_NAME.search(run)
            factor = round(s["lr"] / float(named_lr.group(1)), 2) if named_lr else None
            if factor not in (None, 1.0):
                factors.add(factor)
            else:
                lrs.append(s["lr"])
            warmup = s.get("warmup", 0) if s.get("warmup", 0) > 1 else 0  # T_warmup 1 or 0: none
            if named_warmup:
                mapped.setdefault(0 if named_warmup.group(1) else int(named_warmup.group(2)), set()).add(warmup)
            elif not named_lr:  # a run named for the paper's lr says its warm-up only where it names one
                warmups.append(warmup)
        facts = []
        if factors:
            facts.append(f"lrs x{joined(number(f) for f in sorted(factors))} of the run names' (the papers')")
        if lrs:
            facts.append(f"lr {joined(lr_text(x) for x in sorted(lrs))}")
        changed = {paper: ours for paper, ours in sorted(mapped.items()) if ours != {paper}}
        if changed:
            facts.append("warm-ups " + ", ".join(f"{paper} -> {joined(number(w) for w in sorted(ours, reverse=True))}"
                                                 for paper, ours in changed.items()) + " updates")
        if warmups:
            some = sorted(w for w in warmups if w)
            facts.append("no warm-up" if not some else
                         f"warm-up {joined(number(w) for w in some)} updates" + (" / none" if 0 in warmups else ""))
        return facts
