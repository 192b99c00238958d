"""Every figure the package draws (each analysis' draw, the one before its savefig) keeps its text on
the page, under the longest title a config gives and the demo's scale mark, embeds TrueType fonts, not
Type 3, and writes the PNG the report shows beside its PDF (issue 31). The tables are small made-up
ones in the columns each command writes to its CSV."""
import itertools
from pathlib import Path


import numpy as np
import pandas as pd
import pytest
import yaml
from matplotlib.figure import Figure
from matplotlib.text import Text

from figure_checks import fonts_are_truetype, png_is_drawn
from lnrepro.analyses import (figure, figure5, gradient_vanishing, layer_dependency, lr_grid, output_change,
                              plot_gradients, sweep_phase, sweep_sensitivity, sweep_thresholds, theory, update_norms)

CONFIGS = [Path(__file__).parents[1] / "config" / name for name in ("demo.yaml", "config.yaml")]
# the longest run label the demo draws (Fig 4), and a divergence note the legend adds to it
LABEL = "Pre-LN, Adam, lr 1.4e-3, no warm-up, x0.1 at ep 6, then inv. sqrt"
NOTE = "diverged at update 12345"


def titles(node):
    if isinstance(node, dict):
        yield from ([node["title"]] if isinstance(node.get("title"), str) else [])
        for value in node.values():
            yield from titles(value)
    elif isinstance(node, list):
        for value in node:
            yield from titles(value)


# the longest of the configs' titles (Liu et al. Fig 11's today): every figure is drawn under it
TITLE = max((t for c in CONFIGS for t in titles(yaml.safe_load(c.read_text()))), key=len)
# the demo's scale note at its longest (each figure's says what its runs trained), under every title
MARK = (yaml.safe_load(CONFIGS[0].read_text())["scale_note"] + ": 6+6 to 18+18 layers, d=64, generated deen / ende "
        "data, 6-20 epochs, lrs x2 of the run names' (the papers'), warm-ups 500 -> 36, 4000 -> 290 / 100 updates; "
        "models at initialization, 6-14 layers per side, d=64")


def rows(**columns):
    """One row per combination of the columns' values."""
    return pd.DataFrame(list(itertools.product(*columns.values())), columns=list(columns))


def figure_case(pdf):
    panels = [{"title": f"{name}: validation perplexity", "metric": m}
              for name, m in (("IWSLT-shaped", "valid_loss"), ("IWSLT-shaped", "bleu"), ("WMT", "valid_ppl"))]
    t = rows(panel=range(3), run=[f"run{i}" for i in range(6)], epoch=range(1, 9))
    t = t.assign(label=LABEL, metric=[panels[p]["metric"] for p in t.panel], value=10.0 / t.epoch, diverged=0,
                 capped=1, note=NOTE, valid_pairs=100, valid_sets_differ=(t.panel == 1).astype(int))
    figure.draw({"title": TITLE, "panels": panels}, t, pdf, mark=MARK)


def figure5_case(pdf):
    runs = ["bert_postln", "bert_preln"]
    t = rows(panel=["valid_loss", "mrpc", "rte"], run=runs, updates=[200, 400, 600])
    t = t.assign(label=LABEL, value=0.7, ci95=0.04, n=1, seeds=1, diverged=0, capped=1,
                 note=np.where(t.panel == "valid_loss", "pre-training " + NOTE, "n = 1 seed"))
    figure5.draw({"title": TITLE, "runs": runs, "tasks": ["mrpc", "rte"], "run_settings": {}}, t, pdf, mark=MARK)


def lr_grid_case(pdf):
    t = rows(norm=["post", "pre", "admin"], lr=[1e-4, 3e-4, 1e-3, 3e-3, 1e-2], beta2=[0.98, 0.99, 0.999])
    t = t.assign(run="r", status=np.where(t.lr > 3e-3, "not converged", "converged"), bleu=30.0, averaged=2,
                 average_last=10, capped=1)
    lr_grid.draw(t, TITLE, pdf, mark=MARK)


