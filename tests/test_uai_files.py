"""Readers and writers of the UAI files: models, evidence, queries and result files (docs/uai.md#file-formats,
docs/uai.md#result-files), and the likelihood of an assignment."""

from __future__ import annotations

import math

import numpy as np
import pytest

from codascore.errors import AnswerError, FormatError
from codascore.uai import bucket_elimination, files, log10_likelihood, result_files

TINY = """c a comment line
MARKOV
3
2 2 3
3
1 0
2 0 1
2 1 2
2 0.1 0.9
4 1 2
  3 4
6 1 0 2
0 0 5
"""


def test_model_tokens_any_whitespace_comments_and_last_variable_fastest():
    model = files.parse_model(TINY)
    assert model.kind == "MARKOV" and list(model.cards) == [2, 2, 3]
    assert model.scopes == [(0,), (0, 1), (1, 2)]
    assert model.tables[1][1, 0] == 3  # entry index v0 * d1 + v1: (1, 0) -> third entry
    assert model.tables[2][1, 0] == 0 and model.tables[2][1, 2] == 5


def test_bayes_and_constant_factors():
    model = files.parse_model("BAYES 2 2 2 3 1 0 2 0 1 0 2 0.4 0.6 4 0.9 0.1 0.2 0.8 1 2.5")
    assert model.kind == "BAYES" and model.scopes[2] == ()
    assert bucket_elimination.log10_partition(model) == pytest.approx(math.log10(2.5))


@pytest.mark.parametrize("text, message", [
    ("MARKOV 2 2 2 1 2 0 1 3 1 2 3", "line 1, token 9 '3': table 0 has 3 entries"),
    ("MARKOV\n2\n2 2\n1\n2 0 5\n4 1 1 1 1", "line 5, token 8 '5': function 0: variable index"),
    ("MARKOV\n2\n2 2\n1\n2 0 1\n4 1 1 x 1", "line 6, token 12 'x': not a number"),
    ("MARKOV 2 2 2 1 2 0 1 4 1 1 -1 1", "entries must be finite and >= 0"),
    ("MARKOV 2 2 2 1 2 0 0 4 1 1 1 1", "appears twice"),
    ("MARKOV 2 2 2 1 2 0 1 4 1 1 1", "unexpected end of file"),
    ("MARKOV 2 2 2 1 1 0 2 1 1 7", "unexpected token after the 1 tables"),
    ("MRF 2", "expected the graph type"),
])
def test_malformed_models_name_file_line_and_token(text, message):
    with pytest.raises(FormatError, match="^m.uai: .*" + message.replace("(", r"\(")):
        files.parse_model(text, "m.uai")


@pytest.mark.parametrize("text", ["2 0 1 2 0", "2\n0 1\n2 0\n", "1 2 0 1 2 0"])
def test_three_evidence_variants(text):
    assert files.parse_evidence(text) == {0: 1, 2: 0}


@pytest.mark.parametrize("text, message", [
    ("2 0 1", "match no evidence layout"), ("3 0 1 0 2", "match no evidence layout"),
    ("2 0 1 0 0", "two different values"), ("1 5 0", "not in"), ("1 0 x", "expected an integer")])
def test_bad_evidence(text, message):
    with pytest.raises(FormatError, match=message):
        files.parse_evidence(text, "m.evid", files.parse_model(TINY))


def test_empty_evidence_and_query_rules():
    model = files.parse_model(TINY)
    assert files.parse_evidence("") == {} and files.parse_evidence("0") == {}
    assert files.parse_query("2 2 0", model=model) == [2, 0]
    with pytest.raises(FormatError, match="evidence variable"):
        files.parse_query("1 0", model=model, evidence={0: 1})
    with pytest.raises(FormatError, match="listed twice"):
        files.parse_query("2 1 1", model=model)


def test_result_blocks_last_wins_and_task_word():
    assert result_files.parse_pr("PR\n-BEGIN-\n-3.5\n-BEGIN-\n-1.25\n") == -1.25
    assert result_files.parse_pr("  pr \n1 -2.0\n") == -2.0          # sample-count prefix
    assert result_files.parse_pr("PR\n-2.5 U\n") == -2.5              # PIC2011 bound flag
    assert result_files.parse_pr("PR\n-inf\n") == -math.inf           # Z = 0
    with pytest.raises(AnswerError, match="not a finite"):
        result_files.parse_pr("PR\nnan\n")
    with pytest.raises(AnswerError, match="found 0 tokens"):
        result_files.parse_pr("PR\n-BEGIN-\n1.0\n-BEGIN-\n")           # last block empty: no fallback
    with pytest.raises(AnswerError, match="does not name the task PR"):
        result_files.parse_pr("MAR\n1.0\n")


def test_mpe_full_assignment_pairs_and_map_alias():
    model = files.parse_model(TINY)
    ev = {2: 1}
    assert list(result_files.parse_mpe("MAP\n3 1 0 1\n", model, ev)) == [1, 0, 1]
    assert list(result_files.parse_mpe("MPE\n-BEGIN-\n2 1 0 0 1\n", model, ev)) == [1, 0, 1]
    with pytest.raises(AnswerError, match="evidence variable 2"):
        result_files.parse_mpe("MPE\n3 1 0 2\n", model, ev)
    with pytest.raises(AnswerError, match="unassigned"):
        result_files.parse_mpe("MPE\n1 0 1\n", model, ev)
    with pytest.raises(AnswerError, match="not in"):
        result_files.parse_mpe("MPE\n3 1 0 -1\n", model, {})


