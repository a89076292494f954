"""The leaderboard: published figures as data (``published/``), ranking and rendering of stored results, and
``lookbench reproduce``. Above the engine. docs/architecture.md §2."""
