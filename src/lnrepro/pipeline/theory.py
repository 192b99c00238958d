"""What theory.smk's rules ask of the config (parse time; no torch)."""
import shlex

from lnrepro import paths
from lnrepro.settings import cli_flags


class Theory:
    THEORY_KEYS = ("d_model", "layers", "seeds", "sequences", "positions", "vocab_size", "device")

    def __init__(self, config, errors):
        self.config, self.errors = config, errors

    def theory_flags(self, wildcards):
        if not self.config.get("theory"):
            self.errors.config_error(f"the theory checks ({paths.figure('theory')}) need a 'theory' section")
        t = self.config["theory"]
        flags = cli_flags({k: t[k] for k in self.THEORY_KEYS if k in t})
        depths = " ".join(str(int(L)) for L in t["depths"])
        return f"{flags} --depths {depths} --title {shlex.quote(t['title'])}"
