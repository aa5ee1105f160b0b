"""Run profiles: each chapter's settings (:mod:`dml_tutorial.settings`, typed and frozen) at every scale it runs.

- ``smoke``: CPU, offline data (scikit-learn's digits, MNIST-1D), about 90 s on 2 cores; what CI executes.
- ``fashion``: real data every machine can have (Fashion-MNIST, :func:`dml_tutorial.data.fashion_mnist`), five
  seeds, an MLP on 2 CPU cores; for ``dml-tutorial sweep data/sweeps/<chapter>-fashion.yaml``.
- ``glyphs`` (test bed I, an MLP from scratch, kept for the record) and ``glyphs2`` (test bed II, the papers'
  regime on a CPU: unseen characters in unseen faces, ``models.GlyphNet``, a pretrained start): the glyph test
  beds, ten seeds a chapter through ``data/sweeps/<chapter>-glyphs2.yaml``.
- ``colab``: the paper's own dataset and backbone, one seed, each chapter's central comparison only, sized for
  "Runtime > Run all" on a free Colab T4 (an estimate, :data:`T4_ESTIMATE`; the chapter's plan cell measures the
  reader's device).
- ``full``: the paper's protocol, or the closest that runs on one GPU: hours to days per chapter, for
  ``dml-tutorial sweep data/sweeps/<chapter>.yaml``.

``PROFILE = "auto"`` in a notebook means ``colab`` when a CUDA GPU is present and ``smoke`` otherwise.

Every profile is written as its **differences** from the defaults of the chapter's settings type: a named base
that the scale shares (:data:`SMOKE`, :data:`FASHION`, :data:`GLYPHS`, :data:`GLYPHS2`, :data:`GPU`) and the
chapter's own changes. No profile is built from another, so that an edit of the smoke profile (CI's speed) cannot
change a profile whose runs decide verdicts (``tests/test_profiles.py`` pins the test beds to their committed runs).
Why each test-bed profile holds what it holds, and what it held before, is written in the head of its sweep file
(``data/sweeps/<chapter>-<profile>.yaml``) and in the CHANGELOG.
"""

from __future__ import annotations

import os
import sys
from typing import NamedTuple

from . import __version__
from .settings import TYPES, Settings

PROFILE_NAMES = ("smoke", "fashion", "glyphs", "glyphs2", "colab", "full")

# --- the named bases: what every chapter's profile at one scale shares ---------------------------------------------
#: The CPU smoke runs: offline data, small models, three seeds on 2 threads (the settings types' defaults).
SMOKE: dict = {}
#: The seen classes of the smoke runs' class-disjoint splits (digits and MNIST-1D: 0-5 seen, 6-9 unseen).
SMOKE_SEEN = (0, 1, 2, 3, 4, 5)
#: The class-disjoint Fashion-MNIST split (data.FASHION_MNIST_SEEN): trousers, dresses, sandals, sneakers and ankle
#: boots seen; T-shirts, pullovers, coats, shirts and bags retrieved (raw pixels' weakest side: cosine R@1 77.0%).
FASHION_SEEN = (1, 3, 5, 7, 9)
#: Fashion-MNIST: 28 x 28 images, an MLP (784-64-64, then the embedding), five seeds on 2 threads.
FASHION = {"dataset": "fashion_mnist", "model": "mlp", "dim": 64, "n_seeds": 5, "threads": 2}
#: Test bed I: 1,500 CJK characters from 11 faces (data.glyphs), an MLP of 1,024-512-512-64 from scratch, five seeds.
#: NMI and F1 cluster the first 100 unseen characters (metrics.clustered_subset).
GLYPHS = {"dataset": "glyphs", "model": "mlp", "hidden": 512, "dim": 64, "n_seeds": 5, "threads": 2,
          "cluster_classes": 100}
#: Test bed II (benchmarks/bench_testbed.py): unseen characters in unseen faces (3 of the 11 faces test, the
#: others train), the small ConvNet (models.GlyphNet), fine-tuned from a start softmax-pretrained on 2,000 other
#: characters; one seed a run, ten runs a sweep. Each seed draws its own class split, its own 3 unseen faces and
#: its own start (pretrain.STARTS["glyphs2-seeded"], made without that seed's unseen faces): issue #86, so that the
#: seeds' spread measures the claim over splits, faces and starts, not one test bed (until 2026-12-05 the faces
#: were 8-10 and the start one, "glyphs2", in every seed).
GLYPHS2 = {"dataset": "glyphs", "model": "glyphnet", "dim": 64, "n_seeds": 1, "threads": 2, "cluster_classes": 100,
           "dataset_options": {"unseen_faces": 3, "vary_split": True, "vary_faces": True},
           "start": "glyphs2-seeded"}
