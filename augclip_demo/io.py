"""Image loading at the edge: anything in, an 8-bit RGB :class:`PIL.Image.Image` out.

Accepted inputs: a path (``str`` / ``os.PathLike``), raw ``bytes``, a ``PIL.Image.Image`` or a numpy
array. What is normalised, and why:

* EXIF orientation is applied, so a phone photo is scored the way it is displayed;
* transparency (RGBA, LA, palette with a transparent index) is composited on white, the colour
  most viewers show behind a transparent PNG;
* CMYK, 16-bit (``I;16``, ``I``), float (``F``), palette, 1-bit and grayscale images are converted
  to RGB; 16-bit data is scaled to 8 bits rather than clipped;
* animated images (GIF, APNG, WebP) use their first frame, with a note saying so;
* Pillow's decompression-bomb limit stays on (configurable with ``AUGCLIP_MAX_IMAGE_PIXELS``) and
  is reported as a clear :class:`ImageLoadError`.

Every failure (missing file, empty file, not an image, truncated data, bomb) raises
:class:`~augclip_demo.errors.ImageLoadError` naming the input.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Union

import numpy as np
from PIL import Image, ImageOps, UnidentifiedImageError

from .config import max_image_pixels_from_env
from .errors import ImageLoadError

ImageInput = Union[str, os.PathLike, bytes, bytearray, Image.Image, np.ndarray]  # noqa: UP007 - runtime alias, py3.10-safe

_BACKGROUND = (255, 255, 255)
_EXIF_ORIENTATION = 0x0112


@dataclass
class LoadedImage:
    """An RGB image with the name it is reported under, its content hash and loading notes."""

    image: Image.Image
    name: str
    notes: list[str] = field(default_factory=list)
    _sha256: str | None = field(default=None, repr=False)

    @property
    def sha256(self) -> str:
        if self._sha256 is None:
            self._sha256 = image_content_hash(self.image)
        return self._sha256

    @property
    def size(self) -> tuple[int, int]:
        return self.image.size


def image_content_hash(image: Image.Image) -> str:
    """SHA-256 of the decoded pixels (mode, size and bytes), so equal images hash equally
    whether they arrived as a PNG file, raw bytes or an array."""
    digest = hashlib.sha256()
    digest.update(f"{image.mode}:{image.size[0]}x{image.size[1]}:".encode())
    digest.update(image.tobytes())
    return digest.hexdigest()


def describe_input(source: object, name: str | None = None) -> str:
    """A short human label for an input, used in messages and reports."""
    if name:
        return name
    if isinstance(source, (str, os.PathLike)):
        return str(source)
    if isinstance(source, (bytes, bytearray)):
        return f"<{len(source)} bytes>"
    if isinstance(source, Image.Image):
        return f"<PIL image {source.mode} {source.size[0]}x{source.size[1]}>"
    if isinstance(source, np.ndarray):
        return f"<array {source.dtype} {tuple(source.shape)}>"
    return f"<{type(source).__name__}>"


def load_image(source: ImageInput, *, name: str | None = None, max_pixels: int | None = None) -> Image.Image:
    """Load ``source`` as an 8-bit RGB image (see the module docstring for what is normalised)."""
    return open_image(source, name=name, max_pixels=max_pixels).image


def open_image(
    source: ImageInput | LoadedImage, *, name: str | None = None, max_pixels: int | None = None
) -> LoadedImage:
    """Like :func:`load_image` but also returns the name, content hash and notes."""
    if isinstance(source, LoadedImage):
        return source
    label = describe_input(source, name)
    limit = max_pixels if max_pixels is not None else max_image_pixels_from_env()
    notes: list[str] = []
    if isinstance(source, np.ndarray):
        image = _from_array(source, label)
    elif isinstance(source, Image.Image):
        image = source
        _check_pixels(image, label, limit)
    elif isinstance(source, (bytes, bytearray)):
        if len(source) == 0:
            raise ImageLoadError(f"{label}: the data is empty (0 bytes); upload an image file")
        image = _open_with_pil(io.BytesIO(bytes(source)), label, limit)
    elif isinstance(source, (str, os.PathLike)):
        path = Path(source).expanduser()
        if not path.exists():
            raise ImageLoadError(f"{label}: file not found")
        if path.is_dir():
            raise ImageLoadError(f"{label}: is a folder, not an image file")
        if path.stat().st_size == 0:
            raise ImageLoadError(f"{label}: the file is empty (0 bytes)")
        with open(path, "rb") as handle:
            image = _open_with_pil(handle, label, limit)
        label = name or path.name
    else:
        raise ImageLoadError(
            f"{label}: unsupported input type {type(source).__name__}; "
            "pass a file path, bytes, a PIL image or a numpy array"
        )
    try:
        rgb = _to_rgb(image, label, notes)
    except ImageLoadError:
        raise
    except (OSError, ValueError, SyntaxError) as exc:
        raise ImageLoadError(f"{label}: the image data is corrupt or truncated ({exc})") from exc
    if rgb.size[0] == 0 or rgb.size[1] == 0:
        raise ImageLoadError(f"{label}: the image has zero width or height")
    return LoadedImage(image=rgb, name=label, notes=notes)


def _check_pixels(image: Image.Image, label: str, limit: int | None) -> None:
    limit = limit if limit is not None else Image.MAX_IMAGE_PIXELS
    if limit is not None and image.size[0] * image.size[1] > 2 * limit:
        raise ImageLoadError(_bomb_message(label, image.size, limit))


def _bomb_message(label: str, size: tuple[int, int], limit: int) -> str:
    width, height = size
    return (
        f"{label}: the image is {width}x{height} = {width * height:,} pixels, over the "
        f"decompression-bomb limit of {2 * limit:,} pixels; downscale it, or raise "
        "AUGCLIP_MAX_IMAGE_PIXELS if you trust the file"
    )


def _open_with_pil(handle: io.IOBase, label: str, limit: int | None) -> Image.Image:
    saved_limit = Image.MAX_IMAGE_PIXELS
    try:
        if limit is not None:
            Image.MAX_IMAGE_PIXELS = limit
        with warnings.catch_warnings():
            # Between 1x and 2x the limit Pillow only warns; that image is accepted as Pillow does.
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            image = Image.open(handle)
            if getattr(image, "is_animated", False):
                image.seek(0)
                image.info["augclip_frames"] = getattr(image, "n_frames", 0)
            image.load()
    except Image.DecompressionBombError as exc:
        pixels = re.search(r"\((\d+) pixels\)", str(exc))
        count = f"{int(pixels.group(1)):,} pixels" if pixels else "too many pixels"
        raise ImageLoadError(
            f"{label}: the image has {count}, over the decompression-bomb limit of "
            f"{2 * (limit or saved_limit):,} pixels; downscale it, or raise AUGCLIP_MAX_IMAGE_PIXELS "
            "if you trust the file"
        ) from exc
    except UnidentifiedImageError as exc:
        raise ImageLoadError(
            f"{label}: not a recognised image format; upload a PNG, JPEG, WebP, GIF, BMP or TIFF file"
        ) from exc
    except (OSError, ValueError, SyntaxError, EOFError) as exc:
        raise ImageLoadError(f"{label}: the image data is corrupt or truncated ({exc})") from exc
    finally:
        Image.MAX_IMAGE_PIXELS = saved_limit
    return image


def _to_rgb(image: Image.Image, label: str, notes: list[str]) -> Image.Image:
    frames = image.info.get("augclip_frames")
    if frames:
        notes.append(f"animated image with {frames} frames: the first frame is used")
    try:
        orientation = image.getexif().get(_EXIF_ORIENTATION, 1)
        if orientation not in (None, 1):
            image = ImageOps.exif_transpose(image)
            notes.append(f"EXIF orientation {orientation} applied")
    except Exception:  # a malformed EXIF block must not make an otherwise fine image unusable
        notes.append("EXIF orientation could not be read and was ignored")
    mode = image.mode
    if mode == "RGB":
        return image.copy()  # never alias a caller's PIL object
    if mode in ("I;16", "I;16B", "I;16L", "I;16N", "I"):
        notes.append(f"{mode} image scaled to 8 bits")
        return _gray_array_to_rgb(np.asarray(image), bit_depth=16 if mode.startswith("I;16") else None)
    if mode == "F":
        notes.append("floating-point image scaled to 8 bits")
        return _gray_array_to_rgb(np.asarray(image), bit_depth=None)
    if (mode == "P" and "transparency" in image.info) or mode in ("RGBA", "LA", "PA", "RGBa", "La"):
        notes.append("transparency composited on white")
        rgba = image.convert("RGBA")
        background = Image.new("RGBA", rgba.size, _BACKGROUND + (255,))
        return Image.alpha_composite(background, rgba).convert("RGB")
    if mode == "CMYK":
        notes.append("CMYK converted to RGB")
    return image.convert("RGB")


def _gray_array_to_rgb(array: np.ndarray, bit_depth: int | None) -> Image.Image:
    data = array.astype(np.float64)
    if bit_depth == 16 or (bit_depth is None and data.size and np.nanmax(data) > 255):
        data = data / 257.0  # 65535 -> 255 exactly
    elif bit_depth is None and data.size and np.nanmax(data) <= 1.0 and array.dtype.kind == "f":
        data = data * 255.0
    data = np.nan_to_num(data, nan=0.0, posinf=255.0, neginf=0.0)
    gray = np.clip(np.rint(data), 0, 255).astype(np.uint8)
    return Image.fromarray(gray, mode="L").convert("RGB")


def _from_array(array: np.ndarray, label: str) -> Image.Image:
    data = np.asarray(array)
    if data.size == 0:
        raise ImageLoadError(f"{label}: the array is empty")
    if data.ndim == 3 and data.shape[0] in (1, 3, 4) and data.shape[-1] not in (1, 3, 4):
        data = np.moveaxis(data, 0, -1)  # channels-first (C, H, W) -> (H, W, C)
    if data.ndim == 3 and data.shape[-1] == 1:
        data = data[..., 0]
    if data.ndim not in (2, 3) or (data.ndim == 3 and data.shape[-1] not in (3, 4)):
        raise ImageLoadError(
            f"{label}: expected an array of shape (H, W), (H, W, 3) or (H, W, 4), got {tuple(array.shape)}"
        )
    if data.dtype == bool:
        data = data.astype(np.uint8) * 255
    elif data.dtype.kind == "f":
        if not np.isfinite(data).all():
            raise ImageLoadError(f"{label}: the array contains NaN or infinite values")
        scale = 255.0 if data.max() <= 1.0 else 1.0  # [0, 1] floats or [0, 255] floats
        data = np.clip(np.rint(data * scale), 0, 255).astype(np.uint8)
    elif data.dtype.kind in "ui":
        if data.dtype.itemsize > 1 and data.max() > 255:
            data = np.clip(np.rint(data.astype(np.float64) / 257.0), 0, 255).astype(np.uint8)
        else:
            data = np.clip(data, 0, 255).astype(np.uint8)
    else:
        raise ImageLoadError(f"{label}: unsupported array dtype {data.dtype}")
    mode = {2: "L", 3: "RGB", 4: "RGBA"}[data.ndim if data.ndim == 2 else data.shape[-1]]
    return Image.fromarray(np.ascontiguousarray(data), mode=mode)
