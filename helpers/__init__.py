"""Shared code for the PyTorch Cookbook notebooks.

Modules, one concern each:

- ``helpers.env``: pick the device, seed everything, report device and versions.
- ``helpers.data``: fetch the course's data sets (IMDB, CIFAR2) with checksums and a cache.
- ``helpers.images``, ``helpers.text``: CIFAR2 as tensors, IMDB as token ids (cached).
- ``helpers.datasets``: small Dataset wrappers for loader demos (``SlowReads``).
- ``helpers.models``, ``helpers.train``, ``helpers.plot``, ``helpers.board``: the course's small
  models, torchkeras without its noise, plots, TensorBoard read-back.
- ``helpers.check``: state a claim, print a ✓ line, raise when it is false.
- ``helpers.bench``: time small pieces of code with ``torch.utils.benchmark``.
- ``helpers.course``: the course's own metadata (repository, notebook list, twins, generated
  docs).
"""

__version__ = "0.1.0"
