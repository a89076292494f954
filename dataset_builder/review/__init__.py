"""The human review of an annotated raw release (docs/building-a-release.md): the items it shows (``items``), the
decision store (``store``), who sees which item (``plan``), the reviewed labels a build takes (``labels``) and the
audit of the proposer and the reviewers (``audit``)."""
