import StrataConformanceWorker
import StrataPostgres

// The conformance suite's second process for the PostgreSQL backend.
ConformanceWorker.main([PostgresStoreFactory()])
