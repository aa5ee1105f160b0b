"""CBSwR (Nguyen et al. 2020) and SME: every loss against a naive loop, degenerate batches, the decoder and the loop."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from dml_tutorial import clustering, data, experiment, models, profiles, train

D = torch.float64  # the loop references are compared at 1e-9


def _unit(n, d, seed):
    return F.normalize(torch.randn(n, d, generator=torch.Generator().manual_seed(seed), dtype=D), dim=1)


def test_rim_loss_matches_the_entropies_by_hand():
    logits = torch.randn(7, 4, generator=torch.Generator().manual_seed(0), dtype=D)
    y = logits.softmax(1).tolist()
    marginal = [sum(row[j] for row in y) / 7 for j in range(4)]
    h_y = -sum(p * math.log(p) for p in marginal)
    h_y_x = sum(-sum(p * math.log(p) for p in row) for row in y) / 7
    w = torch.randn(4, 3, dtype=D)
    expected = 0.1 * (w ** 2).sum().item() - 2.0 * (h_y - h_y_x)
    assert clustering.rim_loss(logits, lam=2.0, l2=0.1, params=[w]).item() == pytest.approx(expected, abs=1e-9)
    code = clustering.rim_loss(logits, lam=1.0, code_variant=True).item()
    assert code == pytest.approx(-(h_y - h_y_x) / math.log(4), abs=1e-9)
    h_marginal, h_conditional = clustering.rim_entropies(logits)
    assert (h_marginal.item(), h_conditional.item()) == pytest.approx((h_y, h_y_x), abs=1e-9)


def test_rim_prefers_balanced_confident_clusters():
    confident_balanced = torch.eye(4).repeat(2, 1) * 20
    all_in_one = torch.zeros(8, 4)
    all_in_one[:, 0] = 20
    uncertain = torch.zeros(8, 4)
    values = [clustering.rim_loss(x).item() for x in (confident_balanced, all_in_one, uncertain)]
    assert values[0] == pytest.approx(-math.log(4), abs=1e-6) and values[1] > values[0] and values[2] > values[0]


def test_centroids_by_hand_with_an_empty_cluster():
    feats = torch.arange(12.0).reshape(6, 2)
    assign = torch.tensor([0, 0, 2, 2, 2, 0])
    r, present = clustering.centroid_representations(feats, assign, 4)
    assert present.tolist() == [True, False, True, False]
    assert torch.allclose(r[0], feats[[0, 1, 5]].mean(0)) and torch.allclose(r[2], feats[[2, 3, 4]].mean(0))
    assert (r[[1, 3]] == 0).all()


def test_reconstruction_loss_by_hand():
    images, recon = torch.rand(5, 1, 3, 3), torch.rand(3, 1, 3, 3)
    assign = torch.tensor([2, 0, 0, 1, 2])
    summed = sum(((images[i] - recon[assign[i]]) ** 2).sum() for i in range(5)) / 5  # eq. 5 as printed
    assert torch.allclose(clustering.reconstruction_loss(images, recon, assign, pixels="sum"), summed)
    assert torch.allclose(clustering.reconstruction_loss(images, recon, assign), summed / 9)
    with pytest.raises(ValueError, match="pixels"):
        clustering.reconstruction_loss(images, recon, assign, pixels="max")


def test_reconstruction_loss_defaults_to_the_released_codes_per_pixel_mean():
    # aioz-ai/BMVC20_CBSwR train.py: F.mse_loss(decoded, images), a mean over every element
    images, recon = torch.rand(6, 3, 8, 8), torch.rand(4, 3, 8, 8)
    assign = torch.tensor([3, 0, 0, 1, 2, 3])
    expected = torch.nn.functional.mse_loss(recon[assign], images)
    assert torch.allclose(clustering.reconstruction_loss(images, recon, assign), expected)


def _center_softmax_loop(f, f_hat, c, present, assign, tau):
    total = 0.0
    for i in range(len(f)):
        q = int(assign[i])
        others = [k for k in range(len(c)) if present[k] and k != q]
        if not others:
            total += -(f[i] @ f_hat[i]).item() / tau
            continue
        denominator = sum(math.exp((f[i] @ c[k]).item() / tau) for k in others)
        total += -math.log(math.exp((f[i] @ f_hat[i]).item() / tau) / denominator)  # eq. 6
        full = sum(math.exp((f[i] @ c[k]).item() / tau) for k in range(len(c)) if present[k])
        for j in others:  # eq. 7
            total += -math.log(1 - math.exp((f[i] @ c[j]).item() / tau) / full)
    return total


@pytest.mark.parametrize("tau", [0.1, 0.5])
def test_center_softmax_loss_matches_a_loop(tau):
    f, f_hat, c = _unit(9, 5, 1), _unit(9, 5, 2), _unit(4, 5, 3)
    present = torch.tensor([True, True, False, True])
    assign = torch.tensor([0, 1, 3, 3, 0, 1, 1, 0, 3])
    ours = clustering.center_softmax_loss(f, f_hat, c, present, assign, tau).item()
    assert ours == pytest.approx(_center_softmax_loop(f, f_hat, c, present, assign, tau), rel=1e-9)


def test_center_softmax_loss_when_the_batch_is_one_cluster():
    f, f_hat, c = _unit(6, 4, 4), _unit(6, 4, 5), _unit(3, 4, 6)
    present, assign = torch.tensor([False, True, False]), torch.ones(6, dtype=torch.long)
    ours = clustering.center_softmax_loss(f, f_hat, c, present, assign, 0.1)
    assert torch.allclose(ours, -(f * f_hat).sum() / 0.1)  # only the pull toward the augmented view is left


def test_center_softmax_loss_is_finite_for_a_confident_softmax():
    c = torch.eye(3)
    f = c[[0, 1, 2, 0]].clone()
    loss = clustering.center_softmax_loss(f, f, c, torch.ones(3, dtype=torch.bool), torch.tensor([1, 2, 0, 1]),
                                          tau=0.001)  # every sample sits on another cluster's centroid
    assert torch.isfinite(loss) and loss > 100


def _sme_loop(f, f_hat, tau, self_similarity=True):
    n, total = len(f), 0.0
    for i in range(n):
        total -= math.log(math.exp((f[i] @ f_hat[i]).item() / tau)
                          / sum(math.exp((f[k] @ f_hat[i]).item() / tau) for k in range(n)))
        for j in range(n):
            if j != i:
                ks = [k for k in range(n) if self_similarity or k != j]
                p = math.exp((f[i] @ f[j]).item() / tau) / sum(math.exp((f[k] @ f[j]).item() / tau) for k in ks)
                total -= math.log(1 - p)
    return total


@pytest.mark.parametrize("self_similarity", [True, False])
def test_sme_loss_matches_a_loop(self_similarity):
    f, f_hat = _unit(7, 6, 7), _unit(7, 6, 8)
    ours = clustering.sme_loss(f, f_hat, 0.1, self_similarity=self_similarity).item()
    assert ours == pytest.approx(_sme_loop(f, f_hat, 0.1, self_similarity), rel=1e-9)


def test_sme_without_self_similarity_spreads_harder_and_stays_finite():
    """Without x_j's own exp(1/tau) in the denominator each P(i | x_j) is larger, so the spreading term weighs
    more; with two samples and nothing else to compare, P(i | x_j) = 1 would be log(0): still finite here."""
    f, f_hat = _unit(7, 6, 7), _unit(7, 6, 8)
    assert clustering.sme_loss(f, f_hat, 0.1, self_similarity=False) > clustering.sme_loss(f, f_hat, 0.1)
    two = _unit(2, 6, 9).requires_grad_()
    loss = clustering.sme_loss(two, two.detach(), 0.1, self_similarity=False)
    (grad,) = torch.autograd.grad(loss, two)
    assert torch.isfinite(loss) and torch.isfinite(grad).all()


def _objective(k=8, weights=clustering.VARIANTS["CBSwR"], **kw):
    torch.manual_seed(0)
    model = models.ConvNet((1, 8, 8), dim=16, width=(8, 16), hidden=32)
    return clustering.CBSwR(model, 32, 16, k=k, image_shape=(1, 8, 8), weights=weights, **kw)


@pytest.mark.parametrize("k", [2, 8, 64], ids=["K=2", "K=8", "K larger than the batch"])
def test_cbswr_is_finite_with_gradients_everywhere(k):
    obj = _objective(k)
    x = torch.rand(6, 1, 8, 8)
    loss, parts = obj(x, clustering.random_shift(x))
    loss.backward()
    assert torch.isfinite(loss) and set(parts) == {"rim", "metric", "rec", "clusters", "H(Y)", "H(Y|X)"}
    assert 1 <= parts["clusters"] <= k and 0 <= parts["H(Y|X)"] <= parts["H(Y)"] + 1e-6 <= math.log(k) + 2e-6
    grads = [p.grad for p in obj.parameters() if p.grad is not None]
    assert grads and all(torch.isfinite(g).all() for g in grads)


def test_cbswr_when_every_sample_lands_in_one_cluster():
    obj = _objective()
    with torch.no_grad():
        obj.classifier.weight.zero_()
        obj.classifier.bias.copy_(torch.arange(8.0) * 100)  # cluster 7 always wins
    x = torch.rand(6, 1, 8, 8)
    loss, parts = obj(x, x)
    loss.backward()
    assert parts["clusters"] == 1 and torch.isfinite(loss)
    assert parts["H(Y)"] == pytest.approx(0.0, abs=1e-6) and parts["H(Y|X)"] == pytest.approx(0.0, abs=1e-6)


def test_detached_centroids_stop_only_the_metric_gradient():
    x = torch.rand(6, 1, 8, 8)
    grads = {}
    for detach in (False, True):
        obj = _objective(weights=(1.0, 0.0, 0.0), detach_centroids=detach)
        obj(x, clustering.random_shift(x, generator=torch.Generator().manual_seed(0)))[0].backward()
        grads[detach] = obj.model.trunk[0].weight.grad.clone()
    assert not torch.allclose(grads[False], grads[True])


@pytest.mark.parametrize("head", clustering.HEADS)
def test_every_cluster_head_trains_finite_with_its_logits(head):
    obj = _objective(head=head)
    x, y = torch.rand(6, 1, 8, 8), torch.tensor([0, 0, 1, 1, 2, 2])
    loss, parts = obj(x, clustering.random_shift(x), y)
    loss.backward()
    assert torch.isfinite(loss) and 0 <= parts["cluster pairs, same class"] <= parts["cluster pairs"] <= 15
    logits = obj.logits(torch.nn.functional.normalize(torch.randn(5, 16), dim=1))
    if head == "released":  # BatchNorm1d, Dropout(0.6), Linear, then unit-norm logits (get_cluster_block)
        assert isinstance(obj.classifier[0], torch.nn.BatchNorm1d) and obj.classifier[1].p == 0.6
        assert torch.allclose(logits.norm(dim=1), torch.ones(5), atol=1e-5)
    if head == "cosine":  # unit weights against a unit embedding: |logit| <= 1 / head_tau
        assert logits.abs().max() <= 1 / clustering.TAU + 1e-4 and obj.classifier.bias is None
    if head == "oracle":  # the clusters are the classes: three present, each view with its image's
        assert parts["clusters"] == 3 and clustering.pair_precision(parts) == (1.0, 3 / 15)  # 3 of 15 pairs
        with pytest.raises(ValueError, match="labels"):
            obj(x, x)
        many = torch.arange(6) * 100  # more classes than K = 8 would allow in one batch is fine too
        assert obj(torch.rand(6, 1, 8, 8), torch.rand(6, 1, 8, 8), many)[1]["clusters"] == 6
        obj_small = _objective(k=2, head="oracle")
        assert obj_small(x, x, y)[1]["clusters"] == 3  # three classes in a batch, K = 2: one cluster each still


def test_the_released_pull_holds_the_other_view_fixed():
    """loss.py's pos = x . reordered_x.data: each view pulled toward the other held fixed, so the pull's gradient on
    the embeddings is half that of eq. 6 taken through both views."""
    f, f_hat = _unit(6, 8, 1).requires_grad_(), _unit(6, 8, 2).requires_grad_()
    c, present, a = _unit(3, 8, 3), torch.tensor([True, True, True]), torch.tensor([0, 0, 1, 1, 2, 2])
    grads = {}
    for pull in ("both", "detached"):
        held = (f_hat.detach(), f.detach()) if pull == "detached" else (f_hat, f)
        pulls = [clustering.center_softmax_loss(f, held[0], c, present, a, 0.1),
                 clustering.center_softmax_loss(f_hat, held[1], c, present, a, 0.1)]
        pull_only = -(f * held[0]).sum() / 0.1 - (f_hat * held[1]).sum() / 0.1
        grads[pull] = torch.autograd.grad(pull_only, f)[0]
        assert all(torch.isfinite(v) for v in pulls)
    assert torch.allclose(grads["both"], 2 * grads["detached"])
    obj = _objective(pull="detached")
    x = torch.rand(6, 1, 8, 8)
    loss, _ = obj(x, clustering.random_shift(x))
    loss.backward()
    assert torch.isfinite(loss)
    with pytest.raises(ValueError, match="pull"):
        _objective(pull="one")
    with pytest.raises(ValueError, match="head"):
        _objective(head="mlp")


def test_variants_and_bad_settings():
    assert clustering.VARIANTS["only L_rim"] == (0.0, 0.3, 0.0) and clustering.VARIANTS["CBSwR"] == (0.9, 0.3, 0.01)
    with pytest.raises(ValueError, match="at least 2 clusters"):
        _objective(k=1)
    with pytest.raises(ValueError, match="image_shape"):
        clustering.CBSwR(models.MLP(4, 2), 64, 2, weights=(0.9, 0.3, 0.01))


@pytest.mark.parametrize("shape", [(1, 8, 8), (1, 28, 28), (3, 224, 224)])
def test_decoder_reaches_the_image_size(shape):
    dec = clustering.make_decoder(32, shape)
    assert dec(torch.randn(2, 32)).shape == (2, *shape)


def test_decoder_rejects_odd_sizes():
    with pytest.raises(ValueError, match="square"):
        clustering.make_decoder(8, (1, 8, 6))
    with pytest.raises(ValueError, match="doubling"):
        clustering.make_decoder(8, (1, 9, 9))


def test_random_shift_moves_each_image_by_at_most_one_pixel():
    x = torch.rand(10, 1, 8, 8)
    y = clustering.random_shift(x, generator=torch.Generator().manual_seed(0))
    padded = F.pad(x, (1, 1, 1, 1))
    for i in range(10):
        assert any(torch.equal(y[i], padded[i, :, dy:dy + 8, dx:dx + 8]) for dy in range(3) for dx in range(3))


@pytest.mark.parametrize("method", ["CBSwR", "SME"])
def test_train_unsupervised_runs_and_records(method):
    s = data.load_dataset("digits", split="classes")
    torch.manual_seed(0)
    model = models.ConvNet((1, 8, 8), dim=16, width=(8, 16), hidden=32)
    obj = clustering.CBSwR(model, 32, 16, k=8, image_shape=(1, 8, 8)) if method == "CBSwR" else clustering.SME(model)
    before = [p.detach().clone() for p in model.parameters()]
    hist = clustering.train_unsupervised(obj, s.train.subset(range(200)), epochs=2, batch_size=32, progress=False,
                                         device="cpu")
    assert len(hist) == 2 and all(math.isfinite(v) for v in hist["loss"])
    assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters()))


def test_chapter_protocol_and_reconstruction_on_a_small_split():

    splits = data.load_dataset("mnist1d", split="classes", seen=range(6), num_samples=600)
    cfg = profiles.settings("cbswr", "smoke", epochs=1)
    run = clustering.train_and_retrieve(splits, "CBSwR", cfg, seed=0, device="cpu", keep_objective=True)
    assert set(run.metrics) == {"R@1", "R@2", "R@4", "R@8", "NMI", "seconds"}
    assert run.test_embeddings.shape == (len(splits.test), cfg["dim"])
    x = splits.train.batch(np.arange(40))
    assign, recon = clustering.reconstruct(run.state, x)
    assert set(recon) == set(assign.unique().tolist()) and all(r.shape == (1, 40) for r in recon.values())
    sme = clustering.train_and_retrieve(splits, "SME", cfg, seed=0, device="cpu", keep_objective=True)
    with pytest.raises(ValueError, match="no decoder"):
        clustering.reconstruct(clustering.CBSwR(sme.state.model, 128, cfg["dim"], weights=(0.9, 0.3, 0.0)), x)
    with pytest.raises(ValueError, match="unknown method"):
        clustering.train_and_retrieve(splits, "DeepCluster", cfg)


def test_images_on_disk_come_in_two_random_views_in_the_same_order(tmp_path):
    from PIL import Image
    from torchvision import transforms

    from dml_tutorial.data import ImageListDataset

    paths = []
    for i in range(6):
        paths.append(tmp_path / f"{i}.png")
        Image.fromarray(np.full((12, 12, 3), 40 * i, np.uint8)).save(paths[-1])
    views = transforms.Compose([transforms.RandomCrop(8), transforms.ToTensor()])
    ds = ImageListDataset(paths, np.arange(6), views)
    torch.manual_seed(0)
    batches = list(clustering._pairs(ds, 4, None, torch.Generator().manual_seed(0), torch.device("cpu")))
    assert [len(x) for x, _, _ in batches] == [4, 2]
    for x, x_hat, y in batches:  # each image's value is constant, so the two views of one image agree pixel for pixel
        assert x.shape == x_hat.shape == (len(x), 3, 8, 8) and torch.equal(x.mean((1, 2, 3)), x_hat.mean((1, 2, 3)))
        assert torch.equal(y.float(), (x.mean((1, 2, 3)) * 255 / 40).round())  # each image with its own label
    seen = torch.cat([x.mean((1, 2, 3)) for x, _, _ in batches])
    assert sorted((seen * 255 / 40).round().int().tolist()) == list(range(6))


def test_false_negative_rates_by_a_loop_over_pairs():
    labels = np.array([0, 0, 1, 1, 1, 2, 0, 2])
    clusters = np.array([5, 5, 1, 1, 3, 3, 0, 3])
    rates = clustering.false_negative_rates(labels, clusters)
    pairs = [(i, j) for i in range(8) for j in range(8) if i != j]
    sme = np.mean([labels[i] == labels[j] for i, j in pairs])
    cluster = np.mean([labels[i] == labels[j] for i, j in pairs if clusters[i] != clusters[j]])
    assert rates == {"instance negatives (SME)": pytest.approx(sme), "cluster negatives (CBS, CBSwR)":
                     pytest.approx(cluster)}
    perfect = clustering.false_negative_rates(labels, labels)  # clusters = classes: no same-class negative left
    assert perfect["cluster negatives (CBS, CBSwR)"] == 0.0 and perfect["instance negatives (SME)"] == pytest.approx(sme)
    assert np.isnan(clustering.false_negative_rates(labels, np.zeros(8))["cluster negatives (CBS, CBSwR)"])
    with pytest.raises(ValueError, match="at least 2 samples"):
        clustering.false_negative_rates(labels[:1], clusters[:1])
    with pytest.raises(ValueError, match="a label and a cluster each"):
        clustering.false_negative_rates(labels, clusters[:5])


def test_pair_counts_against_a_loop_and_the_chance_level_of_random_clusters():
    """Pair precision counts unordered pairs (checked against a double loop); clusters drawn independently of the
    classes score the chance level (the share of same-class pairs) on average, whatever their number: the reason
    it replaces NMI of a batch's clusters, which random clusters push up when a batch holds many classes."""
    g = torch.Generator().manual_seed(0)
    classes = torch.randint(0, 60, (64,), generator=g)
    clusters = torch.randint(0, 32, (64,), generator=g)
    counts = clustering.pair_counts(clusters, classes)
    loop = {"pairs": 0, "class pairs": 0, "cluster pairs": 0, "cluster pairs, same class": 0}
    for i in range(64):
        for j in range(i + 1, 64):
            loop["pairs"] += 1
            loop["class pairs"] += int(classes[i] == classes[j])
            loop["cluster pairs"] += int(clusters[i] == clusters[j])
            loop["cluster pairs, same class"] += int(clusters[i] == clusters[j] and classes[i] == classes[j])
    assert counts == loop
    classes = torch.arange(8).repeat_interleave(8)  # 8 classes of 8: 7/63 of the pairs share a class
    draws = [clustering.pair_counts(torch.randint(0, 32, (64,), generator=g), classes) for _ in range(400)]
    mean = {key: np.mean([d[key] for d in draws]) for key in draws[0]}
    precision, chance = clustering.pair_precision(mean)
    assert chance == pytest.approx(7 / 63) and precision == pytest.approx(chance, abs=0.02)
    assert clustering.pair_precision(clustering.pair_counts(classes, classes))[0] == 1.0  # clusters = classes
    assert np.isnan(clustering.pair_precision(clustering.pair_counts(torch.arange(64), classes))[0])


