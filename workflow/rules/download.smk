# Archives of the real corpora: fetched into resources/downloads/, verified by the sha256 in the
# config, unpacked safely into resources/extracted/<name without extension>/. A file placed in
# resources/downloads/ by hand (no network on this machine) is used as is: it is verified.
# download_archive's output is resources/verified/<name>, a link to resources/downloads/<name>,
# never the file itself: Snakemake removes a job's outputs before it reruns it (after the url or
# sha256 in the config changed), which then removes the link only, and the job verifies the file
# against the new sha256 and keeps it. Nothing in resources/downloads/ is ever deleted by a rerun.
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


def drop_dangling_links():
    """A link in resources/verified/ whose file was deleted from resources/downloads/ (to fetch it
    again, as a sha256 mismatch advises) is removed before Snakemake plans: it holds no data, and
    Snakemake cannot plan with it (listed, then without a modification time). Its absence then
    reruns download_archive, as a missing file did before."""
    for name in ARCHIVES:
        link = f"resources/verified/{name}"
        if os.path.islink(link) and not os.path.exists(link):
            os.remove(link)


drop_dangling_links()


def files_regex(names, none):
    return "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True)) or none


def download_flags(wildcards):
    """URL and sha256 reach the job as params: editing either fetches (and verifies) again."""
    a = ARCHIVES[wildcards.archive]
    return f"--url {shlex.quote(a['url'])}" + (f" --sha256 {a['sha256']}" if a.get("sha256") else "")


def archive_file(wildcards):
    return f"resources/verified/{ARCHIVE_STEMS[wildcards.unpacked]}"


def extract_flags(wildcards):
    sha = ARCHIVES[ARCHIVE_STEMS[wildcards.unpacked]].get("sha256")
    return f"--sha256 {sha}" if sha else ""


rule download_archive:
    output:
        "resources/verified/{archive}",
    wildcard_constraints:
        archive=files_regex(ARCHIVES, "NO_ARCHIVES"),
    params:
        flags=download_flags,
        file="resources/downloads/{archive}",
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/download/{archive}.log",
    shell:
        "lnrepro download {params.flags} --out {params.file} --link {output} --log {log}"


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