#: The GPU profiles: the papers' backbones at 224 px on images decoded once (data.decode_splits), in mixed
#: precision with channels_last (1.3-1.9x on an H100 at 224 px; benchmarks/bench_train_step.py), torch's threads.
GPU = {"threads": None, "image_size": 224, "decode_once": True, "data_on_device": True, "amp": True,
       "channels_last": True, "workers": 8, "n_seeds": 1, "checkpoint_seconds": 300.0}
#: Colab: one seed, two CPUs for the loader.
COLAB = {**GPU, "workers": 2}
#: The colab profile's budget before any T4 measured it: a T4 taken as 9x slower than the H100's images per second
#: of benchmarks/results/train_step_cuda.json, each colab profile training at most about 30 minutes at that speed.
T4_ESTIMATE = {"slower_than_h100": 9, "training_minutes": 30}
#: The bench's one search on test bed II and Fashion-MNIST (bench.search_rule, issue #86): each row's Adam rate from
#: 1e-3 and 3e-3 along the ladder its own search had walked (issue #48), its knob from the paper's value, its
#: length from 10 epochs with a checkpoint every 5 (its own search had chosen its last length, 30, for 92 of 130
#: choices) up to 40; the unsupervised methods' lengths in passes over the images, 4 to 16 (their budget, 4).
BENCH_SEARCH = {"search_lrs": (1e-5, 3e-5, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1),
                "search_lr_start": (1e-3, 3e-3), "search_lengths": (10, 20, 40), "search_every": 5,
                "unsup_search_lengths": (4, 8, 16), "unsup_search_every": 2}


def _knob_only(lr: float, epochs: int, unsup_epochs: int) -> dict:
    """The bench's search of the knobs alone, at the profile's rate and lengths (the smoke run, test bed I, the
    GPU profile): a one-rung rate ladder and one length, a checkpoint at its end."""
    return {"search_lrs": (lr,), "search_lr_start": (lr,), "search_lengths": (epochs,), "search_every": epochs,
            "unsup_search_lengths": (unsup_epochs,), "unsup_search_every": unsup_epochs}


#: CBSwR's one search on test bed II (clustering.search_rule, issue #86): SGD's rate from 1e-3 and 3e-3 (the bench
#: chose SME's at 1e-2 on test bed II's validation characters, CBSwR's at 1e-4 to 3e-4), tau from the paper's 0.1,
#: gamma from its 0.01, 4 epochs (the chapter's until 2026-12-05), then 8 and 16 while the curve still rises.
CBSWR_SEARCH = {"search_lrs": (1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2), "search_lr_start": (1e-3, 3e-3),
                "search_lengths": (4, 8, 16), "search_every": 2, "tau_ladder": (0.025, 0.05, 0.1, 0.2, 0.4),
                "gamma_ladder": (0.001, 0.003, 0.01, 0.03, 0.1, 0.3)}
#: ECAML's one search on test bed II (ecaml.search_rule, issue #86): each compared row's Adam rate from 3e-4 and 1e-3,
#: its EC weight from the paper's along lambda_ladder (0 a candidate), 3 epochs, then 6 and 12 while the unseen
#: curve still rises (it peaked at epoch 2-5 of the chapter's 10 until 2026-12-05), a checkpoint every epoch.
ECAML_SEARCH = {"search_lrs": (1e-5, 3e-5, 1e-4, 3e-4, 1e-3, 3e-3), "search_lr_start": (3e-4, 1e-3),
                "search_lengths": (3, 6, 12), "search_every": 1}
#: EPS's knobs searched per arm on test bed II (eps.search_rule; data/sweeps/eps-glyphs2.yaml says why these).
EPS_KNOBS = {"triplet": {"margin": (0.05, 0.1, 0.2, 0.4, 0.8)}, "margin": {"beta": (0.6, 0.8, 1.2)},
             "ms": {"lam": (0.25, 0.5, 0.75, 1.0)}}
#: EPS's one search on test bed II (eps.search_rule, issue #86): each arm's Adam rate from 3e-4 and 1e-3, its knob
#: (EPS_KNOBS) from the loss's own value, 5 epochs, then 10 and 20 while the curve still rises (a checkpoint every 5;
#: the bench, searched to 30 epochs, had found the same words).
#: DCDL's one search on test bed II (dcdl.search_rule, issue #86): each row's Adam rate from 1e-3 and 3e-3 (where its
#: own search chose on 24 of 40 clean choices; noisy rows walk down, L^W's noisy ones up), its length from 10 epochs
#: with the probe every 2 (its own search's noisy rows chose its first checkpoint, 5, on every seed) up to 40 (its
#: clean rows chose its last, 30, on 5 to 8 of 10 seeds), on a held-out training face as noisy as the row's.
DCDL_SEARCH = {"search_lrs": (1e-4, 3e-4, 1e-3, 3e-3, 1e-2), "search_lr_start": (1e-3, 3e-3),
               "search_lengths": (10, 20, 40), "search_every": 2}
