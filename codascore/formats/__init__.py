"""The formats the tools hand each other, each declared here once (docs/architecture.md#hand-offs).

The scoring and ingestion programs, the runner, the judge, the leaderboard and the fetch pass folders to
one another. Every file name, folder name and field those folders share is declared in one module of this
package, and every reader and writer goes through it:

- :mod:`.atomic`: how every hand-off file is written (a temporary name, then a rename);
- :mod:`.outputs`: what a program's output folder holds (``scores.json``, ``details.json``, the page, the
  ingestion's error file, the worker's ``metadata``);
- :mod:`.details`: ``details.json``, the scorer's record of a scored submission, and the unit naming that
  every tool shares (:func:`.details.unit_id`);
- :mod:`.run_folder`: the folder ``codascore run`` (and each judge unit) leaves;
- :mod:`.judgement`: the folder ``codascore judge`` writes (``results.csv``, ``judge.sqlite`` with its
  schema version) and its read-only reader;
- :mod:`.fetch`: the folder ``codascore fetch`` writes (``manifest.json``, ``teams/``) and its reader.

This package sits at the bottom of the core, beside :mod:`codascore.task`: it imports nothing of codascore
but :mod:`codascore.errors` and :mod:`codascore.digests`, so that families, the programs and the organisers'
tools may all use it. ``tests/test_formats.py`` fails when a declared name is written a second time anywhere
else in the package.
"""
