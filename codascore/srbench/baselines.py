"""Baseline methods written as model strings: the reference pool and the sample submissions."""

from __future__ import annotations

import numpy as np


def _number(value: float) -> str:
    return f"{float(value):.6g}"


def linear_model(feature_names: list[str], X: np.ndarray, y: np.ndarray) -> str:
    """Ordinary least squares (scikit-learn LinearRegression) written as ``b + w1*x1 + ...``."""
    from sklearn.linear_model import LinearRegression

    fit = LinearRegression().fit(X, y)
    terms = [_number(fit.intercept_)] + [f"{_number(w)}*{name}" for w, name in zip(fit.coef_, feature_names)]
    return " + ".join(terms)


def constant_model(y: np.ndarray) -> str:
    """The training mean: the best constant model."""
    return _number(np.mean(y))


def polynomial_model(feature_names: list[str], X: np.ndarray, y: np.ndarray, degree: int = 2,
                     max_features: int = 5) -> str:
    """Least-squares polynomial of ``degree`` in the ``max_features`` columns most correlated with y."""
    from sklearn.linear_model import LinearRegression
    from sklearn.preprocessing import PolynomialFeatures

    with np.errstate(all="ignore"):
        corr = np.nan_to_num([abs(np.corrcoef(X[:, j], y)[0, 1]) for j in range(X.shape[1])])
    chosen = sorted(np.argsort(-corr, kind="stable")[:max_features])
    poly = PolynomialFeatures(degree, include_bias=False)
    fit = LinearRegression().fit(poly.fit_transform(X[:, chosen]), y)
    terms = [_number(fit.intercept_)]
    for w, powers in zip(fit.coef_, poly.powers_):
        factors = [feature_names[chosen[j]] + (f"**{p}" if p > 1 else "") for j, p in enumerate(powers) if p]
        terms.append("*".join([_number(w), *factors]))
    return " + ".join(terms)


#: Model strings a scorer must refuse without running anything (the invalid_injection sample and tests).
INJECTION_CORPUS = (
    "__import__('os').system('touch SENTINEL')",
    "__import__(\"os\").system(\"touch SENTINEL\")",
    "eval(\"__import__('os').system('touch SENTINEL')\")",
    "exec('import os')",
    "x1.__class__.__base__.__subclasses__()",
    "x1.__class__",
    "().__class__.__bases__[0].__subclasses__()",
    "(lambda: __import__('os').system('touch SENTINEL'))()",
    "lambda x: x",
    "[x1 for x1 in range(10)]",
    "{x1: 1}",
    "(x1 for x1 in (1, 2))",
    "open('SENTINEL', 'w').write('x')",
    "getattr(x1, '__class__')",
    "globals()",
    "locals()['x1']",
    "vars()",
    "compile('1', 'f', 'eval')",
    "Symbol('SENTINEL')",
    "sympify('x1')",
    "parse_expr('x1')",
    "Function('f')(x1)",
    "Integral(x1, x1)",
    "x1 if x1 else x2",
    "x1 and x2",
    "not x1",
    "x1 < x2",
    "x1 == x2",
    "x1 % 2",
    "x1 // 2",
    "x1 ^ 2",
    "x1 @ x2",
    "~x1",
    "x1 | x2",
    "x1 << 2",
    "x1; import os",
    "x1\nimport os",
    "'x1'",
    "b'x1'",
    "f'{x1}'",
    "x1[0]",
    "sin(x=x1)",
    "sin(*[x1])",
    "_x1 + 1",
    "__builtins__",
    "x1.real",
    "1j*x1",
    "0x1F*x1",
    "1_000*x1",
    "True*x1",
    "None",
    "...",
    "x1 := 3",
    "await x1",
    "yield x1",
    "foo(x1)",
    "print(x1)",
    "Symbol('x1').__class__.__base__",
    "Float('1.5', precision=53).__class__",
    "Symbol('x1')(Symbol('x2'))",
    "Symbol('x1', **{'real': True})",
    "Symbol('x1\\x27)')",
    "Add(Symbol('x1'), Function('eval')(Symbol('x1')))",
    "Lambda(Symbol('x1'), Symbol('x1'))(1)",
    "Float('1.5', precision=__import__('os').system('touch SENTINEL'))",
    "Piecewise((x1, x1 < 0), (__import__('os').system('touch SENTINEL'), True))",
    "Piecewise((x1, Symbol('x1').__eq__(x1)), (1, True))",
    "pow(x1, 2, __import__('os'))",
    "Piecewise((" * 60 + "x1" + ", true))" * 60,
    "exp",
    "10**10**10",
    "2**2**2**2**2**2",
    "x1" + "+x1" * 5000,
    "(" * 300 + "x1" + ")" * 300,
    "-" * 3000 + "x1",
    "sin(" * 150 + "x1" + ")" * 150,
    "x1 + \u0430",
)
