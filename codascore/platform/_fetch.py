"""Every submission of a phase, downloaded with what the platform keeps of it, into the folder
``codascore judge`` reads (its format: codascore/formats/fetch.py; docs/end_of_competition.md#the-folder-fetch-writes).

The API calls: ``GET /api/phases/<id>/`` (the phase's dates and what it hides), ``GET
/api/submissions/?phase=<id>`` (an organiser sees every participant's; anyone else their own), and for each
submission ``GET /api/submissions/<id>/get_details/``: presigned addresses of its files, fetched without
the token.

A fetch holds its folder's lock from its first file to its last, and refuses a folder that holds another
fetch (_folder.py). Each submission's verified files stay in the manifest until each is checked again; a
file's bytes go to its ``.part`` and are resumed from there, by this fetch after a cut or by the next one
after a kill, while the object it was started from (its ETag, in the record's ``partial``) is the same.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import zipfile
from pathlib import Path
from typing import Callable, Iterator

from ..errors import PlatformAuthError, PlatformError
from ..formats.atomic import write_atomic, write_json_atomic
from ..formats.fetch import (COMPETITION, LOGS, MANIFEST, NOTES, PLATFORM_FILES, SCORING_RESULT, STEP_RESULTS,
                             SUBMISSION_RECORD, SUBMISSION_ZIP, SUBMISSIONS, TEAMS, is_part, load_manifest,
                             new_competition_record, new_manifest, part_path, phase_folder, team_of, team_zip)
from ..formats.outputs import DETAILS, SCORES
from ._folder import check_identity, holding
from ._http import CHUNK, Http, Progress
from ._manifest import FINAL_STATES, choose_team_submission, is_late, reusable, safe_name

#: The files of the scoring output copied out of scoring_result.zip beside it.
SCORING_OUTPUTS = (DETAILS, SCORES)


class PhaseFetch:
    """One phase fetched into out: the manifest kept up to date after every file. say: one line per
    submission and file; progress: the bytes of the file being downloaded."""

    def __init__(self, http: Http, phase_id: int, out: Path, say: Callable[[str], None] = lambda line: None,
                 progress: Callable[[str], Progress] | None = None):
        self.http, self.phase_id, self.out = http, int(phase_id), Path(out)
        self.say, self.progress = say, progress
        self.old: dict = {}
        self.manifest: dict = {}

    def run(self) -> dict:
        """Fetch the phase, holding the folder's lock; the manifest written. FetchFolderError before any
        request when the folder holds another fetch or other files."""
        check_identity(self.out, self.http.base_url, "phase", self.phase_id)
        phase = self.http.json("GET", f"api/phases/{self.phase_id}/", f"reading phase {self.phase_id}")
        with holding(self.out):
            check_identity(self.out, self.http.base_url, "phase", self.phase_id)  # again, now that it is held
            submissions = list_submissions(self.http, self.phase_id)
            self.old = load_manifest(self.out) or {}
            self.manifest = new_manifest(self.http.base_url, phase)
            # The earlier fetch's records stay until each is replaced: a fetch stopped again early forgets none.
            self.manifest["submissions"] = dict(self.old.get("submissions", {}))
            self.manifest["gone"] = dict(self.old.get("gone") or {})
            self.manifest["teams"] = dict(self.old.get("teams") or {})  # until this fetch's replace them
            self.save()  # the folder says whose fetch it is before its first file
            self.say(f"phase {self.phase_id} ({phase.get('name')}): {len(submissions)} submission(s) into "
                     f"{self.out}")
            for number, submission in enumerate(sorted(submissions, key=lambda s: s["id"]), 1):
                self.fetch_submission(submission, phase, f"[{number}/{len(submissions)}]")
            self.forget_unlisted({str(submission["id"]) for submission in submissions})
            self.link_teams()
            self.save()
        return self.manifest

    def forget_unlisted(self, listed: set[str]) -> None:
        """The submissions an earlier fetch got that the site no longer lists: out of the manifest's
        submissions (so out of every team), into its ``gone`` with their folders, which stay; each said."""
        for key in sorted(set(self.manifest["submissions"]) - listed, key=int):
            record = self.manifest["submissions"].pop(key)
            self.manifest["gone"][key] = {"team": record.get("team"), "folder": record.get("folder"),
                                          "why": "the site no longer lists it"}
            self.say(f"submission {key} of {record.get('team')}: no longer listed by the site (its folder "
                     f"{record.get('folder')} is kept, under gone in the manifest)")
        for key in listed:
            self.manifest["gone"].pop(key, None)

    def save(self) -> None:
        write_json_atomic(self.out / MANIFEST, self.manifest)

    def fetch_submission(self, submission: dict, phase: dict, counter: str) -> None:
        team = safe_name(submission.get("owner") or "unknown")
        folder = self.out / SUBMISSIONS / team / str(submission["id"])
        status = str(submission.get("status") or "")
        old = self.old.get("submissions", {}).get(str(submission["id"]))
        record = submission_record(submission, team, folder.relative_to(self.out).as_posix(), phase)
        if old and old.get("status") == status and status in FINAL_STATES:
            # what an earlier fetch verified stays recorded until each file is checked again below
            record["files"] = dict(old.get("files") or {})
            record["partial"] = dict(old.get("partial") or {})
        self.manifest["submissions"][str(submission["id"])] = record
        flag = " (made after the phase's end)" if record["late"] else ""
        self.say(f"{counter} {team} #{submission['id']} {status}{flag}")
        folder.mkdir(parents=True, exist_ok=True)
        write_json_atomic(folder / SUBMISSION_RECORD, {k: v for k, v in record.items()
                                                       if k not in ("files", "partial")})
        self.save()
        seen = set()
        for name, url, reason in self.file_addresses(submission, phase):
            seen.add(name)
            if url is None:
                record["missing"][name] = reason
                record["files"].pop(name, None)
                continue
            kept = reusable(old, status, name, folder)
            if kept and kept.get("size") == 0 and name in STEP_RESULTS:  # an earlier version kept a placeholder
                (folder / name).unlink(missing_ok=True)
                self.placeholder(record, name, status)
            elif kept:
                record["files"][name] = kept
                self.say(f"    {name}: already here, intact")
            else:
                self.download(url, folder, name, record, status, f"fetching {name} of submission {submission['id']}")
            self.save()
        record["files"] = {name: entry for name, entry in record["files"].items() if name in seen}
        self.extract_scoring_outputs(folder, record)
        self.save()

    def download(self, url: str, folder: Path, name: str, record: dict, status: str, doing: str) -> None:
        """One file into the submission's folder, resumed from its ``.part`` when the record's ``partial``
        names the object it holds the first bytes of; a step's empty result zip recorded as not available."""
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        progress = self.progress(name) if self.progress else None
        partial = record.setdefault("partial", {})

        def started(etag: str | None, total: int | None) -> bool:
            """A transfer from byte 0 begins: what its .part will hold, recorded first when worth resuming (a
            final submission's file, over one chunk, with an ETag to recognise it by); whether it was."""
            worth = bool(etag) and status in FINAL_STATES and (total is None or total > CHUNK)
            if worth:
                partial[name] = {"etag": etag, "size": total}
            if worth or partial.pop(name, None):
                self.save()
            return worth

        size, sha256 = self.http.download(url, folder / name, doing, progress,
                                          validator=(partial.get(name) or {}).get("etag"), started=started,
                                          keep_empty=name not in STEP_RESULTS)
        partial.pop(name, None)
        if size == 0 and name in STEP_RESULTS:
            self.placeholder(record, name, status)
            return
        record["files"][name] = {"size": size, "sha256": sha256}
        record["missing"].pop(name, None)
        self.say(f"    {name}: {size} bytes")

    def placeholder(self, record: dict, name: str, status: str) -> None:
        """A step's result zip of 0 bytes: the platform's placeholder for a step that did not run."""
        record["files"].pop(name, None)
        record["missing"][name] = (f"the platform keeps an empty placeholder (0 bytes, not a zip): the "
                                   f"{STEP_RESULTS[name]} step did not run or left nothing (status {status})")
        self.say(f"    {name}: not available (an empty placeholder: the {STEP_RESULTS[name]} step did not run)")

    def file_addresses(self, submission: dict, phase: dict) -> list[tuple[str, str | None, str]]:
        """(file name, address or None, why there is none) of each file the platform may keep."""
        doing = f"listing the files of submission {submission['id']}"
        try:
            details = self.http.json("GET", f"api/submissions/{submission['id']}/get_details/", doing)
        except PlatformAuthError as exc:  # a phase hiding its output from non-organisers
            reason = f"the platform refused: {exc.message}"
            return [(name, None, reason) for _, name in PLATFORM_FILES]
        files = []
        for key, name in PLATFORM_FILES:
            files.append((name, details.get(key), missing_reason(key, submission, phase)))
        for log in details.get("logs") or []:
            files.append((f"{LOGS}/{safe_name(log.get('name'), 'log')}.txt", log.get("data_file"), "no address"))
        if not details.get("logs"):
            files.append((f"{LOGS}/", None, missing_reason("logs", submission, phase)))
        return files

    def extract_scoring_outputs(self, folder: Path, record: dict) -> None:
        """details.json and scores.json copied out of scoring_result.zip (when it holds them)."""
        archive_path = folder / SCORING_RESULT
        if SCORING_RESULT not in record["files"]:
            for name in SCORING_OUTPUTS:
                record["missing"][name] = f"no {SCORING_RESULT}: " + record["missing"].get(SCORING_RESULT, "not fetched")
            return
        for name in SCORING_OUTPUTS:
            data = member_bytes(archive_path, name)
            if data is None:
                record["missing"][name] = f"{SCORING_RESULT} holds no {name}"
                continue
            write_atomic(folder / name, data)
            record["files"][name] = {"size": len(data), "sha256": sha256_of(data), "from": SCORING_RESULT}

    def link_teams(self) -> None:
        """OUT/teams/<team>.zip for each team (the chosen submission's zip, hard-linked or copied) and the
        notes the judge shows (a submission made after the phase's end); every other zip of teams/ removed
        (a team this fetch has no submission file of), and why said."""
        by_team: dict[str, list[dict]] = {}
        for record in self.manifest["submissions"].values():
            by_team.setdefault(record["team"], []).append(record)
        teams_dir = self.out / TEAMS
        teams_dir.mkdir(parents=True, exist_ok=True)
        notes, teams = {}, {}
        for team, records in sorted(by_team.items()):
            chosen, why = choose_team_submission(records)
            entry = {"why": why, "submission": chosen and chosen["id"]}
            if chosen:
                source = self.out / chosen["folder"] / SUBMISSION_ZIP
                place_file(source, self.out / team_zip(team))
                entry |= {"file": team_zip(team), "late": chosen["late"],
                          "created_when": chosen["created_when"]}
                notes[team] = {"submission": chosen["id"], "created_when": chosen["created_when"],
                               "late": chosen["late"], "phase_end": self.manifest["phase"]["end"]}
                self.say_replaced(team, chosen["id"])
            teams[team] = entry
        self.manifest["teams"] = teams
        self.remove_stale_zips(teams_dir)
        write_json_atomic(teams_dir / NOTES, notes)

    def old_submission(self, team: str) -> str | None:
        """The submission an earlier fetch gave the team in teams/, when the site no longer lists it."""
        chosen = ((self.old.get("teams") or {}).get(team) or {}).get("submission")
        return str(chosen) if chosen is not None and str(chosen) in self.manifest["gone"] else None

    def say_replaced(self, team: str, chosen: int) -> None:
        gone = self.old_submission(team)
        if gone is not None:
            self.say(f"team {team}: its submission {gone} is no longer listed by the site; {team_zip(team)} is "
                     f"now submission {chosen}")

    def remove_stale_zips(self, teams_dir: Path) -> None:
        """Remove from teams/ each zip of no team of this fetch (and what a killed fetch left half-placed)."""
        for path in sorted(teams_dir.iterdir()):
            if is_part(path.name):
                path.unlink(missing_ok=True)
                continue
            team = team_of(path.name)
            if team is None or (self.manifest["teams"].get(team) or {}).get("file"):
                continue
            path.unlink()
            gone = self.old_submission(team)
            if gone is not None:
                why = f"its submission {gone} is no longer listed by the site"
            elif team in self.manifest["teams"]:
                why = self.manifest["teams"][team]["why"]
            else:
                why = "no submission of this team in this fetch"
            self.say(f"team {team}: {why}; {team_zip(team)} removed")