def test_the_chapters_grid_declares_each_row_once_with_its_own_settings():
    """clustering.grid is the one place a CBSwR row is declared: the notebook, the plan and the cache read it."""
    cfg = profiles.settings("cbswr", "glyphs2")
    specs = clustering.grid(cfg, [0, 1], {"head": "released"})
    rows = {s.row: s for s in specs if s.seed == 0}
    assert [s.seed for s in specs if s.row == "CBSwR"] == [0, 1]
    assert list(rows)[:4] == list(cfg.methods) and all(rows[m].method == m for m in cfg.methods)
    assert all(s.settings.head == "released" for s in specs if s.table == clustering.ABLATION)  # the choice
    heads = [r for r in rows if r.startswith("CBS, ") and r.endswith(" head")]
    assert heads == [f"CBS, {h} head" for h in cfg.heads if h != "released"]  # the chosen head has its row above
    for row, (method, changes) in clustering.RELEASED_ROWS.items():
        assert rows[row].method == method and rows[row].settings == cfg.replace(head="released").replace(**changes)
    assert [rows[f"K = {k}"].settings.k for k in cfg.ks] == list(cfg.ks)
    assert len({s.digest() for s in specs}) == len(specs)  # no two runs share a cache key
    assert [s.key for s in clustering.grid(cfg.replace(heads=()), [0])] == [
        s.key for s in clustering.grid(cfg, [0]) if s.table != clustering.HEAD_ROWS]  # no heads: no head rows


