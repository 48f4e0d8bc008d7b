"""The gate: the scenario model, the runner, profiles, selection and shards, deviations, cross sequences, differential, regressions."""
