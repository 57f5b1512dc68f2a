"""Node clustering (Table 3): K-Means on the learned representations of the test nodes, NMI and ARI.

As in MAGNN and the RE-GNN scripts: K = number of classes, K-Means repeated `repeats` times with seeded
initialisations on each trained model; mean and std over the repeats, then over runs. Each K-Means run keeps the
best (lowest inertia) of `n_init` k-means++ starts: the authors call `KMeans(n_clusters)` under scikit-learn 1.0.2,
whose default is 10 starts.
"""

from __future__ import annotations

import numpy as np
from sklearn.cluster import KMeans
from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score


def cluster_scores(
    embeddings: np.ndarray, labels: np.ndarray, num_classes: int, *, repeats: int, n_init: int, seed: int
) -> dict[str, float]:
    """NMI and ARI in percent (mean and std over `repeats` K-Means runs with seeds seed..seed+repeats-1, each the
    best of `n_init` starts), and the starts as `kmeans_starts` (a table names what its cells ran)."""
    nmi, ari = [], []
    for r in range(repeats):
        pred = KMeans(n_clusters=num_classes, n_init=n_init, random_state=seed + r).fit_predict(embeddings)
        nmi.append(100.0 * normalized_mutual_info_score(labels, pred))
        ari.append(100.0 * adjusted_rand_score(labels, pred))
    return {
        "nmi": float(np.mean(nmi)),
        "nmi_std": float(np.std(nmi)),
        "ari": float(np.mean(ari)),
        "ari_std": float(np.std(ari)),
        "kmeans_starts": n_init,
    }
