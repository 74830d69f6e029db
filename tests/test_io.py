"""Image loading at the edge: every input kind and every odd mode or failure listed in the issue."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from augclip_demo.errors import ImageLoadError
from augclip_demo.io import image_content_hash, load_image, open_image


def png_bytes(image: Image.Image, fmt: str = "PNG", **kwargs) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, fmt, **kwargs)
    return buffer.getvalue()


def write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def test_path_bytes_pil_and_array_give_the_same_rgb(tmp_path: Path):
    image = Image.fromarray(np.random.default_rng(0).integers(0, 255, (20, 30, 3), dtype=np.uint8))
    path = tmp_path / "x.png"
    image.save(path)
    loaded = [load_image(path), load_image(str(path)), load_image(path.read_bytes()), load_image(image),
              load_image(np.asarray(image))]
    for item in loaded:
        assert item.mode == "RGB" and item.size == (30, 20)
    hashes = {image_content_hash(item) for item in loaded}
    assert len(hashes) == 1
    assert open_image(path).name == "x.png"


def test_exif_orientation_is_applied():
    image = Image.new("RGB", (40, 20), "red")
    image.paste((0, 0, 255), (0, 0, 10, 20))  # blue strip on the left
    exif = Image.Exif()
    exif[0x0112] = 6  # rotate 90 degrees clockwise for display
    loaded = open_image(png_bytes(image, "JPEG", exif=exif.tobytes(), quality=95))
    assert loaded.image.size == (20, 40)
    top = np.asarray(loaded.image)[2, 10]
    assert top[2] > 200 and top[0] < 60, "the blue strip must end up on top after rotation"
    assert any("EXIF" in note for note in loaded.notes)


def test_rgba_is_composited_on_white():
    image = Image.new("RGBA", (8, 8), (255, 0, 0, 0))
    image.putpixel((0, 0), (255, 0, 0, 255))
    rgb = np.asarray(load_image(png_bytes(image)))
    assert tuple(rgb[0, 0]) == (255, 0, 0)
    assert tuple(rgb[1, 1]) == (255, 255, 255)


def test_half_transparent_pixels_blend_with_white():
    image = Image.new("LA", (8, 8), (0, 128))
    assert abs(int(np.asarray(load_image(png_bytes(image)))[0, 0, 0]) - 127) <= 1


def test_palette_with_transparency_and_grayscale_and_1bit():
    pal = Image.new("P", (8, 8), 0)
    pal.putpalette([0, 0, 0, 255, 0, 0] + [0] * 762)
    pal.putpixel((1, 1), 1)
    data = png_bytes(pal, transparency=0)
    rgb = np.asarray(load_image(data))
    assert tuple(rgb[1, 1]) == (255, 0, 0) and tuple(rgb[0, 0]) == (255, 255, 255)
    assert load_image(Image.new("L", (3, 3), 77)).getpixel((0, 0)) == (77, 77, 77)
    assert load_image(Image.new("1", (3, 3), 1)).getpixel((0, 0)) == (255, 255, 255)


def test_cmyk_is_converted():
    loaded = open_image(png_bytes(Image.new("CMYK", (8, 8), (0, 255, 255, 0)), "JPEG"))
    r, g, b = loaded.image.getpixel((2, 2))
    assert loaded.image.mode == "RGB" and r > 200 and g < 60 and b < 60
    assert any("CMYK" in n for n in loaded.notes)


def test_sixteen_bit_is_scaled_not_clipped():
    array = np.tile(np.array([[0, 32896, 65535]], dtype=np.uint16), (8, 3))  # 8 x 9: above the minimum size
    image = Image.fromarray(array)  # mode I;16
    loaded = open_image(png_bytes(image))
    assert [p[0] for p in np.asarray(loaded.image)[0][:3]] == [0, 128, 255]
    assert load_image(array).getpixel((2, 0)) == (255, 255, 255)
    assert load_image(np.tile(np.array([[0.0, 0.5, 1.0]], dtype=np.float32), (8, 3))).getpixel((1, 0))[0] in (127, 128)


def test_animated_gif_uses_first_frame():
    frames = [Image.new("RGB", (8, 8), c) for c in ("red", "lime", "blue")]
    buffer = io.BytesIO()
    frames[0].save(buffer, "GIF", save_all=True, append_images=frames[1:], duration=50)
    loaded = open_image(buffer.getvalue())
    r, g, b = loaded.image.getpixel((4, 4))
    assert r > 200 and g < 50 and b < 50
    assert any("3 frames" in note for note in loaded.notes)


def test_channels_first_and_single_channel_arrays():
    chw = np.zeros((3, 9, 11), np.uint8)
    chw[0] = 255
    assert load_image(chw).size == (11, 9) and load_image(chw).getpixel((0, 0)) == (255, 0, 0)
    assert load_image(np.full((8, 8, 1), 9, np.uint8)).getpixel((0, 0)) == (9, 9, 9)
    assert load_image(np.ones((8, 8), bool)).getpixel((0, 0)) == (255, 255, 255)


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda p: p / "missing.png", "missing.png: file not found"),
        (lambda p: write(p / "empty.png", b""), "empty.png: the file is empty"),
        (lambda p: write(p / "notes.txt", b"hello, not an image"), "notes.txt: not a recognised image format"),
        (lambda p: p, "is a folder"),
    ],
)
def test_bad_files_name_the_input(tmp_path, make, message):
    with pytest.raises(ImageLoadError) as info:
        load_image(make(tmp_path))
    assert message in str(info.value)


def test_truncated_file_is_reported_as_corrupt(tmp_path):
    data = png_bytes(Image.fromarray(np.random.default_rng(1).integers(0, 255, (64, 64, 3), dtype=np.uint8)))
    path = tmp_path / "cut.png"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ImageLoadError, match="cut.png: the image data is corrupt or truncated"):
        load_image(path)


def test_bad_in_memory_inputs():
    with pytest.raises(ImageLoadError, match="empty"):
        load_image(b"")
    with pytest.raises(ImageLoadError, match="not a recognised image format"):
        load_image(b"GIF89a-but-not-really")
    with pytest.raises(ImageLoadError, match="NaN"):
        load_image(np.full((8, 8), np.nan))
    with pytest.raises(ImageLoadError, match="expected an array of shape"):
        load_image(np.zeros((2, 2, 2, 2), np.uint8))
    with pytest.raises(ImageLoadError, match="the array is empty"):
        load_image(np.zeros((0, 3), np.uint8))
    with pytest.raises(ImageLoadError, match="unsupported input type"):
        load_image(12345)  # type: ignore[arg-type]


def test_decompression_bomb_limit_is_kept_and_reported(tmp_path):
    path = tmp_path / "big.png"
    Image.new("L", (300, 300)).save(path)
    with pytest.raises(ImageLoadError) as info:
        load_image(path, max_pixels=20_000)  # 90,000 px > 2 x 20,000
    text = str(info.value)
    assert "big.png" in text and "decompression-bomb limit" in text and "90,000 pixels" in text
    assert load_image(path, max_pixels=50_000).size == (300, 300)  # between 1x and 2x: accepted, as Pillow does
    assert Image.MAX_IMAGE_PIXELS is not None and Image.MAX_IMAGE_PIXELS > 1_000_000  # global left as it was


def test_the_environment_limit_is_read_as_settings_read_it(tmp_path, monkeypatch):
    """AUGCLIP_MAX_IMAGE_PIXELS is parsed and checked by config alone, and reaches io as an argument: io reads
    no environment, so a bad variable stops the settings (at the edge) and never an image load."""
    from augclip_demo.config import Settings
    from augclip_demo.errors import ConfigError

    path = tmp_path / "big.png"
    Image.new("L", (300, 300)).save(path)
    monkeypatch.setenv("AUGCLIP_MAX_IMAGE_PIXELS", "20000")
    assert Settings.from_env().max_image_pixels == 20_000
    with pytest.raises(ImageLoadError, match="decompression-bomb limit of 40,000 pixels"):
        load_image(path, max_pixels=Settings.from_env().max_image_pixels)
    assert load_image(path).size == (300, 300)  # no argument: Pillow's limit, whatever the environment says
    for bad, message in [("lots", "must be an integer"), ("0", "must be a positive number of pixels")]:
        monkeypatch.setenv("AUGCLIP_MAX_IMAGE_PIXELS", bad)
        with pytest.raises(ConfigError, match=message):
            Settings.from_env()
        assert load_image(path).size == (300, 300)


def test_the_working_resolution_and_request_budget_come_from_settings(tmp_path, monkeypatch):
    from augclip_demo.config import Settings
    from augclip_demo.errors import ConfigError
    from augclip_demo.io import DEFAULT_MAX_IMAGE_SIDE, PixelBudget

    path = tmp_path / "wide.png"
    Image.new("RGB", (400, 100)).save(path)
    monkeypatch.setenv("AUGCLIP_MAX_IMAGE_SIDE", "100")
    monkeypatch.setenv("AUGCLIP_MAX_REQUEST_PIXELS", "30000")
    settings = Settings.from_env()
    assert (settings.max_image_side, settings.max_request_pixels) == (100, 30_000)
    assert load_image(path).size == (400, 100) and DEFAULT_MAX_IMAGE_SIDE >= 400  # io ignores the environment
    assert load_image(path, max_side=settings.max_image_side).size == (100, 25)  # 400 / 4, 100 / 4
    with pytest.raises(ImageLoadError, match="over the budget of 30,000 pixels"):
        open_image(path, budget=PixelBudget(settings.max_request_pixels))  # 40,000 pixels before reduction
    for name, bad in [("AUGCLIP_MAX_IMAGE_SIDE", "4"), ("AUGCLIP_MAX_REQUEST_PIXELS", "-1")]:
        monkeypatch.setenv(name, bad)
        with pytest.raises(ConfigError, match=f"got '{bad}' \\(from {name}\\)"):
            Settings.from_env()
        monkeypatch.delenv(name)
