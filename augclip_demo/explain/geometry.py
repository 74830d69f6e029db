"""Where the model's input square lies on the original image, and maps placed back onto it.

open_clip's preprocessing resizes and centre-crops (``shortest``, the default), pads
(``longest``) or squashes (``squash``) the image to the model's input size. A relevancy map lives on
that model input, so to overlay it on the *input* image at its own size we follow the same geometric
steps and find the box of the input the model saw (it can extend past the image where the
preprocessing pads). Regions outside the box were not seen by the model and are left empty (NaN).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

Box = tuple[float, float, float, float]  # left, top, right, bottom in input-image pixels


@dataclass(frozen=True)
class ModelView:
    """The part of an input image the model saw: ``box`` (input pixels) maps onto the model input."""

    image_size: tuple[int, int]  # (width, height) of the input image
    box: Box
    exact: bool  # False when an unknown preprocessing step made us assume the whole image
    note: str = ""

    @property
    def covers_whole_image(self) -> bool:
        width, height = self.image_size
        left, top, right, bottom = self.box
        return left <= 0.5 and top <= 0.5 and right >= width - 0.5 and bottom >= height - 0.5


def model_view(preprocess: Callable[[Any], torch.Tensor], image_size: tuple[int, int]) -> ModelView:
    """Follow the geometric steps of an open_clip / torchvision ``Compose`` for an image of ``image_size``.

    Known steps: ``Resize`` (int: shortest side, with ``max_size``; pair: squash), open_clip's
    ``ResizeKeepRatio``, ``CenterCrop`` and ``CenterCropOrPad`` (both pad when the crop is larger).
    Colour, tensor and normalisation steps do not move pixels. Anything else (a custom geometric
    transform) makes the view fall back to "the whole image", flagged ``exact=False``.
    """
    from open_clip.transform import CenterCropOrPad, ResizeKeepRatio
    from torchvision import transforms as T

    width, height = image_size
    box: list[float] = [0.0, 0.0, float(width), float(height)]
    cur_w, cur_h = float(width), float(height)
    steps = getattr(preprocess, "transforms", None)
    if steps is None:
        return ModelView(image_size, tuple(box), False, "preprocessing is not a Compose; assumed the whole image")  # type: ignore[arg-type]
    pixel_neutral = (T.ToTensor, T.Normalize, T.ConvertImageDtype, T.Grayscale, T.ColorJitter)
    for step in steps:
        if isinstance(step, T.Resize):
            cur_w, cur_h = _torchvision_resize(step, cur_w, cur_h)
        elif isinstance(step, ResizeKeepRatio):
            cur_w, cur_h = _keep_ratio_resize(step, cur_w, cur_h)
        elif isinstance(step, (T.CenterCrop, CenterCropOrPad)):
            crop_h, crop_w = _pair(step.size)
            box, cur_w, cur_h = _center_crop_or_pad(box, cur_w, cur_h, crop_w, crop_h)
        elif isinstance(step, pixel_neutral) or _is_pixel_neutral(step):
            continue
        else:
            name = type(step).__name__
            return ModelView(image_size, (0.0, 0.0, float(width), float(height)), False,
                             f"unknown preprocessing step {name}; the overlay assumes the model saw the whole image")
    return ModelView(image_size, (box[0], box[1], box[2], box[3]), True)


def _is_pixel_neutral(step: object) -> bool:
    """open_clip's mode conversion / to-tensor helpers (and plain functions such as _convert_to_rgb)."""
    name = getattr(step, "__name__", None) or type(step).__name__
    return name in {"MaybeConvertMode", "MaybeToTensor", "_convert_to_rgb", "convert_to_rgb"}


def _pair(size: int | Sequence[int]) -> tuple[int, int]:
    if isinstance(size, int):
        return size, size
    size = list(size)
    return (int(size[0]), int(size[0])) if len(size) == 1 else (int(size[0]), int(size[1]))


