"""Chapter 7's comparisons (book/07_benchmarks.md): EAGLE against the solvers people use.

The statistics name the profile's benchmark sizes (:class:`eaglebook.config.BenchSizes`), so the rows are a
function of the profile, :func:`rows`.  Rows added after a run say so (``declared=after_run(...)``):

- v0.3.0: the plain EAGLE ÷ SVD time ratio and the slope over the sketched runs only.  Both are evidence: the
  rows declared before the run are the paper's claims ("matches SVD up to a log factor"; iterations linear in
  n/r over the paper's own sweep r = n/8…n, which includes r = n), so those are the headlines.
- v0.4.0: the SGD speed-up judged two-sided (the paper's "≈ 2.5×" is a value, and the declared criterion
  ≥ 1.25 counted any larger speed-up as reproduced), superseding the one-sided row; and the step-size row not
  judged, superseding the declared one (at the paper's n = d = 15 and 200 iterations every step size of the
  grid reaches rounding error, so the paper's statistic cannot show an effect of the step sizes; the chapter's
  check asserts that saturation).

The timing rows (SVD, per-iteration, SGD, Table 2 against SVD) are recorded with the paired ratios behind them
and the load while they were timed; the statistics over problems or seeds (the worst κ against SVD, the SGD
speed-up over seeds, the distributions, the step sizes over instances) are recorded resampled
(:class:`eaglebook.stability.Resampled`).
"""

import numpy as np

from ..ledger import HEADLINE, after_run, at_least, at_most, in_range, within_factor
from . import Row

#: The paper's Table 2 (seconds, on a GPU): matrix, EAGLE, SVD, CG, LSMR.
PAPER_TABLE2 = (("Maragal_4", 0.625, 0.849, 1.55, 2.34), ("Maragal_5", 0.632, 1.4, 1.75, 1.4),
                ("Meszaros/pf2177", 3.43, 4.23, 1.75, 3.51), ("HB/dwt_1007", 0.64, 0.902, 4.65, 9.73),
                ("HB/bcsstm13", 0.697, 0.955, 3.17, 1.16), ("Priebel/162bit", 0.847, 2.35, 16.7, 57.1),
                ("Schulthess/N_pid", 0.675, 1.15, 1.27, 1.96))
#: EAGLE ÷ SVD per matrix, from the paper's Table 2.
TABLE2_RATIO = np.array([e / s for _, e, s, _, _ in PAPER_TABLE2])
TABLE2_SETTING = "one SuiteSparse matrix (HB/illc1850) on one CPU thread; the paper: seven matrices on a GPU"


