"""What a run leaves behind and how results are read: the store, per-query outcomes, intervals and paired tests,
per-release scores, ``lookbench compare`` and the trust ladder a leaderboard row is judged on. Below the engine,
which writes into it. docs/architecture.md §2."""
