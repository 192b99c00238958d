# Archives of the real corpora: fetched into resources/downloads/, verified by the sha256 in the
# config, unpacked safely into resources/extracted/<name without extension>/. A file placed in
# resources/downloads/ by hand (no network on this machine) is used as is: it is verified.
# download_archive's output is resources/verified/<name>, a link to resources/downloads/<name>,
# never the file itself: Snakemake removes a job's outputs before it reruns it (after the url or
# sha256 in the config changed), which then removes the link only, and the job verifies the file
# against the new sha256 and keeps it. Nothing in resources/downloads/ is ever deleted by a rerun.
# Failures print one message to the terminal as well as to the log, and so does an unpinned file's
# sha256 once fetched; planning notes every download without a sha256 or over plain http.


P.download.drop_dangling_links()


rule download_archive:
    output:
        "resources/verified/{archive}",
    wildcard_constraints:
        archive=P.names_regex(P.download.archives) or "NO_ARCHIVES",
    params:
        flags=P.download.download_flags,
        file="resources/downloads/{archive}",
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/download/{archive}.log",
    shell:
        "lnrepro download {params.flags} --out {params.file:q} --link {output:q} --log {log:q}"


rule extract_archive:
    input:
        P.download.archive_file,
    output:
        directory("resources/extracted/{unpacked}"),
    wildcard_constraints:
        unpacked=P.names_regex(P.download.archive_stems) or "NO_ARCHIVES",
    params:
        flags=P.download.extract_flags,
    resources:
        mem_mb=P.resources.mem_mb("data"),
        runtime=P.plan.runtime("data"),
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/download/{unpacked}.extract.log",
    shell:
        "lnrepro extract --archive {input:q} --out {output:q} {params.flags} --log {log:q}"
