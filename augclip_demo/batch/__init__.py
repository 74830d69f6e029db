"""Batch evaluation: manifests, the streaming resumable runner, the papers' protocols, loaders.

* :mod:`.manifest` - the JSONL manifest format, validation (every problem at once), path checks
* :mod:`.runner` - ``run_batch``: the streaming loop (parallel decode, deduplicated batched encoding, fits in a pool)
  over :mod:`.plan` (the planning pass), :mod:`.item_steps` (decode -> attributes -> encode -> score -> record on plain
  data), :mod:`.embedding_store` (each embedding kept as long as needed), :mod:`.pools` (worker pools) and
  :mod:`.options` (``BatchOptions``, ``BatchSummary``); the metrics come from :mod:`augclip_demo.metrics.suite`
* :mod:`.results` - results files (JSONL written in order, resume, CSV export); :mod:`.results_parquet` - the
  same records as a folder of Parquet parts
* :mod:`.ray_engine` - ``engine="ray"``: the same run on Ray Data actors (optional extra ``ray``; imported on use)
* :mod:`.protocol_tables` - s2AFC, AccBoth, win shares, rank and score correlations from results files
* :mod:`.loaders` - TEdBench, MagicBrush and CSV layouts -> manifests
* :mod:`.benchmarks` - PIE-Bench, EditVal, DreamBooth, Hugging Face Parquet and CelebA-style layouts -> manifests
* :mod:`.triplets` - ground-truth-test triplets (gt, ep = noisy source, em = supplied image)
* :mod:`.ziputil`, :mod:`.upload` - the app's upload path (safe zip extraction, one call to run)
* :mod:`.bench` - the speed benchmark
"""
