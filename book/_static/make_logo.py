"""Draw the book's logo and favicon: five classes of points on the unit circle, pulled into tight clusters, the
picture every chapter is about. Run it once (``python book/_static/make_logo.py``); the PNGs are committed."""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import seaborn as sns  # noqa: E402

HERE = Path(__file__).resolve().parent


def draw(size_px: int, points: int, path: Path, dot: float, ring: bool = True):
    rng = np.random.default_rng(0)
    colours = sns.color_palette("colorblind", 5)
    fig = plt.figure(figsize=(1, 1), dpi=size_px)
    ax = fig.add_axes((0, 0, 1, 1))
    if ring:
        ax.add_patch(plt.Circle((0, 0), 1, fill=False, lw=1.2, color="0.6"))
    for k, colour in enumerate(colours):
        angle = 2 * np.pi * k / 5 + np.pi / 2 + rng.normal(0, 0.12, points)
        ax.scatter(np.cos(angle), np.sin(angle), s=dot ** 2, color=colour, linewidths=0)  # dot: diameter in points
    ax.set(xlim=(-1.25, 1.25), ylim=(-1.25, 1.25), aspect="equal")
    ax.axis("off")
    fig.savefig(path, transparent=True)
    plt.close(fig)


if __name__ == "__main__":
    draw(400, 14, HERE / "logo.png", dot=6)
    draw(64, 1, HERE / "favicon.png", dot=16, ring=False)
