import Foundation
import StrataCore

/// Where a wrapper's slot leads in an entity.
enum SlotTarget {
  case attribute(Int)
  case toOne(Int)
  case toMany(Int)
  case none
}

/// What a subclass declares, read once from a prototype: each wrapper's name and declaration by slot.
final class ClassLayout: @unchecked Sendable {
  let objectClass: ManagedObject.Type
  /// The number of property wrappers an instance initializes.
  let wrapperCount: Int32
  /// Names by slot.
  let names: [String]
  /// Declarations by slot.
  let declarations: [PrototypeCollector.Declaration]

  private init(objectClass: ManagedObject.Type, names: [String], declarations: [PrototypeCollector.Declaration]) {
    self.objectClass = objectClass
    self.names = names
    self.declarations = declarations
    self.wrapperCount = Int32(names.count)
  }

  func name(ofSlot slot: Int32) -> String? {
    names.indices.contains(Int(slot)) ? names[Int(slot)] : nil
  }

  func declaration(ofSlot slot: Int32) -> PrototypeCollector.Declaration? {
    declarations.indices.contains(Int(slot)) ? declarations[Int(slot)] : nil
  }

  private static let cache = Locked<[ObjectIdentifier: ClassLayout]>([:])

  /// The layout of `type`, built once from a prototype instance.
  static func of(_ type: ManagedObject.Type) -> ClassLayout {
    if let layout = cache.withLock({ $0[ObjectIdentifier(type)] }) { return layout }
    let state = SlotState.current
    let savedCounter = state.counter
    let savedCollector = state.collector
    let collector = PrototypeCollector()
    state.counter = 0
    state.collector = collector
    let prototype = type.init(ObjectConstruction(kind: .prototype(nil)))
    state.collector = savedCollector
    state.counter = savedCounter

    var namesBySlot: [Int32: String] = [:]
    var mirror: Mirror? = Mirror(reflecting: prototype)
    while let current = mirror {
      for child in current.children {
        guard let label = child.label, label.hasPrefix("_"), let carrier = child.value as? any SlotCarrying else {
          continue
        }
        namesBySlot[carrier.slot] = String(label.dropFirst())
      }
      mirror = current.superclassMirror
    }
    let count = Int32(collector.declarations.count)
    var names: [String] = []
    var declarations: [PrototypeCollector.Declaration] = []
    for slot in 0..<count {
      guard let name = namesBySlot[slot], let declaration = collector.declarations[slot] else { continue }
      names.append(name)
      declarations.append(declaration)
    }
    let layout = ClassLayout(objectClass: type, names: names, declarations: declarations)
    return cache.withLock { cache in
      if let existing = cache[ObjectIdentifier(type)] { return existing }
      cache[ObjectIdentifier(type)] = layout
      return layout
    }
  }

  /// A fresh prototype that records the names of the properties read from it.
  static func prototype(of type: ManagedObject.Type) -> ManagedObject {
    let layout = of(type)
    let state = SlotState.current
    let saved = state.counter
    state.counter = 0
    let prototype = type.init(ObjectConstruction(kind: .prototype(layout)))
    state.counter = saved
    return prototype
  }

  /// The entity this class declares.
  func entityDescription() -> EntityDescription {
    var attributes: [AttributeDescription] = []
    var relationships: [RelationshipDescription] = []
    var unique: [[String]] = []
    for (name, declaration) in zip(names, declarations) {
      switch declaration {
      case .attribute(let type, let isOptional, let options, let defaultValue, let derivation, let validation):
        attributes.append(
          AttributeDescription(
            name: name, type: type, isOptional: isOptional, defaultValue: defaultValue,
            isTransient: options.contains(.transient), derivation: derivation, isIndexed: options.contains(.indexed),
            preservesValueInHistoryOnDeletion: options.contains(.preserveValueOnDeletion), validation: validation))
        if options.contains(.unique) { unique.append([name]) }
      case .relationship(let destination, let isToMany, let inverse, let deleteRule, let isOptional, let minCount, let maxCount):
        relationships.append(
          RelationshipDescription(
            name: name, destination: destination.entityName, inverse: inverse, isToMany: isToMany,
            isOptional: isOptional, deleteRule: deleteRule, minCount: minCount, maxCount: maxCount))
      }
    }
    return EntityDescription(
      name: objectClass.entityName, attributes: attributes, relationships: relationships,
      uniquenessConstraints: unique + objectClass.uniquenessConstraints, indexes: objectClass.indexes)
  }
}

