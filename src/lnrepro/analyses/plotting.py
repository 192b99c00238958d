"""What the analyses' figures share: the headless backend, the fonts, the norms' names, a run's
legend label, the demo-scale mark and how a figure is saved (a PDF and, for the HTML report, a PNG)."""
import textwrap
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # figures are drawn by pipeline jobs, without a display
# TrueType fonts embedded in the PDF (and PS), not matplotlib's default Type 3 (glyphs as drawing
# procedures): the text stays selectable and searchable, and checkers that reject Type 3 pass it
matplotlib.rcParams["pdf.fonttype"] = 42
matplotlib.rcParams["ps.fonttype"] = 42
import matplotlib.pyplot as plt  # noqa: E402

from lnrepro.core import provenance  # noqa: E402

NORM_LABELS = {"post": "Post-LN", "pre": "Pre-LN", "admin": "Admin", "fixup": "FixUp", "deepnorm": "DeepNorm",
               "sandwich": "Sandwich-LN", "tfixup": "T-Fixup", "resi_dual": "ResiDual"}
NORM_FN_LABELS = {"layernorm": "LayerNorm", "rmsnorm": "RMSNorm", "dyt": "DyT"}
PNG_DPI = 150  # the report's preview: legible at a browser's width, ~200 kB


def with_description(description, label):
    """A run's `description` leads its label but never replaces it: the settings-built label says
    what the run trained, which a hand-written text could contradict."""
    return f"{description}: {label}" if description else label


def fit_title(fig, title, fontsize=11):
    """The figure's title, wrapped at spaces until each line is narrower than the figure: a title
    longer than the figure is wide (Liu et al. Fig 3's and 11's) was cut off at both edges."""
    text = fig.suptitle(title, fontsize=fontsize)
    renderer = fig.canvas.get_renderer()
    width = max(len(line) for line in title.split("\n"))
    while text.get_window_extent(renderer).width > 0.95 * fig.bbox.width and width > 20:
        width -= 4
        text.set_text("\n".join(textwrap.fill(line, width) for line in title.split("\n")))
    return text


def legend(ax, fontsize=7, width=60, **placement):
    """The axes' legend, each label wrapped at `width` characters: a run's label with its notes
    ('...: diverged before its first checkpoint (update N) [CAPPED]') is wider than a panel, and
    the legend ran off the figure's edge. placement: Axes.legend's loc and bbox_to_anchor."""
    handles, labels = ax.get_legend_handles_labels()
    return ax.legend(handles, [textwrap.fill(label, width) for label in labels], fontsize=fontsize, **placement)


def png_beside(pdf):
    """The PNG the report shows for a PDF figure: a browser previews no PDF in the report."""
    return Path(pdf).with_suffix(".png")


def save_figure(fig, title, pdf, tight=True, mark=None):
    """Every figure of the package ends the same way: its title (and under it the scale mark, where
    the config scales the papers, and the inputs it was drawn from that have no record or changed
    since theirs), the PDF and the PNG beside it, the memory freed."""
    fit_title(fig, "\n".join(line for line in (title, mark, provenance.untrusted_inputs_mark()) if line))
    if tight:
        fig.tight_layout()
    fig.savefig(pdf)
    fig.savefig(png_beside(pdf), dpi=PNG_DPI)
    plt.close(fig)