def test_the_head_is_searched_on_the_validation_split_and_the_best_chosen():
    cfg = profiles.settings("cbswr", "glyphs2")
    search = clustering.head_search(cfg, 3)
    assert [(s.split, s.seed, s.settings.head) for s in search] == [("validation", 3, h) for h in cfg.head_candidates]
    runs = {s.key: [experiment.Run({"R@1": r1}, None, None)] for s, r1 in zip(search, (0.5, 0.7, 0.7))}
    assert clustering.choose_head(runs) == {"head": cfg.head_candidates[1]}  # ties: the first tried
    assert clustering.head_search(profiles.settings("cbswr", "smoke"), 0) == [] and clustering.choose_head({}) == {}


def test_each_arm_is_searched_on_its_own_and_the_grid_trains_every_row_at_its_arms_choice():
    """Issue #86: every arm of the ablation has its own best shot (SME and CBS their tau, CBSwR its gamma with 0, CBS
    itself, a candidate, on CBS's chosen tau); each row of the grid trains at its arm's choice (a head row at CBS's,
    a K row at CBSwR's); the plan counts each search's first trials, the walks once run."""
    cfg = profiles.settings("cbswr", "glyphs2")
    rules = {m: clustering.search_rule(cfg, m) for m in cfg.methods}
    assert rules["only L_rim"].knob is None and rules["SME"].knob.name == rules["CBS"].knob.name == "tau"
    assert rules["CBSwR"].knob.name == "gamma" and rules["CBSwR"].knob.off == 0.0
    assert clustering.search_rule(profiles.settings("cbswr", "smoke"), "CBS") is None
    seen = []

    def run(trial):  # a validation curve that prefers lr 3e-3, tau 0.05, gamma 0 (the regulariser off), 8 epochs
        seen.append(trial)
        s = trial.settings
        score = -abs(np.log10(s.lr / 3e-3)) - abs(np.log10(s.tau / 0.05)) - (s.gamma or 0.0) * 10
        return experiment.Run({}, None, train.History([{"epoch": e, "R@1": score + min(e, 8) / 100}
                                                       for e in range(2, s.epochs + 1, 2)]))

    choices = clustering.best_shots(cfg, 5, run)
    shot = {m: c["values"] for m, c in choices["best shot"].items()}
    assert shot["SME"] == shot["CBS"] == {"lr": 3e-3, "tau": 0.05, "epochs": 8}
    assert shot["CBSwR"] == {"lr": 3e-3, "gamma": 0.0, "epochs": 8}
    assert {t.settings.tau for t in seen if t.row == "CBSwR"} == {0.05}  # searched on CBS's tau
    assert all(t.split == "validation" and t.seed == 5 and t.options["curve"] == "R@1" for t in seen)
    assert len(clustering.best_shot_trials(cfg, 5)) + clustering.unplanned(cfg, choices) == len(seen)
    rows = {s.row: s.settings for s in clustering.grid(cfg, [5], {"head": "released", **choices})}
    assert (rows["SME"].lr, rows["SME"].tau, rows["SME"].epochs) == (3e-3, 0.05, 8)
    assert (rows["CBSwR"].tau, rows["CBSwR"].gamma) == (0.05, 0.0) and rows["K = 16"].gamma == 0.0
    assert rows["CBS, cosine head"].tau == 0.05 and rows["CBS"].head == "released"


