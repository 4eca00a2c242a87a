"""The verbs that talk to a Codabench site (codascore.platform; docs/end_of_competition.md):
``codascore upload BUNDLE --site URL``, ``codascore fetch --site URL --phase ID OUT``, ``codascore
leaderboard --site URL --phase ID`` and ``codascore rerun --site URL --phase ID | --submission ID ...``.

Each signs in the same way (--token-file, --username, or $CODABENCH_TOKEN) and prints its progress on the
standard error; what it was asked for (the competition's id, the CSV) goes to the standard output."""

from __future__ import annotations

import csv
import re
import sys
from pathlib import Path

from ..errors import BundleRefusedError, UsageError
from ..outcomes import ExitCode
from .base import Command, existing_path


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class ProgressLine:
    """Bytes done of a transfer on one line of the standard error: redrawn in place on a terminal, else a
    line at every tenth. keep_last: leave the 100% line (an upload); else it is erased (a fetch says each
    file's size when it lands)."""

    def __init__(self, label: str, keep_last: bool = False):
        self.label, self.keep_last, self.shown = label, keep_last, -1
        self.tty = sys.stderr.isatty()

    def __call__(self, done: int, total: int | None) -> None:
        last = bool(total) and done >= total
        if total:
            tenth = done * 10 // total
            text = f"{self.label}: {done}/{total} bytes ({done * 100 // total}%)"
        else:
            tenth, text = done >> 24, f"{self.label}: {done} bytes"
        if last and not self.keep_last:
            if self.tty:
                print("\r\033[K", end="", file=sys.stderr, flush=True)
        elif self.tty:
            print("\r" + text, end="\n" if last else "", file=sys.stderr, flush=True)
        elif tenth != self.shown:
            say(text)
        self.shown = tenth


def add_site_options(parser, required: bool = True) -> None:
    """--site and the ways to sign in, shared by every verb of a site."""
    parser.add_argument("--site", required=required, metavar="URL",
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
    help = "upload a competition bundle to a Codabench site, as its upload page does"
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
            print(format_report(report), file=sys.stderr)
            if not args.force:
                say("not uploaded: Codabench refuses a bundle with these errors (--force uploads it anyway)")
                return ExitCode.INVALID
        site = connect(args)
        site.whoami()
        try:
            uploaded = site.upload(bundle, ProgressLine(f"uploading {bundle.name}", keep_last=True),
                                   lambda state: say(f"unpacking: {state}"))
        except BundleRefusedError as exc:
            say(f"error: {exc}")
            for finding in covering_findings(exc.details, report.findings):
                say(f"the checker's rule that covers it: {finding}")
            return ExitCode.INVALID
        print(f"competition {uploaded.competition_id}: {uploaded.url}")
        return ExitCode.OK


class Fetch(Command):
    name = "fetch"
    help = "download every submission of a phase (or a competition) with its results, resumably"
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
            fetched = site.fetch_competition(args.competition, Path(args.out), say, ProgressLine)
        else:
            fetched = [(args.phase, Path(args.out), site.fetch(args.phase, Path(args.out), say, ProgressLine))]
        for phase_id, out, manifest in fetched:
            print(f"phase {phase_id}: {summary_line(manifest)}; {out}")
        return ExitCode.OK


def site_leaderboard(args) -> ExitCode:
    """``codascore leaderboard --site URL --phase ID [--out CSV]``: the phase's leaderboard as CSV, exact
    values when the caller may read the results export, else the public rounded ones; a `values` column and
    a printed line say which."""
    if args.phase is None or not str(args.phase).isdigit():
        raise UsageError("--site needs --phase ID, the phase's number on the site (in its page's address)")
    site = connect(args, signed_in=False)
    board = site.leaderboard(int(args.phase), args.competition)
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
    say(f"phase {args.phase}: {len(rows)} row(s), {board.values} values{reason}"
        + (f"; written to {args.out}" if args.out else ""))
    return ExitCode.OK


class Rerun(Command):
    name = "rerun"
    help = "ask a Codabench site to run a phase's submissions (or the ones named) again, and wait"
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
