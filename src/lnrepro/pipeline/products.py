"""Every figure and table a config can ask for, each said once: its one name (the cost plan's group,
config/claims.yaml's `source`, the report's verdict place), its config section, the files rule all
asks for, the results tables its claims read, and what it trains. rule all's targets, the admin
sections' error lines, the claims' sources and the plan's groups are read from here; the rule that
makes a product lives in its rule file, which writes the same paths (lnrepro.paths).

Adding a product: its section to the schema (and a config), its rule, its entry here (and, for a
new kind of drawing, its command)."""
from dataclasses import dataclass
from typing import Callable

from lnrepro import paths
from lnrepro.paths import figure, table


@dataclass(frozen=True)
class Product:
    name: str
    section: tuple  # its config keys: the product exists where the config has a non-empty section there
    targets: tuple = ()  # what rule all asks for: the drawing or table, and the table its caption shows
    claims: tuple = ()  # (claims.yaml source, the CSV its table claims read)
    trains: str = ""  # whose runs its plan group prices: panels, table, figure, bert; "" trains nothing
    present: Callable = None  # (config, the claims part) -> bool, where the section alone does not say

    def in_config(self, config, claims=None):
        if self.present:
            return self.present(config, claims)
        section = config
        for key in self.section:
            section = section.get(key) or {}
        return bool(section)


def drawing(name, stem, section, *claim_stems, also=(), trains=""):
    """A figure: its PDF (and `also`) in rule all, each claim stem's CSV read by the claims of that name."""
    return Product(name, section, (figure(stem), *also), tuple((s, figure(s, ".csv")) for s in claim_stems), trains)


def admin_table(name, stem, section):
    return Product(name, section, (table(stem), table(stem, ".csv")), ((name, table(stem, ".csv")),), "table")


def config_figure(fig):
    """A figure of the config's `figures:` (lnrepro figure): its PDF and the final values its caption shows."""
    return Product(fig, ("figures", fig), (figure(fig), figure(fig, "_final.csv")), trains="panels")


# Liu et al.'s figures of trained runs (schema: admin.layer_dependency fig7|fig8, admin.update_norms fig3|fig11)
TRAINED_FIGURES = {"layer_dependency": ("fig7", "fig8"), "update_norms": ("fig3", "fig11")}

# in rule all's order, after the config's figures (config_figure)
PRODUCTS = (
    drawing("fig3", "fig3", ("gradient_probe",), "fig3"),
    Product("theory", ("theory",), (figure("theory"),), (("theory", figure("theory_checks", ".csv")),)),
    Product("claims", (), (paths.claims(".md"), paths.claims(".csv")), present=lambda config, claims: bool(claims and claims.applicable_claims())),
    drawing("liu_fig5", "liu_fig5", ("admin", "gradients"), "liu_fig5_vanishing"),
    drawing("liu_fig2", "liu_fig2", ("admin", "output_change"), "liu_fig2", "liu_fig2_fits"),
    admin_table("liu_table1", "admin_table1", ("admin", "table1")),
    admin_table("liu_table2", "admin_table2", ("admin", "table2")),
    drawing("liu_fig10", "liu_fig10", ("admin", "lr_grid"), "liu_fig10", trains="table"),
    *(drawing(f"liu_{fig}", f"liu_{fig}", ("admin", section, fig), f"liu_{fig}", also=(figure(f"liu_{fig}", "_summary.csv"),),
              trains="figure")
      for section, figs in TRAINED_FIGURES.items() for fig in figs),
    drawing("fig5", "fig5", ("bert", "fig5"), "fig5", trains="bert"),
    # the stability lab's sweeps: their tables are read by the lab's claims (results/lab_claims.md), not rule all
    Product("lab", ("sweeps", "lab"), claims=(("lab", paths.sweep_table("lab")),)),
    Product("lab_fn", ("sweeps", "lab_fn"), claims=(("lab_fn", paths.sweep_table("lab_fn")),)),
)

# {claims.yaml source: (the config section it needs, the CSV its table claims read)}
CLAIM_SOURCES = {source: (p.section, csv) for p in PRODUCTS for source, csv in p.claims}
LAB_SOURCES = tuple(source for p in PRODUCTS if p.section[:1] == ("sweeps",) for source, _ in p.claims)
# the admin sections whose rule reads each run's metrics and BLEU (table1, table2, lr_grid)
TABLE_SECTIONS = tuple(p.section[-1] for p in PRODUCTS if p.trains == "table")


def products(config, claims=None):
    """The products this config has, in rule all's order; the claims table where `claims` (the Claims part)
    finds claims this config can judge."""
    return [p for p in (*map(config_figure, config["figures"]), *PRODUCTS) if p.in_config(config, claims)]


def of_section(*section):
    return next(p for p in PRODUCTS if p.section == section)
