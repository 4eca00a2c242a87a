"""The verbs that talk to a Codabench site (codascore.platform; docs/end_of_competition.md):
``codascore upload BUNDLE --site URL``, ``codascore fetch --site URL --phase ID OUT``, ``codascore
site-leaderboard --site URL --phase ID`` and ``codascore rerun --site URL --phase ID | --submission ID ...``.

Each signs in the same way (--token-file, --username, or $CODABENCH_TOKEN) and shows its progress on the
standard error (codascore.progress: a transfer's bytes as a counter); what it was asked for (the
competition's id, the CSV) goes to the standard output."""

from __future__ import annotations

import csv
import re
import sys
from pathlib import Path
from typing import Callable

from ..errors import BundleRefusedError, UsageError
from ..outcomes import ExitCode
from ..progress import DISPLAY, Counter
from .base import Command, existing_path

say, tell = DISPLAY.say, DISPLAY.tell


def transfer(label: str, keep: bool = False) -> Callable[[int, int | None], None]:
    """The bytes of a transfer as a counter (the byte callback of codascore.platform): its last line kept
    on a terminal for an upload; for a fetch, the line saying each file's size when it lands replaces it."""
    counter = Counter(label, None, unit="bytes", keep=keep)

    def show(done: int, total: int | None) -> None:
        counter.total = total
        counter.update(done)

    return show


def add_site_options(parser) -> None:
    """--site and the ways to sign in, shared by every verb of a site."""
    parser.add_argument("--site", required=True, metavar="URL",
                        help="the Codabench site, e.g. https://www.codabench.org")
    parser.add_argument("--token-file", metavar="FILE",
                        help="a file holding your API token (default: $CODABENCH_TOKEN)")
    parser.add_argument("--username", help="sign in with this username; the password is asked for (or read "
                                           "from $CODABENCH_PASSWORD) and exchanged for a token kept in memory")
    parser.add_argument("--timeout", type=float, default=60.0, metavar="SECONDS",
                        help="seconds to wait for each answer of the site (default 60)")


def connect(args, signed_in: bool = True):
    """The Site of args, signed in (UsageError when no token is given and signed_in is needed)."""
    from ..platform import TOKEN_VARIABLE, Site

    if args.timeout <= 0:
        raise UsageError("--timeout must be more than 0 seconds")
    site = Site.connect(args.site, token_file=args.token_file, username=args.username, timeout=args.timeout,
                        say=say)
    if signed_in and not site.http.token:
        raise UsageError(f"sign in: set ${TOKEN_VARIABLE} (your profile page on the site gives the token), or "
                         "give --token-file FILE or --username NAME")
    return site


def covering_findings(details: str, findings) -> list:
    """The checker's findings that say what the platform's text says: those with the stable rule id of the
    platform's refusal, where the checker has them; else by their texts. The unpacker's text is "Unpacking
    the bundle failed. Here is the error log: <the error>": a finding quoting that error covers it; failing
    that, a finding quoting the platform's text (or quoted by it), folded, 25 characters at least."""
    by_id = findings_of_refusal(details, findings)
    if by_id:
        return by_id

    def fold(text: str) -> str:
        return " ".join(re.sub(r"[^a-z0-9 ]", " ", str(text).lower()).split())

    said = fold(details)
    specific = fold(details.split("error log:", 1)[1]) if "error log:" in details else ""
    if len(specific) >= 10:
        exact = [finding for finding in findings if specific in fold(finding.message)]
        if exact:
            return exact
    found = []
    for finding in findings:
        message = fold(finding.message)
        quoted = [fold(q) for q in re.findall(r'"([^"]{25,})"', finding.message)]
        quotes_it = said[:60] in message or any(q in said for q in quoted)
        if said and (quotes_it or (len(message) >= 25 and message in said)):
            found.append(finding)
    return found


def findings_of_refusal(details: str, findings) -> list:
    """The findings whose stable rule id is the platform refusal's that details holds, where the checker
    gives its findings such ids (codascore.checker.refusals); [] otherwise."""
    try:
        from ..checker.refusals import refusal_of
    except ImportError:  # a checker without refusal ids: the texts are compared instead
        return []
    refusal = refusal_of(details)
    return [f for f in findings if refusal and getattr(f, "rule_id", None) == refusal]


class Upload(Command):
    name = "upload"
    description = ("Check the bundle with Codabench's own rules (codascore check --platform-only), upload it "
                   "in the four requests of the site's upload page, and wait while the site unpacks it. Prints "
                   "the competition's id and address; a bundle the site refuses prints the site's own text and "
                   "the checker's rule that covers it. Exit 0 uploaded, 1 refused (by the check or the site), "
                   "2 a usage or configuration error (no token), 75 the site failed (down, 5xx, timeout): try "
                   "again later.")
    epilog = "example: CODABENCH_TOKEN=... codascore upload dist/uai.zip --site https://www.codabench.org"

    @classmethod
    def add_options(cls, parser):
        parser.add_argument("bundle", type=existing_path, metavar="BUNDLE", help="the bundle's zip")
        add_site_options(parser)
        parser.add_argument("--force", action="store_true",
                            help="upload even when codascore check --platform-only finds an error")

    def run(self, args) -> ExitCode:
        from ..checker import check_bundle, format_report

        bundle = Path(args.bundle)
        if not bundle.is_file() or bundle.suffix.lower() != ".zip":
            raise UsageError(f"{bundle}: upload takes a bundle's zip (build one with codascore bundle)")
        report = check_bundle(bundle, platform_only=True)
        if not report.ok:
            tell(format_report(report))
            if not args.force:
                tell("not uploaded: Codabench refuses a bundle with these errors (--force uploads it anyway)")
                return ExitCode.INVALID
        site = connect(args)
        site.whoami()
        try:
            uploaded = site.upload(bundle, transfer(f"uploading {bundle.name}", keep=True),
                                   lambda state: say(f"unpacking: {state}"))
        except BundleRefusedError as exc:
            tell(f"error: {exc}")
            for finding in covering_findings(exc.details, report.findings):
                tell(f"the checker's rule that covers it: {finding}")
            return ExitCode.INVALID
        print(f"competition {uploaded.competition_id}: {uploaded.url}")
        return ExitCode.OK


