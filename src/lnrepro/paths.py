"""Where each result lives under results/: one function per kind of file, for the rule files' outputs,
the pipeline's inputs and the commands' defaults alike. Called with a wildcard ("{run}") a function
returns the rule's pattern; with a name, that file. Torch-free (the rule files import it)."""
RESULTS = "results"
FIGURES = f"{RESULTS}/figures/"
TABLES = f"{RESULTS}/tables/"


def data_dir(corpus, *parts):
    """A corpus's preparation, raw text to binarized (data.smk), or a file in it (parts: "tok", "train.src");
    BERT's and GLUE's corpora are "bert/NAME" and "glue/TASK"."""
    return "/".join([f"{RESULTS}/data/{corpus}", *parts])


def run_dir(run, stage="train"):
    """A training's folder (metrics.csv, checkpoints/): stage train, pretrain (BERT) or admin (Admin's profile)."""
    return f"{RESULTS}/{stage}/{run}"


def metrics(run, stage="train"):
    return f"{run_dir(run, stage)}/metrics.csv"


def omega(run):
    """Admin's omega, profiled before its run trains (train.smk's admin_profile)."""
    return f"{run_dir(run, 'admin')}/omega.json"


def retained(run, stage="train"):
    """The manifest of a run's checkpoint retention (retention.smk)."""
    return f"{run_dir(run, stage)}/retained.json"


def bleu(run, average_last=0):
    """A run's BLEU: every epoch decoded, or its last `average_last` checkpoints averaged."""
    return f"{RESULTS}/eval/{run}/bleu_avg{average_last}.csv" if average_last else f"{RESULTS}/eval/{run}/bleu.csv"


def finetune(run, task, round_, suffix=".csv"):
    """A BERT run's fine-tuning on a GLUE task from the checkpoint of one round (.summary.csv: its summary)."""
    return f"{RESULTS}/finetune/{run}/{task}/round{round_}{suffix}"


def probe(folder, kind):
    """Fig 3's gradient probes: init/{norm}_{layers}L or after_warmup/{run}; kind grads or concentration."""
    return f"{RESULTS}/probe/{folder}/{kind}.csv"


def figure(stem, suffix=".pdf"):
    return f"{FIGURES}{stem}{suffix}"


def table(stem, suffix=".md"):
    return f"{TABLES}{stem}{suffix}"


def sweep_table(sweep):
    return f"{RESULTS}/sweeps/{sweep}.csv"


def claims(suffix=".md", lab=False):
    """The papers' claims judged (rule all), or the stability lab's (lab=True: its own target)."""
    return f"{RESULTS}/{'lab_claims' if lab else 'claims'}{suffix}"


def plan(suffix=".md"):
    return f"{RESULTS}/plan{suffix}"