def test_cbswr_gamma_sets_the_reconstruction_weight_and_zero_drops_the_decoder():
    model = models.ConvNet((1, 8, 8), dim=16, width=(8, 16), hidden=32)
    cfg = profiles.settings("cbswr", "smoke").replace(dim=16, k=8)
    default = clustering.make_objective("CBSwR", model, (1, 8, 8), cfg)
    assert default.weights == clustering.VARIANTS["CBSwR"] and default.decoder is not None
    assert clustering.make_objective("CBSwR", model, (1, 8, 8), cfg.replace(gamma=0.1)).weights[2] == 0.1
    off = clustering.make_objective("CBSwR", model, (1, 8, 8), cfg.replace(gamma=0.0))
    assert off.weights == clustering.VARIANTS["CBS"] and off.decoder is None
    assert clustering.make_objective("CBS", model, (1, 8, 8), cfg.replace(gamma=0.1)).weights[2] == 0.0  # CBSwR's


def _tiny(method):
    torch.manual_seed(0)
    model = models.ConvNet((1, 8, 8), dim=16, width=(8, 16), hidden=32)
    return clustering.CBSwR(model, 32, 16, k=8, image_shape=(1, 8, 8)) if method == "CBSwR" else clustering.SME(model)


@pytest.mark.parametrize("method", ["CBSwR", "SME"])
def test_an_unsupervised_training_stopped_after_an_epoch_resumes_to_the_uninterrupted_weights(method, tmp_path):
    """The shared loop (train.epochs_of) keeps the objective, SGD's momentum, the random states and the generator
    of the batches' order and views: two epochs in one go and one epoch, then a resumed second, end equal."""
    data_ = data.load_dataset("digits", split="classes").train.subset(range(160))
    options = {"batch_size": 32, "progress": False, "device": "cpu", "seed": 3}
    straight = _tiny(method)
    hist = clustering.train_unsupervised(straight, data_, epochs=2, **options)
    ckpt = tmp_path / "run.pt"
    first = _tiny(method)
    clustering.train_unsupervised(first, data_, epochs=1, checkpoint=ckpt, **options)
    assert torch.load(ckpt, weights_only=False)["epoch"] == 1
    resumed = _tiny(method)  # a new process's objective: its weights come from the checkpoint
    again = clustering.train_unsupervised(resumed, data_, epochs=2, checkpoint=ckpt, **options)
    for (name, a), b in zip(straight.state_dict().items(), resumed.state_dict().values()):
        assert torch.equal(a, b), name
    assert again["loss"] == hist["loss"]


