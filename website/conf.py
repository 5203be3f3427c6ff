"""Sphinx configuration of the course website (``make site``; see helpers/authoring/site.py).

The source tree is staged by ``helpers.authoring.site`` in ``build/site-work/src``; this folder
holds only the configuration and the site's own files. The repository URL comes from
``helpers.authoring.course``, the one place it is written.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from helpers.authoring import course, site  # noqa: E402

project = "PyTorch Cookbook"
author = "the PyTorch Cookbook authors"
copyright = author

extensions = [
    "myst_nb",
    "sphinx_copybutton",
    "sphinx_togglebutton",
    "helpers.authoring.sphinxext",
]

# The notebooks as stored: their outputs are the ones the tests re-execute and compare.
nb_execution_mode = "off"
nb_merge_streams = True
myst_enable_extensions = ["dollarmath", "colon_fence"]
# Headings get the anchors JupyterLab gives them, so the indexes' links (`01_tensors.ipynb#A-B`)
# land on the same section on the site and in JupyterLab.
myst_heading_anchors = 4
myst_heading_slug_func = "helpers.authoring.sphinxext.heading_anchor"
# Links resolve to Sphinx's own section ids; a JupyterLab anchor holds characters (quotes) that
# are not safe as an extra HTML id.
myst_heading_anchors_html_ids = False
# Show quotes as the course writes them (error messages, code words), not typographic ones.
smartquotes = False

cookbook_stamps = site.stamps()
# Other names readers search for, each made an index entry on the section whose heading holds
# the words it maps to (a build error when no heading does).
cookbook_search_aliases = {
    "gradient checkpointing": "activation checkpointing",
    "initialize weights": "Initialise, reset and copy a model",
    "weight initialization": "Initialise, reset and copy a model",
    "transfer learning": "Fine-tune a pretrained backbone",
    "train test split": "Split into training and validation three ways",
    "loss not decreasing": "Debug a model that does not learn",
    "pin_memory": "Know what the other DataLoader settings do",
    "resume training": "Save a checkpoint that resumes exactly",
    "is pytorch using the GPU": "Check the installation",
    "Adam vs SGD": "Choose an optimiser",
    "object detection": "Fine-tune a detector for new classes",
    "bounding box augmentation": "Flip and crop an image with its boxes",
    "detection collate_fn": "Batch images that have different numbers of boxes",
    "validation loss Faster R-CNN": "Validation loss of a detector",
}

html_theme = "sphinx_book_theme"
html_title = "PyTorch Cookbook"
html_static_path = [str(ROOT / "website" / "static")]
html_css_files = ["cookbook.css"]
html_js_files = ["cookbook.js"]
html_search_scorer = str(ROOT / "website" / "search-scorer.js")
# Without it the theme logs an error on a reader's first visit (no stored colour mode).
html_context = {"default_mode": "light"}
html_copy_source = True
html_last_updated_fmt = None
html_theme_options = {
    "repository_url": course.REPO_URL,
    "repository_branch": course.BRANCH,
    "path_to_docs": course.NOTEBOOKS.relative_to(ROOT).as_posix(),
    "use_repository_button": True,
    "use_source_button": True,
    "use_download_button": True,
    "use_fullscreen_button": False,
    "launch_buttons": {"colab_url": "https://colab.research.google.com"},
    "home_page_in_toc": True,
    "navbar_persistent": [],
    "show_toc_level": 2,
}
# Served from the site itself (copied by helpers.authoring.sphinxext): no CDN, works offline.
mathjax_path = "mathjax/tex-chtml.js"
