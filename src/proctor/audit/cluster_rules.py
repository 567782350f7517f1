"""``cluster:`` over a field with a handful of values: the cluster-robust standard error every mean metric then
reports is an estimate over that many clusters, undefined with one and far too small with a few (the estimator
needs many clusters: a rule of thumb asks for dozens). A field that is one value in every row (a subject column
of a one-subject file) makes the reported uncertainty a number that means nothing."""

from __future__ import annotations

from typing import Iterator

from proctor.audit.source_rows import documents
from proctor.audit.subject import AuditSubject
from proctor.core.audit import AuditRule, Hit

MIN_CLUSTERS = 5


def few_clusters(subject: AuditSubject) -> Iterator[Hit]:
    name = getattr(subject.spec, "cluster", None)
    if not name or len(subject.samples) < MIN_CLUSTERS:
        return
    docs = documents(subject)
    values = {repr(docs[i].get(name)) for i in range(len(subject.samples))}
    if len(values) >= MIN_CLUSTERS:
        return
    how = (
        "one value in every row: the clustered standard error is undefined"
        if len(values) == 1
        else (
            f"{len(values)} values: the clustered standard error rests on {len(values)} clusters, far too few for the "
            "estimator, and comes out too small"
        )
    )
    yield subject.at_line(
        "cluster",
        f"cluster: {name} has {how}; cluster by a field that groups a few rows each (the passage several "
        "questions share)",
        "cluster",
    )


RULES = (
    AuditRule(
        "stats.few-clusters",
        "warning",
        "The cluster field has fewer than 5 values among the rows: the cluster-robust standard error is undefined "
        "(one) or far too small (a few).",
        few_clusters,
    ),
)
