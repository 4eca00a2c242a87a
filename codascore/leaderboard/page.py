"""``leaderboard.html``: the final leaderboard as one self-contained page in the reports' style
(codascore.report.render_page: inline CSS, figures as inline PNG, every team name escaped), within
Codabench's 760 px iframe: the ranking table, a "how to read this page" block, the blob plot of ranks, the
score intervals, the P(A beats B) heatmap, the significance map and the rules side by side."""

from __future__ import annotations

import math

import numpy as np

from ..report import escape, figure_html, figure_or_note, format_number, render_page, table
from ..task import Section
from . import figures
from .statistics import ALPHA, FEW_UNITS, LEVEL, team_order

GUIDE = [
    ("score", "the official rule's score on every unit of evidence (higher is better: {direction})"),
    ("95% interval", "the 2.5% and 97.5% percentiles of the score over the bootstrap replicates: each replicate "
                     "draws the units again with replacement, the same draw for every team"),
    ("rank, rank interval", "the rank on the full data (1 the best, tied scores share the better rank) and the "
                            "2.5% and 97.5% points of the team's rank over the replicates"),
    ("P(win), P(top 3)", "the share of replicates ranking the team first (a first place shared by m teams counts "
                         "1/m) or in the first three"),
    ("tied with the winner", "the winner, or a team that beats a winner in at least 5% of the replicates: the "
                             "data cannot tell it apart from the winner"),
    ("P(A beats B)", "the share of replicates in which A's score is better than B's (a tie counts 1/2)"),
    ("significance map", "a two-sided Wilcoxon signed-rank test of each pair on what the official rule "
                         "aggregates, per {unit}: {what}; Holm-corrected over all pairs, coloured where p < 0.05"),
    ("Kendall's tau", "the rank correlation between the full ranking and a replicate's: 1 when every replicate "
                      "ranks the teams as the full data do"),
]


#: The ranking table's names keep a readable width while the numbers beside them stay unbroken (the
#: reports' CSS lets a text column shrink to a letter).
STYLE = "<style>.ranking td.text{min-width:9em}</style>"


def guide_block(analysis) -> str:
    direction = "yes" if analysis.board.higher_is_better else "no, lower is better"
    words = {"direction": direction, "unit": analysis.paired.unit, "what": analysis.paired.what}
    rows = "".join(f"<tr><td>{escape(term)}</td><td>{escape(text.format(**words))}</td></tr>" for term, text in GUIDE)
    return ("<details class='guide' open><summary>How to read this page</summary><table>"
            "<tr><th>term</th><th>what it is</th></tr>" + rows + "</table></details>")


def summary_html(analysis) -> str:
    ev, drawn = analysis.evidence, analysis.replicates
    official = analysis.rankings[analysis.official]
    winners = [ev.teams[t] for t in np.flatnonzero(official.rank == 1)]
    tied = [ev.teams[t] for t in team_order(analysis) if official.tied_with_winner[t] and ev.teams[t] not in winners]
    taus = analysis.kendall_tau[np.isfinite(analysis.kendall_tau)]
    tau = (f"Kendall's tau between the full ranking and the replicates': median {np.median(taus):.3f}, 95% of "
           f"replicates within [{np.quantile(taus, 0.025):.3f}, {np.quantile(taus, 0.975):.3f}]." if len(taus)
           else "Kendall's tau is undefined: every replicate ties every team.")
    design = analysis.board.design
    resampled = ", ".join(filter(None, [f"strata {', '.join(design.strata)}" if design.strata else "",
                                        f"clusters {design.cluster}, then units within each" if design.cluster else ""]))
    return (f"<p>Seed <b>{drawn.seed}</b> · <b>{drawn.count}</b> paired bootstrap replicates · {len(ev.teams)} teams · "
            f"{len(ev.units)} units of evidence ({escape(resampled or 'units drawn with replacement')}) · official "
            f"rule <code>{escape(analysis.official)}</code> · reference data "
            f"<code>{escape(ev.reference[:16] or 'not recorded')}</code></p>"
            f"<p>Winner: <b>{escape(', '.join(winners))}</b>. Cannot be told apart from the winner: "
            f"{escape(', '.join(tied) or 'no other team')}. {escape(tau)}</p>")


def crude_text(analysis) -> str:
    """Why the intervals are crude: the replicates draw too few independent units (statistics.FEW_UNITS)."""
    n = analysis.resampled_units
    drawn = f"{analysis.board.design.cluster or 'unit'}{'s' if n != 1 else ''}"
    return (f"each replicate draws only {n} independent {drawn} (fewer than {FEW_UNITS}): they can be drawn in "
            f"at most {math.comb(2 * n - 1, n)} distinct ways, and the bootstrap's variance of a mean is "
            f"{n - 1}/{n} of the usual estimate, so the intervals, P(win) and the ties with the winner are rough "
            "and too narrow: read them as an indication only")


def significance_note(analysis) -> str:
    """What the significance map compared, and when too few units leave no pair able to be significant."""
    paired, tests = analysis.paired, analysis.pairwise
    text = (f"Green: the row's team is significantly better than the column's (Wilcoxon signed-rank, "
            f"Holm-corrected, p < 0.05); red: significantly worse; grey: not significant. Compared per "
            f"{paired.unit}: {paired.what}.")
    most, pairs = int(tests.units.max(initial=0)), len(tests.pairs)
    smallest = 2 / 2 ** most  # the exact test's smallest two-sided p: every difference of one sign
    if pairs and pairs * smallest >= ALPHA:  # Holm multiplies the smallest p by the number of pairs
        text += (f" With at most {most} {paired.unit}s per pair the smallest possible p is 2/2^{most} = "
                 f"{smallest:.3g} ({min(1.0, pairs * smallest):.3g} after Holm's correction over {pairs} "
                 f"pair{'s' if pairs > 1 else ''}): no pair can be significant.")
    return f"<p class='note'>{escape(text)}</p>"


