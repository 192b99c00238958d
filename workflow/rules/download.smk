# Archives of the real corpora: fetched into resources/downloads/, verified by the sha256 in the
# config, unpacked safely into resources/extracted/<name without extension>/. A file placed in
# resources/downloads/ by hand (no network on this machine) is used as is: unpacking verifies it.
# Failures print one message to the terminal as well as to the log.


def download_entries():
    """(config key, {url, sha256, file}) of every file the config downloads: the corpora's
    archives and the BERT data's files (bert_data.smk), all through download_archive."""
    for corpus, c in config["corpora"].items():
        for a in c.get("archives", []):
            yield f"corpora.{corpus}.archives", a
    for name, c in config.get("bert_corpora", {}).items():
        if c.get("wikipedia"):
            yield f"bert_corpora.{name}.wikipedia", c["wikipedia"]
    for task, g in config.get("glue", {}).items():
        for key in ("archive", "msr_train", "dev_ids"):
            if g.get(key):
                yield f"glue.{task}.{key}", g[key]


def collect_archives():
    found = {}
    for key, a in download_entries():
        name = archive_name(a)
        other = found.get(name)
        if other and (other["url"], other.get("sha256")) != (a["url"], a.get("sha256")):
            config_error(f"{key}: '{name}' is also {other['url']} "
                         f"(sha256 {other.get('sha256')}); one file name must mean one file")
        found[name] = a
    # only archives are unpacked; a plain file (a dump, a .txt) is read where it was downloaded
    archives = [n for n in found if n.endswith(ARCHIVE_SUFFIXES)]
    stems = {archive_stem(n): n for n in archives}
    if len(stems) != len(archives):
        config_error(f"archives: two archives unpack to the same folder name ({sorted(found)})")
    return found, stems


ARCHIVES, ARCHIVE_STEMS = collect_archives()


def files_regex(names, none):
    return "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True)) or none


def download_flags(wildcards):
    """URL and sha256 reach the job as params: editing either fetches (and verifies) again."""
    a = ARCHIVES[wildcards.archive]
    return f"--url {shlex.quote(a['url'])}" + (f" --sha256 {a['sha256']}" if a.get("sha256") else "")


def archive_file(wildcards):
    return f"resources/downloads/{ARCHIVE_STEMS[wildcards.unpacked]}"


def extract_flags(wildcards):
    sha = ARCHIVES[ARCHIVE_STEMS[wildcards.unpacked]].get("sha256")
    return f"--sha256 {sha}" if sha else ""


rule download_archive:
    output:
        "resources/downloads/{archive}",
    wildcard_constraints:
        archive=files_regex(ARCHIVES, "NO_ARCHIVES"),
    params:
        flags=download_flags,
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/download/{archive}.log",
    shell:
        "lnrepro download {params.flags} --out {output} --log {log}"


rule extract_archive:
    input:
        archive_file,
    output:
        directory("resources/extracted/{unpacked}"),
    wildcard_constraints:
        unpacked=files_regex(ARCHIVE_STEMS, "NO_ARCHIVES"),
    params:
        flags=extract_flags,
    resources:
        mem_mb=mem_mb("data"),
        runtime=runtime("data"),
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/download/{unpacked}.extract.log",
    shell:
        "lnrepro extract --archive {input} --out {output} {params.flags} --log {log}"
