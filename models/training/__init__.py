"""The training recipes of the package's own models: GR-Lite (`train_gr_lite`: ArcFace with attribute heads and
distillation) and GR-Lite-mini-text (`train_gr_lite_text`: LiT beside GR-Lite-mini's frozen image tower), with what
they share (`training_state`, `training_data`, `holdout`) and their checks (`score_validation`, `check_disjoint`).

An application: it reads releases through the builder, scores with the metric and loads teachers through the
encoders, while the model code it trains (`lookbench.models`) is base, so the encoders can load a model without
importing its training (docs/architecture.md §2)."""
