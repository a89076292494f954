"""The leaderboard Space (``lookbench/leaderboard``): the results repo's submissions, each verified once, ranked beside
the published rows. docs/architecture.md §5."""
