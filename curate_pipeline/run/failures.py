"""Environment failures named in one line: a full disk, a quota, a denied write, a missing
bucket. Spark wraps them in a Java stack ("An error occurred while calling o96.parquet"), so
the run's failure text is searched for the causes below; the first that matches gives the
line the user reads (the cause, the location, the fix). Anything else is not ours to name.
Nothing here decides a document's fate: these fail the run (nothing is committed by the
failed step; a rerun after the fix resumes from what was)."""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Cause:
    pattern: re.Pattern[str]
    what: str
    fix: str


CAUSES = (
    Cause(re.compile(r"No space left on device|ENOSPC", re.I), "a disk is full",
          "free space on the disk the message names (the output's, or spark.local.dir's for "
          "Spark's shuffle files)"),
    Cause(re.compile(r"Disk quota exceeded|EDQUOT|QuotaExceeded|quota exceeded", re.I),
          "a storage quota is exceeded", "raise the quota or free space there"),
    Cause(re.compile(r"Read-only file system|EROFS", re.I), "the filesystem is read-only",
          "choose a writable --output"),
    Cause(re.compile(r"NoSuchBucket|specified bucket does not exist", re.I),
          "the bucket does not exist", "create it, or fix the bucket name in --output"),
    Cause(re.compile(r"Permission denied|AccessDenied|Access Denied|EACCES|"
                     r"AuthorizationPermissionMismatch", re.I),  # fmt: skip
          "permission denied", "grant write access there (or run as a user who has it)"),
)  # fmt: skip


def environment_failure(text: str, output: str) -> str | None:
    """The one line for a failure whose text shows an environment cause, else None."""
    for cause in CAUSES:
        m = cause.pattern.search(text)
        if m:
            line = next((ln.strip() for ln in text.splitlines() if cause.pattern.search(ln)),
                        m.group(0))  # fmt: skip
            line = re.sub(r"^\S*(Exception|Error):\s*", "", line)[:200]
            return (f"{cause.what} ({line}; the output is {output}): {cause.fix}, then "
                    "rerun: what was committed is reused")  # fmt: skip
    return None
