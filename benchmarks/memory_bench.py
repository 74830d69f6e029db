"""Peak server memory for one request of huge images (issue 15, point 2).

    python benchmarks/memory_bench.py                    # this checkout, 8 edits of 12000 x 12000 PNG
    python benchmarks/memory_bench.py --root /path/to/other/checkout --side 8000 --edits 4

Starts ``python app.py`` (random:tiny, CPU) from ``--root``, sends one /evaluate with a source and
``--edits`` edits of ``--side`` x ``--side`` PNG (flat colours: small files, full-size decodes), and
prints the server's resident memory after a small warm-up request, its peak (VmHWM) during the big
one and what it holds after it.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from PIL import Image  # noqa: E402

from tests.security.servers import start_app  # noqa: E402


def huge_png(path: Path, side: int, color: str) -> Path:
    if not path.exists():
        Image.new("RGB", (side, side), color).save(path, compress_level=1)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=ROOT, help="checkout whose app.py is started")
    parser.add_argument("--side", type=int, default=12000)
    parser.add_argument("--edits", type=int, default=8)
    parser.add_argument("--images", type=Path, help="folder to keep the generated PNGs in (default: a temp folder)")
    args = parser.parse_args()
    from gradio_client import Client, handle_file

    work = Path(tempfile.mkdtemp(prefix="augclip-membench-"))
    images = args.images or work
    images.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    source = huge_png(images / f"source-{args.side}.png", args.side, "orange")
    edit = huge_png(images / f"edit-{args.side}.png", args.side, "pink")
    print(f"images: {source.stat().st_size / 2**20:.1f} MB + {edit.stat().st_size / 2**20:.1f} MB on disk, "
          f"made in {time.perf_counter() - start:.1f} s")
    app = start_app(work, env={"AUGCLIP_MAX_UPLOAD_MB": "64"}, root=args.root)
    try:
        client = Client(app.url, verbose=False)
        small = ROOT / "assets" / "examples" / "flower-pink"
        client.predict(handle_file(str(small / "source.png")), [handle_file(str(small / "well_edited.png"))],
                       "a pink dahlia", "", "", "manual", "orange dahlia", "pink dahlia", "svm", 1.0, True, True,
                       "random:tiny", api_name="/evaluate")  # warm-up: lazy imports and first-call costs
        before = app.memory()
        start = time.perf_counter()
        error = ""
        try:
            client.predict(handle_file(str(source)), [handle_file(str(edit))] * args.edits, "a pink dahlia", "",
                           "", "manual", "orange dahlia", "pink dahlia", "svm", 1.0, True, True, "random:tiny",
                           api_name="/evaluate")
        except Exception as exc:  # noqa: BLE001 - a refusal is a result too
            error = str(exc)[:200]
        seconds = time.perf_counter() - start
        after = app.memory()
    finally:
        app.stop()
    gib = 2**30
    print(f"root {args.root}: {args.edits} edits of {args.side}x{args.side} PNG")
    print(f"  RSS after a warm-up      {before['VmRSS'] / gib:6.2f} GiB")
    print(f"  peak RSS (VmHWM)        {after['VmHWM'] / gib:6.2f} GiB   (+{(after['VmHWM'] - before['VmRSS']) / gib:.2f} GiB)")
    print(f"  RSS after the request   {after['VmRSS'] / gib:6.2f} GiB")
    print(f"  request took            {seconds:6.1f} s" + (f"   refused: {error}" if error else ""))


if __name__ == "__main__":
    main()
