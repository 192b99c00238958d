# Archives of the real corpora: fetched into resources/downloads/, verified by the sha256 in the
# config, unpacked safely into resources/extracted/<name without extension>/. A file placed in
# resources/downloads/ by hand (no network on this machine) is used as is: unpacking verifies it.
# Failures print one message to the terminal as well as to the log.


rule download_archive:
    output:
        "resources/downloads/{archive}",
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
