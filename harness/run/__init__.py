"""One run of a scenario: the runner, the recording of its workload, the nemesis and its schedule,
the replica logs read back, and the run directory; the matrix and the kept cluster that runs share."""