def test_unsupervised_mixed_precision_runs_the_trunk_only_in_bfloat16():
    obj = _tiny("CBSwR")
    seen = {}
    obj.model.trunk.register_forward_hook(lambda m, i, out: seen.setdefault("trunk", out.dtype) and None)
    obj.model.embedding.register_forward_hook(lambda m, i, out: seen.setdefault("embedding", out.dtype) and None)
    data_ = data.load_dataset("digits", split="classes").train.subset(range(64))
    hist = clustering.train_unsupervised(obj, data_, epochs=1, batch_size=32, progress=False, device="cpu",
                                         amp=True)
    assert seen == {"trunk": torch.bfloat16, "embedding": torch.float32} and math.isfinite(hist["loss"][0])
    assert obj.trunk_precision is None  # after the training, the objective runs in float32 again
    seen.clear()
    obj(torch.zeros(2, 1, 8, 8), torch.zeros(2, 1, 8, 8))
    assert seen == {"trunk": torch.float32, "embedding": torch.float32}


def test_the_head_table_adds_the_last_epochs_pair_precision_where_a_row_clusters_and_the_references():
    from types import SimpleNamespace

    from dml_tutorial.train import History

    counts = {"pairs": 10, "class pairs": 2, "cluster pairs": 4, "cluster pairs, same class": 3}
    sme = [SimpleNamespace(metrics={"R@1": 0.5, "NMI": 0.4}, history=History([{"epoch": 1, "loss": 1.0}]))]
    cbs = [SimpleNamespace(metrics={"R@1": 0.6, "NMI": 0.45}, history=History([{"epoch": 1, **counts}]))]
    table = clustering.head_table({"SME": sme, "CBS, linear head (ours)": cbs},
                                  {"raw input": {"R@1": [0.2], "NMI": [0.1], "R@2": [0.3]}})
    assert table["SME"] == {"R@1": [0.5], "NMI": [0.4]}  # no clusters, no precision
    assert table["CBS, linear head (ours)"] == {"R@1": [0.6], "NMI": [0.45], "pair precision": [0.75],
                                                "chance": [0.2]}  # 3 of its 4 cluster pairs share a class
    assert table["raw input"] == {"R@1": [0.2], "NMI": [0.1]}


