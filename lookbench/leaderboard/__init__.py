"""The leaderboard: the published figures as data (``published/``), read with stored results (``load``), ranked per
comparable group (``ranking``), written as text (``render``) or drawn (``figures``), and ``lookbench reproduce``
(``reproduce``). Above the engine. docs/architecture.md §2."""