def test_mar_renormalises_and_rejects_negative_values():
    model = files.parse_model(TINY)
    marg = result_files.parse_mar("MAR\n3 2 1 3 2 0.5 0.5 3 1 1 2\n", model)
    assert np.allclose(marg[0], [0.25, 0.75]) and np.allclose(marg[2], [0.25, 0.25, 0.5])
    with pytest.raises(AnswerError, match="negative"):
        result_files.parse_mar("MAR\n3 2 1 -3 2 0.5 0.5 3 1 1 2\n", model)
    with pytest.raises(AnswerError, match="cardinality"):
        result_files.parse_mar("MAR\n3 2 1 3 3 0.5 0.5 3 1 1 2\n", model)


def test_mmap_pairs_values_only_and_mlc_lines():
    model = files.parse_model(TINY)
    warnings: list[str] = []
    assert result_files.parse_mmap("MMAP\n2 2 1 0 1\n", model, [2, 0]) == {2: 1, 0: 1}
    assert result_files.parse_mmap("MMAP\n2 1 2\n", model, [2, 0], warnings) == {0: 1, 2: 2}
    assert warnings and "ascending" in warnings[0]
    with pytest.raises(AnswerError, match="query set"):
        result_files.parse_mmap("MMAP\n1 0 1\n", model, [1])
    lines = result_files.parse_mlc("MLC\n1 2 1\nbad\n", model, [2], 3)
    assert lines[0] == {2: 1} and isinstance(lines[1], AnswerError) and isinstance(lines[2], AnswerError)


def test_likelihood_validates_its_arguments():
    model = files.parse_model(TINY)
    with pytest.raises(ValueError, match="assignment: expected 3 values"):
        log10_likelihood(model, [0, 1])
    with pytest.raises(ValueError, match=r"assignment\[2\] = 3 is not below"):
        log10_likelihood(model, [0, 1, 3])
    with pytest.raises(ValueError, match="evidence value 1"):
        log10_likelihood(model, [0, 1, 0], {0: 1})
    assert log10_likelihood(model, [1, 1, 0]) == -math.inf  # a zero entry


# The examples of the 2022 format pages (uci-2022 _pages/root/file-formats/data-format.md and
# test-format.md): 10 variables, E = (5, 6, 8), Q = (1, 4, 7), H = (0, 2, 3, 9).
MLC_PREAMBLE = "10\n3 5 6 8\n3 1 4 7\n4 0 2 3 9\n\n2\n"
MLC_DATA_OFFICIAL = MLC_PREAMBLE + "5 2 6 1 8 0 1 0 4 2 7 1 -48.21\n5 1 6 0 8 3 1 1 4 0 7 1 -76.27\n"
MLC_TEST_OFFICIAL = MLC_PREAMBLE + "5 2 6 1 8 0\n5 1 6 0 8 3\n"
# The same lines in the older layout, a count before the evidence pairs and before the label pairs.
MLC_DATA_PREFIXED = MLC_PREAMBLE + "3 5 2 6 1 8 0 3 1 0 4 2 7 1 -48.21\n3 5 1 6 0 8 3 3 1 1 4 0 7 1 -76.27\n"
MLC_TEST_PREFIXED = MLC_PREAMBLE + "3 5 2 6 1 8 0\n3 5 1 6 0 8 3\n"


@pytest.mark.parametrize("data_text, test_text", [(MLC_DATA_OFFICIAL, MLC_TEST_OFFICIAL),
                                                  (MLC_DATA_PREFIXED, MLC_TEST_PREFIXED)],
                         ids=["official", "count_prefixed"])
def test_mlc_data_and_test_lines_of_the_format_pages_in_both_layouts(data_text, test_text):
    data = files.parse_mlc_data(data_text, "p.uai.data", with_labels=True)
    assert (data.evidence_vars, data.query_vars, data.hidden_vars) == ([5, 6, 8], [1, 4, 7], [0, 2, 3, 9])
    assert data.evidence == [{5: 2, 6: 1, 8: 0}, {5: 1, 6: 0, 8: 3}]
    assert data.query == [{1: 0, 4: 2, 7: 1}, {1: 1, 4: 0, 7: 1}]
    assert data.weights == [-48.21, -76.27]
    test = files.parse_mlc_data(test_text, "p.uai.test", with_labels=False)
    assert test.evidence == data.evidence and test.query is None


def test_mlc_writer_uses_the_official_layout_and_round_trips():
    data = files.parse_mlc_data(MLC_DATA_PREFIXED, "p.uai.data")
    written = files.format_mlc_data(data, 10)
    assert written.splitlines()[6].split() == "5 2 6 1 8 0 1 0 4 2 7 1 -48.210000".split()
    assert files.parse_mlc_data(written, "p.uai.data") == data


@pytest.mark.parametrize("line, with_labels, message", [
    ("5 2 6 1 8 0 1 0 4 2 7 -48.21", True, "11 integer tokens match no layout: expected 12 tokens"),
    ("5 2 6 1 8 0 1 0 4 2 7 1 0 -48.21", True, "13 integer tokens match no layout"),
    ("5 2 6 1", False, "4 integer tokens match no layout: expected 6 tokens"),
    ("5 2 6 1 6 0", False, "each evidence variable exactly one value"),
    ("5 2 6 1 9 0", False, "each evidence variable exactly one value"),
    ("5 2 6 1 8 0 1 0 4 2 3 1 -48.21", True, "each evidence variable and each query variable"),
    ("2 5 2 6 1 8 0 3 1 0 4 2 7 1 -48.21", True, "match no layout"),  # a wrong count is not taken as a pair
])
def test_mlc_lines_matching_neither_layout_are_refused_with_the_line(line, with_labels, message):
    text = MLC_PREAMBLE.replace("\n2\n", "\n1\n") + line + "\n"
    with pytest.raises(FormatError, match="line 7") as caught:
        files.parse_mlc_data(text, "p.uai.data", with_labels=with_labels)
    assert message in str(caught.value)