def test_false_negatives_over_batches_and_the_heads_words(monkeypatch):
    from dml_tutorial import evidence
    from dml_tutorial.data import ArrayDataset

    rng = np.random.default_rng(0)
    images = torch.as_tensor(rng.normal(size=(40, 1, 2, 2)), dtype=torch.float32)
    train = ArrayDataset(images, torch.as_tensor(rng.integers(0, 3, 40)))
    monkeypatch.setattr(clustering, "assignments", lambda objective, x: (x.flatten(1)[:, 0] > 0).long())
    rates = clustering.batch_false_negatives(None, train, batch_size=8, batches=3, seed=1)
    order = np.random.default_rng(1).permutation(40)
    by_batch = [clustering.false_negative_rates(train.labels[np.sort(order[s:s + 8])],
                                                (images[np.sort(order[s:s + 8])].flatten(1)[:, 0] > 0).long())
                for s in (0, 8, 16)]
    assert rates["batches"] == 3
    for name in by_batch[0]:
        assert rates[name] == pytest.approx(np.nanmean([b[name] for b in by_batch]))
    r1 = {"SME": [0.60, 0.62, 0.61], "CBS, linear head (ours)": [0.58, 0.57, 0.60],
          "CBS, released head (ablation)": [0.63, 0.66, 0.64], "SME, with self-similarity": [0.59, 0.60, 0.62]}
    run = {"tables": [{"table": "CBS with each cluster head", "seeds": [0, 1, 2], "paper": {},
                       "measured": {row: {"R@1": v} for row, v in r1.items()}}]}
    words = clustering.heads_words([run])
    linear, released = r1["CBS, linear head (ours)"], r1["CBS, released head (ablation)"]
    assert (f"- CBS, released head (ablation): {evidence.describe(evidence.paired(linear, released))}; against "
            f"SME {evidence.describe(evidence.paired(r1['SME'], released))}") in words
    assert "- SME, with self-similarity, against the run's SME: " in words and words.count("\n- ") == 2
    assert clustering.heads_words([]) == "No test bed II run of the cluster heads is recorded."


