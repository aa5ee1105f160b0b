"""The colab profiles' estimated time on a T4, per chapter, with what the plan counts besides training: the JPEG
decodes (both splits once with ``decode_once``, against every batch and evaluation pass through the JPEG loader) and
the images the evaluations embed. An estimate from settings, not a run: no T4 is available to this course's CI.

    python benchmarks/bench_colab_plan.py

Training: the plan's images per backbone at the H100's measured speed (results/train_step_cuda.json) divided by
``profiles.T4_ESTIMATE["slower_than_h100"]``; an evaluation's forward pass taken as a third of a training step;
decoding at ``plan.JPEG_PER_SECOND`` per loader process, times the profile's two workers; the JPEG loader's decoding
overlaps the training and counts only where it takes longer (:meth:`dml_tutorial.plan.Reading.seconds`). Writes
results/colab_plan.json.
"""

import json
from pathlib import Path

from dml_tutorial import plan, profiles

RESULTS = Path(__file__).parent / "results"


def estimate(chapter: str, h100: dict, **changes) -> dict:
    cfg = profiles.settings(chapter, "colab", changes)
    n = plan.TRAIN_IMAGES[cfg["dataset"]]
    trainings = plan.GRIDS[chapter](cfg, n)
    key = "bf16_channels_last_images_per_s" if cfg.get("amp") else "fp32_images_per_s"
    speed = {m: h100[m][key] / profiles.T4_ESTIMATE["slower_than_h100"] for m in {t.model for t in trainings} & set(h100)}
    training = sum(t.images / speed[t.model] for t in trainings if t.model in speed)
    reading = plan.reading(cfg, trainings, n, 1 / (3 * speed[cfg["model"]]), root="/nonexistent")
    return {"training_min": training / 60, "jpeg_decodes": reading.decoded + reading.jpeg,
            "images_embedded": reading.evaluated, "reading_min": reading.seconds(training) / 60,
            "total_min": (training + reading.seconds(training)) / 60}


def main():
    h100 = {r["model"]: r for r in json.loads((RESULTS / "train_step_cuda.json").read_text())["rows"]}
    rows = {}
    for chapter in ("cbswr", "eps", "ecaml", "noise_guarantees", "bench"):
        rows[chapter] = {"decode_once": estimate(chapter, h100),
                         "jpeg_loader": estimate(chapter, h100, decode_once=False, curve_samples=5000)}
        for how, r in rows[chapter].items():
            print(f"{chapter:17s} {how:12s} training {r['training_min']:5.1f} min, {r['jpeg_decodes']:>8,} JPEG "
                  f"decodes, {r['images_embedded']:>8,} embedded: reading {r['reading_min']:5.1f} min, in all "
                  f"{r['total_min']:5.1f} min")
    out = RESULTS / "colab_plan.json"
    out.write_text(json.dumps({"what": __doc__.split("\n\n")[0], "jpeg_per_second_per_worker": plan.JPEG_PER_SECOND,
                               "t4_slower_than_h100": profiles.T4_ESTIMATE["slower_than_h100"], "rows": rows},
                              indent=1) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
