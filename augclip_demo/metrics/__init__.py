"""Metric math on embeddings and pixels: numpy and scikit-learn only, no models.

* :mod:`.augclip` - AugCLIP (Eq. 3-12)
* :mod:`.clip_metrics` - CLIPdir, CLIP-I, CLIP-T, augmented CLIPdir (Eq. 13-14)
* :mod:`.pixel` - L2
* :mod:`.suite` - the metric table: every per-edit metric's name, label, direction, needs and function
* :mod:`.vectors` - input checks and the one normalisation of embeddings (``unit_rows``)
"""
