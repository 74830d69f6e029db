"""Metric math on embeddings and pixels: numpy and scikit-learn only, no models.

* :mod:`.augclip` - AugCLIP (Eq. 3-12)
* :mod:`.clip_metrics` - CLIPdir, CLIP-I, CLIP-T, augmented CLIPdir (Eq. 13-14)
* :mod:`.pixel` - L2
* :mod:`.registry` - names, labels and directions of every metric
"""
