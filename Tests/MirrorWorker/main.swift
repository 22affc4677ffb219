// A replica in a process of its own, for the mirror's kill tests (Tests/StrataMirroringTests/MirrorKillTests):
//
//   mirror-worker sqlite|lmdb PATH URI SCHEMA LABEL TRANSACTIONS PULL-BATCH
//
// opens (or creates) the replica at PATH on the PostgreSQL hub in SCHEMA of URI, saves TRANSACTIONS local
// transactions (each a crate "LABEL i" holding one apple), prints `saved N`, then syncs once, pulling
// PULL-BATCH entries per local transaction, and prints `synced pushed P pulled Q` (exit 0) or
// `sync failed: reason` (exit 3). STRATA_MIRROR_FAILPOINT stops or pauses it at a durable step of the sync
// (exit 86 when it stops it). The crate and apple classes are the tests' (Replicas.swift), field for field.
import Foundation
import Strata
import StrataLMDB
import StrataMirroring
import StrataPostgresHub
import StrataSQLite

final class Crate: ManagedObject {
  @Attribute var label: String
  @Attribute var note: String?
  @Relationship(inverse: "crate", deleteRule: .cascade) var apples: Set<Apple>
}

final class Apple: ManagedObject {
  @Attribute var variety: String
  @Attribute var weight: Int64
  @Relationship(inverse: "apples") var crate: Crate?
}

func fail(_ message: String, status: Int32 = 2) -> Never {
  FileHandle.standardError.write(Data("mirror-worker: \(message)\n".utf8))
  exit(status)
}

func say(_ line: String) {
  FileHandle.standardOutput.write(Data("\(line)\n".utf8))
}

let arguments = Array(CommandLine.arguments.dropFirst())
guard arguments.count == 7, let count = Int(arguments[5]), let batch = Int(arguments[6]),
  let type = ["sqlite": StoreType.sqlite, "lmdb": .lmdb][arguments[0]]
else {
  fail("usage: mirror-worker sqlite|lmdb PATH URI SCHEMA LABEL TRANSACTIONS PULL-BATCH", status: 64)
}
let (path, uri, schema, label) = (arguments[1], arguments[2], arguments[3], arguments[4])

do {
  let model = try MirrorModel.adding(to: ObjectModel(Crate.self, Apple.self))
  let registry = StoreRegistry([SQLiteStoreFactory(busyTimeout: .seconds(60)), LMDBStoreFactory()])
  let container = PersistentContainer(name: "worker", model: model, types: [Crate.self, Apple.self], registry: registry)
  container.storeDescriptions = [
    StoreDescription(type: type, url: URL(fileURLWithPath: path), options: StoreOptions(tracksHistory: true))
  ]
  try container.loadPersistentStores()
  let hub = try PostgresHub(uri: uri, schema: schema, model: model)
  let mirror = try StoreMirror(container: container, hub: hub, pullBatchSize: batch)
  let context = container.newBackgroundContext()
  try context.performAndWait {
    for i in 0..<count {
      let crate = Crate(context: context)
      crate.label = "\(label) \(i)"
      let apple = Apple(context: context)
      apple.variety = "\(label) apple \(i)"
      apple.weight = Int64(i)
      apple.crate = crate
      try context.save()
    }
  }
  say("saved \(count)")
  do {
    let report = try await mirror.sync()
    say("synced pushed \(report.pushed) pulled \(report.pulled)")
  } catch {
    say("sync failed: \(error)")
    exit(3)
  }
} catch {
  fail("\(error)")
}
