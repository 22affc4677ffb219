import LoggingStore
import StrataConformanceWorker
import StrataSQLite

ConformanceWorker.main([LoggingStoreFactory(wrapping: SQLiteStoreFactory(), log: .standardError)])
