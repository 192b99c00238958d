"""A sweep (config `sweeps:`, issue 45): a run template x axes x seeds, expanded into named runs before
anything reads `runs:`, so each cell is a run as any other (its own training job and metrics: an edit
reruns only the cells it changes) and the checks of runs apply to it.

    sweeps:
      lab:
        template: {model: liu_demo, optimizer: radam, lr: 1.0e-3, epochs: 3}
        axes: {norm: [post, pre, deepnorm], layers: [6, 18], warmup: [0, 146]}
        seeds: [1, 2]

makes 3 x 2 x 2 x 2 = 24 runs, lab_post_6L_warmup0_s1 ... lab_deepnorm_18L_warmup146_s2. An axis is a
key a run takes, or `layers` (enc_layers and dec_layers together); a run's name is the sweep's, then
each axis value in the axes' order (sweep_word), then the seed."""
import functools
import itertools
import json
import math
import re

import jsonschema

from lnrepro import paths
from lnrepro.pipeline.run_pairs import quoted_pairs
from lnrepro.pipeline.spec_argument import spec_argument
from lnrepro.settings import SAFER_SIDE, TRAIN_DEFAULTS, lr_text, merged_run_settings

LAYERS_AXIS = "layers"  # sets enc_layers and dec_layers together: the depth of Liu et al.'s grids
MAX_SWEEP_RUNS = 5000  # config text is untrusted: a sweep of 100^4 cells is refused before it is expanded


def sweep_word(key, value):
    """The word of one axis value in a run's name: 'deepnorm', '18L', 'lr1e-3', 'warmup146', 'adam_beta20.99'."""
    if key in ("norm", "norm_fn"):
        return str(value)
    if key in ("enc_norm", "dec_norm"):
        return f"{key[:3]}{value}"
    if key == LAYERS_AXIS:
        return f"{value}L"
    if key in ("lr", "warmup_init_lr", "end_lr"):
        return f"{key.replace('_', '')}{lr_text(value)}"
    return f"{key}{value:g}" if isinstance(value, float) else f"{key}{value}"


def cell_settings(template, axes, values, seed):
    """A cell's run: the template, its axis values (layers as enc_layers and dec_layers), its seed."""
    run = dict(template)
    for key, value in zip(axes, values):
        if key == LAYERS_AXIS:
            run["enc_layers"] = run["dec_layers"] = value
        else:
            run[key] = value
    run["seed"] = seed
    return run


