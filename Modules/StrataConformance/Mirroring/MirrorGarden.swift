import Foundation
import Strata
import StrataMirroring
import Testing

/// A bed of the mirroring area: a unique name, an ordered list of plants that a Deny rule keeps.
final class MirrorBed: ManagedObject {
  @Attribute(.unique) var name: String
  @Attribute var note: String?
  @Relationship(inverse: "bed", deleteRule: .deny) var plants: [MirrorPlant]
}

/// A plant of the mirroring area: in at most one bed, with any number of pests (many-to-many).
final class MirrorPlant: ManagedObject {
  @Attribute var name: String
  @Attribute var height: Int64
  @Relationship(inverse: "plants") var bed: MirrorBed?
  @Relationship(inverse: "plants") var pests: Set<MirrorPest>
}

/// A pest of the mirroring area, on any number of plants.
final class MirrorPest: ManagedObject {
  @Attribute var name: String
  @Relationship(inverse: "pests") var plants: Set<MirrorPlant>
}

/// Two replicas on stores of the backend under test, mirrored through one in-memory hub.
final class MirrorGarden {
  static let types: [ManagedObject.Type] = [MirrorBed.self, MirrorPlant.self, MirrorPest.self]

  let hub: MemoryHub
  let a: GardenReplica
  let b: GardenReplica

  /// `pullBatchSize` is the replicas' (1: every hub entry is applied in a local save of its own); the hub
  /// settles conflicts by `policies`.
  init(_ backend: ConformanceBackend, pullBatchSize: Int = 500, policies: MirrorPolicies = .standard) throws {
    let model = try MirrorModel.adding(to: ObjectModel(types: Self.types))
    hub = MemoryHub(model: model, policies: policies)
    a = try GardenReplica(backend, model: model, hub: hub, pullBatchSize: pullBatchSize)
    b = try GardenReplica(backend, model: model, hub: hub, pullBatchSize: pullBatchSize)
  }

  /// Syncs `replicas` in turn.
  func sync(_ replicas: GardenReplica...) async throws {
    for replica in replicas { _ = try await replica.mirror.sync() }
  }

  /// Syncs A, B, A (every change of both reaches both), then checks that both replicas and the hub hold
  /// identical objects.
  func converge() async throws {
    try await sync(a, b, a)
    let (left, right) = (try a.dump(), try b.dump())
    #expect(left == right, "the replicas differ after a full round")
    #expect(left == hub.ledger.liveObjects.mapValues(\.fields), "replica A differs from the hub")
  }

  /// The conflicts the hub recorded, by kind.
  func conflicts(_ kind: MirrorConflict.Kind) async throws -> [MirrorConflict] {
    try await hub.conflicts().filter { $0.kind == kind }
  }
}

/// One replica of the mirroring area: a container on a fresh store of the backend, and its mirror.
final class GardenReplica {
  let container: PersistentContainer
  let mirror: StoreMirror
  var context: ObjectContext { container.viewContext }

  init(_ backend: ConformanceBackend, model: ObjectModel, hub: MemoryHub, pullBatchSize: Int) throws {
    container = PersistentContainer(
      name: "MirrorGarden", model: model, types: MirrorGarden.types, registry: StoreRegistry([backend.factory]))
    container.storeDescriptions = [
      StoreDescription(
        type: backend.factory.storeType, url: try backend.makeLocation(), options: StoreOptions(tracksHistory: true))
    ]
    try container.loadPersistentStores()
    mirror = try StoreMirror(container: container, hub: hub, pullBatchSize: pullBatchSize)
  }

  func beds() throws -> [MirrorBed] { try context.fetch(FetchRequest<MirrorBed>()) }
  func plants() throws -> [MirrorPlant] { try context.fetch(FetchRequest<MirrorPlant>()) }
  func pests() throws -> [MirrorPest] { try context.fetch(FetchRequest<MirrorPest>()) }

  func bed(_ name: String) throws -> MirrorBed {
    try #require(try beds().first { $0.name == name }, "no bed \(name)")
  }

  func plant(_ name: String) throws -> MirrorPlant {
    try #require(try plants().first { $0.name == name }, "no plant \(name)")
  }

  func pest(_ name: String) throws -> MirrorPest {
    try #require(try pests().first { $0.name == name }, "no pest \(name)")
  }

  /// A new plant, in `bed` when one is given.
  @discardableResult
  func addPlant(_ name: String, height: Int64 = 1, in bed: MirrorBed? = nil) -> MirrorPlant {
    let plant = MirrorPlant(context: context)
    plant.name = name
    plant.height = height
    plant.bed = bed
    return plant
  }

  /// Every object by global identity with its fields as they travel: attributes, to-one targets, and the
  /// lists of ordered and many-to-many relationships (a list that is not ordered sorted by identity), as the
  /// store holds them now (the view context is refreshed first).
  func dump() throws -> [UUID: [String: MirrorField]] {
    // The view context does not merge the mirror's saves by itself: read what the store holds now.
    context.refreshAllObjects()
    var dump: [UUID: [String: MirrorField]] = [:]
    let objects: [ManagedObject] = try beds() as [ManagedObject] + plants() + pests()
    for object in objects {
      let id = try #require(try mirror.globalID(of: object), "\(object.objectID) has no global identity")
      var fields: [String: MirrorField] = [:]
      for attribute in object.entity.attributes where attribute.name != MirrorModel.identityAttribute {
        fields[attribute.name] = .value(object.primitiveValue(forKey: attribute.name) ?? .null)
      }
      for relationship in object.entity.toOneRelationships {
        let target = object.value(forKey: relationship.name) as? ManagedObject
        fields[relationship.name] = .reference(try target.flatMap { try mirror.globalID(of: $0) })
      }
      // The lists that travel: Bed.plants (ordered) and Pest.plants (the owner of the many-to-many pair).
      if let bed = object as? MirrorBed {
        fields["plants"] = .references(try bed.plants.compactMap { try mirror.globalID(of: $0) })
      }
      if let pest = object as? MirrorPest {
        let ids = try pest.plants.compactMap { try mirror.globalID(of: $0) }
        fields["plants"] = .references(ids.sorted { $0.uuidString < $1.uuidString })
      }
      dump[id] = fields
    }
    return dump
  }
}
