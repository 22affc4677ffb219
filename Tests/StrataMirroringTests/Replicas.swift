import Foundation
import Strata
import StrataLMDB
import StrataMemory
import StrataMirroring
import StrataSQLite
import Testing

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

/// The mirrored model of the tests: the classes' entities plus the mirror's additions.
let orchardModel: ObjectModel = {
  do {
    return try MirrorModel.adding(to: ObjectModel(Crate.self, Apple.self))
  } catch {
    preconditionFailure("the test model is invalid: \(error)")
  }
}()

enum ReplicaStore: String, CaseIterable, Sendable {
  case memory, sqlite, lmdb
}

/// One replica: a container on a local store of its own and its mirror.
struct Replica {
  let container: PersistentContainer
  let mirror: StoreMirror
  /// The classes of the model's entities.
  let types: [ManagedObject.Type]
  var context: ObjectContext { container.viewContext }

  /// `notifying` opens the store with remote change notifications (how automatic sync hears of saves
  /// without looking at the history token). `model` is the orchard's unless given, with `types` its classes.
  init(
    _ store: ReplicaStore, hub: any MirrorHub, in directory: URL, name: String, notifying: Bool = false,
    model: ObjectModel = orchardModel, types: [ManagedObject.Type] = [Crate.self, Apple.self]
  ) throws {
    let registry = StoreRegistry([MemoryStoreFactory(), SQLiteStoreFactory(), LMDBStoreFactory()])
    self.types = types
    container = PersistentContainer(name: name, model: model, types: types, registry: registry)
    let options = StoreOptions(tracksHistory: true, postsRemoteChangeNotifications: notifying)
    switch store {
    case .memory: container.storeDescriptions = [StoreDescription(type: .memory, options: options)]
    case .sqlite:
      container.storeDescriptions = [
        StoreDescription(type: .sqlite, url: directory.appending(path: "\(name).sqlite"), options: options)
      ]
    case .lmdb:
      container.storeDescriptions = [
        StoreDescription(type: .lmdb, url: directory.appending(path: "\(name).lmdb"), options: options)
      ]
    }
    try container.loadPersistentStores()
    mirror = try StoreMirror(container: container, hub: hub)
  }

  func crates() throws -> [Crate] { try context.fetch(FetchRequest<Crate>()) }

  /// How many transactions of the local history the mirror itself wrote (pulls).
  func mirrorTransactions() throws -> Int {
    guard case .transactions(let all) = try context.execute(.fetchHistory(after: nil)) else { return 0 }
    return all.filter { $0.author == StoreMirror.author }.count
  }
  func apples() throws -> [Apple] { try context.fetch(FetchRequest<Apple>()) }

  func crate(labelled label: String) throws -> Crate {
    try #require(try crates().first { $0.label == label }, "no crate labelled \(label)")
  }

  func apple(_ variety: String) throws -> Apple {
    try #require(try apples().first { $0.variety == variety }, "no apple \(variety)")
  }

  /// Every object by global identity with its fields as they travel: attributes, to-one targets, and the
  /// lists of the to-many relationships that travel — an ordered one whose inverse is to-one in its order,
  /// the side of a many-to-many pair that owns its join table (sorted by identity unless ordered) — as the
  /// store holds them now (the view context is refreshed first).
  func canonicalDump() throws -> [UUID: [String: MirrorField]] {
    context.refreshAllObjects()
    let model = container.model
    var dump: [UUID: [String: MirrorField]] = [:]
    for type in types {
      for object in try context.fetch(FetchRequest<ManagedObject>(entityName: type.entityName)) {
        guard let id = try mirror.globalID(of: object) else {
          Issue.record("\(object.objectID) has no global identity after a sync")
          continue
        }
        var fields: [String: MirrorField] = [:]
        for attribute in object.entity.attributes where attribute.name != MirrorModel.identityAttribute {
          fields[attribute.name] = .value(object.primitiveValue(forKey: attribute.name) ?? .null)
        }
        for relationship in object.entity.toOneRelationships {
          let target = object.value(forKey: relationship.name) as? ManagedObject
          fields[relationship.name] = .reference(try target.flatMap { try mirror.globalID(of: $0) })
        }
        for relationship in object.entity.toManyRelationships {
          guard let inverse = model.inverse(of: relationship) else { continue }
          if !inverse.isToMany && relationship.isOrdered {
            let members = object.value(forKey: relationship.name) as? [ManagedObject] ?? []
            fields[relationship.name] = .references(try members.compactMap { try mirror.globalID(of: $0) })
          } else if inverse.isToMany,
            model.joinTableOwner(of: object.entity.name, relationship).relationship == relationship.name,
            model.joinTableOwner(of: object.entity.name, relationship).entity == object.entity.name
          {
            let members =
              relationship.isOrdered
              ? object.value(forKey: relationship.name) as? [ManagedObject] ?? []
              : Array(object.value(forKey: relationship.name) as? Set<ManagedObject> ?? [])
            let ids = try members.compactMap { try mirror.globalID(of: $0) }
            fields[relationship.name] = .references(relationship.isOrdered ? ids : ids.sorted { $0.uuidString < $1.uuidString })
          }
        }
        dump[id] = fields
      }
    }
    return dump
  }
}

/// The hub's live objects in the form of `Replica.canonicalDump()`.
func canonicalDump(of hub: any MirrorHub) -> [UUID: [String: MirrorField]] {
  (hub as? MemoryHub)?.ledger.liveObjects.mapValues(\.fields) ?? [:]
}

/// A fresh temporary directory, removed by the caller.
func temporaryDirectory() throws -> URL {
  let url = FileManager.default.temporaryDirectory.appending(path: "strata-mirror-\(UUID().uuidString)")
  try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
  return url
}
