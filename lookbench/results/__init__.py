"""What a run leaves behind and how results are read: the store, per-query outcomes, intervals and paired tests,
per-release scores and ``lookbench compare``. Below the engine, which writes into it. docs/architecture.md §2."""
