"""Retrieval and clustering metrics (Recall@K, NMI/NMI+, pairwise F1, MAP@R, linear probe).

All take ``[N, d]`` embeddings and ``[N]`` integer labels, as torch tensors or numpy arrays, and use the Euclidean
distance on the embeddings *as given* (normalise them first if the method works on the sphere). Nearest neighbours
are found chunk by chunk, so that N x N distances are never held in memory at once (60,000 x 128 embeddings need
``chunk`` x N floats at a time), on the embeddings' device, or on ``device`` where a function takes one: the N^2 d
of raw photographs (CUB's 5,924 test images of 150,528 values) takes minutes on Colab's two CPUs and seconds on its
GPU. Values are fractions in [0, 1].
"""

import numpy as np
import torch
from sklearn.cluster import KMeans
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import normalized_mutual_info_score, recall_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from ._checks import check_embeddings
from .distances import pairwise_sq_distances


def nearest_neighbours(embeddings: torch.Tensor, k: int, chunk: int = 1024) -> torch.Tensor:
    """Indices ``[N, k]`` of each sample's k nearest *other* samples (leave-one-out), nearest first."""
    n = len(embeddings)
    if not 1 <= k < n:
        raise ValueError(f"k must be between 1 and N-1 = {n - 1}, got {k}")
    out = []
    for start in range(0, n, chunk):
        d2 = pairwise_sq_distances(embeddings[start : start + chunk], embeddings)
        rows = torch.arange(len(d2), device=d2.device)
        d2[rows, rows + start] = float("inf")  # the query is never its own neighbour
        out.append(d2.topk(k, dim=1, largest=False).indices)
    return torch.cat(out)


def _placed(embeddings, labels, device, min_samples: int = 2):
    """The checked embeddings and labels as tensors on ``device`` (``None``: where the embeddings are)."""
    z, y = check_embeddings(embeddings, labels, min_samples=min_samples)
    return (z, y) if device is None else (z.to(device), y.to(device))


def recall_at_k(embeddings, labels, ks=(1, 2, 4, 8), chunk: int = 1024, device=None) -> dict[int, float]:
    """Recall@K of retrieval papers: the fraction of queries with at least one same-class sample among their K
    nearest neighbours (the query itself excluded). Used by every chapter (e.g. ECAML Tables 4-5, EPS Table 2).
    The neighbours are searched on ``device`` (default: where the embeddings are)."""
    z, y = _placed(embeddings, labels, device)
    return _recall(z, y, ks, chunk)


def _recall(z: torch.Tensor, y: torch.Tensor, ks, chunk: int) -> dict[int, float]:
    """:func:`recall_at_k` on checked tensors, on their device."""
    ks = sorted({int(k) for k in ks})
    if not ks or ks[0] < 1:
        raise ValueError(f"ks must be positive integers, got {ks}")
    nn_idx = nearest_neighbours(z, min(ks[-1], len(z) - 1), chunk)
    hit = (y[nn_idx] == y[:, None]).cumsum(1) > 0
    return {k: hit[:, min(k, hit.shape[1]) - 1].float().mean().item() for k in ks}


#: The Recall@K that retrieval papers report per dataset: K = 1, 10, 100, 1000 on Stanford Online Products (11,316
#: test classes of about 5 images), K = 1, 2, 4, 8 elsewhere (Oh Song et al. 2016's convention, kept by every paper).
RECALL_KS = {"sop": (1, 10, 100, 1000)}


def recall_ks(dataset: str) -> tuple[int, ...]:
    """The Ks of Recall@K reported for ``dataset`` (:data:`RECALL_KS`; 1, 2, 4, 8 by default)."""
    return RECALL_KS.get(dataset, (1, 2, 4, 8))


KMEANS_INIT = 10  # k-means restarts (k-means++ seeding), the lowest inertia kept: one start added its own noise to NMI
KMEANS_TOL = 1e-4  # scikit-learn's default: the centres' squared shift, relative to the mean variance per dimension