#: The noise chapter's one search on the glyph test beds (guarantees.search_rule, issue #86): each arm at each noise
#: rate, its RMSprop rate from 3e-4 and 1e-3 (the shared search's two starts), its length from 1,000 steps with a
#: checkpoint every 500 (the checkpoints table: noisy rows peak near 1,000 steps, clean ones still climb at 3,000),
#: the marginal loss's beta along beta_candidates, on held-out characters whose labels are as noisy as the row's.
NOISE_SEARCH = {"search_lrs": (3e-5, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2), "search_lr_start": (3e-4, 1e-3),
                "search_lengths": (10, 20, 40), "search_every": 5}
EPS_SEARCH = {"search_lrs": (1e-4, 3e-4, 1e-3, 3e-3, 1e-2), "search_lr_start": (3e-4, 1e-3),
              "search_lengths": (5, 10, 20, 40), "search_every": 5}
#: Test bed II's settings changed since its committed runs, for the one re-run issue #86 asks: ``{chapter: {setting:
#: why}}``. The runs keep the settings they were made with (their files record them, the pages read them);
#: ``tests/test_settings.py`` lets exactly these differ from the profile, and fails once one no longer does (the
#: re-run has landed: its entry goes).
_FACES_AND_START = {"dataset_options": "each seed draws its 3 unseen faces (vary_faces)",
                    "start": "each seed its own pretrained start, made without its unseen faces"}
CHANGED_SINCE_RUNS = {"dcdl": {"dataset_options": "each seed draws its 3 test faces (vary_faces)",
                              **{k: "each row's best shot (dcdl.best_shots), Table 3's weights each its own"
                                 for k in DCDL_SEARCH},
                              **{k: "the chapter's own search is gone (dcdl.best_shots)"
                                 for k in ("lr_candidates", "lr_ladder", "probe_every")},
                              "noise": "asymmetric noise on look-alike characters (noise.lookalike_pairs)",
                              "control_noise": "the term alone and on the random semi-hard triplet under noise "
                                               "(dcdl.CONTROLS)"},
                      "bench": {**_FACES_AND_START,
                                **{k: "each row's best shot (bench.best_shots), noisy rows on noisy held-out labels"
                                   for k in BENCH_SEARCH},
                                **{k: "the bench's own search is gone (bench.best_shots)"
                                   for k in ("search_seeds", "method_lrs", "lr_ladder", "walk_knobs", "length_factor",
                                             "length_checkpoints")}}}
_NOISES = (None, ("symmetric", 0.3), ("asymmetric", 0.2))
_SUBCLUSTERS = (None, ("symmetric", 0.2), ("symmetric", 0.4))
_CUB = {"dataset": "cub200", "compare_with": "CUB"}
_EPS_TEST_BED = {"loss_options": {"triplet": {"margin": 0.1, "negatives": "semihard-random"}, "margin": {"beta": 0.8},
                                  "ms": {"lam": 0.75}},
                 "loss_variants": {"ms": ({"lam": 0.5}, {"lam": 1.0})}, "even_odd_dataset": "glyphs",
                 "even_odd_options": {"n_classes": 10}, "even_odd_epochs": 10,
                 "superclasses": {"dataset": "glyphs", "options": {"script": "hangul", "n_classes": 1000},
                                  "p": 12, "k": 5}}
#: Test bed II's: each seed draws its even/odd characters (vary_characters) and which Hangul lead consonants are
#: seen (vary_split), so that every table's data follows the seed (issue #86).
_EPS_TEST_BED_II = {**_EPS_TEST_BED, "even_odd_options": {"n_classes": 10, "vary_characters": True},
                    "superclasses": {**_EPS_TEST_BED["superclasses"],
                                     "options": {"script": "hangul", "n_classes": 1000, "vary_split": True}}}

