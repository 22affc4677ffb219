import Foundation
import StrataCore
import StrataLMDB
import StrataSQLite

// A second process for the history tests, on a store the test created (history tracked):
//   strata-worker insert sqlite|lmdb PATH ENTITY KEY VALUE
// saves one ENTITY whose string attribute KEY is VALUE (every other attribute its initial value) as
// author "worker", and prints the transaction's history token. Exit 0 on success, 1 with one line on
// standard error otherwise.

func fail(_ message: String) -> Never {
  FileHandle.standardError.write(Data("strata-worker: \(message)\n".utf8))
  exit(1)
}

let arguments = CommandLine.arguments
guard arguments.count == 7, arguments[1] == "insert" else {
  fail("usage: strata-worker insert sqlite|lmdb PATH ENTITY KEY VALUE")
}
let (type, url, entityName, key, value) = (
  arguments[2], URL(fileURLWithPath: arguments[3]), arguments[4], arguments[5], arguments[6]
)
do {
  let options = StoreOptions(tracksHistory: true)
  let store: any PersistentStore =
    switch type {
    case "sqlite": try SQLiteStore(url: url, model: nil, options: options)
    case "lmdb": try LMDBStore(url: url, model: nil, options: options)
    default: fail("unknown store type '\(type)'")
    }
  defer { store.close() }
  let entity = try store.model.requireEntity(entityName)
  let change = ObjectChange(
    objectID: .makeTemporary(entityName: entity.name),
    attributes: entity.attributes.map { $0.name == key ? .string(value) : $0.initialValue },
    toOne: entity.toOneRelationships.map { _ in nil })
  let result = try store.save(ChangeSet(inserted: [change], author: "worker", contextName: "worker"))
  guard let token = result.historyToken else { fail("the save recorded no history token") }
  print(token)
} catch {
  fail("\(error)")
}
