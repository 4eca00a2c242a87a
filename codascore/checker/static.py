"""The static rules of a bundle (1-21, 28, 29, 31): one method per rule on the parsed YAML and the files it
names, each finding with its rule number and YAML path. The checker is one class, :class:`BundleChecker`,
assembled from one mixin per group of rules:

- here, the driver and rules 2-5 (the version, the top-level keys and the files they name, the image);
- :mod:`.base`, what every rule uses (findings, the generic schema rule, the bundle's paths);
- :mod:`.tasks` (rules 6, 7, 9) and :mod:`.programs` (rule 8), the tasks, their data and programs;
- :mod:`.phases` (rules 10-14), :mod:`.leaderboard` (rules 15-21), :mod:`.answers` (rule 29) and
  :mod:`.data_agreement` (rule 31)."""

from __future__ import annotations

from .answers import AnswerRules
from .base import samples_of
from .data_agreement import DataAgreementRules
from .leaderboard import LeaderboardRules
from .phases import PhaseRules
from .schema import IMAGE_MAGIC, V15_VERSIONS
from .tasks import TaskRules
from .v15 import v15_refusals

__all__ = ["BundleChecker", "samples_of"]

# --------------------------------------------------------------------------- the checker

class BundleChecker(TaskRules, PhaseRules, LeaderboardRules, AnswerRules, DataAgreementRules):
    # ----- rules 2-5: the version, the top-level keys and the files they name, the image
    def parser_version(self) -> str | None:
        """The unpacker Codabench chooses by ``str(yaml.get('version', '1'))``: '2', '1.5', or None (refused)."""
        version = str(self.yaml.get("version", "1"))
        return "2" if version == "2" else "1.5" if version in V15_VERSIONS else None

    def rule_version(self) -> None:
        chosen = self.parser_version()
        if chosen == "2":
            return
        if chosen == "1.5":
            given = f"version {self.yaml['version']!r}" if "version" in self.yaml else "no version"
            refusals = v15_refusals(self.root, self.yaml)
            why = f"which refuses this bundle: {refusals[0].message}" if refusals else "whose rules differ"
            self.error(2, "version", f"{given}: Codabench uses its v1.5 parser, {why} (issue #1934); write "
                                     "`version: 2`", platform=bool(refusals))
            return
        version = self.yaml["version"]
        self.error(2, "version", f"{version!r}: str(version) is {str(version)!r}, and Codabench answers \"A "
                                 "suitable version could not be found for this competition\"; write `version: 2`")

    def rule_top_level(self) -> None:
        self.check_fields("competition", self.yaml, "")
        if isinstance(self.yaml.get("image"), str):
            image = self.resolve(self.yaml["image"], "image", rule=3, quiet_missing=True)
            if image is None:
                self.error(3, "image", f"Unable to find image: {self.yaml['image']}")
            elif not image.is_file():
                self.error(3, "image", f"{self.yaml['image']} is not a file")
            else:
                head = image.read_bytes()[:8]
                if not any(head.startswith(magic) for magic in IMAGE_MAGIC):
                    self.error(3, "image", f"{self.yaml['image']} is not a PNG or JPEG image")
        if isinstance(self.yaml.get("terms"), str):
            self.check_text_file(self.yaml["terms"], "terms", "terms")
        for i, page in self.items("pages"):
            at = f"pages[{i}]"
            if self.check_fields("page", page, at) and isinstance(page.get("file"), str):
                self.check_text_file(page["file"], f"{at}.file", "page")

    def check_text_file(self, value: str, at: str, what: str) -> None:
        path = self.resolve(value, at, rule=3, quiet_missing=True)
        if path is None:
            self.error(3, at, f"Unable to find page: {value} (the {what})")
        elif not path.is_file():
            self.error(3, at, f"{value} is not a file")
        elif not path.read_text(errors="replace").strip():
            # Codabench refuses an empty file; one of blanks only passes there but shows an empty page
            self.error(3, at, f"Page '{value}' is empty, it must contain content.",
                       platform=path.stat().st_size == 0)

    def rule_docker_image(self) -> None:
        image = self.yaml.get("docker_image")
        if image is None:
            self.error(4, "docker_image", f"missing: Codabench then uses codalab/codalab-legacy:py37 "
                                          f"(numpy 1.17); write `docker_image: {self.image}`")
        elif isinstance(image, str) and image != self.image:
            self.error(4, "docker_image", f"{image!r} is not the expected image {self.image!r} "
                                          "(see docs/bundles.md; `--image` accepts another)")

    # ----- the whole static check
    def run_static(self) -> None:
        for rule in (self.rule_version, self.rule_top_level, self.rule_docker_image, self.rule_tasks,
                     self.rule_phases, self.rule_leaderboards, self.rule_keys, self.rule_answers,
                     self.rule_data_agreement):
            rule()

    def summary(self) -> str:
        columns = self.columns()
        boards = self.yaml.get("leaderboards")
        board = boards[0] if isinstance(boards, list) and boards and isinstance(boards[0], dict) else {}
        primary = next((c.get("key") for c in columns if c.get("index") == board.get("primary_index", 0)), None)
        names = [n or "?" for n in self.task_names.values()]
        return (f"version {self.yaml.get('version')}, {len(list(self.items('tasks')))} task(s) "
                f"({', '.join(names)}), {len(list(self.items('phases')))} phase(s), leaderboard "
                f"{board.get('key')!r} with {len(columns)} column(s), primary {primary!r}, "
                f"{board.get('submission_rule')}, image {self.yaml.get('docker_image')}")