def test_the_ablation_and_k_tables_read_every_column_of_each_run():
    from types import SimpleNamespace

    def runs(base):
        return [SimpleNamespace(metrics={c: base + i / 100 + j / 1000 for j, c in enumerate(clustering.COLUMNS)})
                for i in range(2)]

    ablation = {"SME": runs(0.5), "CBSwR": runs(0.6)}
    table = clustering.ablation_table(ablation, {("raw input", ""): runs(0.3), ("untrained network", ""): runs(0.2)},
                                      ["raw input"])
    assert list(table) == ["SME", "CBSwR", "raw input"]
    assert table["CBSwR"]["R@4"] == pytest.approx([0.602, 0.612]) and table["raw input"]["NMI"] == pytest.approx(
        [0.304, 0.314])
    k = clustering.k_table({64: runs(0.7), 16: runs(0.6)})
    assert list(k) == ["K = 16", "K = 64"] and list(k["K = 64"]) == ["R@1", "R@2", "R@4", "R@8"]
    assert k["K = 64"]["R@8"] == pytest.approx([0.703, 0.713])


def test_the_chapters_lines_pair_each_step_by_seed_and_read_the_papers_time_ratios():
    from types import SimpleNamespace

    def runs(values, seconds):
        return [SimpleNamespace(metrics={"R@1": v, "NMI": v / 2, "seconds": s}) for v, s in zip(values, seconds)]

    ablation = {"SME": runs([0.5, 0.6, 0.7], [1, 1, 1]), "only L_rim": runs([0.3, 0.4, 0.5], [2, 2, 2]),
                "CBS": runs([0.6, 0.7, 0.8], [3, 3, 3]), "CBSwR": runs([0.6, 0.7, 0.9], [4, 4, 4])}
    lines = clustering.ablation_lines(ablation)
    assert len(lines) == 2 * len(clustering.STEPS) and lines[0].startswith("CBS        - SME        R@1 : +10.0 ± 0.0")
    heads = clustering.head_lines(ablation, {"CBS, cosine head": runs([0.7, 0.8, 0.9], [1, 1, 1]),
                                             "SME, self in denominator": runs([0.5, 0.6, 0.7], [1, 1, 1])})
    assert heads[0].startswith("CBS, cosine head             - CBS: R@1") and "- SME: R@1" in heads[1]
    times = clustering.time_lines(ablation, {"SME": 10, "only L_rim": 10, "CBS": 20, "CBSwR": 40})
    assert times[2] == "CBS       : 3.00x SME here, 2.00x in the paper"


