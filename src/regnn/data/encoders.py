"""Feature columns of every kind (regnn.data.column_kinds) as numbers a model reads, by scikit-learn's encoders,
fitted on the training nodes only and applied, never refitted, to every other node and to any graph a trained
model later predicts on (the fitted state is plain data: saved beside the model with its digest).

    number, boolean   the value as it is (a boolean as 0 or 1)
    category          one column per category of the training nodes (sklearn's OneHotEncoder, handle_unknown=
                      "ignore"), and <col>:unseen, 1 for a category the training nodes did not have
    text              TF-IDF over the training nodes' words (sklearn's TfidfVectorizer: every word they use, l2
                      rows), and <col>:unseen, the share of a cell's words the training nodes did not use; or
                      hashed (`encoding: hashed`): 1024 hashed word counts, l2 rows (HashingVectorizer, nothing
                      fitted, so no word is unseen)
    date              <col>:years, years since the training nodes' latest date (negative before it), and the
                      cyclic parts as sine and cosine: the position in the year and in the week, and in the day
                      where the training nodes' values have a time of day

An empty cell (a missing value) is filled with the training nodes' mean (a category or text: no category, no word)
and marked in <col>:missing, a column that exists where the training nodes had an empty cell; where they had
none, an empty cell elsewhere is filled the same way and counted as unseen. Every node whose own cells hold a value
the training nodes did not (a category, a word, an empty cell) is named per column in `unseen` (predictions.csv:
unseen_values).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from regnn.data.column_kinds import Column

HASHED_WIDTH = 1 << 10
DAY_US, YEAR_DAYS = 86_400_000_000, 365.2425


def _mean(v: np.ndarray, rows: np.ndarray) -> float:
    return float(v[rows].mean()) if len(rows) else 0.0


def fit(col: Column, rows: np.ndarray) -> dict:
    """The column's encoder fitted on `rows` (the training nodes), as plain data."""
    known = rows[~col.missing[rows]]
    state = {"name": col.name, "kind": col.kind, "encoding": col.encoding, "declared": col.declared}
    state["missing"] = bool(col.missing[rows].any())
    if col.kind in ("number", "boolean"):
        state["fill"] = _mean(col.values, known)
    elif col.kind == "category":
        from sklearn.preprocessing import OneHotEncoder

        cats = []  # no training node with a value: every value is unseen
        if len(known):
            enc = OneHotEncoder(handle_unknown="ignore").fit(col.values[known].reshape(-1, 1).astype(str))
            cats = [str(c) for c in enc.categories_[0]]
        state["categories"] = cats
    elif col.kind == "text" and col.encoding == "tfidf":
        from sklearn.feature_extraction.text import TfidfVectorizer

        try:
            v = TfidfVectorizer().fit(col.values[known])
        except ValueError:  # no word at all: nothing to learn from
            v = None
        state["vocabulary"] = [] if v is None else [str(w) for w in v.get_feature_names_out()]
        state["idf"] = [] if v is None else [float(x) for x in v.idf_]
    elif col.kind == "date":
        t = col.values[known]
        state["reference"] = int(t.max()) if len(t) else 0
        state["time"] = bool((t % DAY_US != 0).any())
        state["fill"] = [_mean(c, np.arange(len(t))) for c in _date_parts(t, state).T]
    return state


def _date_parts(t: np.ndarray, state: dict) -> np.ndarray:
    """(rows, parts): years since the reference, then sine and cosine of the year's, week's (and day's) cycle."""
    days = t // DAY_US
    when = t.astype("datetime64[us]")
    day_of_year = (when - when.astype("datetime64[Y]")).astype("timedelta64[us]").astype(np.int64) / DAY_US
    weekday = (days + 3) % 7  # 1970-01-01 was a Thursday: 0 is Monday
    parts = [(t - state["reference"]) / (YEAR_DAYS * DAY_US)]
    angles = [day_of_year / YEAR_DAYS, weekday / 7.0] + ([(t % DAY_US) / DAY_US] if state["time"] else [])
    for a in angles:
        parts += [np.sin(2 * np.pi * a), np.cos(2 * np.pi * a)]
    return np.stack(parts, axis=1).astype(np.float64)


