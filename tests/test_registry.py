"""What the registry knows without importing a family (the command line's help reads it) is what the
families define: each family's task names, and the families that have verbs of their own."""

from __future__ import annotations

import importlib

import pytest

from codascore.commands import VERBS, family_verbs
from codascore.commands.base import Command, Group
from codascore.competition import project_root
from codascore.registry import FAMILIES, FAMILY_VERBS, TASK_NAMES, family_tasks, task_names


@pytest.mark.parametrize("family", FAMILIES)
def test_the_task_names_are_the_familys_tasks(family):
    assert list(TASK_NAMES[family]) == list(family_tasks(family))


def test_every_family_has_its_task_names_and_no_other_is_named():
    assert set(TASK_NAMES) == set(FAMILIES)
    assert task_names() == sorted(name for family in FAMILIES for name in family_tasks(family))


def test_the_families_with_verbs_are_those_with_a_cli_holding_a_group_of_their_name():
    with_cli = {family for family in FAMILIES if (project_root() / "codascore" / family / "cli.py").is_file()}
    assert set(FAMILY_VERBS) == with_cli
    for family in with_cli:
        commands = importlib.import_module(f"{FAMILIES[family]}.cli").COMMANDS
        assert [command.name for command in commands] == [family]
        assert issubclass(commands[0], Group) and commands[0].commands


@pytest.mark.parametrize("verb", VERBS + family_verbs(), ids=lambda verb: verb.name)
def test_each_verb_of_the_table_loads_the_command_of_its_name(verb):
    command = verb.load()
    assert command.name == verb.name and verb.summary
    assert issubclass(command, Group) or command.run is not Command.run  # a verb that runs something
