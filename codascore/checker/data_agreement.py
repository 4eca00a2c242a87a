"""Rule 31: each task's reference data, input data and starting-kit samples list the same items."""

from __future__ import annotations

from ..competition import bundle_path, read_task_config
from ..errors import ReferenceDataError
from .base import CheckerBase, samples_of


class DataAgreementRules(CheckerBase):
    # ----- rule 31: reference data, input data and starting kit agree
    def rule_data_agreement(self) -> None:
        """Each task's items (Task.data_inventory) as its reference data, its input data and each valid
        result sample of its starting kits list them: an item the input data lacks or adds, a shape that
        differs, or a sample answering an item the reference does not hold is an error (the scorer would
        silently ignore it)."""
        positions = self.task_positions()
        for index, ref in self.references.items():
            if index not in positions or self.task_names.get(index) in self.unavailable:
                continue  # rule 21 already warns that the task is not in this build
            task_entry = self.yaml["tasks"][positions[index]]
            at = f"tasks[{positions[index]}]"
            try:
                task, config = read_task_config(ref, task_entry["reference_data"])
                reference = task.data_inventory(ref, "reference", config)
            except ReferenceDataError as exc:
                # the scorer stops on it too (exit 2), which `check --run` reports under rule 22
                self.warn(31, f"{at}.reference_data", f"cannot list its items, so nothing is compared: {exc}")
                continue
            if reference is None:
                continue
            inputs = bundle_path(self.root, task_entry.get("input_data"))
            if inputs is not None and inputs.is_dir():
                try:
                    listed = task.data_inventory(inputs, "input", config)
                except ReferenceDataError as exc:
                    self.error(31, f"{at}.input_data", f"cannot list its items: {exc}")
                    listed = None
                if listed is not None:
                    self.compare_items(reference, listed, f"{at}.input_data", task_entry["input_data"],
                                       task_entry["reference_data"], extra_ok=False)
            for p, phase in self.items("phases"):
                if not isinstance(phase, dict) or index not in (phase.get("tasks") or []):
                    continue
                for sample in samples_of(self.root, phase, task.name):
                    if task.expected_to_fail(sample.name):
                        continue
                    try:
                        answered = task.data_inventory(sample, "sample", config)
                    except ReferenceDataError as exc:
                        self.error(31, f"phases[{p}].starting_kit", f"{sample.name}: {exc}")
                        continue
                    if answered is not None:
                        self.compare_items(reference, answered, f"phases[{p}].starting_kit",
                                           f"{task.name}/{sample.name}", task_entry["reference_data"],
                                           extra_ok=True)

    def compare_items(self, reference: dict, other: dict, at: str, other_name: str, reference_name: str,
                      extra_ok: bool) -> None:
        """One finding per kind of disagreement, naming up to 5 items of each."""
        def some(items) -> str:
            items = sorted(items)
            return ", ".join(items[:5]) + (f" and {len(items) - 5} more" if len(items) > 5 else "")

        added = set(other) - set(reference)
        if added:
            self.error(31, at, f"{other_name} holds {len(added)} item(s) the reference data "
                               f"{reference_name} does not ({some(added)}): the scorer would ignore them")
        lacking = set(reference) - set(other)
        if lacking and not extra_ok:
            self.error(31, at, f"{other_name} lacks {len(lacking)} of the {len(reference)} item(s) of the "
                               f"reference data {reference_name} ({some(lacking)})")
        differ = sorted(k for k in set(reference) & set(other) if tuple(reference[k]) != tuple(other[k]))
        for key in differ[:5]:
            self.error(31, at, f"{other_name}: {key} has shape {tuple(other[key])}, the reference data "
                               f"{reference_name} shape {tuple(reference[key])}")