def plot_gradients_case(pdf):
    ab = rows(series=range(3), matrix=["W1", "W2"], x=range(1, 13)).assign(panel="ab")
    ab = ab.assign(state=[plot_gradients.SERIES[s][0] for s in ab.series],
                   norm=[plot_gradients.SERIES[s][1] for s in ab.series])
    cd = rows(norm=["pre", "post"], x=[6, 8, 10, 12, 14]).assign(panel="cd", state="init", matrix="W2")
    t = pd.concat([ab, cd], ignore_index=True).assign(mean=lambda d: d.x * 0.1, std=0.01)
    plot_gradients.draw(t, {"title": TITLE, "panel_layers": 6}, pdf, mark=MARK)


def update_norms_case(pdf):
    # one run, one epoch pair: Liu et al. Fig 3's, the narrowest figure of all
    t = rows(run=["liu_wmt_pre_6L"], epoch=[1], kind=list(update_norms.KINDS), side=["encoder", "decoder"],
             sublayer=["self_attn", "ffn"], matrix=["Q", "K", "V", "O"], layer=range(1, 3))
    update_norms.draw(t.assign(model="Pre-LN 2+2 layers", optimizer="adam", relative=0.5), TITLE, pdf, mark=MARK)


def layer_dependency_case(pdf):
    t = rows(run=["liu_wmt_post_6L"], state=["init", "trained"], side=["encoder", "decoder"], i=range(1, 5),
             j=range(0, 5))
    layer_dependency.draw(t.assign(norm="post", layers=8, beta=0.5), TITLE, pdf, mark=MARK)


def gradient_vanishing_case(pdf):
    t = rows(norm=["post", "pre"], seed=[1, 2], side=["encoder", "decoder"], layer=range(1, 19),
             kind=list(gradient_vanishing.KIND_MARKERS))
    t = t[(t.side == "decoder") | (t.kind != "enc_attn")]
    t = t.assign(combination=t.norm + "/" + t.norm, enc_norm=t.norm, dec_norm=t.norm, index=0, relative=0.5)
    gradient_vanishing.draw(t, TITLE, pdf, mark=MARK)


def output_change_case(pdf):
    t = rows(norm=["post", "pre", "admin"], kind=list(output_change.KINDS), layers=[2, 4, 8, 12, 18], seed=[1, 2])
    t = t.assign(output_change=1e-4 * t.layers)
    output_change.draw(t, output_change.fit_growth(t), TITLE, pdf, mark=MARK)


def lab_output_change_case(pdf):
    t = rows(norm=["post", "pre", "admin", "deepnorm", "sandwich", "tfixup", "resi_dual"], kind=list(output_change.KINDS),
             layers=[2, 4, 8, 18, 50, 100], seed=[1, 2])
    t = t.assign(output_change=1e-4 * t.layers ** 0.7)
    output_change.draw_exponents(t, output_change.fit_growth(t), TITLE, pdf, mark=MARK)


def theory_case(pdf):
    points, summary = theory.measure(d=8, layers=2, depths=[2, 4], seeds=1, sequences=1, positions=2, vocab_size=10)
    theory.draw(points, summary, TITLE, pdf, d=16, mark=MARK)


def sweep_phase_case(pdf):
    # the demo lab's: six schemes (two rows of panels), depth x warm-up
    t = rows(norm=["post", "pre", "deepnorm", "sandwich", "tfixup", "resi_dual"], layers=[6, 18], warmup=[0, 146],
             seed=[1, 2])
    t = t.assign(run="lab_run", status=np.where(t.layers > 6, "not converged", "converged"), final_valid_loss=6.5)
    sweep_phase.draw(sweep_phase.phase_cells(t, "norm", "layers", "warmup"), "norm", "layers", "warmup", TITLE, pdf,
                     mark=MARK, capped=True, converged_below=7.0)