def ranking_table(analysis) -> str:
    """One row per team in rank order; the missing units' column only when a team lacks some."""
    r, ev = analysis.rankings[analysis.official], analysis.evidence
    missing = [[len(ev.missing.get(ev.teams[t], []))] if ev.missing else [] for t in team_order(analysis)]
    rows = [(ev.teams[t], format_number(float(r.score[t]), 4),
             f"[{format_number(float(r.ci_low[t]), 3)},\u00a0{format_number(float(r.ci_high[t]), 3)}]",  # unbroken
             int(r.rank[t]), f"[{r.rank_low[t]},\u00a0{r.rank_high[t]}]", f"{r.median_rank[t]:g}", f"{r.p_win[t]:.3f}",
             f"{r.p_top3[t]:.3f}", "yes" if r.tied_with_winner[t] else "", *extra)
            for t, extra in zip(team_order(analysis), missing)]
    return table(rows, ("team", "score", f"{LEVEL:.0%} interval", "rank", "rank interval", "median rank", "P(win)",
                        "P(top 3)", "tied with winner", *(["missing units"] if ev.missing else [])),
                 text_columns=(0,))  # the names may break anywhere, the numbers never


def rules_table(analysis) -> str:
    ev = analysis.evidence
    rules = list(analysis.rankings)
    rows = [(ev.teams[t], *(f"{int(analysis.rankings[rule].rank[t])} ({analysis.rankings[rule].p_win[t]:.2f})"
                            for rule in rules)) for t in team_order(analysis)]
    described = "".join(f"<li><code>{escape(rule)}</code>: {escape(analysis.board.rules.get(rule, ''))}</li>"
                        for rule in rules)
    return (f"<ul>{described}</ul><p class='note'>Each team's rank under each rule, and in brackets its P(win) "
            f"under that rule.</p>" + table(rows, ("team", *rules), text_columns=(0,)))


def better_matrix(analysis, order: list[int]) -> np.ndarray:
    """+1 where the row's team is significantly better than the column's (Holm), -1 worse, 0 neither."""
    official, tests = analysis.rankings[analysis.official], analysis.pairwise
    sign = 1 if analysis.board.higher_is_better else -1
    significant = dict(zip(tests.pairs, tests.significant()))
    out = np.zeros((len(order), len(order)))
    for i, a in enumerate(order):
        for j, b in enumerate(order):
            if a != b and significant[(min(a, b), max(a, b))]:
                out[i, j] = np.sign(sign * (official.score[a] - official.score[b]))
    return out


def figure_sections(analysis) -> list[Section]:
    r, ev = analysis.rankings[analysis.official], analysis.evidence
    order = team_order(analysis)
    names = [ev.teams[t] for t in order]
    blob = figure_or_note("rank distributions", lambda: figure_html(figures.blob_plot(
        names, r.rank_counts[order], r.rank_low[order], r.rank_high[order], r.median_rank[order], r.rank[order]),
        "rank distributions over the bootstrap replicates"))
    intervals = figure_or_note("score intervals", lambda: figure_html(figures.interval_plot(
        names, r.score[order], r.ci_low[order], r.ci_high[order], f"score ({analysis.official})"),
        "scores and 95% intervals"))
    heat = figure_or_note("P(A beats B)", lambda: figure_html(figures.beats_heatmap(
        names, r.beats[np.ix_(order, order)]), "P(row beats column)"))
    significance = figure_or_note("significance map", lambda: figure_html(figures.significance_map(
        names, better_matrix(analysis, order)), "significance map"))
    rules = list(analysis.rankings)
    rank_table = np.stack([analysis.rankings[rule].rank[order] for rule in rules], axis=1)
    lines = figure_or_note("rules side by side", lambda: figure_html(figures.rule_lines(
        names, rules, rank_table), "rankings under each rule")) if len(rules) > 1 else \
        "<p class='note'>The board has one rule: nothing to compare.</p>"
    return [
        Section("Rank distributions", "<p class='note'>One row per team. A circle's area is the share of replicates "
                "giving the team that rank; the bar spans its 95% rank interval, | marks the median rank and x the "
                "rank on the full data.</p>" + blob),
        Section("Scores and their 95% intervals", intervals),
        Section("P(row beats column)", "<p class='note'>Blue: the row's team scores better in most replicates; red: "
                "worse. Rows and columns in rank order.</p>" + heat),
        Section("Significance map", significance_note(analysis) + significance),
        Section("The ranking under each rule", rules_table(analysis) + lines),
    ]


def warnings_of(analysis) -> list[str]:
    out = [f"team {team} is not ranked: {why}" for team, why in analysis.left_out.items()]
    if analysis.crude:
        out.append(f"crude intervals: {crude_text(analysis)}")
    for team, units in analysis.evidence.missing.items():
        out.append(f"team {team} lacks {len(units)} units ({', '.join(units[:5])}{' ...' if len(units) > 5 else ''}); "
                   f"the official rule's missing policy: {analysis.board.missing_policy}")
    return out


def render(analysis) -> str:
    """The whole page (every string from outside escaped by render_page and the table helper)."""
    sections = [Section("Final ranking", summary_html(analysis) + guide_block(analysis) + STYLE +
                        f"<div class='ranking'>{ranking_table(analysis)}</div>"),
                *figure_sections(analysis)]
    return render_page(f"Final leaderboard: {analysis.title}", analysis.evidence.task, {}, warnings_of(analysis),
                       sections)
