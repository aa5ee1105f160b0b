"""Bring every committed run file up to the current record schema, in place; idempotent (a file already converted is
left as it is). Re-runs nothing: it moves what a file holds, it never recomputes a number.

    python data/migrate_records.py           # convert data/results/*/*.json and notebooks/*.results.json
    python data/migrate_records.py --check   # exit 1 if any file would change

The steps, oldest first:

- **0.22.0, choices beside settings.** A run file's ``settings`` were the profile's settings as the notebook held them
  when it recorded its first table, and two chapters had written a choice of their own into them: CBSwR its cluster
  head (``head``, chosen on held-out characters where the profile has ``head_candidates``) and the noise chapter its
  learning rate (``lr``, chosen where the profile has ``lr_candidates``). Settings are typed and frozen now
  (:mod:`dml_tutorial.settings`), and a run's choices are recorded under ``choices``, beside them. This step moves
  those two values into ``choices`` and puts back the profile's own value of the setting (``lr``: the value the
  profile held, which the file's own search table confirms was replaced; ``head``: not a setting of those
  profiles, so removed).
- **0.22.0, table ids.** The tables that claims and code read are declared in :mod:`dml_tutorial.tables`, each with
  a constant id, and a chapter records them under it (``"id"`` beside the ``"table"`` title), so that claims find
  them by id, not by an English title a page may reword. This step adds the id to every recorded table whose title
  is a declared table's (run again when a table is declared later: CBSwR's Table 4, ``cbswr.clusters``, 2026-12-05,
  for the K claim registered before test bed II's re-run; ECAML's Table 2, ``ecaml.dims``, the same day, for its
  embedding-size claim).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def choices_beside_settings(run: dict) -> dict:
    """The 0.22.0 step on one run file (a copy; the same content when there is nothing to move)."""
    run = json.loads(json.dumps(run))
    settings, choices = run.get("settings", {}), dict(run.get("choices", {}))
    if run.get("chapter") == "cbswr" and settings.get("head_candidates") and "head" in settings \
            and "head" not in choices:  # a file written since 0.22.0 records its head among its choices
        choices["head"] = settings.pop("head")
    if run.get("chapter") == "noise_guarantees" and settings.get("lr_candidates") and "lr" not in choices:
        searched = [t for t in run["tables"] if t["table"].startswith("The learning rate on the validation classes")]
        if searched:  # the profile's rate was replaced by the search's choice
            from dml_tutorial import profiles

            choices["lr"] = settings["lr"]
            settings["lr"] = profiles.settings(run["chapter"], run["profile"]).lr
    if choices != run.get("choices", {}):  # something moved: the file predates 0.22.0
        keys = list(run)  # ``choices`` right after ``settings``, as report.run_file writes it
        run = {k: run[k] for k in keys[: keys.index("settings") + 1] if k != "choices"} | {"choices": choices} | {
            k: run[k] for k in keys[keys.index("settings") + 1:] if k != "choices"}
    return run


def table_ids(run: dict) -> dict:
    """The table-ids step on one run file (a copy): ``"id"`` right after ``"table"`` in each declared table."""
    from dml_tutorial.tables import id_of

    run = json.loads(json.dumps(run))
    for i, t in enumerate(run.get("tables", [])):
        if "id" not in t and (found := id_of(t["table"])):
            run["tables"][i] = {"table": t["table"], "id": found, **{k: v for k, v in t.items() if k != "table"}}
    return run


STEPS = (choices_beside_settings, table_ids)


def files(root: Path = ROOT) -> list[Path]:
    return sorted((root / "data" / "results").glob("*/*.json")) + sorted((root / "notebooks").glob("*.results.json"))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if a file would change")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    changed = []
    for path in files():
        if path.name == "registration.json":
            continue
        run = json.loads(path.read_text())
        new = run
        for step in STEPS:
            new = step(new)
        if new != run or list(new) != list(run):
            changed.append(path)
            if not args.check:
                path.write_text(json.dumps(new, indent=1) + "\n")
    for path in changed:
        print(f"{'would convert' if args.check else 'converted'} {path.relative_to(ROOT)}")
    print(f"{len(changed)} of {len(files())} files {'to convert' if args.check else 'converted'}")
    return 1 if args.check and changed else 0


if __name__ == "__main__":
    sys.exit(main())
