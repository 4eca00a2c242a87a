"""Demo instances (the project's own generators), the reference builder and the sample submissions.

Everything is deterministic (fixed seeds, or the bundle's private master seed; repr-formatted floats), so
two runs write identical bytes.
Generators: Ising-like grids (MARKOV), random Bayesian networks (BAYES, child last in each CPT),
pedigree-like networks (Mendelian transmission with zeros, phenotype evidence) and an MLC network
(a Bayesian network whose variables split into evidence, label and hidden sets, with sampled
training and test lines).
"""

from __future__ import annotations

import dataclasses
import math
import re
import shutil
from pathlib import Path
from typing import Callable

import numpy as np

from .. import seeds
from ..errors import TrivialAnswerError
from . import bucket_elimination, files, metrics, result_files, trivial_solvers
from .contraction import DEFAULT_MAX_TABLE_SIZE
from .files import Model, dump_reference

#: The demo's public seed (a bundle's instances come from the private master seed).
SEED = 20220801


@dataclasses.dataclass
class Spec:
    """One instance to put in a reference set."""

    id: str
    family: str
    model: Model
    evidence: dict[int, int]
    query: list[int] | None = None
    mlc_train: files.MLCData | None = None
    mlc_test: files.MLCData | None = None


# ----------------------------------------------------------------------------------------------
# generators


def grid_model(rows: int, cols: int, card: int, coupling: float, rng: np.random.Generator, name: str) -> Model:
    """A rows x cols grid: a unary factor per cell and a pairwise factor per edge, entries
    exp(N(0, 1) * field) and exp(N(0, coupling) ...) (Ising-like, strictly positive)."""
    n = rows * cols
    scopes, tables = [], []
    for v in range(n):
        scopes.append((v,))
        tables.append(np.exp(rng.normal(0.0, 0.5, card)))
    for r in range(rows):
        for c in range(cols):
            v = r * cols + c
            for u in ([v + 1] if c + 1 < cols else []) + ([v + cols] if r + 1 < rows else []):
                scopes.append((v, u))
                tables.append(np.exp(coupling * rng.normal(0.0, 1.0, (card, card))))
    return Model("MARKOV", np.full(n, card, dtype=np.int64), scopes, tables, name)


def _cpt(rng, parent_cards, card, concentration=0.6):
    shape = (*parent_cards, card)
    return rng.dirichlet(np.full(card, concentration), size=int(np.prod(parent_cards, dtype=int))).reshape(shape)


def random_bn(n: int, max_parents: int, card: int, rng: np.random.Generator, name: str) -> Model:
    """A random Bayesian network in topological order 0..n-1; CPT i has scope parents + (i,)."""
    cards = np.full(n, card, dtype=np.int64)
    scopes, tables = [], []
    for v in range(n):
        window = list(range(max(0, v - 6), v))
        k = int(rng.integers(0, min(max_parents, len(window)) + 1))
        parents = sorted(int(p) for p in rng.choice(window, size=k, replace=False)) if k else []
        scopes.append((*parents, v))
        tables.append(_cpt(rng, [card] * len(parents), card))
    return Model("BAYES", cards, scopes, tables, name)


