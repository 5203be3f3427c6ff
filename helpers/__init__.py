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
- ``helpers.memory``: where a training step's memory goes: a calculator, saved-for-backward and
  allocation meters.
- ``helpers.ladder``: chapter 10's speedup ladder (``make bench``).
- ``helpers.serve``: HTTP servers a notebook starts, on 127.0.0.1, always stopped.
- ``helpers.debug``: datasets and checks for chapter 13's debugging recipes.
- ``helpers.processes``, ``helpers.dist``: stopping process trees; torchrun from a cell.
- ``helpers.exercises``: check a learner's answer with one ✓ or ✗ line.
- ``helpers.doctor``: the pre-flight check of a machine (``make doctor``).
- ``helpers.workcopy``: the learner's working copy in ``work/`` (``make lab``, ``make restore``).
- ``helpers.authoring``: the authors' and instructors' tooling, not installed with the package:
  ``course`` (repository, notebook list, twins, generated docs: recipe index, error index,
  old-API table, run times), ``student`` (student copies, ``make student``), ``colab`` (the
  notebooks run as Colab would, ``make test-colab``), and the course website (``make site``).
"""

__version__ = "0.1.0"
