"""Named suites of the scenario catalogue (scenarios/), apart from the matrix runner that runs them,
so the command line can name them without importing the runner and its dependencies."""

# The quick suite: the safe configuration clean, a known loss, and power loss without and with ELR (~4 min).
QUICK = ["smoke", "acks1-leader-kill", "power-loss", "power-loss@4.4.0:kraft"]
