"""What download.smk's rules ask of the config (parse time; no torch)."""
import functools
import os
import re
import shlex
import urllib.parse


class Download:
    # a downloaded file's name, as the schema's `file:` pattern: also for one taken from its URL
    FILE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")
    ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz", ".tar", ".zip")

    def __init__(self, config, errors):
        self.config, self.errors = config, errors

    # ---- archives: one file name under resources/downloads/ is one URL and one sha256 (download.smk) ----
    def archive_name(self, entry):
        return entry.get("file") or os.path.basename(urllib.parse.urlparse(entry["url"]).path.rstrip("/"))

    def archive_stem(self, name):
        return next((name[: -len(s)] for s in self.ARCHIVE_SUFFIXES if name.endswith(s)), name)

    def download_entries(self):
        """(config key, {url, sha256, file}) of every file the config downloads: the corpora's
        archives and the BERT data's files (bert_data.smk), all through download_archive."""
        for corpus, c in self.config["corpora"].items():
            for a in c.get("archives", []):
                yield f"corpora.{corpus}.archives", a
        for name, c in self.config.get("bert_corpora", {}).items():
            if c.get("wikipedia"):
                yield f"bert_corpora.{name}.wikipedia", c["wikipedia"]
        for task, g in self.config.get("glue", {}).items():
            for key in ("archive", "msr_train", "dev_ids"):
                if g.get(key):
                    yield f"glue.{task}.{key}", g[key]

    @functools.cached_property
    def archives(self):
        """{file name: its entry} of every archive the config names."""
        return self.collect_archives()[0]

    @functools.cached_property
    def archive_stems(self):
        """{unpacked folder: its archive's file name}."""
        return self.collect_archives()[1]

    def collect_archives(self):
        found = {}
        for key, a in self.download_entries():
            name = self.archive_name(a)
            if not self.FILE_NAME.fullmatch(name):  # it becomes a path and a word of the download's command
                shown = self.errors.short_repr
                self.errors.config_error(f"{key}: the file name {shown(name)} taken from {shown(a['url'])} "
                                         "is not a usable file name (letters, digits and _ . + -, starting with a letter or "
                                         "digit): give the entry a `file:`")
            other = found.get(name)
            if other and (other["url"], other.get("sha256")) != (a["url"], a.get("sha256")):
                self.errors.config_error(f"{key}: '{name}' is also {other['url']} "
                                         f"(sha256 {other.get('sha256')}); one file name must mean one file")
            found[name] = a
        # only archives are unpacked; a plain file (a dump, a .txt) is read where it was downloaded
        archives = [n for n in found if n.endswith(self.ARCHIVE_SUFFIXES)]
        stems = {self.archive_stem(n): n for n in archives}
        if len(stems) != len(archives):
            self.errors.config_error(f"archives: two archives unpack to the same folder name ({sorted(found)})")
        return found, stems

    def note_unverified_downloads(self):
        """Said when the DAG is planned, once, by the main process: downloads without a sha256 (used as
        fetched; each job then prints the sha256 to pin) and downloads over plain http."""
        entries = list(self.download_entries())
        unpinned = [f"{key} {self.archive_name(a)}" for key, a in entries if not a.get("sha256")]
        plain = [f"{key} {a['url']}" for key, a in entries if a["url"].lower().startswith("http://")]
        if unpinned:
            self.errors.note(f"downloads without a sha256, used unverified ({len(unpinned)} of {len(entries)}; each one's job "
                             f"prints the sha256 to pin): {'; '.join(unpinned)}")
        if plain:
            self.errors.note(f"downloads over plain http, which anyone on the path can change ({len(plain)}; use https "
                             f"where the host serves it): {'; '.join(plain)}")

    def drop_dangling_links(self):
        """A link in resources/verified/ whose file was deleted from resources/downloads/ (to fetch it
        again, as a sha256 mismatch advises) is removed before Snakemake plans: it holds no data, and
        Snakemake cannot plan with it (listed, then without a modification time). Its absence then
        reruns download_archive, as a missing file did before."""
        for name in self.archives:
            link = f"resources/verified/{name}"
            if os.path.islink(link) and not os.path.exists(link):
                os.remove(link)

    def download_flags(self, wildcards):
        """URL and sha256 reach the job as params: editing either fetches (and verifies) again."""
        a = self.archives[wildcards.archive]
        return f"--url {shlex.quote(a['url'])}" + (f" --sha256 {a['sha256']}" if a.get("sha256") else "")

    def archive_file(self, wildcards):
        return f"resources/verified/{self.archive_stems[wildcards.unpacked]}"

    def extract_flags(self, wildcards):
        sha = self.archives[self.archive_stems[wildcards.unpacked]].get("sha256")
        return f"--sha256 {sha}" if sha else ""
