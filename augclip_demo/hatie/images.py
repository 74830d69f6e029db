"""Image preparation for HATIE's measures, without models: masking, the objects' square-padded crops,
bilinear resizing as the published code does it, and the three ways the style and attribute rules
compare two images (edge maps, the degradation test's grey copies, the downscaled grey copy).

Images are float arrays (H, W, 3) with values in [0, 1]; masks are boolean (H, W).
"""

from __future__ import annotations

import numpy as np
from PIL import Image

from .criteria import degradation_sizes, downscaled_size

#: HATIE resizes every image to 512 x 512 before scoring (hatie-notes, "Pipeline").
_WORK_SIZE = 512
#: LPIPS compares 64 x 64 bilinear resizes of its two images (published code).
LPIPS_SIZE = 64
#: Canny's two thresholds on the 0-255 grey image (published code).
_CANNY_LOW, _CANNY_HIGH = 100, 400


def as_array(image: Image.Image, size: int | None = _WORK_SIZE) -> np.ndarray:
    """An RGB image as float64 (H, W, 3) in [0, 1], resized (bicubic) to size x size when given."""
    rgb = image.convert("RGB")
    if size is not None and rgb.size != (size, size):
        rgb = rgb.resize((size, size), Image.BICUBIC)
    return np.asarray(rgb, dtype=np.float64) / 255.0


def resize_mask(mask: np.ndarray, size: int = _WORK_SIZE) -> np.ndarray:
    """A boolean mask resized (nearest) to size x size."""
    mask = np.asarray(mask, dtype=bool)
    if mask.shape == (size, size):
        return mask
    return np.asarray(Image.fromarray(mask.astype(np.uint8) * 255).resize((size, size), Image.NEAREST)) > 127


def to_image(array: np.ndarray) -> Image.Image:
    """A float (H, W, 3) or (H, W) array in [0, 1] back to an RGB PIL image."""
    a = np.clip(np.asarray(array, dtype=np.float64), 0.0, 1.0)
    if a.ndim == 2:
        a = np.repeat(a[:, :, None], 3, axis=2)
    return Image.fromarray(np.round(a * 255.0).astype(np.uint8), "RGB")


