"""Sample code submission for the UAI tasks: loopy belief propagation (a participant's solver.py).

Self-contained (numpy only), called once per instance by the ingestion program:

    python solver.py --task PR --model M.uai --evid M.uai.evid [--query M.uai.query] [--test M.uai.test]
                     --result OUT.PR

(the same paths are also in the environment variables MODEL, EVID, QUERY, RESULT, as in 2022).

PR: Bethe approximation of log Z after sum-product LBP; MAR: LBP beliefs; MPE: max-product LBP
decoding followed by greedy coordinate ascent (ICM); MMAP and MLC: argmax of the LBP marginals of
the query variables. It writes an anytime answer first, then a better one after a new -BEGIN-.
"""

import argparse
import math
import os
import time

import numpy as np


def read_tokens(path):
    with open(path) as handle:
        return [t for line in handle if not line.lstrip().startswith("c") for t in line.split()]


def read_model(path):
    t = read_tokens(path)
    n = int(t[1])
    cards = [int(x) for x in t[2:2 + n]]
    m = int(t[2 + n])
    pos, scopes = 3 + n, []
    for _ in range(m):
        k = int(t[pos])
        scopes.append([int(x) for x in t[pos + 1:pos + 1 + k]])
        pos += 1 + k
    values = np.array(t[pos:], dtype=float)
    tables, pos = [], 0
    for s in scopes:
        count = int(values[pos])
        tables.append(values[pos + 1:pos + 1 + count].reshape([cards[v] for v in s]))
        pos += 1 + count
    return cards, scopes, tables


def read_pairs(tokens):
    k = int(tokens[0])
    return {int(tokens[1 + 2 * i]): int(tokens[2 + 2 * i]) for i in range(k)}


def read_evidence(path):
    if not path or not os.path.exists(path):
        return {}
    t = read_tokens(path)
    if not t:
        return {}
    if len(t) != 1 + 2 * int(t[0]):
        t = t[1:]
    return read_pairs(t)


def clamp(cards, scopes, tables, evidence):
    """Factors with the evidence sliced out; constant factors folded into log10 of a constant."""
    out, const = [], 0.0
    for s, table in zip(scopes, tables):
        index = tuple(evidence.get(v, slice(None)) for v in s)
        table = table[index]
        s = [v for v in s if v not in evidence]
        peak = float(table.max()) if table.size else 0.0
        if peak <= 0:
            return [], -math.inf
        const += math.log10(peak)
        if s:
            out.append((s, table / peak))
    return out, const


def lbp(cards, factors, mode="sum", iterations=200, damping=0.5, deadline=None):
    """Loopy BP on the factor graph; returns (variable beliefs, factor beliefs)."""
    msg_fv = {(f, v): np.ones(cards[v]) / cards[v] for f, (s, _) in enumerate(factors) for v in s}
    by_var = {}
    for f, (s, _) in enumerate(factors):
        for v in s:
            by_var.setdefault(v, []).append(f)

    def var_to_factor(v, f):
        out = np.ones(cards[v])
        for g in by_var[v]:
            if g != f:
                out = out * msg_fv[(g, v)]
        return out / out.sum() if out.sum() > 0 else np.ones(cards[v]) / cards[v]

    for _ in range(iterations):
        if deadline and time.time() > deadline:
            break
        delta = 0.0
        for f, (s, table) in enumerate(factors):
            incoming = [var_to_factor(v, f) for v in s]
            for i, v in enumerate(s):
                prod = table
                for j, m in enumerate(incoming):
                    if j != i:
                        shape = [1] * len(s)
                        shape[j] = len(m)
                        prod = prod * m.reshape(shape)
                axes = tuple(j for j in range(len(s)) if j != i)
                new = prod.max(axis=axes) if mode == "max" and axes else prod.sum(axis=axes) if axes else prod
                total = new.sum()
                new = new / total if total > 0 else np.ones(cards[v]) / cards[v]
                new = damping * msg_fv[(f, v)] + (1 - damping) * new
                delta = max(delta, float(np.abs(new - msg_fv[(f, v)]).max()))
                msg_fv[(f, v)] = new
        if delta < 1e-8:
            break
    beliefs = {}
    for v in by_var:
        b = np.ones(cards[v])
        for f in by_var[v]:
            b = b * msg_fv[(f, v)]
        beliefs[v] = b / b.sum() if b.sum() > 0 else np.ones(cards[v]) / cards[v]
    factor_beliefs = []
    for f, (s, table) in enumerate(factors):
        prod = table
        for j, v in enumerate(s):
            shape = [1] * len(s)
            shape[j] = cards[v]
            prod = prod * var_to_factor(v, f).reshape(shape)
        factor_beliefs.append(prod / prod.sum() if prod.sum() > 0 else prod)
    return beliefs, factor_beliefs, by_var


