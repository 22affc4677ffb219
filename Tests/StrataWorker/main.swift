import StrataConformanceWorker
import StrataLMDB
import StrataSQLite

// A worker waits out other processes' locks longer than an app would: tests start several at once on
// a loaded machine (under ThreadSanitizer, several times slower).
ConformanceWorker.main([SQLiteStoreFactory(busyTimeout: .seconds(60)), LMDBStoreFactory()])