def _kmeans(z: torch.Tensor, n_clusters: int, seed: int) -> np.ndarray:
    """Cluster labels from scikit-learn's k-means, best of :data:`KMEANS_INIT` starts (as scikit-learn's former
    default, and the CBSwR authors' evaluation), so that NMI and F1 vary with the embedding, not with one start.
    With more dimensions than points (raw photographs: 150,528 pixel values for CUB's 5,924 test images) the points
    are clustered in :func:`span_coordinates`: the same k-means at N/d of its cost and memory, after one Gram matrix
    (N^2 d multiply-adds). Every point and every centre (a mean of points) lies in the span of the points, whose
    orthonormal coordinates keep every distance; the stopping tolerance, relative to the mean variance per
    dimension, is rescaled to match (benchmarks/bench_kmeans_wide.py)."""
    n, d = z.shape
    if d <= n:
        return KMeans(n_clusters=n_clusters, n_init=KMEANS_INIT, tol=KMEANS_TOL, random_state=seed).fit_predict(
            z.detach().cpu().double().numpy())
    x = span_coordinates(z)
    return KMeans(n_clusters=n_clusters, n_init=KMEANS_INIT, tol=KMEANS_TOL * x.shape[1] / d,
                  random_state=seed).fit_predict(x)


def span_coordinates(z, chunk: int = 8192) -> np.ndarray:
    """The ``[N, d]`` points as ``[N, N]`` coordinates (float64) in an orthonormal basis of the span of the points:
    every distance and inner product kept. From the Gram matrix ``G = z z^T`` (summed over chunks of ``chunk``
    dimensions in float64, so that no float64 copy of ``z`` is held) and its eigendecomposition ``G = U diag(l)
    U^T``: the coordinates ``U diag(sqrt(l))``, eigenvalues below 0 (rounding) set to 0."""
    z = torch.as_tensor(z).detach()  # the Gram matrix on z's device (a GPU's, where evaluate was given one)
    gram = torch.zeros(len(z), len(z), dtype=torch.float64, device=z.device)
    for start in range(0, z.shape[1], chunk):
        part = z[:, start : start + chunk].double()
        gram += part @ part.T
    values, vectors = torch.linalg.eigh(gram.cpu())
    return (vectors * values.clamp(min=0).sqrt()).numpy()


def _n_clusters(y: torch.Tensor, n_clusters: int | None) -> int:
    k = len(torch.unique(y)) if n_clusters is None else int(n_clusters)
    if not 1 <= k <= len(y):
        raise ValueError(f"n_clusters must be between 1 and the number of samples {len(y)}, got {k}")
    return k


def nmi(embeddings, labels, n_clusters: int | None = None, seed: int = 0, device=None) -> float:
    """Normalised mutual information between k-means clusters of the embeddings and the labels.

    ``n_clusters`` defaults to the number of distinct labels; a larger value gives the NMI+ of the EPS paper
    (section 5.2), which does not punish a class that is spread over several modes. With more dimensions than
    points the Gram matrix of :func:`span_coordinates` is computed on ``device`` (default: the embeddings')."""
    z, y = _placed(embeddings, labels, device)
    pred = _kmeans(z, _n_clusters(y, n_clusters), seed)
    return float(normalized_mutual_info_score(y.cpu().numpy(), pred))