def _torchvision_resize(step: Any, w: float, h: float) -> tuple[float, float]:
    size = step.size
    if isinstance(size, int) or (isinstance(size, (list, tuple)) and len(size) == 1):
        # torchvision: the shorter side becomes ``size``, the longer one int(size * long / short),
        # then ``max_size`` caps the longer side.
        target = int(size if isinstance(size, int) else size[0])
        short, long = (w, h) if w <= h else (h, w)
        new_short, new_long = float(target), float(int(target * long / short))
        max_size = getattr(step, "max_size", None)
        if max_size is not None and new_long > max_size:
            new_short, new_long = float(int(max_size * new_short / new_long)), float(max_size)
        return (new_short, new_long) if w <= h else (new_long, new_short)
    new_h, new_w = _pair(size)
    return float(new_w), float(new_h)


def _keep_ratio_resize(step: Any, w: float, h: float) -> tuple[float, float]:
    target_h, target_w = step.size
    ratio_h, ratio_w = h / target_h, w / target_w
    longest = float(step.longest)
    ratio = max(ratio_h, ratio_w) * longest + min(ratio_h, ratio_w) * (1.0 - longest)
    return float(round(w / ratio)), float(round(h / ratio))


def _center_crop_or_pad(box: list[float], w: float, h: float, crop_w: int, crop_h: int) -> tuple[list[float], float, float]:
    """torchvision's centre crop (which pads symmetrically first when the crop is larger)."""
    scale_x = (box[2] - box[0]) / w
    scale_y = (box[3] - box[1]) / h
    left, top = box[0], box[1]
    if crop_w > w or crop_h > h:
        pad_left = (crop_w - w) // 2 if crop_w > w else 0
        pad_top = (crop_h - h) // 2 if crop_h > h else 0
        pad_right = (crop_w - w + 1) // 2 if crop_w > w else 0
        pad_bottom = (crop_h - h + 1) // 2 if crop_h > h else 0
        left -= pad_left * scale_x
        top -= pad_top * scale_y
        w, h = w + pad_left + pad_right, h + pad_top + pad_bottom
    crop_top = int(round((h - crop_h) / 2.0))
    crop_left = int(round((w - crop_w) / 2.0))
    new_left = left + crop_left * scale_x
    new_top = top + crop_top * scale_y
    return [new_left, new_top, new_left + crop_w * scale_x, new_top + crop_h * scale_y], float(crop_w), float(crop_h)


def upsample_grid(grid: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """Bilinear upsampling of a ``(gh, gw)`` grid to ``size`` = (width, height) (as Chefer et al. do)."""
    width, height = max(1, int(size[0])), max(1, int(size[1]))
    tensor = torch.as_tensor(np.asarray(grid, dtype=np.float32))[None, None]
    out = F.interpolate(tensor, size=(height, width), mode="bilinear", align_corners=False)
    return out[0, 0].numpy()


def place_on_image(view_map: np.ndarray, view: ModelView, out_size: tuple[int, int] | None = None) -> np.ndarray:
    """Put a map defined on the model input onto the input image frame (NaN where the model saw nothing).

    ``view_map`` is any 2-D array covering the model input (a patch grid or an upsampled map); it
    is resampled bilinearly onto the view box. ``out_size`` = (width, height) scales the frame
    (default: the input image's own size).
    """
    width, height = view.image_size
    out_w, out_h = out_size or (width, height)
    sx, sy = out_w / width, out_h / height
    left, top, right, bottom = view.box
    box_w = max(1, int(round((right - left) * sx)))
    box_h = max(1, int(round((bottom - top) * sy)))
    resampled = upsample_grid(view_map, (box_w, box_h))
    canvas = np.full((out_h, out_w), np.nan, dtype=np.float32)
    x0, y0 = int(round(left * sx)), int(round(top * sy))
    # Clip the box to the frame (it extends past the image where the preprocessing padded).
    src_x0, src_y0 = max(0, -x0), max(0, -y0)
    dst_x0, dst_y0 = max(0, x0), max(0, y0)
    dst_x1, dst_y1 = min(out_w, x0 + box_w), min(out_h, y0 + box_h)
    if dst_x1 > dst_x0 and dst_y1 > dst_y0:
        canvas[dst_y0:dst_y1, dst_x0:dst_x1] = resampled[
            src_y0:src_y0 + (dst_y1 - dst_y0), src_x0:src_x0 + (dst_x1 - dst_x0)
        ]
    return canvas
