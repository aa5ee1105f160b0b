"""dml_tutorial: the support package of *Deep Metric Learning, Reproduced*.

One concept per module: ``data``, ``noise``, ``sampling``, ``distances``, ``losses``, ``models``, ``train``,
``metrics``, ``plots``, ``profiles``. Notebooks call these; they hold no copies of the logic.
"""

__version__ = "0.31.1"
