"""Data the project writes itself, so it runs and tests offline: the sample WARC, the
seven-page demo, benchmark and test corpora, broken archives, the toy quality texts."""
