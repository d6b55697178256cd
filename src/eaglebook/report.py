"""What a chapter imports to report its results: one import for the three pieces, each in its own module.

- :mod:`eaglebook.glue`: ``glue`` and ``G`` (numbers and phrases for the prose);
- :mod:`eaglebook.ledger`: checks and paper comparisons (``Ledger``, criteria, ``ADVANCE``/``after_run``);
- :mod:`eaglebook.provenance`: what a result records about the code and the machine;
- :mod:`eaglebook.scorecard`: the saved ledgers judged claim by claim (the book's front page);
- :mod:`eaglebook.claims`: the paper's claims that the book tests.

``from eaglebook.report import G, glue`` and ``report.Ledger``, ``report.within_factor`` … keep working; the
code lives in the modules above.
"""

from __future__ import annotations

from .claims import BEYOND, CLAIMS, NEIGHBOUR, PaperClaim, claim
from .glue import G, GlueKeyError, Glued, and_list, glue
from .ledger import (ADVANCE, CLAIMS_ENV, EVIDENCE, HEADLINE, NOT_JUDGED, PAPER_SETTING, VERDICTS, Comparison,
                     Criterion, Ledger, after_run, at_least, at_most, claims_dir, criterion, in_range, settings_slug,
                     within_factor)
from .provenance import chapter_hash, code_hash, git_commit, load_average, machine, provenance
from .scorecard import (BOOK_PARAMETERS, NOT_RUN, ClaimResult, beyond_label, beyond_table, checks_table, claim_results, findings_lines, claims_table,
                        comparisons_table, load_ledgers, machines_table, neighbour_table, rows, scorecard_points, secondary_table, stale_reason,
                        toc_chapters, verdict_counts)

__all__ = ["BEYOND", "beyond_label", "beyond_table", "CLAIMS", "NEIGHBOUR", "PaperClaim", "claim", "G", "GlueKeyError", "Glued", "glue", "and_list", "ADVANCE", "CLAIMS_ENV",
           "EVIDENCE", "HEADLINE", "NOT_JUDGED", "PAPER_SETTING", "VERDICTS", "Comparison", "Criterion", "Ledger",
           "after_run", "at_least", "at_most", "claims_dir", "criterion", "in_range", "settings_slug", "within_factor", "chapter_hash", "code_hash",
           "git_commit", "load_average", "machine", "provenance", "BOOK_PARAMETERS", "NOT_RUN", "ClaimResult",
           "checks_table", "claim_results", "findings_lines", "claims_table", "comparisons_table", "load_ledgers", "machines_table", "neighbour_table", "rows",
           "scorecard_points", "secondary_table", "stale_reason", "toc_chapters", "verdict_counts"]