def names(state: dict) -> list[str]:
    """The encoded columns' names, in order."""
    c, kind = state["name"], state["kind"]
    if kind in ("number", "boolean"):
        out = [c]
    elif kind == "category":
        out = [f"{c}={v}" for v in state["categories"]] + [f"{c}:unseen"]
    elif kind == "text" and state["encoding"] == "hashed":
        out = [f"{c}:hash{j}" for j in range(HASHED_WIDTH)]
    elif kind == "text":
        out = [f"{c}:{w}" for w in state["vocabulary"]] + [f"{c}:unseen"]
    else:
        cycles = ["year", "week"] + (["day"] if state["time"] else [])
        out = [f"{c}:years"] + [f"{c}:{k}_{f}" for k in cycles for f in ("sin", "cos")]
    return out + ([f"{c}:missing"] if state["missing"] else [])


def apply(col: Column, state: dict):
    """(the encoded columns: a float32 array or a scipy sparse matrix, which rows hold a value unseen in training)."""
    kind, missing = state["kind"], col.missing
    unseen = missing & (not state["missing"])
    if kind in ("number", "boolean"):
        x = np.where(missing, state["fill"], col.values).reshape(-1, 1)
    elif kind == "date":
        x = _date_parts(col.values, state)
        x[missing] = np.asarray(state["fill"])
    elif kind == "category":
        x, out = _one_hot(col.values, state["categories"], missing)
        unseen |= out
    elif state["encoding"] == "hashed":
        from sklearn.feature_extraction.text import HashingVectorizer

        x = HashingVectorizer(n_features=HASHED_WIDTH, alternate_sign=False).transform(col.values)
    else:
        x, share = _tfidf(col.values, state)
        unseen |= share > 0
    if state["missing"]:
        flag = missing.astype(np.float64).reshape(-1, 1)
        x = sp.hstack([x, sp.csr_matrix(flag)], format="csr") if sp.issparse(x) else np.hstack([x, flag])
    return (x.astype(np.float32) if sp.issparse(x) else np.asarray(x, dtype=np.float32)), unseen


def _one_hot(values: np.ndarray, categories: list[str], missing: np.ndarray):
    """(one column per category and the unseen bucket, which rows hold a category the training nodes lacked)."""
    import pandas as pd
    from sklearn.preprocessing import OneHotEncoder

    n = len(values)
    at = pd.Index(categories).get_indexer(values.astype(str))
    out = (at < 0) & ~missing
    if categories:
        enc = OneHotEncoder(categories=[categories], handle_unknown="ignore").fit(np.array([[categories[0]]]))
        known = enc.transform(values.astype(str).reshape(-1, 1)).tocsr()
    else:
        known = sp.csr_matrix((n, 0))
    bucket = sp.csr_matrix(out.astype(np.float64).reshape(-1, 1))
    return sp.hstack([known, bucket], format="csr"), out


def _tfidf(values: np.ndarray, state: dict):
    """(TF-IDF over the training vocabulary and the share of unseen words, that share per row)."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    vocab = state["vocabulary"]
    n = len(values)
    if vocab:
        v = TfidfVectorizer(vocabulary={w: i for i, w in enumerate(vocab)})
        v.idf_ = np.asarray(state["idf"], dtype=np.float64)
        x = v.transform(values).tocsr()
        analyse, known = v.build_analyzer(), set(vocab)
    else:
        x = sp.csr_matrix((n, 0))
        analyse, known = TfidfVectorizer().build_analyzer(), set()
    share = np.zeros(n)
    for i, text in enumerate(values):
        words = analyse(text) if text else []
        if words:
            share[i] = sum(w not in known for w in words) / len(words)
    return sp.hstack([x, sp.csr_matrix(share.reshape(-1, 1))], format="csr"), share