# --- each chapter's profiles: (its base, its own changes) -----------------------------------------------------------
_PROFILES = {
    "foundations": {
        "smoke": (SMOKE, dict(dataset="digits", seen=SMOKE_SEEN, model="convnet", dim=32, epochs=25, p=6, k=16)),
        "colab": (COLAB, dict(dataset="mnist", seen=SMOKE_SEEN, model="convnet", epochs=10, p=6, k=32,
                              n_seeds=3, image_size=None, decode_once=False, data_on_device=False, amp=False,
                              channels_last=False, workers=0)),
        "full": (GPU, dict(dataset="mnist", seen=SMOKE_SEEN, model="convnet", epochs=30, p=6, k=32, n_seeds=3,
                           image_size=None, decode_once=False, data_on_device=False, amp=False,
                           channels_last=False, workers=0)),
    },
    # DCDL (Roy et al.): section 4 and supplement section 7; a closed-set linear probe under label noise.
    "dcdl": {
        "smoke": (SMOKE, dict(dataset="digits", model="mlp", dropout=0.1, epochs=2, noise=_NOISES,
                              control_noise=(("symmetric", 0.3),), alone_noise=(None,),
                              lambdas=(0.01, 0.1, 0.5, 5.0), compare_with="C-10")),
        "fashion": (FASHION, dict(dropout=0.1, epochs=10, batches_per_epoch=100, noise=_NOISES,
                                  alone_noise=(None,), lambdas=(5.0,), compare_with="C-10")),
        "glyphs": (GLYPHS, dict(dropout=0.1, epochs=30, batches_per_epoch=100, p=10,
                                dataset_options={"n_classes": 300}, terms=("L", "W", "W-GeomLoss"),
                                noise=(None, ("symmetric", 0.3)), lambdas=(0.01, 0.03, 0.05, 0.1, 0.2),
                                compare_with="C-10")),
        # from scratch (no start), as the paper trains VGG; each row's Adam rate and length searched on a held-out
        # training face (dcdl.best_shots)
        "glyphs2": (GLYPHS2, dict(start=None, dataset_options={"n_classes": 300, "vary_faces": True}, dropout=0.1,
                                  epochs=30,
                                  batches_per_epoch=100, p=10, terms=("L", "W", "W-GeomLoss"),
                                  noise=_NOISES, control_noise=(("symmetric", 0.3),),
                                  lambdas=(0.01, 0.03, 0.05, 0.1, 0.2, 0.3, 0.4),
                                  held_out_faces=1, compare_with="C-10", **DCDL_SEARCH)),
        # CIFAR-10 and VGG-9, L_Trip against L_Trip + L^W, clean and 30% symmetric noise; float32 (on an H100, bf16
        # did not pay at 32 px)
        "colab": (COLAB, dict(dataset="cifar10", model="vgg9", dropout=0.1, epochs=10, lr=5e-4, terms=("W",),
                              noise=(None, ("symmetric", 0.3)), lambdas=(0.5,), compare_with="C-10",
                              image_size=None, decode_once=False, channels_last=False, workers=0)),
        "full": (GPU, dict(dataset="cifar10", model="vgg9", dropout=0.1, epochs=100, lr=5e-4, lr_step=50,
                           locals=("trip", "np", "ang", "ang_np"), terms=("L", "L-median", "W", "W-GeomLoss"),
                           noise=(None, ("symmetric", 0.1), ("symmetric", 0.3), ("asymmetric", 0.1), ("asymmetric", 0.2)),
                           alone_noise=(None, ("symmetric", 0.1), ("symmetric", 0.3), ("asymmetric", 0.1), ("asymmetric", 0.2)),
                           lambdas=(0.01, 0.1, 0.2, 0.5, 0.7, 1.0, 5.0), compare_with="C-10", image_size=None,
                           decode_once=False, amp=False, channels_last=False, workers=0)),
    },
    # ECAML (Chen & Deng): section 5; train on the seen classes, retrieve the unseen ones.
    "ecaml": {
        "smoke": (SMOKE, dict(dataset="digits", seen=SMOKE_SEEN, model="mlp", epochs=10, p=6, k=8,
                              lambdas=(0.02, 0.1, 1.0, 10.0), dropouts=(0.1, 0.25, 0.4), dims=(16, 64, 128),
                              ec_variants=("paper", "released"), compare_with="CARS",
                              pretrained_start={"epochs": 10, "lr": 1e-4, "head_lr_mult": 10, "lr_candidates": None, "held_out": None})),
        "fashion": (FASHION, dict(seen=FASHION_SEEN, epochs=10, batches_per_epoch=100, p=5, k=12,
                                  lambdas=(0.1, 1.0), dropouts=(0.25,), dims=(16, 128),
                                  ec_variants=("paper", "released"), compare_with="CARS",
                                  pretrained_start={"epochs": 10, "lr": 1e-4, "head_lr_mult": 10, "lr_candidates": None, "held_out": None})),
        "glyphs": (GLYPHS, dict(epochs=10, batches_per_epoch=100, p=64, k=2, lambdas=(0.001, 0.01, 0.1, 1.0),
                                dropouts=(0.25,), dims=(16, 128), ec_variants=("paper", "released"),
                                local_options={"npair": {"scale": 10.0}}, compare_with="CARS",
                                pretrained_start={"epochs": 10, "lr": 1e-4, "head_lr_mult": 10, "lr_candidates": (1e-3, 1e-4), "held_out": 200})),
        # 100 of the seen characters (as the paper's CUB and Cars train on about 100 classes); each compared row's
        # rate, length and EC weight chosen on 25 of them held out (ecaml.best_shots, ECAML_SEARCH)
        "glyphs2": (GLYPHS2, dict(dataset_options={**GLYPHS2["dataset_options"], "train_characters": 100},
                                  epochs=10, batches_per_epoch=100, p=64, k=2,
                                  lambdas=(0.001, 0.01, 0.1, 1.0), dropouts=(0.25,), dims=(16, 128),
                                  ec_variants=("paper", "released"),
                                  local_options={"triplet": {"miner": "released"}, "npair": {"scale": 10.0}},
                                  held_out=25, lambda_ladder=(0.001, 0.01, 0.1, 1.0, 10.0, 100.0),
                                  compare_with="CARS", **ECAML_SEARCH)),
        # CUB and GoogLeNet, Binomial with and without EC, with the seen/unseen curves (1,000 images a split)
        "colab": (COLAB, dict(**_CUB, model="googlenet", dim=512, epochs=15, batches_per_epoch=46, lr=1e-5,
                              weight_decay=2e-4, head_lr_mult=10, p=64, k=2, locals=("binomial",),
                              ablation_loss="binomial", dims=(512,), curve_samples=1000)),
        "full": (GPU, dict(dataset="cars196", model="googlenet", dim=512, epochs=100, batches_per_epoch=100,
                           lr=1e-5, weight_decay=2e-4, head_lr_mult=10, p=64, k=2,
                           lambdas=(0.001, 0.01, 0.02, 0.1, 1.0), dropouts=(0.1, 0.25, 0.4),
                           dims=(128, 256, 384, 512), ec_variants=("paper", "released"), compare_with="CARS",
                           curve_samples=5000)),
    },
    # CBSwR (Nguyen et al. 2020): section 4; unsupervised, on the seen classes' images without their labels.
    "cbswr": {
        "smoke": (SMOKE, dict(dataset="mnist1d", seen=SMOKE_SEEN, model="convnet", dim=32, epochs=3,
                              max_shift=3, ks=(16, 64), heads=("released", "oracle"), compare_with="CUB")),
        "fashion": (FASHION, dict(seen=FASHION_SEEN, epochs=3, max_shift=2, ks=(16, 64), compare_with="CUB")),
        "glyphs": (GLYPHS, dict(epochs=3, max_shift=2, held_out=200,
                                head_candidates=("linear", "released", "cosine"),
                                heads=("linear", "released", "cosine", "oracle"), compare_with="CUB")),
        # the head chosen on 200 held-out seen characters; then each arm's rate, knob (SME's and CBS's tau, CBSwR's
        # gamma: clustering.KNOBS) and length on them (issue #86), from 4 epochs of the training images on
        "glyphs2": (GLYPHS2, dict(epochs=4, max_shift=2, ks=(16, 48, 64), held_out=200,
                                  head_candidates=("linear", "released", "cosine"),
                                  heads=("linear", "released", "cosine", "oracle"), compare_with="CUB",
                                  **CBSWR_SEARCH)),
        # CUB and GoogLeNet, the four rows of the ablation, 8 epochs (the paper: 20); the decoded images on the GPU
        # (issue #88: the views were made on Colab's two CPUs, 275 ms a step against the probe's 57.5), in float32
        # (the objectives' mixed precision is untested on a GPU)
        "colab": (COLAB, dict(**_CUB, model="googlenet", dim=128, epochs=8, amp=False, channels_last=False)),
        "full": (GPU, dict(**_CUB, model="googlenet", dim=128, epochs=20, ks=(16, 48, 64), amp=False,
                           channels_last=False)),
    },
    # EPS (Levi et al. 2020): section 5; class-disjoint retrieval, and even/odd (5.1) on a 2-D embedding.
    "eps": {
        "smoke": (SMOKE, dict(dataset="digits", seen=SMOKE_SEEN, model="mlp", epochs=6, p=6, k=8,
                              all_positives=("triplet", "margin"), positives_per_class=(2, 16),
                              positives_batches=10,
                              superclasses={"dataset": "digits", "options": {"seen": SMOKE_SEEN}, "size": 2, "p": 3, "k": 16},
                              superclass_positives=(16, 24),
                              subcluster_noise=(None, ("symmetric", 0.4)), compare_with="CARS")),
        "fashion": (FASHION, dict(seen=FASHION_SEEN, epochs=10, batches_per_epoch=100, p=5, k=12,
                                  all_positives=("triplet", "margin"), positives_per_class=(2, 12),
                                  positives_batches=100, even_odd_dataset="fashion_mnist", even_odd_epochs=10,
                                  subcluster_noise=_SUBCLUSTERS, compare_with="CARS")),
        "glyphs": (GLYPHS, dict(epochs=10, batches_per_epoch=100, p=12, k=5,
                                all_positives=("triplet", "margin"), positives_per_class=(2, 4, 10, 12),
                                positives_batches=100, subcluster_noise=_SUBCLUSTERS, compare_with="CARS",
                                **_EPS_TEST_BED)),
        "glyphs2": (GLYPHS2, dict(epochs=10, batches_per_epoch=100, p=12, k=5, nmi_plus_factor=3,
                                  all_positives=("triplet", "margin"), positives_per_class=(2, 4, 8, 16),
                                  positives_images=64, positives_batches=100, subcluster_noise=_SUBCLUSTERS,
                                  held_out=200, knob_candidates=EPS_KNOBS, compare_with="CARS",
                                  superclass_positives=(5, 15, 30), even_odd_replicates=3, even_odd_search_epochs=20,
                                  **_EPS_TEST_BED_II,
                                  **EPS_SEARCH)),
        # CUB and ResNet-50, Dist-Margin with and without easy positives, 2 and 8 positives per class (each with and
        # without EPS since issue #86: 40 batches each, not 50, to stay within the T4 budget), even/odd
        "colab": (COLAB, dict(**_CUB, model="resnet50", dim=128, epochs=10, batches_per_epoch=100, lr=1e-5,
                              p=40, k=4, losses=("margin",), positives_per_class=(2, 8), positives_batches=40,
                              positives_images=160, even_odd_dataset="mnist", even_odd_epochs=10,
                              even_odd_k=64, subcluster_noise=_SUBCLUSTERS)),
        "full": (GPU, dict(dataset="cars196", model="resnet50", dim=128, epochs=100, batches_per_epoch=100,
                           lr=1e-5, p=40, k=4, all_positives=("triplet", "margin"),
                           positives_per_class=(2, 4, 8), positives_batches=100, positives_images=160,
                           even_odd_dataset="mnist", even_odd_epochs=40, even_odd_k=64,
                           subcluster_noise=_SUBCLUSTERS, compare_with="CARS")),
    },
    # Noise guarantees (Le & Odobez 2018): section 6; a fixed number of batches an epoch, so that the (1 - p)
    # topline takes as many gradient steps as the noisy runs
    "noise_guarantees": {
        "smoke": (SMOKE, dict(dataset="digits", seen=SMOKE_SEEN, model="mlp", epochs=10, batches_per_epoch=18,
                              p=6, k=10)),
        "fashion": (FASHION, dict(seen=FASHION_SEEN, epochs=10, batches_per_epoch=100, p=5, k=12)),
        "glyphs": (GLYPHS, dict(epochs=15, batches_per_epoch=100, p=12, k=5, optimizer="rmsprop", held_out=200,
                                **NOISE_SEARCH)),
        "glyphs2": (GLYPHS2, dict(epochs=15, batches_per_epoch=100, p=12, k=5, optimizer="rmsprop",
                                  held_out=200, beta_candidates=(0.4, 0.6, 0.8, 1.0, 1.2, 1.4), **NOISE_SEARCH,
                                  recipes={"Adam at the chosen rate": {"optimizer": "adam"}, "the runner-up rate": {"lr": "runner-up"}},
                                  checkpoint_steps=(500, 1000, 1500, 3000), checkpoint_rates=(0.0, 0.4))),
        # CUB and ResNet-34, p = 0 and 0.4 with the topline, 5 epochs of 100 batches
        "colab": (COLAB, dict(dataset="cub200", model="resnet34", dim=128, epochs=5, batches_per_epoch=100,
                              lr=1e-5, optimizer="rmsprop", p=12, k=5, rates=(0.0, 0.4))),
        "full": (GPU, dict(dataset="cub200", model="resnet34", dim=128, epochs=40, batches_per_epoch=100,
                           lr=1e-5, optimizer="rmsprop", p=12, k=5, rates=(0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6))),
    },
    # Chapter 8: every method on one backbone, budget, search and seeds (bench.METHODS)
    "bench": {
        "smoke": (SMOKE, dict(dataset="digits", seen=SMOKE_SEEN, model="mlp", epochs=3, batches_per_epoch=18,
                              p=6, k=10, **_knob_only(1e-3, 3, 3))),
        "fashion": (FASHION, dict(seen=FASHION_SEEN, epochs=10, batches_per_epoch=100, p=5, k=12,
                                  rates=(0.0, 0.2, 0.4, 0.6), unsup_epochs=2, max_shift=2,
                                  **{**BENCH_SEARCH, "unsup_search_lengths": (2, 4, 8), "unsup_search_every": 1})),
        "glyphs": (GLYPHS, dict(epochs=10, batches_per_epoch=100, p=12, k=5, held_out=200, unsup_epochs=2,
                                max_shift=2, **_knob_only(1e-3, 10, 2))),
        "glyphs2": (GLYPHS2, dict(epochs=10, batches_per_epoch=100, p=12, k=5, held_out=200, unsup_epochs=4,
                                  max_shift=2, **BENCH_SEARCH)),
        # CUB and ResNet-50, four labelled methods at their papers' settings (no search), p = 0 and 0.4
        "colab": (COLAB, dict(dataset="cub200", model="resnet50", dim=128, epochs=5, batches_per_epoch=50,
                              lr=1e-5, p=16, k=4, held_out=20, unsup_epochs=20,
                              methods=("Triplet, random semi-hard", "Triplet + L^W", "Triplet + EC", "EPS + Triplet"))),
        "full": (GPU, dict(dataset="cub200", model="resnet50", dim=128, epochs=40, batches_per_epoch=100,
                           lr=1e-5, p=16, k=4, rates=(0.0, 0.2, 0.4, 0.6), held_out=20, unsup_epochs=20,
                           **_knob_only(1e-5, 40, 20))),
    },
}


