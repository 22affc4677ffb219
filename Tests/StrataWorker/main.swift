import StrataConformanceWorker
import StrataLMDB
import StrataSQLite

ConformanceWorker.main([SQLiteStoreFactory(), LMDBStoreFactory()])