def rows(profile, regime=None) -> tuple[Row, ...]:
    """The comparisons of chapter 7 for ``profile``'s benchmark sizes (the paper's sizes without a profile)."""
    from ..config import BenchSizes
    S = profile.bench if profile is not None else BenchSizes()
    t2 = TABLE2_RATIO
    return (
        Row("C7_cg_iteration_ratio", paper=100, paper_text="≈ 100×", criterion=in_range(100 / 3, 300, partly=3),
            what=f"CG iterations ÷ EAGLE iterations to relative error 1e-6, n = {S.headline_n}, κ = 1e4 (§5.1, Fig. 6)",
            claim="cg-100x", role=HEADLINE),
        Row("C7_svd_log_factor", paper=1.0, paper_text="“matches SVD up to a log factor”",
            criterion=at_most(1.0, partly=3.0), claim="svd-log-factor", role=HEADLINE,
            what=f"max over κ of (EAGLE time to 1e-6 ÷ SVD time) ÷ (log₂κ + log₂log₂10⁶), n = {S.central_n}, full rank (§5.1)"),
        Row("C7_svd_time_ratio", paper_text="“matches SVD” (up to a log factor)", criterion=at_most(2.0, partly=4.0),
            claim="svd-log-factor", declared=after_run("v0.3.0, 2026-12-01"),
            what=f"max over κ of EAGLE time to 1e-6 ÷ SVD time, n = {S.central_n}, full rank, one thread",
            note="evidence: the paper does not claim a time within 2× of SVD's; its claim allows the log factor, "
                 "which is the declared row's"),
        Row("C7_sketch_iteration_slope", paper=1.0, paper_text="linear in n/r",
            criterion=in_range(0.7, 1.3, partly=1.5), claim="sketch-n-over-r", role=HEADLINE,
            what=f"slope of log(iterations to 1e-6) against log(n/r), r = n/8…n, n = {S.sketch_n} (§5.3, Fig. 18)"),
        Row("C7_sketch_iteration_slope_sketched", paper=1.0, paper_text="linear in n/r",
            criterion=in_range(0.7, 1.3, partly=1.5), claim="sketch-n-over-r",
            declared=after_run("v0.3.0, 2026-12-01"),
            what=f"the same slope over the sketched runs only, r = n/8…n/2 (r = n is the unsketched solver), n = {S.sketch_n}",
            note="evidence: the paper's own sweep r ∈ {n/8, n/4, n/2, n} includes r = n, which the declared row fits"),
        Row("C7_sketch_periter_ratio", paper=21 / 5, paper_text="21 ms : 5 ms = 4.2×",
            criterion=within_factor(1.5, partly=3), claim="sketch-periter", role=HEADLINE,
            what=f"per-iteration time of sketched EAGLE at r = {S.sketch_timing_n} ÷ at r = {S.sketch_timing_n // 8} (§5.3)"),
        Row("C7_sgd_speedup", paper=2.5, paper_text="≈ 2.5× faster", criterion=at_least(1.25, partly=1.0),
            what=f"SGD time ÷ sketched EAGLE time to 1e-2 at r = n/4, n = {S.sketch_n} (§5.3, Fig. 18; median over seeds)",
            claim="sgd-2.5x"),
        Row("C7_sgd_speedup_2sided", paper=2.5, paper_text="≈ 2.5× faster", criterion=within_factor(2, partly=2.5),
            what=f"SGD time ÷ sketched EAGLE time to 1e-2 at r = n/4, n = {S.sketch_n} (§5.3, Fig. 18; median over seeds), "
                 "judged on both sides of the paper's value",
            claim="sgd-2.5x", role=HEADLINE, declared=after_run("v0.4.0, 2026-12-03"), supersedes="C7_sgd_speedup",
            note="the paper's ≈ 2.5× is a value: a speed-up far above it is as far from the claim as one below; "
                 "the declared criterion (≥ 1.25) was one-sided"),
        Row("C7_randsketch_ratio", paper=1 / 3, paper_text="≈ ⅓ of RandSketch+CG's time",
            criterion=at_most(0.5, partly=1.0), claim="s-randsketch",
            setting="a square problem, where the 2d-row sketch is larger than A (configuration unknown)",
            what=f"best EAGLE time ÷ RandSketch+CG time to 1e-6, n = {S.headline_n}, κ = 1e4",
            note="from a secondary summary of the paper, not in the camera-ready text; configuration unknown"),
        Row("C7_eagle_iterations_1e4", paper_text="about 1–2 iterations", criterion=at_most(2),
            claim="s-eagle-iterations", what=f"EAGLE iterations to relative error 1e-6 at κ = 1e4, n = {S.headline_n}"),
        Row("C7_table2_rank", paper=1.14, paper_text="average rank 1.14 of 4 (GPU)",
            criterion=at_most(1, partly=2), claim="table2", setting=TABLE2_SETTING,
            what="EAGLE's rank by time among EAGLE, SVD, CG, LSMR on HB/illc1850 (§5.4, Table 2)"),
        Row("C7_table2_vs_svd", paper=float(t2.mean()),
            paper_text=f"{t2.min():.2f}–{t2.max():.2f} over seven matrices (mean {t2.mean():.2f})",
            criterion=at_most(1.0, partly=2.0), claim="table2", role=HEADLINE, setting=TABLE2_SETTING,
            what="EAGLE time ÷ SVD time on HB/illc1850, to ‖wA − B‖² ≤ 1e-3‖B‖² (§5.4, Table 2; median of "
                 "interleaved paired ratios, since v0.3.0)"),
        Row("C7_distributions", paper=6, paper_text="converges on all six", criterion=at_least(6, partly=4),
            what=f"data distributions (of six) on which EAGLE reaches relative error 1e-10, n = {S.ablation_n} (App. E.3, Fig. 19)",
            claim="distributions", role=HEADLINE),
        Row("C7_noise_vs_gd", paper=1.0, paper_text="early-stopped EAGLE regularises much like GD",
            criterion=in_range(0.5, 2.0, partly=2), claim="noise-regularises", role=HEADLINE,
            what="best error along EAGLE ÷ best error along GD, noise std 0.01, full rank (App. E.3, Fig. 21)"),
        Row("C7_step_sizes", paper_text="minimal effect of η, γ × [0.2, 2] and γ/η ∈ [0.2, 2]",
            criterion=at_most(1e-10, partly=1e-6), claim="step-sizes",
            what="largest median best error within 200 iterations over both step-size grids, n = d = 15 (App. E.3, Fig. 22)"),
        Row("C7_step_sizes_power", paper_text="minimal effect of η, γ × [0.2, 2] and γ/η ∈ [0.2, 2]",
            criterion=at_most(1e-10, partly=1e-6), claim="step-sizes", role=HEADLINE,
            declared=after_run("v0.4.0, 2026-12-03"), supersedes="C7_step_sizes", judge=False,
            reason="no power: every step size of the grid reaches rounding error within the 200 iterations",
            what="largest median best error within 200 iterations over both step-size grids, n = d = 15 (App. E.3, Fig. 22)"),
    )
