"""The human review of an annotated raw release (docs/building-a-release.md): the items it shows (``items``), who
sees which item (``plan``) and the audit of the proposer and the reviewers (``audit``). The decisions it writes and the
labels a build takes from them lie below the sources that read them (``dataset_builder.decisions``,
``dataset_builder.reviewed_labels``), so a build never imports the review above it."""
