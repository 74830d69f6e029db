"""Batch evaluation: manifests, the streaming resumable runner, the papers' protocols, loaders.

* :mod:`.manifest` - the JSONL manifest format, validation (every problem at once), path checks
* :mod:`.runner` - ``run_batch``: parallel decode, deduplicated batched encoding, fits in a pool
* :mod:`.results` - results files (JSONL, resume, CSV export)
* :mod:`.protocol_tables` - s2AFC, AccBoth, win shares, rank and score correlations from results files
* :mod:`.loaders` - TEdBench, MagicBrush and CSV layouts -> manifests
* :mod:`.triplets` - ground-truth-test triplets (gt, ep = noisy source, em = supplied image)
* :mod:`.ziputil`, :mod:`.upload` - the app's upload path (safe zip extraction, one call to run)
* :mod:`.bench` - the speed benchmark
"""
