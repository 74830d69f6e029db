"""Image loading at the edge: anything in, an 8-bit RGB :class:`PIL.Image.Image` out.

Accepted inputs: a path (``str`` / ``os.PathLike``), raw ``bytes``, a ``PIL.Image.Image`` or a numpy
array. What is normalised, and why:

* EXIF orientation is applied, so a phone photo is scored the way it is displayed;
* transparency (RGBA, LA, palette with a transparent index) is composited on white, the colour
  most viewers show behind a transparent PNG;
* CMYK, 16-bit (``I;16``, ``I``), float (``F``), palette, 1-bit and grayscale images are converted
  to RGB; 16-bit data is scaled to 8 bits rather than clipped;
* animated images (GIF, APNG, WebP) use their first frame, with a note saying so;
* Pillow's decompression-bomb limit stays on (``max_pixels``: the setting ``AUGCLIP_MAX_IMAGE_PIXELS``,
  passed in by the caller) and is reported as a clear :class:`ImageLoadError`;
* files, bytes and arrays smaller than :data:`MIN_IMAGE_SIDE` pixels on a side are refused (nothing
  meaningful can be scored on them; PIL images passed in process, such as our own crops, are not);
* images larger than the working resolution (``max_side``: the setting ``AUGCLIP_MAX_IMAGE_SIDE``,
  default :data:`DEFAULT_MAX_IMAGE_SIDE` px on the longest side) are decoded reduced: JPEGs through the
  decoder's DCT scaling (:meth:`PIL.Image.Image.draft`), every format then by an exact integer box
  reduction (:meth:`PIL.Image.Image.reduce`), so at most one full-size decode is alive at a time and
  what stays in memory is bounded by the cap (a note records the reduction);
* a :class:`PixelBudget` shared by the images of one request refuses a request whose images hold
  more pixels in total than the budget (the setting ``AUGCLIP_MAX_REQUEST_PIXELS``), checked from the
  file headers before anything is decoded.

This module reads no environment: its limits are arguments, taken by the callers from
:class:`~augclip_demo.config.Settings`.

Every failure (missing file, empty file, not an image, truncated data, bomb) raises
:class:`~augclip_demo.errors.ImageLoadError` naming the input.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union

import numpy as np
from PIL import Image, ImageOps, UnidentifiedImageError

# Declared with their settings in config; named here too, where images are loaded.
from .config import DEFAULT_MAX_IMAGE_SIDE as DEFAULT_MAX_IMAGE_SIDE
from .config import DEFAULT_MAX_REQUEST_PIXELS as DEFAULT_MAX_REQUEST_PIXELS
from .config import MIN_IMAGE_SIDE as MIN_IMAGE_SIDE
from .errors import ImageLoadError, InputError

ImageInput = Union[str, os.PathLike, bytes, bytearray, Image.Image, np.ndarray]  # noqa: UP007 - runtime alias, py3.10-safe

_BACKGROUND = (255, 255, 255)
_EXIF_ORIENTATION = 0x0112

# Modes Image.reduce works on directly; the others are converted first.
_REDUCIBLE = {"L", "LA", "RGB", "RGBA", "I", "F", "CMYK", "PA", "RGBa", "La"}


@dataclass
class PixelBudget:
    """Pixels one request may still bring (header sizes, before reduction); shared by its images."""

    limit: int = DEFAULT_MAX_REQUEST_PIXELS
    used: int = 0

    def check_files(self, paths: list[str | os.PathLike]) -> None:
        """Refuse the request before any decoding when its files' headers already exceed the budget.

        Unreadable files are skipped here: decoding them reports what is wrong.
        """
        total = 0
        for path in paths:
            try:
                with Image.open(path) as image:
                    total += image.size[0] * image.size[1]
            except Exception:  # noqa: BLE001 - not an image / missing: open_image says so later
                continue
        if self.used + total > self.limit:
            raise ImageLoadError(
                f"the {len(paths)} images of this request hold {self.used + total:,} pixels in total, over the budget "
                f"of {self.limit:,} pixels per request; send fewer or smaller images (AUGCLIP_MAX_REQUEST_PIXELS)")

    def charge(self, size: tuple[int, int], label: str) -> None:
        pixels = size[0] * size[1]
        if self.used + pixels > self.limit:
            raise ImageLoadError(
                f"{label}: this request's images hold {self.used + pixels:,} pixels in total, over the budget of "
                f"{self.limit:,} pixels per request; send fewer or smaller images (AUGCLIP_MAX_REQUEST_PIXELS)")
        self.used += pixels


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


def prepared_pixels(image: Image.Image, pil_steps: list, transform: Callable[[Image.Image], Any]) -> Any:
    """A model input prepared from ``image``: the PIL steps of its transform (resize, crop, mode),
    then uint8 ``(H, W, 3)`` pixels when they end in an RGB image; otherwise ``transform(image)``, the
    whole transform's float tensor. The one place the encoder, batch decode threads and decode
    processes prepare images, so all of them give the model the same input."""
    prepared = image
    for step in pil_steps:
        prepared = step(prepared)
    if isinstance(prepared, Image.Image) and prepared.mode == "RGB":
        return np.asarray(prepared, dtype=np.uint8)
    return transform(image)


def image_content_hash(image: Image.Image) -> str:
    """SHA-256 of the decoded pixels (mode, size and bytes), so equal images hash equally
    whether they arrived as a PNG file, raw bytes or an array."""
    digest = hashlib.sha256()
    digest.update(f"{image.mode}:{image.size[0]}x{image.size[1]}:".encode())
    digest.update(image.tobytes())
    return digest.hexdigest()


def _describe_input(source: object, name: str | None = None) -> str:
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


def load_image(source: ImageInput, *, name: str | None = None, max_pixels: int | None = None,
               max_side: int | None = None, budget: PixelBudget | None = None) -> Image.Image:
    """Load ``source`` as an 8-bit RGB image (see the module docstring for what is normalised)."""
    return open_image(source, name=name, max_pixels=max_pixels, max_side=max_side, budget=budget).image


def has_own_name(item: object) -> bool:
    """Paths and loaded images carry a name; bytes, arrays and PIL objects get a positional one."""
    return isinstance(item, (str, os.PathLike, LoadedImage))


def open_source_and_edits(
    source: ImageInput | LoadedImage, edits: Sequence[ImageInput | LoadedImage], names: Sequence[str] | None = None,
    *, max_pixels: int | None = None, max_side: int | None = None,
) -> tuple[LoadedImage, list[LoadedImage]]:
    """The source and the edits of one evaluation, loaded (:func:`open_image`) after checking that there is an
    edit and a name for each edit when names are given. The source is called "source" and edit ``i`` by its
    given name, else its own (a path's), else "edit i"."""
    if not edits:
        raise InputError("no edited image given: pass at least one")
    if names is not None and len(names) != len(edits):
        raise InputError(f"{len(names)} names given for {len(edits)} edited images")
    src = open_image(source, name=None if has_own_name(source) else "source", max_pixels=max_pixels,
                     max_side=max_side)
    loaded = [open_image(item, name=names[i] if names else (None if has_own_name(item) else f"edit {i + 1}"),
                         max_pixels=max_pixels, max_side=max_side) for i, item in enumerate(edits)]
    return src, loaded


def open_image(
    source: ImageInput | LoadedImage, *, name: str | None = None, max_pixels: int | None = None,
    max_side: int | None = None, budget: PixelBudget | None = None,
) -> LoadedImage:
    """Like :func:`load_image` but also returns the name, content hash and notes.

    ``max_pixels`` is the decompression-bomb limit (default: Pillow's); ``max_side`` the working resolution
    (default :data:`DEFAULT_MAX_IMAGE_SIDE`); callers holding settings pass ``settings.max_image_pixels`` and
    ``settings.max_image_side``. ``budget`` is charged with the image's pixels before decoding.
    """
    if isinstance(source, LoadedImage):
        return source
    label = _describe_input(source, name)
    side = max_side if max_side is not None else DEFAULT_MAX_IMAGE_SIDE
    notes: list[str] = []
    if isinstance(source, np.ndarray):
        image = _from_array(source, label)
        if budget is not None:
            budget.charge(image.size, label)
    elif isinstance(source, Image.Image):
        image = source
        _check_pixels(image, label, max_pixels)
        if budget is not None:
            budget.charge(image.size, label)
    elif isinstance(source, (bytes, bytearray)):
        if len(source) == 0:
            raise ImageLoadError(f"{label}: the data is empty (0 bytes); give an image file")
        image = _open_with_pil(io.BytesIO(bytes(source)), label, max_pixels, side, budget)
    elif isinstance(source, (str, os.PathLike)):
        if "\x00" in os.fspath(source):
            raise ImageLoadError(f"{_describe_input(source, name)!r}: a file name cannot contain a NUL byte")
        path = Path(source).expanduser()
        if not path.exists():
            raise ImageLoadError(f"{label}: file not found")
        if path.is_dir():
            raise ImageLoadError(f"{label}: is a folder, not an image file")
        if path.stat().st_size == 0:
            raise ImageLoadError(f"{label}: the file is empty (0 bytes)")
        with open(path, "rb") as handle:
            image = _open_with_pil(handle, label, max_pixels, side, budget)
        label = name or path.name
    else:
        raise ImageLoadError(
            f"{label}: unsupported input type {type(source).__name__}; "
            "pass a file path, bytes, a PIL image or a numpy array"
        )
    # Files, bytes and arrays are inputs; a PIL image handed over in process is taken as it is (that is
    # also how our own crops, e.g. BPM's box crops, reach the encoder).
    if min(image.size) < MIN_IMAGE_SIDE and not isinstance(source, Image.Image):
        width, height = image.size
        raise ImageLoadError(f"{label}: the image is {width}x{height} pixels; images must be at least "
                             f"{MIN_IMAGE_SIDE}x{MIN_IMAGE_SIDE} pixels")
    try:
        reduced = _reduce_to(image, side, notes)
        decoded_size, image = image.size, reduced
        if image.size != decoded_size:
            _return_freed_memory()  # the full-size decode is gone: give its pages back to the system
        rgb = _to_rgb(image, label, notes)
    except ImageLoadError:
        raise
    except (OSError, ValueError, SyntaxError) as exc:
        raise ImageLoadError(f"{label}: the image data is corrupt or truncated ({exc})") from exc
    return LoadedImage(image=rgb, name=label, notes=notes)


def _return_freed_memory() -> None:
    """Ask glibc to hand freed heap pages back to the system (Linux; a no-op elsewhere).

    A full-size decode is hundreds of MB in Pillow's 16 MB blocks; glibc keeps such freed blocks in
    the process, so without this a server keeps the peak of its largest request for good.
    """
    global _MALLOC_TRIM
    if _MALLOC_TRIM is None:
        try:
            import ctypes

            _MALLOC_TRIM = ctypes.CDLL("libc.so.6").malloc_trim
        except (OSError, AttributeError):
            _MALLOC_TRIM = False
    if _MALLOC_TRIM:
        _MALLOC_TRIM(0)


_MALLOC_TRIM = None


def _reduction_factor(size: tuple[int, int], max_side: int) -> int:
    """The smallest integer factor that brings the longest side of ``size`` to ``max_side`` or below."""
    return max(1, -(-max(size) // max_side))


def _reduce_to(image: Image.Image, max_side: int, notes: list[str]) -> Image.Image:
    """Box-reduce ``image`` so its longest side is at most ``max_side``: by the smallest integer factor
    of its stored size, whatever the decoder did already (a drafted JPEG lands on the same size)."""
    stored = image.info.get("augclip_stored_size", image.size)
    factor = _reduction_factor(stored, max_side)
    if factor == 1:
        return image
    target = (-(-stored[0] // factor), -(-stored[1] // factor))
    sixteen_bit = image.mode.startswith("I;16")
    if image.mode not in _REDUCIBLE:
        transparent = image.mode in ("P", "PA") and "transparency" in image.info
        image = image.convert("RGBA" if transparent else "I" if sixteen_bit else "L" if image.mode == "1" else "RGB")
    info = {k: v for k, v in image.info.items() if k != "exif"}
    orientation = image.getexif().get(_EXIF_ORIENTATION)
    if image.size == (stored[0], stored[1]):
        reduced = image.reduce(factor)
    else:  # the decoder reduced already (JPEG DCT scaling): finish with a box filter to the same size
        reduced = image.resize(target, Image.BOX)
    reduced.info.update(info)
    if sixteen_bit:
        reduced.info["augclip_bit_depth"] = 16
    if orientation is not None:
        reduced.getexif()[_EXIF_ORIENTATION] = orientation
    notes.append(f"reduced from {stored[0]}x{stored[1]} to {reduced.size[0]}x{reduced.size[1]} "
                 f"(working resolution: at most {max_side} px on the longest side)")
    return reduced


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


def _open_with_pil(handle: io.IOBase, label: str, limit: int | None, max_side: int = DEFAULT_MAX_IMAGE_SIDE,
                   budget: PixelBudget | None = None) -> Image.Image:
    saved_limit = Image.MAX_IMAGE_PIXELS
    try:
        if limit is not None:
            Image.MAX_IMAGE_PIXELS = limit
        with warnings.catch_warnings():
            # Between 1x and 2x the limit Pillow only warns; that image is accepted as Pillow does.
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            image = Image.open(handle)
            if budget is not None:
                budget.charge(image.size, label)  # from the header: nothing decoded yet
            if getattr(image, "is_animated", False):
                image.seek(0)
                image.info["augclip_frames"] = getattr(image, "n_frames", 0)
            factor = _reduction_factor(image.size, max_side)
            image.info["augclip_stored_size"] = image.size
            if factor > 1 and image.format == "JPEG":
                # DCT scaling decodes at 1/2, 1/4 or 1/8 size (never below the requested size).
                image.draft(image.mode, (-(-image.size[0] // factor), -(-image.size[1] // factor)))
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
            f"{label}: not a recognised image format; give a PNG, JPEG, WebP, GIF, BMP or TIFF file"
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
        sixteen_bit = mode.startswith("I;16") or image.info.get("augclip_bit_depth") == 16
        notes.append(f"{'I;16' if sixteen_bit and mode == 'I' else mode} image scaled to 8 bits")
        return _gray_array_to_rgb(np.asarray(image), bit_depth=16 if sixteen_bit else None)
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


# ---------------------------------------------------------------------------------------------- JSON
#: Deepest nesting of lists / objects accepted in a JSON document from a user (manifests, attributes).
MAX_JSON_DEPTH = 32
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_JSON_BRACKET = re.compile(r"[\[\]{}]")


def json_depth(text: str, stop_above: int = MAX_JSON_DEPTH) -> int:
    """How deeply lists and objects nest in ``text`` (brackets inside strings do not count), for
    comparing with ``stop_above``: at or below it the answer may be an upper bound (the bracket
    count); above it counting stops at ``stop_above + 1``, so a hostile document costs no more than
    a well-formed one.
    """
    opened = text.count("[") + text.count("{")
    if opened <= stop_above:
        return opened  # an upper bound that is already small enough
    depth = deepest = 0
    for match in _JSON_BRACKET.finditer(_JSON_STRING.sub("", text)):
        depth += 1 if match.group() in "[{" else -1
        if depth > deepest:
            deepest = depth
            if deepest > stop_above:
                break
    return deepest


def parse_json(text: str, what: str, max_depth: int = MAX_JSON_DEPTH) -> object:
    """``json.loads`` for text from users: clear :class:`InputError` messages, nesting bounded.

    ``what`` names the document in messages ("attributes file x.json", "line 3").
    """
    if json_depth(text) > max_depth:
        raise InputError(f"{what}: JSON nested more than {max_depth} levels deep; "
                         "a manifest line or attributes file needs only a few")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{what}: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    except (RecursionError, MemoryError):
        raise InputError(f"{what}: the JSON is too large or too deeply nested") from None


# ------------------------------------------------------------------------------------------ CSV cells out
#: First characters that make a spreadsheet (Excel, LibreOffice, Google Sheets) read a cell as a formula.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_safe(value: object) -> object:
    """A CSV cell that no spreadsheet runs as a formula: text starting with one of :data:`FORMULA_STARTS`
    gets a leading ``'`` (the usual rule: ``=HYPERLINK(...)`` is shown as text). Numbers stay numbers
    (a negative score is written as it is); only strings, such as file names and texts, are changed."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def spreadsheet_row(row: dict[str, object]) -> dict[str, object]:
    """:func:`spreadsheet_safe` on every cell of a ``csv.DictWriter`` row."""
    return {key: spreadsheet_safe(value) for key, value in row.items()}