def fetch_competition(http: Http, competition_id: int, out: Path, say: Callable[[str], None] = lambda line: None,
                      progress: Callable[[str], Progress] | None = None) -> Iterator[tuple[int, Path, dict]]:
    """Every phase of a competition, each into OUT/phase-<id>/, OUT held (its lock, its record naming the
    site and the competition) for the whole fetch: (phase id, its folder, its manifest) as each ends."""
    out = Path(out)
    check_identity(out, http.base_url, "competition", competition_id)
    competition = http.json("GET", f"api/competitions/{competition_id}/", f"reading competition {competition_id}")
    with holding(out):
        check_identity(out, http.base_url, "competition", competition_id)
        write_json_atomic(out / COMPETITION, new_competition_record(http.base_url, competition))
        for phase in competition.get("phases") or []:
            folder = out / phase_folder(phase["id"])
            yield phase["id"], folder, PhaseFetch(http, phase["id"], folder, say, progress).run()


def list_submissions(http: Http, phase_id: int) -> list[dict]:
    """Every submission of the phase the caller may see (the list, or the pages of a paginated one)."""
    answer = http.json("GET", "api/submissions/", f"listing the submissions of phase {phase_id}",
                       params={"phase": phase_id})
    found = []
    while isinstance(answer, dict) and "results" in answer:
        found += answer["results"]
        if not answer.get("next"):
            return found
        answer = http.json("GET", answer["next"], f"listing the submissions of phase {phase_id}")
    if not isinstance(answer, list):
        raise PlatformError("the site's list of submissions is not a list", http.url("api/submissions/"))
    return found + answer