def _build(chapter: str, profile: str, base: dict, changes: dict) -> Settings:
    kind = TYPES[chapter]
    known = set(kind.known())
    shared = {k: v for k, v in base.items() if k in known}  # a base's GPU keys a chapter lacks are not its own
    return kind(chapter=chapter, profile=profile, **{**shared, **changes})


#: ``{chapter: {profile: settings}}``, every profile of every chapter, built once (a wrong type or an unknown name
#: fails at import).
CHAPTERS = {chapter: {name: _build(chapter, name, *spec) for name, spec in by_profile.items()}
            for chapter, by_profile in _PROFILES.items()}


def resolve_profile(profile: str = "auto") -> str:
    """``"auto"`` -> ``"colab"`` with CUDA, ``"smoke"`` without; the named profiles pass through."""
    if profile == "auto":
        import torch  # here, not at the top: the command line reads the profiles' names without loading torch

        return "colab" if torch.cuda.is_available() else "smoke"
    if profile not in PROFILE_NAMES:
        raise ValueError(f"unknown profile {profile!r}; use 'auto', {', '.join(map(repr, PROFILE_NAMES))}")
    return profile


def settings(chapter: str, profile: str = "auto", changes: dict | None = None, **overrides) -> Settings:
    """The settings of ``chapter`` under ``profile`` (resolved), with ``changes`` (a notebook's ``SETTINGS``
    parameter, e.g. ``{"batches_per_epoch": 10, "p": 16}``) and then ``overrides`` applied (``None`` values in
    ``overrides`` are ignored, so notebook parameters left at ``None`` keep the profile's value). An unknown name
    or a value of the wrong type is a ``ValueError`` that says which (:meth:`Settings.apply`)."""
    if chapter not in CHAPTERS:
        raise ValueError(f"unknown chapter {chapter!r}; known chapters: {', '.join(CHAPTERS)}")
    if changes is not None and not isinstance(changes, dict):
        raise ValueError(f"SETTINGS must be a dict of settings or None, got {changes!r}")
    name = resolve_profile(profile)
    if name not in CHAPTERS[chapter]:
        raise ValueError(f"chapter {chapter!r} has no {name!r} profile; its profiles: {', '.join(CHAPTERS[chapter])}")
    for fixed in ("chapter", "profile"):
        if fixed in (changes or {}) or overrides.get(fixed) is not None:
            raise ValueError(f"{fixed!r} is not a setting to change: choose the chapter's notebook or PROFILE")
    overrides = {**(changes or {}), **{k: v for k, v in overrides.items() if v is not None}}
    return CHAPTERS[chapter][name].apply(overrides)  # a None in ``changes`` is kept: it is a value there