def pairwise_f1(pred: np.ndarray, truth: np.ndarray) -> float:
    """Pairwise F1 of a clustering (Oh Song et al. 2017): precision and recall over sample pairs that share a
    cluster / a class, counted from the contingency table (no N x N matrix)."""
    _, pred = np.unique(pred, return_inverse=True)
    _, truth = np.unique(truth, return_inverse=True)
    table = np.zeros((pred.max() + 1, truth.max() + 1), dtype=np.int64)
    np.add.at(table, (pred, truth), 1)
    pairs = lambda n: (n * (n - 1) // 2).sum()
    tp, same_cluster, same_class = pairs(table), pairs(table.sum(1)), pairs(table.sum(0))
    if tp == 0:
        return 0.0
    precision, recall = tp / same_cluster, tp / same_class
    return float(2 * precision * recall / (precision + recall))


def f1_clustering(embeddings, labels, n_clusters: int | None = None, seed: int = 0) -> float:
    """Pairwise clustering F1 of k-means clusters (Oh Song et al.; ECAML Tables 4-5)."""
    z, y = check_embeddings(embeddings, labels, min_samples=2)
    return pairwise_f1(_kmeans(z, _n_clusters(y, n_clusters), seed), y.cpu().numpy())


def map_at_r(embeddings, labels, chunk: int = 1024, device=None) -> float:
    """MAP@R of Musgrave et al. (2020): for a query with R other samples of its class, the mean over its R nearest
    neighbours of precision@i at the ranks i that are hits. Queries alone in their class (R = 0) are skipped.
    The neighbours are searched on ``device`` (default: where the embeddings are)."""
    z, y = check_embeddings(embeddings, labels, min_samples=2)
    _, inverse, counts = torch.unique(y, return_inverse=True, return_counts=True)
    r = counts[inverse] - 1
    largest = int(r.max())
    if largest == 0:
        raise ValueError("MAP@R needs at least one class with two or more samples")
    if device is not None:
        z, y, r = z.to(device), y.to(device), r.to(device)
    hits = (y[nearest_neighbours(z, largest, chunk)] == y[:, None]).double()
    ranks = torch.arange(1, hits.shape[1] + 1, device=hits.device, dtype=torch.double)
    within_r = ranks[None, :] <= r[:, None]
    precision = hits.cumsum(1) / ranks
    ap = (precision * hits * within_r).sum(1) / r.clamp_min(1)
    return ap[r > 0].mean().item()


def linear_probe(train_embeddings, train_labels, test_embeddings, seed: int = 0) -> np.ndarray:
    """The test labels predicted by a logistic regression fitted on standardised train embeddings: the DCDL
    paper's evaluation of an embedding under label noise (train labels may be noisy)."""
    zt, yt = check_embeddings(train_embeddings, train_labels, min_samples=2)
    ze = check_embeddings(test_embeddings)
    if zt.shape[1] != ze.shape[1]:
        raise ValueError(f"train and test embeddings differ in dimension: {zt.shape[1]} vs {ze.shape[1]}")
    clf = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000, random_state=seed))
    clf.fit(zt.detach().cpu().numpy(), yt.cpu().numpy())
    return clf.predict(ze.detach().cpu().numpy())


def per_class_accuracy(labels, predicted) -> dict:
    """``{class: fraction of its samples predicted as it}`` (scikit-learn's per-class recall), for every class
    in ``labels``."""
    labels, predicted = np.asarray(labels), np.asarray(predicted)
    if labels.shape != predicted.shape or labels.ndim != 1 or labels.size == 0:
        raise ValueError(f"labels and predictions must be two [N] arrays, got {labels.shape} and {predicted.shape}")
    classes = np.unique(labels)
    return dict(zip(classes.tolist(), recall_score(labels, predicted, labels=classes, average=None,
                                                   zero_division=0).tolist(), strict=True))


def centroid_cosines(embeddings, labels) -> tuple[np.ndarray, np.ndarray]:
    """``(classes, C)``: the sorted classes and the ``[K, K]`` cosine similarities of their centroids (the mean
    embedding of each class)."""
    z, y = check_embeddings(embeddings, labels)
    classes = torch.unique(y)
    centroids = torch.stack([z[y == c].double().mean(0) for c in classes])
    unit = torch.nn.functional.normalize(centroids, dim=1)
    return classes.cpu().numpy(), (unit @ unit.T).cpu().numpy()


def within_class_spread(embeddings, labels) -> float:
    """How far a class's embeddings lie from their centre: ``||z_i - mean of z's class||`` averaged over the samples
    (a class of one sample adds 0). DCDL's chapter reads it per epoch beside its terms' pulls (issue #48)."""
    z, y = check_embeddings(embeddings, labels)
    z = z.double()
    _, inverse = torch.unique(y, return_inverse=True)
    sums = torch.zeros(int(inverse.max()) + 1, z.shape[1], dtype=z.dtype, device=z.device).index_add_(0, inverse, z)
    counts = torch.bincount(inverse).to(z.dtype)
    return float((z - (sums / counts[:, None])[inverse]).norm(dim=1).mean())


