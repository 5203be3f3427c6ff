"""Shared code for the PyTorch Cookbook notebooks.

Modules, one concern each:

- ``helpers.env``: pick the device, seed everything, report device and versions.
- ``helpers.data``: fetch the course's data sets (IMDB, CIFAR2) with checksums and a cache.
- ``helpers.check``: state a claim, print a ✓ line, raise when it is false.
- ``helpers.bench``: time small pieces of code with ``torch.utils.benchmark``.
- ``helpers.course``: the course's own metadata (repository, notebook list, generated docs).
"""

__version__ = "0.1.0"
