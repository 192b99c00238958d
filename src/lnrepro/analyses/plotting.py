"""What the analyses' figures share: the headless backend, the norms' names, how a figure is saved."""
import matplotlib

matplotlib.use("Agg")  # figures are drawn by pipeline jobs, without a display
import matplotlib.pyplot as plt  # noqa: E402

NORM_LABELS = {"post": "Post-LN", "pre": "Pre-LN", "admin": "Admin", "fixup": "FixUp"}


def save_figure(fig, title, pdf, tight=True):
    """Every figure of the package ends the same way: its title, the PDF, the memory freed."""
    fig.suptitle(title, fontsize=11)
    if tight:
        fig.tight_layout()
    fig.savefig(pdf)
    plt.close(fig)