def submission_record(submission: dict, team: str, folder: str, phase: dict) -> dict:
    """What the manifest says of a submission before its files."""
    scores = {str(s.get("column_key")): s.get("score") for s in submission.get("scores") or []}
    return {"id": submission["id"], "team": team, "owner": submission.get("owner"), "folder": folder,
            "created_when": submission.get("created_when"), "status": submission.get("status"),
            "status_details": submission.get("status_details"), "parent": submission.get("parent"),
            "children": submission.get("children") or [], "on_leaderboard": bool(submission.get("on_leaderboard")),
            "scores": scores, "task": (submission.get("task") or {}).get("key")
            if isinstance(submission.get("task"), dict) else submission.get("task"),
            "late": is_late(submission.get("created_when"), phase.get("end")),
            "files": {}, "missing": {}, "partial": {}}


def missing_reason(key: str, submission: dict, phase: dict) -> str:
    """Why the platform gave no address for a file of a submission."""
    hidden = {"prediction_result": ("hide_output", "hide_prediction_output"),
              "scoring_result": ("hide_output", "hide_score_output"), "logs": ("hide_output",)}.get(key, ())
    flags = [flag for flag in hidden if phase.get(flag)]
    if key != "data_file" and submission.get("has_children"):
        children = ", ".join(map(str, submission.get("children") or [])) or "none listed"
        return f"a submission to several tasks: its per-task submissions ({children}) hold it"
    if flags:
        return f"the phase hides it from non-organisers ({', '.join(flags)})"
    if key == "data_file":
        return "the platform holds no file for it (deleted)"
    return f"the platform holds none (status {submission.get('status')}: that step did not run or left nothing)"


