"""Grading the capstone projects from what they leave on disk, never from their code.

- P1, your own classifier (:mod:`helpers.capstone.classifier`): :func:`grade_classifier`.
- P2, take it to production (:mod:`helpers.capstone.production`): :func:`grade_production`,
  :func:`copy_broken_run`, the run that does not learn which P2 debugs, and :func:`import_run`
  to call its parts; :func:`profile_summary` reads a profile as the checker does.

Each grade prints one line per criterion, ``✓``, or ``✗`` with what is wrong and where to look,
never the answer.
"""

from helpers.capstone.classifier import (
    CHECKPOINT_KEYS,
    TEST_BAR,
    classifier_criteria,
    grade_classifier,
)
from helpers.capstone.criteria import Criterion, run_criteria
from helpers.capstone.production import (
    REPORT_KEYS,
    copy_broken_run,
    grade_production,
    import_run,
    production_criteria,
    profile_summary,
)

__all__ = [
    "CHECKPOINT_KEYS",
    "REPORT_KEYS",
    "TEST_BAR",
    "Criterion",
    "classifier_criteria",
    "copy_broken_run",
    "grade_classifier",
    "grade_production",
    "import_run",
    "production_criteria",
    "profile_summary",
    "run_criteria",
]