/// Implemented by the property wrappers so a prototype's mirror can find their slots.
protocol SlotCarrying {
  var slot: Int32 { get }
}

extension Attribute: SlotCarrying {}
extension Relationship: SlotCarrying {}

/// An entity of a container's model together with the class that represents it.
final class EntityInfo: @unchecked Sendable {
  let entity: EntityDescription
  let objectClass: ManagedObject.Type
  let layout: ClassLayout
  /// Where each slot of `objectClass` leads in `entity`.
  let slotTargets: [SlotTarget]
  let toManyIndex: [String: Int]
  let hasTransientAttributes: Bool
  /// The attribute values of a newly inserted object.
  let initialValues: [Value]
  let emptyToOne: [ObjectID?]

  init(entity: EntityDescription, objectClass: ManagedObject.Type) {
    self.entity = entity
    hasTransientAttributes = entity.attributes.contains(where: \.isTransient)
    initialValues = entity.attributes.map(\.initialValue)
    emptyToOne = Array(repeating: nil, count: entity.toOneRelationships.count)
    self.objectClass = objectClass
    layout = objectClass == ManagedObject.self ? ClassLayout.of(ManagedObject.self) : ClassLayout.of(objectClass)
    let toManyIndex = Dictionary(
      entity.toManyRelationships.enumerated().map { ($1.name, $0) }, uniquingKeysWith: { a, _ in a })
    self.toManyIndex = toManyIndex
    slotTargets = layout.names.map { name in
      switch entity.property(named: name) {
      case .attribute(_, let index): .attribute(index)
      case .toOne(_, let index): .toOne(index)
      case .toMany(let rel): toManyIndex[rel.name].map(SlotTarget.toMany) ?? .none
      case nil: .none
      }
    }
  }
}

/// Records the property names read from a prototype, to turn a Swift key path into a model key path.
final class KeyPathRecorder {
  var names: [String] = []
  var failed = false

  func record(_ name: String?) {
    if let name { names.append(name) } else { failed = true }
  }
}

enum KeyPathNames {
  /// Key paths are immutable values, so sharing them between threads is safe.
  private struct Key: Hashable, @unchecked Sendable {
    let keyPath: AnyKeyPath
  }

  private static let cache = Locked<[Key: String]>([:])

  /// The model key path (`director.name`) of a Swift key path (`\Movie.director?.name`), or a
  /// placeholder that the store rejects with a clear error when the path does not go through
  /// `@Attribute` / `@Relationship` properties.
  static func name<Root: ManagedObject>(of keyPath: PartialKeyPath<Root>) -> String {
    if let name = cache.withLock({ $0[Key(keyPath: keyPath)] }) { return name }
    let prototype = ClassLayout.prototype(of: Root.self)
    let recorder = KeyPathRecorder()
    prototype.recorder = recorder
    guard let root = prototype as? Root else { return "<\(keyPath)>" }
    _ = root[keyPath: keyPath]
    let name =
      recorder.failed || recorder.names.isEmpty
      ? "<key path \(keyPath) is not an @Attribute or @Relationship property>"
      : recorder.names.joined(separator: ".")
    cache.withLock { $0[Key(keyPath: keyPath)] = name }
    return name
  }
}

extension ObjectModel {
  /// Derives a model from `ManagedObject` subclasses: one entity per class, named by its `entityName`.
  ///
  /// ```swift
  /// let model = try ObjectModel(Movie.self, Director.self)
  /// ```
  /// - Throws: `.invalidModel` when the classes do not form a consistent model (for example an inverse
  ///   that does not point back).
  public init(_ types: ManagedObject.Type..., fetchRequestTemplates: [String: FetchDescription] = [:]) throws {
    try self.init(types: types, fetchRequestTemplates: fetchRequestTemplates)
  }

  /// Derives a model from `ManagedObject` subclasses; see ``init(_:fetchRequestTemplates:)``.
  public init(types: [ManagedObject.Type], fetchRequestTemplates: [String: FetchDescription] = [:]) throws {
    try self.init(
      entities: types.map { ClassLayout.of($0).entityDescription() }, fetchRequestTemplates: fetchRequestTemplates)
  }
}