def member_bytes(archive_path: Path, name: str) -> bytes | None:
    """The bytes of name in a zip, at its top or in its one wrapper folder; None when absent or unreadable."""
    try:
        with zipfile.ZipFile(archive_path) as archive:
            members = [m for m in archive.namelist() if m == name or (m.endswith("/" + name) and m.count("/") == 1)]
            return archive.read(sorted(members, key=len)[0]) if members else None
    except (zipfile.BadZipFile, OSError, KeyError):
        return None


def sha256_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def place_file(source: Path, dest: Path) -> None:
    """dest becomes the same bytes as source: a hard link (no second copy) or, where links are not
    possible, a copy; through a temporary name, then os.replace."""
    if dest.exists() and os.path.samefile(source, dest):
        return  # already that file (renaming a link over its own file would do nothing, and leave the link)
    part = part_path(dest.with_name("." + dest.name))
    part.unlink(missing_ok=True)
    try:
        os.link(source, part)
    except OSError:
        shutil.copyfile(source, part)
    os.replace(part, dest)


def summary_line(manifest: dict) -> str:
    records = list(manifest["submissions"].values())
    files = sum(len(r["files"]) for r in records)
    size = sum(f.get("size", 0) for r in records for f in r["files"].values())
    late = sum(r["late"] for r in records)
    missing = sum(len(r["missing"]) for r in records)
    return (f"{len(records)} submission(s) of {len(manifest['teams'])} team(s): {files} file(s), {size} bytes; "
            f"{missing} not available (see manifest.json); {late} made after the phase's end")
