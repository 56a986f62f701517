"""Publishing a version, in one place: the commit protocol and retention (`versions`), the
dataset card (`card`), the Delta Lake logs that follow each commit (`delta`), and the
export of a version as a plain dataset folder (`export`). No Spark here: these run on the
driver, or from any Python with the output's location (`curate versions`, `curate export`)."""
