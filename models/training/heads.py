"""The losses GR-Lite trains with, on the L2-normalised embedding.

ArcFace over the (category, full attribute set) classes pulls together what strict Fine Recall accepts as a match;
one cosine classifier per facet supervises every attribute on its own; distillation carries an ImageNet teacher's
features into a model that starts from random weights. `MetricLearner` holds the model and all of them as one module.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from lookbench.models.gr_lite import GrLiteModel


class ArcFaceHead(nn.Module):
    """Additive angular margin softmax (Deng et al. 2019): logit_y = s·cos(θ_y + m), others s·cos θ_j."""

    def __init__(self, dim: int, num_classes: int, scale: float, margin: float):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(num_classes, dim) * 0.01)
        self.scale, self.margin = scale, margin

    def forward(self, embeds: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        cos = F.linear(F.normalize(embeds.float(), dim=-1), F.normalize(self.weight.float(), dim=-1))
        cos = cos.clamp(-1 + 1e-7, 1 - 1e-7)
        target = cos.gather(1, labels[:, None])
        with_margin = torch.cos(torch.acos(target) + self.margin)
        # beyond θ > π − m, cos(θ + m) stops decreasing; use the linear fallback so the margin keeps penalising
        with_margin = torch.where(target > math.cos(math.pi - self.margin), with_margin, target - self.margin * math.sin(self.margin))
        logits = cos.scatter(1, labels[:, None], with_margin) * self.scale
        return F.cross_entropy(logits, labels)


class AttributeHeads(nn.Module):
    """One cosine classifier per facet (category, colour, pattern, sleeve …) on the embedding.

    Each attribute is supervised on its own, so the embedding separates every attribute the strict Fine Recall
    checks, even for (category, attribute set) classes with few images.
    """

    def __init__(self, dim: int, sizes: list[int], scale: float):
        super().__init__()
        self.heads = nn.ModuleList(nn.Linear(dim, n, bias=False) for n in sizes)
        self.scale = scale

    def forward(self, embeds: torch.Tensor, facet_labels: torch.Tensor) -> torch.Tensor:
        """Each head's loss, in the order of the facets (`training_data.build_labels`' vocab)."""
        unit = F.normalize(embeds.float(), dim=-1)
        losses = []
        for j, head in enumerate(self.heads):  # every head stays in the graph (DDP), even with no labelled row here
            target = facet_labels[:, j]
            logits = self.scale * F.linear(unit, F.normalize(head.weight.float(), dim=-1))
            losses.append(F.cross_entropy(logits, target, ignore_index=-100, reduction="sum") / (target >= 0).sum().clamp(min=1))
        return torch.stack(losses)


class Distillation(nn.Module):
    """The teacher's knowledge in the embedding, from its precomputed L2-normalised features.

    "cosine": a linear map of the embedding regresses the teacher feature (1 − cosine), so the embedding must
    carry what the teacher sees. "similarity": the batch's student cosine similarities are pulled onto the
    teacher's (mean squared error over image pairs), which shapes the neighbourhoods retrieval ranks by.
    Each row weighs its training set's `--distill-weight`, an image pair the geometric mean of its two rows', so a
    set with weight 0 is not distilled at all, not even against another set's images.
    """

    def __init__(self, dim: int, teacher_dim: int, kind: str):
        super().__init__()
        self.kind = kind
        self.projection = nn.Linear(dim, teacher_dim, bias=False) if kind == "cosine" else None

    def forward(self, embeds: torch.Tensor, teacher: torch.Tensor, weights: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The mean error (the logged term) and the mean weighted error (what the loss adds)."""
        unit = F.normalize(embeds.float(), dim=-1)
        if self.projection is not None:
            errors = 1 - F.cosine_similarity(self.projection(unit), teacher, dim=-1)
        else:
            pairs = ~torch.eye(len(unit), dtype=torch.bool, device=unit.device)
            errors = ((unit @ unit.T)[pairs] - (teacher @ teacher.T)[pairs]) ** 2
            weights = torch.sqrt(weights[:, None] * weights[None, :])[pairs]
        return errors.mean(), (weights * errors).mean()


class MetricLearner(nn.Module):
    """Model + ArcFace head (+ attribute heads, + distillation) as one module, so DDP synchronises all of them.

    ``category_weight`` adds the category head's loss once more: in the mean over heads it is one facet of many
    (1/16 of the weight on Mini), yet it alone decides Coarse Recall."""

    def __init__(self, model: GrLiteModel, head: ArcFaceHead, attribute_heads: AttributeHeads | None, attribute_weight: float,
                 distillation: Distillation | None = None, category_head: int | None = None, category_weight: float = 0.0):
        super().__init__()
        self.model, self.head, self.attribute_heads, self.attribute_weight = model, head, attribute_heads, attribute_weight
        self.distillation = distillation
        self.category_head, self.category_weight = category_head, category_weight

    def forward(self, pixel_values: torch.Tensor, labels: torch.Tensor, facet_labels: torch.Tensor,
                teacher: torch.Tensor | None = None, distill_weight: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
        """The weighted total `loss` and each unweighted term (`arcface`, `attributes`, `category`, `distill`).

        `distill_weight` is each row's `--distill-weight` (its training set's)."""
        embeds = self.model(pixel_values=pixel_values).image_embeds
        terms = {"arcface": self.head(embeds, labels)}
        loss = terms["arcface"]
        if self.attribute_heads is not None:
            heads = self.attribute_heads(embeds, facet_labels)
            terms["attributes"] = heads.mean()
            loss = loss + self.attribute_weight * terms["attributes"]
            if self.category_weight:
                terms["category"] = heads[self.category_head]
                loss = loss + self.category_weight * terms["category"]
        if self.distillation is not None:
            terms["distill"], weighted = self.distillation(embeds, teacher, distill_weight)
            loss = loss + weighted
        return {"loss": loss, **terms}