def settings_hash(cfg: Settings) -> str:
    """Ten hex digits of the SHA-256 of the resolved settings and the package version: a changed ``SETTINGS``,
    ``EPOCHS`` or profile, or a new release, names another cache folder; how the run uses its machine
    (:data:`~dml_tutorial.settings.MACHINE`: its threads, a sweep's ``--jobs``) does not."""
    import hashlib
    import json

    text = json.dumps({"settings": cfg.trained(), "version": __version__}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:10]


def default_cache(cfg: Settings, runs: str | os.PathLike | None = None) -> str | None:
    """Where a chapter's finished runs are kept: ``<runs>/<chapter>-<dataset>-<settings hash>``
    (:func:`settings_hash`), so that a notebook re-executed after a disconnect skips them and a run trained under
    other settings is never loaded as if new. ``runs`` (a notebook's ``RUNS`` parameter, e.g. a mounted Drive
    folder) defaults to ``runs/`` in the GPU profiles (colab, full); the CPU profiles keep no cache unless
    ``runs`` is given."""
    if runs is None and cfg.profile not in ("colab", "full"):
        return None
    return f"{runs or 'runs'}/{cfg.chapter}-{cfg.dataset}-{settings_hash(cfg)}"


def shows_progress(cfg: Settings) -> bool | None:
    """What a chapter shows while it trains, as :func:`dml_tutorial.experiment.run_grid` takes it: ``True`` in the GPU
    profiles (minutes per run: a per-epoch bar and a line after each run), ``False`` in the CPU profiles on real
    data (one bar over a grid's runs), ``None`` in the smoke profile, whose outputs the book stores and nbval
    compares: nothing (the book removes stderr, so stored bars were read by no one)."""
    return True if cfg.profile in ("colab", "full") else None if cfg.profile == "smoke" else False