def lab_lr_cells():
    # the demo's lab_lr: six schemes x depth x lr, a scheme failing at large lr, one failing everywhere
    t = rows(norm=["post", "pre", "deepnorm", "sandwich", "tfixup", "resi_dual"], layers=[6, 18], lr=[1e-3, 2e-3, 4e-3])
    return t.assign(failed=np.where((t.lr > 2e-3) | ((t.norm == "post") & (t.layers > 6)), 2, 0), seeds=2,
                    mean_final_valid_loss=6 + 100 * t.lr)


def sweep_thresholds_case(pdf):
    sweep_thresholds.draw(sweep_thresholds.threshold_rows(lab_lr_cells(), "norm", "layers", "lr"), "norm", "layers", "lr",
                          TITLE, pdf, mark=MARK)


def sweep_sensitivity_case(pdf):
    sweep_sensitivity.draw(sweep_sensitivity.sensitivity_rows(lab_lr_cells(), "norm", "layers"), "norm", "layers", "lr", TITLE,
                           pdf, mark=MARK)


CASES = [figure_case, figure5_case, lr_grid_case, plot_gradients_case, update_norms_case, layer_dependency_case,
         gradient_vanishing_case, output_change_case, lab_output_change_case, theory_case, sweep_phase_case, sweep_thresholds_case,
         sweep_sensitivity_case]


@pytest.fixture
def drawn(monkeypatch):
    """At each savefig: the figure's box and the extent of each text drawn on the Agg canvas. Drawn,
    not made: an axis makes tick labels beyond its limits too, and never draws them."""
    texts, saved = [], []
    text_draw, savefig = Text.draw, Figure.savefig

    def record(self, renderer):
        if self.get_visible() and self.get_text():
            texts.append(self)
        return text_draw(self, renderer)

    def save(self, fname, **kwargs):
        texts.clear()
        self.canvas.draw()
        saved.append((self.bbox.frozen(), [(t.get_text(), t.get_window_extent()) for t in texts], self))
        return savefig(self, fname, **kwargs)

    monkeypatch.setattr(Text, "draw", record)
    monkeypatch.setattr(Figure, "savefig", save)
    return saved


@pytest.mark.medium
@pytest.mark.parametrize("case", CASES, ids=[c.__name__ for c in CASES])
def test_every_text_lies_inside_the_figure_and_fonts_are_truetype(case, drawn, tmp_path):
    case(tmp_path / "f.pdf")
    (page, texts, drawn_figure), (_, png_texts, _) = drawn  # the PDF, then the PNG of the same figure
    assert [text for text, _ in png_texts] == [text for text, _ in texts]
    assert len(texts) > 10  # the test saw the figure's text: title, titles, labels, ticks
    assert any(MARK.split()[0] in text for text, _ in texts)  # the scale mark is drawn
    outside = [(text, [round(v) for v in box.extents]) for text, box in texts
               if box.x0 < page.x0 or box.x1 > page.x1 or box.y0 < page.y0 or box.y1 > page.y1]
    assert outside == [], f"page {page.extents}"
    assert fonts_are_truetype((tmp_path / "f.pdf").read_bytes())
    assert png_is_drawn(tmp_path / "f.png")  # the report's preview, beside the PDF
    assert heat_maps_have_colour_bars(drawn_figure, heat_map=case in (lr_grid_case, update_norms_case, layer_dependency_case,
                                                                                   sweep_phase_case))


def heat_maps_have_colour_bars(figure, heat_map):
    """Fig 10's BLEU heat map had none, so its colours had no unit (issue 44). One colour bar may serve a
    row of panels: an image is explained by a bar of its colour map and limits."""
    heat_maps = [ax for ax in figure.axes if ax.images]
    explained = {(im.get_cmap().name, im.get_clim()) for ax in heat_maps for im in ax.images if im.colorbar is not None}
    return bool(heat_maps) == heat_map and all(
        any((im.get_cmap().name, im.get_clim()) in explained for im in ax.images) for ax in heat_maps)


def test_the_configs_longest_title_is_long_enough_to_need_wrapping():
    assert len(TITLE) > 150  # otherwise the test above no longer tries a title that must be wrapped
