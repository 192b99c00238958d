"""The product registry (lnrepro.pipeline.products): each figure and table said once, and what is read
from it (rule all's targets, the claims' sources, the plan's groups) agrees with the schema and the
rule files."""
import copy
import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from lnrepro import paths  # noqa: E402
from lnrepro.pipeline.products import CLAIM_SOURCES, LAB_SOURCES, PRODUCTS, TRAINED_FIGURES  # noqa: E402
from workflow_helpers import pipeline_of  # noqa: E402

SCHEMA = yaml.safe_load((ROOT / "workflow" / "schemas" / "config.schema.yaml").read_text())["$defs"]
CONFIGS = {name: yaml.safe_load((ROOT / "config" / f"{name}.yaml").read_text()) for name in ("demo", "config")}


def validated(config):
    p = pipeline_of(copy.deepcopy(config))
    p.validate()
    return p


def test_the_schema_names_the_registrys_claims_sources_and_trained_figures():
    assert sorted(SCHEMA["claim"]["properties"]["source"]["enum"]) == sorted(CLAIM_SOURCES)
    admin = SCHEMA["admin"]["properties"]
    assert {s: tuple(admin[s]["propertyNames"]["enum"]) for s in TRAINED_FIGURES} == TRAINED_FIGURES
    assert LAB_SOURCES == ("lab", "lab_fn")
    names = [p.name for p in PRODUCTS]
    assert len(names) == len(set(names))  # one name each


def rule_outputs():
    """Every results/ path a rule file writes (lnrepro.paths calls, evaluated), as a regex ({wildcard}
    matches one path segment or more)."""
    text = "".join(f.read_text() for f in (ROOT / "workflow" / "rules").glob("*.smk"))
    calls = re.findall(r'paths\.\w+\([^()]*\)(?:\s*\+\s*"[^"]*")?', text)
    literals = {eval(call, {"paths": paths}) for call in calls}  # noqa: S307 (the project's own rule files)
    assert len(literals) > 60 and not re.findall(r'"results/', text)  # every results/ path spelled by lnrepro.paths
    return [re.compile(re.sub(r"\\\{\w+\\\}", r"[^/]+(?:/[^/]+)*", re.escape(lit)) + "$") for lit in literals]


def test_every_target_of_rule_all_is_a_file_a_rule_writes():
    patterns = rule_outputs()
    for name, config in CONFIGS.items():
        p = validated(config)
        targets = p.default_targets()
        assert len(targets) > 20, name
        unmade = [t for t in targets if not any(pat.match(t) for pat in patterns)]
        assert not unmade, (name, unmade)


def test_a_product_is_in_rule_all_and_the_plan_exactly_where_its_section_is():
    p = validated(CONFIGS["demo"])
    targets, groups = p.default_targets(), p.plan.plan_groups()
    assert {"results/tables/admin_table2.md", "results/tables/admin_table2.csv", "results/figures/liu_fig10.pdf",
            "results/figures/liu_fig7_summary.csv", "results/figures/fig5.pdf", "results/claims.md"} <= set(targets)
    assert [t for t in targets if t.startswith("results/figures/fig4")] == ["results/figures/fig4.pdf",
                                                                            "results/figures/fig4_final.csv"]
    assert groups["liu_table2"] == p.admin.table_runs("table2") and "liu_fig8" in groups and "fig5" in groups
    assert "fig3" not in groups  # a probe trains nothing: the plan prices its passes apart (plan_probes)
    without = copy.deepcopy(CONFIGS["demo"])
    del without["admin"]["table2"], without["admin"]["layer_dependency"]["fig8"]
    q = validated(without)
    gone = set(targets) - set(q.default_targets())
    assert gone == {"results/tables/admin_table2.md", "results/tables/admin_table2.csv",
                    "results/figures/liu_fig8.pdf", "results/figures/liu_fig8_summary.csv"}
    assert set(groups) - set(q.plan.plan_groups()) == {"liu_table2", "liu_fig8"}
