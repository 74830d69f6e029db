"""Benchmark layouts -> manifests: one module per benchmark, each registered as ``augclip-demo manifest <name>``.

* :mod:`.pie_bench` - PIE-Bench (``mapping_file.json``, ``annotation_images/``, run-length edit masks)
* :mod:`.editval` - EditVal (``object.json`` + MS-COCO images + ``<method>/<edit type>/<image id>/<value>.png``)
* :mod:`.dreambooth` - DreamBooth (subject folders, ``prompts_and_classes.txt``, per-model generated folders)
* :mod:`.hf_parquet` - Hugging Face Parquet shards (MagicBrush, Emu Edit, HQ-Edit presets or a column mapping)
* :mod:`.celeba` - CelebA-style attribute editing (a folder of faces, attribute target texts, per-model folders)
* :mod:`.hatie_bench` - HATIE's own benchmark (query and mask pickles, ``PREFIX_{query id}`` outputs), and an
  item's ``meta.hatie`` read back as the query it scores with
* :mod:`.common` - what they share: the unmatched-entry report, safe paths inside the dataset, image lookup

TEdBench, MagicBrush's JSON release and the CSV loader live in :mod:`augclip_demo.batch.loaders`.
"""

from __future__ import annotations

from .celeba import load_celeba
from .dreambooth import load_dreambooth
from .editval import load_editval
from .hf_parquet import PARQUET_PRESETS, load_parquet
from .pie_bench import decode_pie_mask, load_pie_bench

__all__ = ["PARQUET_PRESETS", "decode_pie_mask", "load_celeba", "load_dreambooth", "load_editval", "load_parquet",
           "load_pie_bench"]
