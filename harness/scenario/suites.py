"""Named suites of the scenario catalogue (scenarios/), apart from the matrix runner that runs them,
so the command line can name them without importing the runner and its dependencies."""

# The quick suite: power loss with ELR on the default version, the safe configuration clean, a known
# loss, and power loss without ELR. The default version's image is set-up's; 3.9.1's builds during
# the first run (images.Prefetch).
QUICK = ["power-loss@4.4.0:kraft", "smoke", "acks1-leader-kill", "power-loss"]