def linear_probe_accuracy(train_embeddings, train_labels, test_embeddings, test_labels, seed: int = 0) -> float:
    """Accuracy of :func:`linear_probe` on the test labels (clean, while the train labels may be noisy)."""
    ze, ye = check_embeddings(test_embeddings, test_labels)
    predicted = linear_probe(train_embeddings, train_labels, ze, seed)
    return float(np.mean(predicted == ye.cpu().numpy()))


def clustered_subset(z, labels, classes: int | None):
    """The embeddings that NMI and F1 cluster: all of them, or with ``classes`` (a profile's ``cluster_classes``)
    those of the first ``classes`` classes in label order, the same for every seed and method. k-means into 1,000
    clusters over the glyph test bed's 22,000 unseen images takes minutes per run on 2 cores; 100 classes (CUB's
    test split has 100) takes about a second. Recall@K always uses every sample."""
    if classes is None:
        return z, labels
    labels = np.asarray(labels)
    keep = np.isin(labels, np.unique(labels)[:int(classes)])
    return z[torch.as_tensor(keep, device=z.device) if torch.is_tensor(z) else keep], labels[keep]


def evaluate(embeddings, labels, ks=(1, 2, 4, 8), seed: int = 0, cluster_classes: int | None = None,
             f1: bool = False, device=None) -> dict[str, float]:
    """Recall@K and NMI in one dictionary (keys ``R@1``, ..., ``NMI``, and ``F1`` with ``f1``): the default report
    of a chapter. NMI and F1 read one k-means of :func:`clustered_subset` (every class unless ``cluster_classes``
    is given): the clusters :func:`nmi` and :func:`f1_clustering` would each compute, computed once. The
    distances (the neighbours; the Gram matrix of :func:`span_coordinates` where d > N) are computed on ``device``
    (default: where the embeddings are); k-means itself runs on the CPU."""
    z, y = _placed(embeddings, labels, device)  # moved once: CUB's raw pixels are 3.6 GB
    out = {f"R@{k}": v for k, v in _recall(z, y, ks, chunk=1024).items()}
    z, y = check_embeddings(*clustered_subset(z, y.cpu().numpy(), cluster_classes), min_samples=2)
    pred, truth = _kmeans(z, _n_clusters(y, None), seed), y.cpu().numpy()
    out["NMI"] = float(normalized_mutual_info_score(truth, pred))
    if f1:
        out["F1"] = pairwise_f1(pred, truth)
    return out


def spectral_decay(embeddings, skip: int = 1) -> float:
    """Roth et al. 2020's rho: how far the embedding's singular-value spectrum is from flat, as
    KL(U || s) = sum_i (1/n) log((1/n) / s_i), with s the singular values of the ``[N, d]`` embedding matrix
    (taken as given, not centred, as in the authors' ``rho_spectrum``), sorted, the ``skip`` largest left out
    (the authors' ``rho_spectrum@k`` leaves out k - 1; the first carries the embeddings' common mean direction
    on the sphere) and divided by their sum, and U uniform over the n that remain. 0: every direction used
    alike; large: a few directions carry the embedding (low diversity of features)."""
    z = check_embeddings(embeddings).detach().double()
    s = torch.linalg.svdvals(z).numpy()[skip:]
    if len(s) < 2 or s.sum() <= 0:
        raise ValueError(f"need at least 2 singular values after skipping {skip}, from shape {tuple(z.shape)}")
    s = np.maximum(s / s.sum(), 1e-300)
    return float(np.mean(np.log((1 / len(s)) / s)))


def retrieval_rows(rows: dict, labels, ks=(1, 2, 4, 8), seed: int = 0) -> dict:
    """A retrieval table ``{row: {measure: [one per embedding]}}``: :func:`evaluate` (Recall@K for ``ks``, NMI
    with ``seed``'s k-means) of each embedding of each row (``rows``: ``{row: [embeddings, ...]}``, e.g. one per
    seed), all of the same samples, labelled ``labels``."""
    table = {}
    for row, embeddings in rows.items():
        table[row] = {}
        for z in embeddings:
            for k, v in evaluate(z, labels, ks=ks, seed=seed).items():
                table[row].setdefault(k, []).append(v)
    return table
