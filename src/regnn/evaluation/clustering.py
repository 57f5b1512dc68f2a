"""Node clustering (Table 3): K-Means on the learned representations of the test nodes, NMI and ARI.

As in MAGNN and the RE-GNN scripts: K = number of classes, K-Means repeated `repeats` times with seeded
initialisations on each trained model; mean and std over the repeats, then over runs.
"""
from __future__ import annotations

import numpy as np
from sklearn.cluster import KMeans
from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score


def cluster_scores(embeddings: np.ndarray, labels: np.ndarray, num_classes: int, repeats: int = 10,
                   seed: int = 0) -> dict[str, float]:
    """NMI and ARI in percent (mean and std over `repeats` K-Means runs with seeds seed..seed+repeats-1)."""
    nmi, ari = [], []
    for r in range(repeats):
        pred = KMeans(n_clusters=num_classes, n_init=1, random_state=seed + r).fit_predict(embeddings)
        nmi.append(100.0 * normalized_mutual_info_score(labels, pred))
        ari.append(100.0 * adjusted_rand_score(labels, pred))
    return {"nmi": float(np.mean(nmi)), "nmi_std": float(np.std(nmi)),
            "ari": float(np.mean(ari)), "ari_std": float(np.std(ari))}