class Sweeps:
    def __init__(self, config, checks, errors):
        self.config, self.checks, self.errors = config, checks, errors

    def cell_names(self, sweep):
        """[(run, {axis: value}, seed)] of a sweep, in the axes' order, seeds last, each named as its own."""
        s = self.config["sweeps"][sweep]
        axes = list(s["axes"])
        return [(f"{sweep}_{'_'.join(sweep_word(k, v) for k, v in zip(axes, values))}_s{seed}", dict(zip(axes, values)), seed)
                for values in itertools.product(*s["axes"].values()) for seed in s["seeds"]]

    @functools.cache
    def sweep_cells(self, sweep):
        """cell_names, where a cell an earlier sweep trains already is that sweep's run (after expand_sweeps)."""
        return [(self.shared_cells.get(run, run), values, seed) for run, values, seed in self.cell_names(sweep)]

    def expand_sweeps(self):
        """Every sweep's cells added to `runs:` (after the schema checked the sweeps, before the runs'
        checks); a cell named as a run of `runs:` or of another sweep is refused, naming both. A cell that
        trains exactly as a run of `runs:` or an earlier sweep's cell (every setting, the trainer's defaults
        filled in: the lab's warm-up 146 cells in an lr sweep at the template's lr; Table 2's runs in the
        paper config's lab) is not trained twice: it is that run."""
        made, trained, self.shared_cells = {}, {}, {}
        for run in self.config["runs"]:
            if (same := self.trained_as(run)) is not None:
                trained.setdefault(same, run)
        name = self.checks.schema_defs()["name"]  # a run's name becomes a path and a word of a command
        for sweep, s in (self.config.get("sweeps") or {}).items():
            self.check_sweep(sweep, s)
            for run, values, seed in self.cell_names(sweep):
                if not re.fullmatch(name["pattern"], run) or len(run) > name["maxLength"]:
                    self.errors.config_error(f"sweeps.{sweep}: its cell's name {run!r} is not a usable run name (letters, digits "
                                             f"and _ . + -, at most {name['maxLength']} characters): an axis value made it so "
                                             f"(axes: {', '.join(s['axes'])})")
                if run in self.config["runs"]:
                    self.errors.config_error(f"sweeps.{sweep}: its cell {run} is named as "
                                             f"{'a cell of sweeps.' + made[run] if run in made else 'a run of runs:'}; rename the sweep")
                made[run] = sweep
                self.config["runs"][run] = cell_settings(s["template"], list(s["axes"]), list(values.values()), seed)
                same = self.trained_as(run)
                if same is not None and same in trained and made.get(trained[same]) != sweep:  # runs: entries have none
                    del self.config["runs"][run]
                    self.shared_cells[run] = trained[same]
                elif same is not None:
                    trained.setdefault(same, run)

    def trained_as(self, run):
        """A run's settings as it trains (the trainer's defaults filled in), as text: None where its model is
        not one of `models:` (check_config says so)."""
        own = self.config["runs"][run]
        if {**self.config.get("train_defaults", {}), **own}.get("model") not in self.config.get("models", {}):
            return None
        return json.dumps({**TRAIN_DEFAULTS, **merged_run_settings(self.config, run)}, sort_keys=True, default=str)

    def check_sweep(self, sweep, s):
        where = f"sweeps.{sweep}"
        count = math.prod(len(v) for v in s["axes"].values()) * len(s["seeds"])
        if count > MAX_SWEEP_RUNS:
            self.errors.config_error(f"{where}: {count:,} runs (axes x seeds), over the {MAX_SWEEP_RUNS:,} a sweep may expand to")
        if "seed" in s["template"] or "seed" in s["axes"]:
            self.errors.config_error(f"{where}: a sweep's seeds are its `seeds:`, not a template or axis key")
        if LAYERS_AXIS in s["axes"] and {"enc_layers", "dec_layers"} & (set(s["axes"]) | set(s["template"])):
            self.errors.config_error(f"{where}.axes.{LAYERS_AXIS}: sets enc_layers and dec_layers; the template or another axis sets them too")
        run_schema = jsonschema.Draft202012Validator({"$defs": self.checks.schema_defs(), **self.checks.schema_defs()["run"]})
        for key, values in s["axes"].items():
            field = "enc_layers" if key == LAYERS_AXIS else key
            for i, value in enumerate(values):
                error = jsonschema.exceptions.best_match(run_schema.iter_errors({field: value}))
                if error is not None:
                    msg, detail = self.checks.schema_error_lines(error)
                    self.errors.config_error(f"{where}.axes.{key}[{i}]: {msg.removeprefix(f'{field}: ')}", detail)
            if len(set(map(repr, values))) < len(values):
                self.errors.config_error(f"{where}.axes.{key}: a value given twice would name two cells alike")
        for role, axis in (s.get("phase") or {}).items():
            if axis is not None and axis not in s["axes"]:
                close = self.errors.did_you_mean(axis, list(s["axes"]))
                self.errors.config_error(f"{where}.phase.{role}: '{axis}' is not an axis of the sweep{close}")

    # ---- the sweep's table (workflow/rules/sweeps.smk): one target per sweep, every cell's status ----
    def sweep_metrics(self, sweep):
        """{run: its metrics.csv} of every cell."""
        return {run: paths.metrics(run) for run in self.sweep_runs(sweep)}

    def sweep_metrics_files(self, wildcards):
        return list(self.sweep_metrics(wildcards.sweep).values())

    def sweep_metrics_pairs(self, wildcards):
        """RUN=PATH of every cell: the command reads the files its rule declares, by run."""
        return quoted_pairs(self.sweep_metrics(wildcards.sweep))

    def sweep_converged_below(self, sweep):
        """The sweep's own threshold, else Liu et al.'s tables' (admin.converged_below), else none: only a
        recorded divergence fails (our reading: the papers judge their grids by divergence and BLEU)."""
        own = self.config["sweeps"][sweep].get("converged_below")
        return own if own is not None else (self.config.get("admin") or {}).get("converged_below")

    def sweep_spec(self, wildcards):
        sweep = wildcards.sweep
        return spec_argument({"sweep": sweep, "axes": list(self.config["sweeps"][sweep]["axes"]),
                              "cells": [[run, values, seed] for run, values, seed in self.sweep_cells(sweep)],
                              "converged_below": self.sweep_converged_below(sweep)})

    # ---- its phase diagram (lnrepro sweep-phase): panels of one axis, cells of two others ----
    def sweep_phase_axes(self, sweep):
        """(facet, y, x): the sweep's `phase`, else its three axes in order (facet, y, x), or two (y, x)."""
        s = self.config["sweeps"][sweep]
        if s.get("phase"):
            return s["phase"].get("facet"), s["phase"]["y"], s["phase"]["x"]
        axes = list(s["axes"])
        if len(axes) in (2, 3):
            return tuple([None] * (3 - len(axes)) + axes)
        self.errors.config_error(f"sweeps.{sweep}: {len(axes)} axes; its phase diagram needs `phase: {{facet, y, x}}` to say "
                                 "which it draws")

    def sweep_title(self, sweep):
        s = self.config["sweeps"][sweep]
        return s.get("description") or (f"Sweep {sweep}: {' x '.join(s['axes'])}, "
                                        f"{len(s['seeds'])} seed{'s' * (len(s['seeds']) > 1)} per cell")

    def sweep_phase_spec(self, wildcards):
        facet, y, x = self.sweep_phase_axes(wildcards.sweep)
        return spec_argument({"title": self.sweep_title(wildcards.sweep), "facet": facet, "y": y, "x": x,
                              "converged_below": self.sweep_converged_below(wildcards.sweep)})

    # ---- figures from the phase diagram's cells: (b) thresholds against depth, (d) lr sensitivity ----
    def sweep_cells_figure_spec(self, sweep, x_axes, figure):
        """The phase diagram's axes for a figure that reads its cells along x: refused (before any job)
        where the sweep's x axis is not one the figure reads."""
        facet, y, x = self.sweep_phase_axes(sweep)
        if x not in x_axes:
            self.errors.config_error(f"sweeps.{sweep}: {figure} reads the phase diagram's cells along {' or '.join(x_axes)}; "
                                     f"its x axis is '{x}' (set `phase: {{facet, y, x}}`)")
        return spec_argument({"title": self.sweep_title(sweep), "facet": facet, "y": y, "x": x})

    def sweep_thresholds_spec(self, wildcards):
        return self.sweep_cells_figure_spec(wildcards.sweep, tuple(SAFER_SIDE), "its thresholds figure")

    def sweep_lr_sensitivity_spec(self, wildcards):
        return self.sweep_cells_figure_spec(wildcards.sweep, ("lr",), "its lr-sensitivity figure")

    def sweep_runs(self, sweep):
        return [run for run, _, _ in self.sweep_cells(sweep)]
