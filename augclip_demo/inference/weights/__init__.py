"""Model weights, split by job:

* :mod:`.table`: the facts about every model this tool knows by name (source, files, size, licence,
  checksum) and the folder layouts the resolvers check;
* :mod:`.fetch`: getting files onto this machine (the Hub client, the URL downloader, offline mode,
  reachability, file checks);
* :mod:`.resolve`: from a model spec to local files (CLIP, transformers folders, single files);
* :mod:`.guards`: load-time checks (a file that does not fit its model is an error in words, never
  random weights).

The how-to-fix text every error ends with is the family table's
(:mod:`augclip_demo.inference.families`).
"""
