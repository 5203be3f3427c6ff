"""The authors' and instructors' tools, apart from the ``helpers`` that notebooks import.

A learner's ``pip install pytorch-cookbook`` does not bring this package (``pyproject.toml``
lists only what notebooks use); it runs from a clone of the repository.

- ``helpers.authoring.site``: the course website (``make site``): stage the stored notebooks and
  indexes, build them with Sphinx, zip the result.
- ``helpers.authoring.sphinxext``: the Sphinx extension ``website/conf.py`` loads (local Colab
  badge, "verified with" stamps, buttons of the landing page).
- ``helpers.authoring.linkcheck``: every internal link and anchor of the built site resolves,
  and nothing it loads comes from another machine.
"""