def pedigree_model(n_founders: int, n_children: int, rng: np.random.Generator, name: str
                   ) -> tuple[Model, dict[int, int]]:
    """A pedigree-like Bayesian network: per person a genotype (AA, Aa, aa) and a phenotype (2 states).

    Founders get Hardy-Weinberg priors; a child's genotype CPT is Mendelian transmission from two
    parents (exact zeros, e.g. AA x AA cannot give aa); phenotype given genotype is a noisy penetrance.
    Evidence: the phenotypes of about two thirds of the people. Returns (model, evidence)."""
    q = 0.3
    prior = np.array([(1 - q) ** 2, 2 * q * (1 - q), q ** 2])
    gamete = np.array([[1.0, 0.0], [0.5, 0.5], [0.0, 1.0]])  # P(passes allele a | genotype)
    mendel = np.zeros((3, 3, 3))
    for gm in range(3):
        for gf in range(3):
            for a in range(2):
                for b in range(2):
                    mendel[gm, gf, a + b] += gamete[gm, a] * gamete[gf, b]
    penetrance = np.array([[0.95, 0.05], [0.8, 0.2], [0.1, 0.9]])
    people = n_founders + n_children
    cards = np.array([3] * people + [2] * people, dtype=np.int64)
    scopes, tables = [], []
    for p in range(people):
        if p < n_founders:
            scopes.append((p,))
            tables.append(prior.copy())
        else:
            mother, father = (int(x) for x in rng.choice(p, size=2, replace=False))
            scopes.append((mother, father, p))
            tables.append(mendel.copy())
    for p in range(people):
        scopes.append((p, people + p))
        tables.append(penetrance.copy())
    model = Model("BAYES", cards, scopes, tables, name)
    observed = sorted(int(p) for p in rng.choice(people, size=(2 * people) // 3, replace=False))
    x = forward_sample(model, rng, 1)[0]
    return model, {people + p: int(x[people + p]) for p in observed}


def forward_sample(model: Model, rng: np.random.Generator, count: int) -> np.ndarray:
    """Ancestral samples of a BAYES model whose CPT i has child i last and parents before it."""
    x = np.zeros((count, model.n_vars), dtype=np.int64)
    for scope, table in zip(model.scopes, model.tables):
        child, parents = scope[-1], scope[:-1]
        rows = table[tuple(x[:, p] for p in parents)] if parents else np.broadcast_to(table, (count, table.size))
        cum = np.cumsum(rows, axis=1)
        u = rng.random(count)[:, None] * cum[:, -1:]
        x[:, child] = np.minimum((u >= cum).sum(axis=1), table.shape[-1] - 1)
    return x


def mlc_network(rng: np.random.Generator, name: str, n_train: int = 200, n_test: int = 12) -> Spec:
    """A small BN whose first 6 variables are evidence, the next 3 hidden and the last 4 labels, with
    n_train sampled training lines (weights log10 V(q|e) computed exactly) and n_test test lines."""
    model = random_bn(13, 3, 2, rng, name)
    e_vars, h_vars, q_vars = list(range(6)), [6, 7, 8], [9, 10, 11, 12]
    samples = forward_sample(model, rng, n_train + n_test)
    train = files.MLCData(e_vars, q_vars, h_vars, [], [], [])
    for row in samples[:n_train]:
        ev = {v: int(row[v]) for v in e_vars}
        qv = {v: int(row[v]) for v in q_vars}
        train.evidence.append(ev)
        train.query.append(qv)
        train.weights.append(bucket_elimination.log10_mmap_value(model, qv, ev))
    test = files.MLCData(e_vars, q_vars, h_vars, [{v: int(row[v]) for v in e_vars} for row in samples[n_train:]])
    return Spec(name, "mlc", model, {}, q_vars, train, test)


def demo_specs(kind: str, seed: int | None = None) -> list[Spec]:
    """The demo instance set of a task (a handful of instances, exact answers in seconds), drawn from the
    demo's SEED, or from a private master seed."""
    rng = (np.random.default_rng([SEED, ["PR", "MAR", "MPE", "MMAP", "MLC"].index(kind)]) if seed is None
           else seeds.generator(seed, f"uai.{kind.lower()}"))
    if kind == "MLC":
        return [mlc_network(rng, f"mlc_{k}") for k in range(1, 3)]
    specs = []
    for k, (rows, cols, card, coupling) in enumerate([(5, 5, 2, 0.8), (6, 6, 2, 1.5), (4, 5, 3, 1.0)], 1):
        name = f"grid{rows}x{cols}_{k}"
        specs.append(Spec(name, "grid", grid_model(rows, cols, card, coupling, rng, name), {}))
    for k, n in enumerate([25, 35], 1):
        name = f"bn_{k}"
        model = random_bn(n, 3, 2, rng, name)
        leaves = sorted(int(v) for v in rng.choice(np.arange(n // 2, n), size=4, replace=False))
        x = forward_sample(model, rng, 1)[0]
        specs.append(Spec(name, "bn", model, {v: int(x[v]) for v in leaves}))
    for k, (founders, children) in enumerate([(6, 10), (8, 14)], 1):
        name = f"pedigree_{k}"
        model, evidence = pedigree_model(founders, children, rng, name)
        specs.append(Spec(name, "pedigree", model, evidence))
    if kind == "MMAP":
        for spec in specs:
            free = [v for v in range(spec.model.n_vars) if v not in spec.evidence]
            size = max(2, len(free) // 5)
            spec.query = sorted(int(v) for v in rng.choice(free, size=size, replace=False))
    return specs


# ----------------------------------------------------------------------------------------------
# reference builder


def build_reference(task, specs: list[Spec], ref_dir: Path, config: dict,
                    progress: Callable[[str], None] = print) -> list[dict]:
    """Write ref_dir/task.yaml, reference.json and models/, computing the exact (or best) answers and the
    trivial answers with their errors. Raises TrivialAnswerError when a trivial answer is
    invalid and TableTooLarge when an instance is too wide. Returns the records, which also
    hold the exact answers under keys starting with ``answer_`` (not written to reference.json)."""
    ref_dir = Path(ref_dir)
    models_dir = ref_dir / "models"
    if models_dir.exists():
        shutil.rmtree(models_dir)
    models_dir.mkdir(parents=True)
    limit = int(config.get("max_table_size", DEFAULT_MAX_TABLE_SIZE))
    ibound = int(config.get("trivial_ibound", trivial_solvers.DEFAULT_IBOUND))
    records = []
    for k, spec in enumerate(specs, 1):
        progress(f"[{k}/{len(specs)}] {task.name} {spec.id}: {spec.model.n_vars} variables, "
                 f"{spec.model.n_factors} factors")
        record = {"id": spec.id, "family": spec.family, **_solve(task.kind, spec, limit, ibound)}
        _write_instance(models_dir, spec)
        records.append(record)
    public = [{k: v for k, v in r.items() if not k.startswith("answer_")} for r in records]
    (ref_dir / "reference.json").write_text(dump_reference(task.name, public))
    task.write_task_yaml(ref_dir, config)
    return records


def _write_instance(models_dir: Path, spec: Spec) -> None:
    (models_dir / f"{spec.id}.uai").write_text(files.format_model(spec.model))
    (models_dir / f"{spec.id}.uai.evid").write_text(files.format_evidence(spec.evidence))
    if spec.query is not None and spec.mlc_test is None:
        (models_dir / f"{spec.id}.uai.query").write_text(files.format_query(spec.query))
    if spec.mlc_train is not None:
        (models_dir / f"{spec.id}.uai.data").write_text(files.format_mlc_data(spec.mlc_train, spec.model.n_vars))
        (models_dir / f"{spec.id}.uai.test").write_text(files.format_mlc_data(spec.mlc_test, spec.model.n_vars))


def _solve(kind: str, spec: Spec, limit: int, ibound: int) -> dict:
    model, ev = spec.model, spec.evidence
    width = bucket_elimination.induced_width(model, ev)
    out: dict = {"width": width}
    if kind == "PR":
        z = bucket_elimination.log10_partition(model, ev, limit)
        triv = trivial_solvers.trivial_pr(model, ev, ibound)
        if not (math.isfinite(z) and math.isfinite(triv)):
            raise TrivialAnswerError(f"{spec.id}: Z = 0 or an infinite trivial bound")
        out.update(log10_z=z, trivial_log10_z=triv, trivial_error=abs(z - triv), answer_exact=z)
    elif kind == "MAR":
        z, marg = bucket_elimination.partition_and_marginals(model, ev, limit)
        uniform = trivial_solvers.trivial_mar(model, ev)
        out.update(marginals=[[float(x) for x in p] for p in marg],
                   trivial_error=metrics.mean_hellinger(marg, uniform, ev), answer_exact=marg)
    elif kind == "MPE":
        best, x = bucket_elimination.mpe(model, ev, limit)
        tx = trivial_solvers.trivial_mpe(model, ev)
        tv = metrics.log10_likelihood(model, tx, ev)
        out.update(best_log10=best, best_assignment=[int(v) for v in x], trivial_log10=tv,
                   trivial_assignment=[int(v) for v in tx], trivial_error=best - tv, answer_exact=x,
                   answer_trivial=tx)
    elif kind == "MMAP":
        best, answer = bucket_elimination.mmap(model, spec.query, ev, limit)
        ta = trivial_solvers.trivial_mmap(model, spec.query, ev)
        tv = bucket_elimination.log10_mmap_value(model, ta, ev, limit)
        out.update(best_log10=best, best_answer={str(k): v for k, v in sorted(answer.items())},
                   trivial_log10=tv, trivial_answer={str(k): v for k, v in sorted(ta.items())},
                   trivial_error=best - tv, answer_exact=answer, answer_trivial=ta)
    elif kind == "MLC":
        tests = spec.mlc_test.evidence
        triv = trivial_solvers.trivial_mlc(model, spec.mlc_test.query_vars, spec.mlc_train.query, tests)
        lines, exact = [], []
        for ev_line, ta in zip(tests, triv):
            opt, answer = bucket_elimination.mmap(model, spec.mlc_test.query_vars, ev_line, limit)
            tv = bucket_elimination.log10_mmap_value(model, ta, ev_line, limit)
            lines.append({"optimum_log10": opt, "trivial_log10": tv, "trivial_error": opt - tv})
            exact.append(answer)
        out.update(lines=lines, answer_exact=exact, answer_trivial=triv)
    return out


# ----------------------------------------------------------------------------------------------
# sample submissions


def _answer_text(kind: str, answer) -> str:
    return {"PR": result_files.format_pr, "MAR": result_files.format_mar, "MPE": result_files.format_mpe,
            "MMAP": result_files.format_mmap, "MLC": result_files.format_mlc}[kind](answer)


def _trivial_answer(kind: str, spec: Spec, record: dict):
    if kind == "PR":
        return record["trivial_log10_z"]
    if kind == "MAR":
        return trivial_solvers.trivial_mar(spec.model, spec.evidence)
    return record["answer_trivial"]


def _perturbed_answer(kind: str, spec: Spec, record: dict):
    """An answer between the exact and the trivial one (scores strictly between 0 and 100 mostly)."""
    exact = record["answer_exact"]
    if kind == "PR":
        return exact + 0.3 * (record["trivial_log10_z"] - exact)
    if kind == "MAR":
        return [0.6 * np.asarray(p) + 0.4 * np.asarray(u) for p, u in
                zip(exact, trivial_solvers.trivial_mar(spec.model, spec.evidence))]
    if kind == "MPE":
        # Change the first free variable whose change keeps a non-zero likelihood.
        for v in range(spec.model.n_vars):
            if v in spec.evidence:
                continue
            x = np.array(exact)
            x[v] = (x[v] + 1) % spec.model.cards[v]
            if metrics.log10_likelihood(spec.model, x) > -math.inf:
                return x
        return exact
    if kind == "MMAP":
        q = min(exact)
        return {**exact, q: (exact[q] + 1) % int(spec.model.cards[q])}
    return [e if k % 2 == 0 else t for k, (e, t) in enumerate(zip(exact, record["answer_trivial"]))]


def _malformed_text(kind: str, spec: Spec, record: dict, k: int) -> str | None:
    """A different defect per instance; every one scores 0 with its reason (None: file left out). Made
    from the trivial answer, so the sample shows no exact answer."""
    good = _answer_text(kind, _trivial_answer(kind, spec, record))
    defects = [
        lambda: None,                                                  # missing file
        lambda: good.replace(kind, "XYZ", 1),                          # wrong task word
        lambda: good + "-BEGIN-\n",                                    # last block empty
        lambda: good.rstrip() + " 7\n",                                # wrong token count
        lambda: {"PR": lambda: "PR\nnan\n", "MAR": lambda: good.replace(" 0.", " -0.", 1),
                 "MPE": lambda: _evidence_mismatch(spec, record) or "MPE\n2 0\n",
                 "MMAP": lambda: "MMAP\n1 0 99\n", "MLC": lambda: "MLC\n-BEGIN-\nhello\n"}[kind](),
    ]
    return defects[k % len(defects)]()


def _evidence_mismatch(spec: Spec, record: dict) -> str | None:
    if not spec.evidence:
        return None
    x = np.array(record["answer_trivial"])
    v = min(spec.evidence)
    x[v] = (x[v] + 1) % spec.model.cards[v]
    return result_files.format_mpe(x)


def write_samples(task, specs: list[Spec], records: list[dict], samples_dir: Path, ref_dir: Path,
                  config: dict) -> None:
    """exact (the task's perfect submission) and perturbed are made from the answers (demo only:
    task.answer_samples); trivial, malformed, invalid_no_result_files and code_loopy_bp are not."""
    kind = task.kind
    if samples_dir.exists():
        shutil.rmtree(samples_dir)
    task.write_perfect_submission(ref_dir, samples_dir / "exact", config)
    makers = {
        "trivial": lambda s, r, k: _answer_text(kind, _trivial_answer(kind, s, r)),
        "perturbed": lambda s, r, k: _answer_text(kind, _perturbed_answer(kind, s, r)),
        "malformed": lambda s, r, k: _malformed_text(kind, s, r, k),
    }
    for sample, make in makers.items():
        folder = samples_dir / sample
        folder.mkdir(parents=True)
        for k, (spec, record) in enumerate(zip(specs, records)):
            text = make(spec, record, k)
            if text is not None:
                (folder / f"{spec.id}.uai.{kind}").write_text(text)
    # Structurally invalid: no file is named after an instance, so nothing can be scored (exit 1).
    folder = samples_dir / "invalid_no_result_files"
    folder.mkdir(parents=True)
    (folder / "answers.txt").write_text(_answer_text(kind, _trivial_answer(kind, specs[0], records[0])))
    code = samples_dir / "code_loopy_bp"
    code.mkdir(parents=True)
    (code / "solver.py").write_text((Path(__file__).parent / "lbp_solver.py").read_text())


def generate_task(task, root: Path, config: dict, progress: Callable[[str], None] = print,
                  seed: int | None = None) -> None:
    """Demo reference data, input data and sample submissions of one UAI task below root (from the demo's
    SEED, or from a private master seed)."""
    specs = demo_specs(task.kind, seed)
    ref_dir = root / "reference_data" / task.name
    records = build_reference(task, specs, ref_dir, config, progress)
    input_dir = root / "input_data" / task.name
    if input_dir.exists():
        shutil.rmtree(input_dir)
    input_dir.mkdir(parents=True)
    shutil.copytree(ref_dir / "models", input_dir / "models")
    task.write_task_yaml(input_dir, config)
    write_samples(task, specs, records, root / "sample_submissions" / task.name, ref_dir, config)
    progress(f"{task.name}: {len(specs)} instances, samples in {root / 'sample_submissions' / task.name}")


def specs_from_dir(task, models_dir: Path) -> list[Spec]:
    """Instances of a folder of ``.uai`` files with their ``.evid`` (and ``.query``, MLC ``.data``/
    ``.test``) files, for ``codascore build-reference uai.<task> MODELS_DIR OUT``."""
    specs = []
    for path in sorted(Path(models_dir).glob("*.uai")):
        model = files.read_model(path)
        evid = path.with_name(path.name + ".evid")
        evidence = files.read_evidence(evid, model) if evid.exists() else {}
        name = path.name[:-4]
        family = re.match(r"[A-Za-z]*", name).group(0).lower() or name  # Grids_29 -> grids, grid5x5_1 -> grid
        spec = Spec(name, family, model, evidence)
        if task.kind == "MMAP":
            spec.query = files.read_query(path.with_name(path.name + ".query"), model, evidence)
        if task.kind == "MLC":
            spec.mlc_train = files.parse_mlc_data(path.with_name(path.name + ".data").read_text(),
                                                    path.name + ".data", model, with_labels=True)
            spec.mlc_test = files.parse_mlc_data(path.with_name(path.name + ".test").read_text(),
                                                   path.name + ".test", model, with_labels=False)
            spec.query = spec.mlc_test.query_vars
        specs.append(spec)
    if not specs:
        raise FileNotFoundError(f"{models_dir}: no .uai files")
    return specs