class Fetch(Command):
    name = "fetch"
    description = ("Download every submission of a phase with its owner, date, status, scores, details.json, "
                   "scoring and prediction outputs and logs, one folder per team and submission, a manifest "
                   "(sizes, sha256, what was not available and why), and one zip per team in OUT/teams/ that "
                   "codascore judge reads. Run it again to finish an interrupted fetch: intact files are not "
                   "downloaded again, a cut file goes on from its last byte. OUT holds one fetch: a folder of "
                   "another site, phase or competition is refused (exit 1), and so is a second fetch into OUT "
                   "while one runs (exit 75). Exit 75: the site failed, try again later.")
    epilog = ("example: codascore fetch --site https://www.codabench.org --phase 1234 final\n"
              "         codascore judge uai.pr final/teams --out judgement --root private")

    @classmethod
    def add_options(cls, parser):
        parser.add_argument("out", metavar="OUT", help="the folder to fill (made when absent)")
        add_site_options(parser)
        which = parser.add_mutually_exclusive_group(required=True)
        which.add_argument("--phase", type=int, metavar="ID", help="the phase's id (in its page's address)")
        which.add_argument("--competition", type=int, metavar="ID",
                           help="every phase of the competition, each into OUT/phase-<id>/")

    def run(self, args) -> ExitCode:
        from ..platform import summary_line

        site = connect(args)
        if args.competition is not None:
            fetched = site.fetch_competition(args.competition, Path(args.out), say, transfer)
        else:
            fetched = [(args.phase, Path(args.out), site.fetch(args.phase, Path(args.out), say, transfer))]
        for phase_id, out, manifest in fetched:
            print(f"phase {phase_id}: {summary_line(manifest)}; {out}")
        return ExitCode.OK


class SiteLeaderboard(Command):
    name = "site-leaderboard"
    description = ("A Codabench phase's leaderboard as CSV: the exact values of the competition's results "
                   "export when you organise it, else the public view's rounded ones (a `values` column and a "
                   "printed line say which). No token is needed for a public leaderboard.")
    epilog = "example: codascore site-leaderboard --site https://www.codabench.org --phase 1234 --out board.csv"

    @classmethod
    def add_options(cls, parser):
        add_site_options(parser)
        parser.add_argument("--phase", type=int, required=True, metavar="ID",
                            help="the phase's id (in its page's address)")
        parser.add_argument("--competition", type=int, metavar="ID",
                            help="the phase's competition (default: found among those you organise)")
        parser.add_argument("--out", metavar="CSV", help="the CSV file to write (default: the standard output)")

    def run(self, args) -> ExitCode:
        site = connect(args, signed_in=False)
        board = site.leaderboard(args.phase, args.competition)
        header, rows = board.csv_rows()
        if args.out:
            from ..formats.atomic import write_csv_atomic

            Path(args.out).parent.mkdir(parents=True, exist_ok=True)
            write_csv_atomic(Path(args.out), header, rows)
        else:
            writer = csv.DictWriter(sys.stdout, header, restval="")
            writer.writeheader()
            writer.writerows(rows)
        reason = f" ({board.why})" if board.why else ""
        tell(f"phase {args.phase}: {len(rows)} row(s), {board.values} values{reason}"
             + (f"; written to {args.out}" if args.out else ""))
        return ExitCode.OK


class Rerun(Command):
    name = "rerun"
    description = ("For a competition's organisers: ask the site to run again every submission of a phase "
                   "(GET /api/phases/<id>/rerun_submissions/) or the submissions named (POST "
                   "/api/submissions/<id>/re_run_submission/), the two endpoints that check your rights, then "
                   "show the new submissions' states until each is finished, failed or cancelled. Exit 0 when "
                   "every one finished, 1 when one failed or was cancelled, 75 when --wait ran out (or the "
                   "site failed: try again later).")
    epilog = "example: codascore rerun --site https://www.codabench.org --submission 5120 5121"

    @classmethod
    def add_options(cls, parser):
        add_site_options(parser)
        which = parser.add_mutually_exclusive_group(required=True)
        which.add_argument("--phase", type=int, metavar="ID", help="every top-level submission of this phase")
        which.add_argument("--submission", type=int, nargs="+", metavar="ID", help="these submissions")
        parser.add_argument("--wait", type=float, default=3600.0, metavar="SECONDS",
                            help="how long to wait for the new submissions' states (default 3600; 0: do not "
                                 "wait)")

    def run(self, args) -> ExitCode:
        site = connect(args)
        new = site.rerun(args.phase, tuple(args.submission or ()))
        say(f"{len(new)} new submission(s): {', '.join(map(str, new)) or 'none'}")
        states = site.wait(new, say, timeout=args.wait)
        print("\n".join(f"{submission_id}\t{state}" for submission_id, state in states.items()))
        if args.wait == 0 or all(state == "Finished" for state in states.values()):
            return ExitCode.OK
        return ExitCode.INVALID
