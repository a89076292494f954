"""Image encoders: one interface over torch, transformers and user objects (``base``), the registered models as data
(``registry``), and the conversion of open_clip checkpoints (``open_clip``). docs/architecture.md §2."""
