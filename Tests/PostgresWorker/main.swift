import Foundation
import StrataConformanceWorker
import StrataPostgres
import StrataStoreKit

/// The suite hands the worker a store's location as a file path (`/database/schema`); this factory turns
/// it back into a URI on the test server named by `STRATA_POSTGRES_URI` (host, user, …).
struct WorkerPostgresFactory: PersistentStoreFactory {
  let factory = PostgresStoreFactory()
  var storeType: StoreType { .postgres }
  var requiresLocation: Bool { true }

  func openStore(at url: URL?, model: ObjectModel?, options: StoreOptions) throws -> any PersistentStore {
    try factory.openStore(at: url.map(serverURL), model: model, options: options)
  }

  func destroyStore(at url: URL) throws { try factory.destroyStore(at: serverURL(url)) }

  private func serverURL(_ url: URL) -> URL {
    guard url.isFileURL, let base = ProcessInfo.processInfo.environment["STRATA_POSTGRES_URI"],
      var components = URLComponents(string: base)
    else { return url }
    components.path = url.path
    return components.url ?? url
  }
}

ConformanceWorker.main([WorkerPostgresFactory()])
