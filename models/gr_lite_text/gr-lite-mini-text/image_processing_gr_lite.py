"""GR-Lite image processor on transformers' PIL/NumPy backend, so it needs no torchvision (docs/architecture.md §6).

Steps, as DINOv3 preprocesses: any PIL mode → RGB (transparency composited onto white; palette, CMYK,
greyscale converted by PIL), bilinear resize to `size`, rescale by 1/255, ImageNet mean/std. Copied next to
saved weights for `trust_remote_code` loading, so it imports only `transformers`.
"""
from __future__ import annotations

from transformers import PilBackend
from transformers.image_utils import IMAGENET_DEFAULT_MEAN, IMAGENET_DEFAULT_STD, PILImageResampling


class GrLiteImageProcessor(PilBackend):
    """`GrLiteImageProcessor(size={"height": 336, "width": 336})(images, return_tensors="pt").pixel_values`."""

    model_input_names = ["pixel_values"]
    resample = PILImageResampling.BILINEAR
    image_mean = IMAGENET_DEFAULT_MEAN
    image_std = IMAGENET_DEFAULT_STD
    size = {"height": 336, "width": 336}
    do_resize = True
    do_rescale = True
    do_normalize = True
    do_convert_rgb = True


GrLiteImageProcessor.register_for_auto_class("AutoImageProcessor")

__all__ = ["GrLiteImageProcessor"]