def bethe_log10_z(cards, factors, beliefs, factor_beliefs, by_var):
    """log Z_Bethe = sum_f [E_bf ln f - sum bf ln bf] + sum_v (d_v - 1) sum bv ln bv, in log10."""
    total = 0.0
    for (s, table), bf in zip(factors, factor_beliefs):
        mask = bf > 0
        total += float(np.sum(bf[mask] * (np.log(table[mask]) - np.log(bf[mask]))))
    for v, b in beliefs.items():
        mask = b > 0
        total += (len(by_var[v]) - 1) * float(np.sum(b[mask] * np.log(b[mask])))
    return total / math.log(10)


def log10_likelihood(scopes, tables, x):
    total = 0.0
    for s, table in zip(scopes, tables):
        value = table[tuple(x[v] for v in s)]
        if value <= 0:
            return -math.inf
        total += math.log10(value)
    return total


def icm(cards, scopes, tables, x, free, deadline):
    current = log10_likelihood(scopes, tables, x)
    improved = True
    while improved and time.time() < deadline:
        improved = False
        for v in free:
            keep = x[v]
            for val in range(cards[v]):
                x[v] = val
                value = log10_likelihood(scopes, tables, x)
                if value > current + 1e-12:
                    current, keep, improved = value, val, True
            x[v] = keep
    return x


def marginals_given(cards, scopes, tables, evidence, deadline):
    factors, const = clamp(cards, scopes, tables, evidence)
    beliefs, fb, by_var = lbp(cards, factors, deadline=deadline)
    out = []
    for v, card in enumerate(cards):
        if v in evidence:
            p = np.zeros(card)
            p[evidence[v]] = 1.0
        else:
            p = beliefs.get(v, np.ones(card) / card)
        out.append(p)
    return out, factors, const, beliefs, fb, by_var


def pairs(answer):
    return " ".join(str(x) for x in [len(answer)] + [y for v in sorted(answer) for y in (v, answer[v])])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--task", default=os.environ.get("TASK"))
    parser.add_argument("--model", default=os.environ.get("MODEL"))
    parser.add_argument("--evid", default=os.environ.get("EVID"))
    parser.add_argument("--query", default=os.environ.get("QUERY"))
    parser.add_argument("--test", default=os.environ.get("TEST"))
    parser.add_argument("--result", default=os.environ.get("RESULT"))
    parser.add_argument("--time-limit", type=float, default=float(os.environ.get("TIMESEC", 20)))
    args = parser.parse_args()
    deadline = time.time() + 0.6 * args.time_limit
    cards, scopes, tables = read_model(args.model)
    evidence = read_evidence(args.evid)
    out = open(args.result, "w")
    out.write(args.task + "\n")
    if args.task == "PR":
        marg, factors, const, beliefs, fb, by_var = marginals_given(cards, scopes, tables, evidence, deadline)
        free = [v for v in range(len(cards)) if v not in evidence and v not in by_var]
        value = const + bethe_log10_z(cards, factors, beliefs, fb, by_var) + sum(math.log10(cards[v]) for v in free)
        out.write(f"-BEGIN-\n{value!r}\n")
    elif args.task == "MAR":
        marg = marginals_given(cards, scopes, tables, evidence, deadline)[0]
        body = " ".join([str(len(cards))] + [" ".join([str(len(p))] + [repr(float(x)) for x in p]) for p in marg])
        out.write(f"-BEGIN-\n{body}\n")
    elif args.task == "MPE":
        factors, _ = clamp(cards, scopes, tables, evidence)
        beliefs = lbp(cards, factors, mode="max", deadline=deadline)[0]
        x = [evidence.get(v, int(np.argmax(beliefs[v])) if v in beliefs else 0) for v in range(len(cards))]
        out.write("-BEGIN-\n" + " ".join(str(v) for v in [len(x), *x]) + "\n")
        free = [v for v in range(len(cards)) if v not in evidence]
        x = icm(cards, scopes, tables, x, free, time.time() + 0.3 * args.time_limit)
        out.write("-BEGIN-\n" + " ".join(str(v) for v in [len(x), *x]) + "\n")
    elif args.task == "MMAP":
        query = [int(t) for t in read_tokens(args.query)[1:]]
        marg = marginals_given(cards, scopes, tables, evidence, deadline)[0]
        out.write("-BEGIN-\n" + pairs({q: int(np.argmax(marg[q])) for q in query}) + "\n")
    elif args.task == "MLC":
        lines = [line.split() for line in open(args.test) if line.strip()]
        query = [int(t) for t in lines[2][1:]]
        answers = []
        for tokens in lines[5:]:
            # pairs only (the official layout) have an even count; the older layout puts k in front
            ev = read_pairs([len(tokens) // 2, *tokens] if len(tokens) % 2 == 0 else tokens)
            marg = marginals_given(cards, scopes, tables, ev, deadline)[0]
            answers.append(pairs({q: int(np.argmax(marg[q])) for q in query}))
        out.write("-BEGIN-\n" + "\n".join(answers) + "\n")
    out.close()


if __name__ == "__main__":
    main()