def mask_out(image: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
    """The image with the masked pixels set to 0 (black): what HATIE compares as "the background"."""
    out = np.array(image, dtype=np.float64, copy=True)
    if mask is not None:
        out[np.asarray(mask, dtype=bool)] = 0.0
    return out


def _keep_only(image: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The image with everything outside the mask set to 0: the object's segment."""
    return mask_out(image, ~np.asarray(mask, dtype=bool))


def union(*masks: np.ndarray | None) -> np.ndarray | None:
    """The union of the masks given (None ones skipped); None when none is given."""
    present = [np.asarray(m, dtype=bool) for m in masks if m is not None]
    if not present:
        return None
    return np.logical_or.reduce(present)


def object_crop(image: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The object alone (everything outside its mask black), cut to the mask's bounding box and padded with
    black to a square, the crop centred (published code)."""
    x0, y0, x1, y1 = box_of(mask)
    return square_pad(_keep_only(image, mask)[y0:y1, x0:x1])


def box_of(mask: np.ndarray) -> tuple[int, int, int, int]:
    """(x0, y0, x1, y1) of the mask's bounding box, right and bottom exclusive."""
    rows, cols = np.nonzero(np.asarray(mask, dtype=bool))
    if rows.size == 0:
        raise ValueError("the mask is empty: no box")
    return int(cols.min()), int(rows.min()), int(cols.max()) + 1, int(rows.max()) + 1


def merged_box(first: tuple[int, int, int, int], second: tuple[int, int, int, int]) -> tuple[int, int, int, int]:
    """The smallest box holding both boxes (x0, y0, x1, y1)."""
    return min(first[0], second[0]), min(first[1], second[1]), max(first[2], second[2]), max(first[3], second[3])


def square_pad(image: np.ndarray) -> np.ndarray:
    """The image padded with black to a square, centred (the extra pixel of an odd difference after it)."""
    h, w = image.shape[:2]
    side = max(h, w)
    out = np.zeros((side, side) + image.shape[2:], dtype=np.float64)
    top, left = (side - h) // 2, (side - w) // 2
    out[top:top + h, left:left + w] = image
    return out


def _axis_weights(n_in: int, n_out: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    scale = n_in / n_out
    src = np.maximum((np.arange(n_out) + 0.5) * scale - 0.5, 0.0)
    lo = np.minimum(np.floor(src).astype(int), n_in - 1)
    hi = np.minimum(lo + 1, n_in - 1)
    return lo, hi, src - lo


def bilinear_resize(image: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """``image`` (H, W[, C]) resized to ``size`` = (height, width) by bilinear interpolation with half-pixel
    centres and no antialiasing: what PyTorch's ``interpolate(mode="bilinear", align_corners=False)``
    computes, the resize of the published code."""
    a = np.asarray(image, dtype=np.float64)
    if a.shape[:2] == tuple(size):
        return a.copy()
    r0, r1, fr = _axis_weights(a.shape[0], size[0])
    c0, c1, fc = _axis_weights(a.shape[1], size[1])
    fr = fr.reshape((-1, 1) + (1,) * (a.ndim - 2))
    fc = fc.reshape((1, -1) + (1,) * (a.ndim - 2))
    top = a[r0][:, c0] * (1 - fc) + a[r0][:, c1] * fc
    bottom = a[r1][:, c0] * (1 - fc) + a[r1][:, c1] * fc
    return top * (1 - fr) + bottom * fr


def _channel_mean_grey(image: np.ndarray) -> np.ndarray:
    """The mean of the three channels, repeated on three channels: the grey of the degradation test and the
    downscaled copy (published code; pure red and pure blue have the same grey)."""
    grey = np.asarray(image, dtype=np.float64).mean(axis=2, keepdims=True)
    return np.repeat(grey, 3, axis=2)


def edge_map(image: np.ndarray) -> np.ndarray:
    """Canny edges (thresholds 100 / 400) of the image's ITU-R 601 grey, as 0 / 1 on three channels: the
    published code's edge way (pixels truncated to 0-255 integers first, as it does)."""
    import cv2  # OpenCV: the published code's Canny, so the edge maps are the same pixels

    pixels = np.clip(np.asarray(image, dtype=np.float64) * 255.0, 0, 255).astype(np.uint8)
    grey = cv2.cvtColor(np.ascontiguousarray(pixels), cv2.COLOR_RGB2GRAY)
    edges = cv2.Canny(grey, _CANNY_LOW, _CANNY_HIGH).astype(np.float64) / 255.0
    return np.repeat(edges[..., None], 3, axis=2)


def degradation_steps(image: np.ndarray, side: int = _WORK_SIZE) -> list[np.ndarray]:
    """The degradation test's images: the channel-mean grey resized to side x side, then halved step by
    step (each step resizes the previous one, bilinear) while at least 2 px."""
    current = _channel_mean_grey(image)
    out = []
    for size in degradation_sizes(side):
        current = bilinear_resize(current, (size, size))
        out.append(current)
    return out


def downscaled_grey(image: np.ndarray) -> np.ndarray:
    """The channel-mean grey downscaled 20 times (bilinear, at least 4 px a side)."""
    h, w = image.shape[:2]
    return bilinear_resize(_channel_mean_grey(image), downscaled_size(h, w))


def l2_similarity_code(first: np.ndarray, second: np.ndarray) -> float:
    """1 - MSE of ``first`` and ``second`` resized (bilinear) to ``first``'s size; pixels in [0, 1], whose
    largest MSE is 1 (published code)."""
    a = np.asarray(first, dtype=np.float64)
    b = bilinear_resize(second, a.shape[:2])
    return float(1.0 - np.mean((a - b) ** 2))
