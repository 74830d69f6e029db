"""Image preparation for HATIE's measures, without models: masking, square crops, and the grey,
downscaled and edge versions that the style and attribute rules compare (App. C.1.5, C.1.7).

Images are float arrays (H, W, 3) with values in [0, 1]; masks are boolean (H, W).
"""

from __future__ import annotations

import numpy as np
from PIL import Image
from scipy import ndimage

#: HATIE resizes every image to 512 x 512 before scoring (hatie-notes, "Pipeline").
WORK_SIZE = 512
#: The factor of the downscaled comparison (our choice: the paper names "down-scaling" without one).
DOWNSCALE = 8


def as_array(image: Image.Image, size: int | None = WORK_SIZE) -> np.ndarray:
    """An RGB image as float64 (H, W, 3) in [0, 1], resized (bicubic) to size x size when given."""
    rgb = image.convert("RGB")
    if size is not None and rgb.size != (size, size):
        rgb = rgb.resize((size, size), Image.BICUBIC)
    return np.asarray(rgb, dtype=np.float64) / 255.0


def resize_mask(mask: np.ndarray, size: int = WORK_SIZE) -> np.ndarray:
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


def keep_only(image: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The image with everything outside the mask set to 0: the object's segment."""
    return mask_out(image, ~np.asarray(mask, dtype=bool))


def union(*masks: np.ndarray | None) -> np.ndarray | None:
    """The union of the masks given (None ones skipped); None when none is given."""
    present = [np.asarray(m, dtype=bool) for m in masks if m is not None]
    if not present:
        return None
    return np.logical_or.reduce(present)


def square_box(mask: np.ndarray, shape: tuple[int, int] | None = None) -> tuple[int, int, int, int]:
    """(top, left, bottom, right), bottom / right exclusive: the smallest square holding the mask's
    bounding box, centred on it and shifted to lie inside the image where the image is big enough."""
    rows, cols = np.nonzero(np.asarray(mask, dtype=bool))
    if rows.size == 0:
        raise ValueError("the mask is empty: no box to crop")
    h, w = shape or np.shape(mask)
    top, bottom, left, right = int(rows.min()), int(rows.max()) + 1, int(cols.min()), int(cols.max()) + 1
    side = max(bottom - top, right - left)
    cy, cx = (top + bottom) / 2.0, (left + right) / 2.0
    t, lft = int(round(cy - side / 2.0)), int(round(cx - side / 2.0))
    t = min(max(t, 0), max(h - side, 0))
    lft = min(max(lft, 0), max(w - side, 0))
    return t, lft, t + side, lft + side


def square_crop(image: np.ndarray, box: tuple[int, int, int, int]) -> np.ndarray:
    """The box cut out of the image, zero-padded where it reaches past the image (always square)."""
    top, left, bottom, right = box
    side = max(bottom - top, right - left)
    out = np.zeros((side, side) + image.shape[2:], dtype=np.float64)
    h, w = image.shape[:2]
    t0, l0, b0, r0 = max(top, 0), max(left, 0), min(bottom, h), min(right, w)
    out[t0 - top:b0 - top, l0 - left:r0 - left] = image[t0:b0, l0:r0]
    return out


def resize_array(image: np.ndarray, size: int) -> np.ndarray:
    """A float image resized (bicubic) to size x size."""
    return as_array(to_image(image), size)


def grayscale(image: np.ndarray) -> np.ndarray:
    """ITU-R 601 luma repeated on three channels (the "grey" degraded comparison)."""
    luma = image[..., 0] * 0.299 + image[..., 1] * 0.587 + image[..., 2] * 0.114
    return np.repeat(luma[..., None], 3, axis=2)


def downscaled(image: np.ndarray, factor: int = DOWNSCALE) -> np.ndarray:
    """Block means over factor x factor tiles, expanded back to the original size (the "small" one)."""
    h, w = image.shape[:2]
    hh, ww = max(h // factor, 1), max(w // factor, 1)
    small = np.asarray(to_image(image).resize((ww, hh), Image.BOX), dtype=np.float64) / 255.0
    return np.asarray(to_image(small).resize((w, h), Image.NEAREST), dtype=np.float64) / 255.0


def edge_map(image: np.ndarray, sigma: float = 1.4, low: float = 0.1, high: float = 0.2) -> np.ndarray:
    """Canny's edge detector (Gaussian smoothing, Sobel gradients, thinning along the gradient, two
    thresholds relative to the largest gradient, hysteresis) as a 0 / 1 image on three channels."""
    gray = grayscale(image)[..., 0]
    smooth = ndimage.gaussian_filter(gray, sigma)
    gy, gx = ndimage.sobel(smooth, axis=0), ndimage.sobel(smooth, axis=1)
    magnitude = np.hypot(gx, gy)
    peak = magnitude.max()
    if peak <= 0:
        return np.zeros_like(image)
    angle = (np.rad2deg(np.arctan2(gy, gx)) + 180.0) % 180.0
    # neighbours along the gradient direction, quantised to 0 / 45 / 90 / 135 degrees
    padded = np.pad(magnitude, 1)
    h, w = magnitude.shape
    shifts = {0: ((0, 1), (0, -1)), 45: ((1, 1), (-1, -1)), 90: ((1, 0), (-1, 0)), 135: ((1, -1), (-1, 1))}
    direction = (np.round(angle / 45.0) % 4 * 45).astype(int)
    thin = np.zeros_like(magnitude, dtype=bool)
    for deg, ((dy1, dx1), (dy2, dx2)) in shifts.items():
        n1 = padded[1 + dy1:1 + dy1 + h, 1 + dx1:1 + dx1 + w]
        n2 = padded[1 + dy2:1 + dy2 + h, 1 + dx2:1 + dx2 + w]
        thin |= (direction == deg) & (magnitude >= n1) & (magnitude >= n2)
    strong = thin & (magnitude >= high * peak)
    weak = thin & (magnitude >= low * peak)
    labels, n = ndimage.label(weak, structure=np.ones((3, 3)))
    if n == 0:
        return np.zeros_like(image)
    keep = np.zeros(n + 1, dtype=bool)
    keep[np.unique(labels[strong])] = True
    keep[0] = False
    edges = keep[labels].astype(np.float64)
    return np.repeat(edges[..., None], 3, axis=2)


def comparison_versions(image: np.ndarray) -> dict[str, np.ndarray]:
    """The four versions the style and attribute rules compare: plain, edges, gray, small."""
    return {"plain": image, "edges": edge_map(image), "gray": grayscale(image), "small": downscaled(image)}
