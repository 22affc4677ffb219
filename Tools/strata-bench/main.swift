// strata-bench: Strata against raw SQLite, LMDB and PostgreSQL loops, scenario by scenario, in one run.
await StrataBench.start()
