import os

import matplotlib

matplotlib.use("Agg")
os.environ.setdefault("DRLJAX_BUDGET", "tiny")