@pytest.mark.parametrize("method", ["CBSwR", "SME"])
def test_a_longer_search_trial_goes_on_from_the_shorter_ones_last_state_to_the_run_from_the_start(method, tmp_path,
                                                                                                monkeypatch):
    """The search's next length (experiment.run_one's ``after``) for an unsupervised trial: 4 epochs gone on from
    the kept state of 2 end where 4 epochs from the start do (the R@1 curve, the embeddings)."""
    import dataclasses

    from dml_tutorial.spec import RunSpec

    digits = data.load_dataset("digits", split="classes")
    splits = dataclasses.replace(digits, train=digits.train.subset(range(96)), test=digits.test.subset(range(60)))
    run = clustering.run_spec({"validation": splits}, "cpu")
    cfg = profiles.settings("cbswr", "smoke").replace(epochs=2, batch_size=32, eval_every=2, threads=1, k=8, dim=16)
    short = RunSpec("search", method, method, cfg, column=2, split="validation", options={"curve": "R@1"}, seed=3)
    long = dataclasses.replace(short, settings=cfg.replace(epochs=4), column=4)
    steps = []
    monkeypatch.setattr(train, "record_training", lambda name, n, seconds, cached=False: steps.append(n))
    whole = experiment.run_one(long, run, cache=tmp_path / "whole")
    experiment.run_one(short, run, cache=tmp_path / "on", keep=True)
    on = experiment.run_one(long, run, cache=tmp_path / "on", after=short)
    assert steps == [12, 6, 6]  # 3 batches an epoch: 4 epochs, 2, then the 2 new ones
    assert [(r["epoch"], r.get("R@1"), r["loss"]) for r in on.history.records] == \
        [(r["epoch"], r.get("R@1"), r["loss"]) for r in whole.history.records]
    assert [r["epoch"] for r in on.history.records if "R@1" in r] == [2, 4]
    assert torch.equal(on.test_embeddings, whole.test_embeddings)