#: The paper's column a chapter's tables quote beside ours, by dataset (a dataset not listed: the profile's
#: ``compare_with``).
PAPER_COLUMNS = {"dcdl": {"cifar10": "C-10", "cifar100": "C-100", "stl10": "S-10"},
                 "cbswr": {"cub200": "CUB", "cars196": "CARS"},
                 "eps": {"cub200": "CUB", "cars196": "CARS", "omniglot": "OMNIGLOT"},
                 "ecaml": {"cub200": "CUB", "cars196": "CARS", "sop": "SOP"}}


class Start(NamedTuple):
    """What a chapter's setup cell makes of its parameters (:func:`begin`): its settings, device, seeds, run cache
    (:func:`default_cache`) and what it shows while it trains (:func:`shows_progress`); it unpacks as
    ``cfg, device, seeds, cache, progress = start`` and prints as one line."""

    cfg: Settings
    device: object  # a torch.device
    seeds: list
    cache: str | None
    progress: bool | None

    @property
    def paper(self) -> str | None:
        """The paper's column the chapter's tables quote (:data:`PAPER_COLUMNS`)."""
        return PAPER_COLUMNS.get(self.cfg.chapter, {}).get(self.cfg.dataset, self.cfg.compare_with)

    def __str__(self) -> str:
        c = self.cfg
        batch = f"{c.p} classes x {c.k}" if c.p and c.k else c.batch_size if "batch_size" in c else None
        parts = [f"profile: {c.profile}", f"dataset: {c.dataset}", f"model: {c.model}", f"epochs: {c.epochs}",
                 *([f"batches of {batch}"] if batch else []), f"seeds: {self.seeds}", f"device: {self.device}"]
        return " | ".join(parts + ([f"paper: {self.paper}"] if self.paper else []))


def begin(chapter: str, profile: str = "auto", changes: dict | None = None, seed: int = 0, device="auto",
          runs=None, **overrides) -> Start:
    """A chapter's start from its notebook's parameters: the settings (:func:`settings` with ``changes`` and
    ``overrides``), the device (``"auto"``: CUDA where there is one), the seeds ``seed``, ``seed + 1``, ... (as
    many as the profile runs), everything seeded with ``seed`` on the profile's threads, the run cache under
    ``runs`` and the progress the profile shows.

        cfg, device, seeds, cache, progress = start = profiles.begin("eps", PROFILE, SETTINGS, SEED, DEVICE, RUNS)
    """
    from . import train  # here, not at the top: the command line reads the profiles without loading torch

    cfg = settings(chapter, profile, changes, **overrides)
    dev = train.resolve_device(device)
    if "google.colab" in sys.modules and dev.type == "cpu":  # "auto" runs the smoke profile there
        print("No GPU: Runtime > Change runtime type > T4 GPU, then Run all.")
    train.seed_everything(seed, threads=cfg.threads)
    return Start(cfg, dev, [seed + i for i in range(cfg.n_seeds)], default_cache(cfg, runs), shows_progress(cfg))
