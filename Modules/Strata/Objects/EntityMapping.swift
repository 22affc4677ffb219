import Foundation
internal import StrataStoreKit

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
  /// By attribute name: whether a stored value decodes as the property's Swift type (Codable and enum
  /// attributes only).
  private(set) var valueChecks: [String: any AttributeValue.Type] = [:]

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
    let savedCounter = SlotState.counter
    let savedCollector = SlotState.collector
    let collector = PrototypeCollector()
    SlotState.counter = 0
    SlotState.collector = collector
    let prototype = type.init(.prototype(nil))
    SlotState.collector = savedCollector
    SlotState.counter = savedCounter

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
    for (slot, check) in collector.valueChecks {
      if let name = namesBySlot[slot] { layout.valueChecks[name] = check }
    }
    return cache.withLock { cache in
      if let existing = cache[ObjectIdentifier(type)] { return existing }
      cache[ObjectIdentifier(type)] = layout
      return layout
    }
  }

  /// A fresh prototype that records the names of the properties read from it.
  static func prototype(of type: ManagedObject.Type) -> ManagedObject {
    let layout = of(type)
    let saved = SlotState.counter
    SlotState.counter = 0
    let prototype = type.init(.prototype(layout))
    SlotState.counter = saved
    return prototype
  }

  /// The managed-object superclass of this class, when it is a subclass of a subclass of
  /// ``ManagedObject``: its entity is this entity's parent.
  var parentClass: ManagedObject.Type? {
    guard let superclass = class_getSuperclassOf(objectClass), superclass != ManagedObject.self else { return nil }
    return superclass
  }

  /// The entity this class declares: its own properties, its superclass's entity as parent (the model
  /// adds what it inherits).
  func entityDescription() -> EntityDescription {
    var attributes: [AttributeDescription] = []
    var relationships: [RelationshipDescription] = []
    var unique: [[String]] = []
    let parent = parentClass
    let inherited = Set(parent.map { ClassLayout.of($0).names } ?? [])
    let parentConstraints = parent.map { $0.uniquenessConstraints } ?? []
    let parentIndexes = parent.map { $0.indexes } ?? []
    for (name, declaration) in zip(names, declarations) where !inherited.contains(name) {
      switch declaration {
      case .attribute(let type, let isOptional, let options, let defaultValue, let derivation, let validation, let originalName):
        attributes.append(
          AttributeDescription(
            name: name, type: type, isOptional: isOptional, defaultValue: defaultValue,
            isTransient: options.contains(.transient), derivation: derivation, isIndexed: options.contains(.indexed),
            preservesValueInHistoryOnDeletion: options.contains(.preserveValueOnDeletion), validation: validation,
            renamingIdentifier: originalName, allowsExternalBinaryDataStorage: options.contains(.externalStorage)))
        if options.contains(.unique) { unique.append([name]) }
      case .relationship(
        let destination, let isToMany, let inverse, let deleteRule, let isOptional, let minCount, let maxCount, let originalName,
        let isOrdered):
        relationships.append(
          RelationshipDescription(
            name: name, destination: destination.entityName, inverse: inverse, isToMany: isToMany,
            isOptional: isOptional, deleteRule: deleteRule, minCount: minCount, maxCount: maxCount,
            renamingIdentifier: originalName, isOrdered: isOrdered))
      }
    }
    return EntityDescription(
      name: objectClass.entityName, attributes: attributes, relationships: relationships,
      uniquenessConstraints: unique + objectClass.uniquenessConstraints.filter { !parentConstraints.contains($0) },
      indexes: objectClass.indexes.filter { !parentIndexes.contains($0) },
      renamingIdentifier: objectClass.originalEntityName, parentEntity: parent?.entityName,
      isAbstract: objectClass.isAbstract && parent?.isAbstract != true)
  }
}

/// Implemented by the property wrappers so a prototype's mirror can find their slots.
protocol SlotCarrying {
  var slot: Int32 { get }
}

/// The superclass of a managed-object class, as a managed-object class.
private func class_getSuperclassOf(_ type: ManagedObject.Type) -> ManagedObject.Type? {
  _getSuperclass(type) as? ManagedObject.Type
}

extension Attribute: SlotCarrying {}
extension Relationship: SlotCarrying {}

/// An entity of a container's model together with the class that represents it.
@usableFromInline
final class EntityInfo: @unchecked Sendable {
  let entity: EntityDescription
  let objectClass: ManagedObject.Type
  let layout: ClassLayout
  /// Where each slot of `objectClass` leads in `entity`.
  let slotTargets: [SlotTarget]
  /// By slot of `objectClass`: the index of the attribute it declares, or -1. Read by the inlined
  /// attribute getters, which need no more than this of `slotTargets`.
  @usableFromInline let attributeIndexBySlot: [Int]
  let toManyIndex: [String: Int]
  let hasTransientAttributes: Bool
  /// The positions of the transient attributes.
  let transientIndices: [Int]
  /// The attribute values of a newly inserted object.
  let initialValues: AttributeValues
  /// Whether no initial value holds a reference (nil, numbers, dates, UUIDs, the empty string or data): a
  /// new object's own values are then a copy of their bytes, made before its first write.
  let initialValuesAreBitwise: Bool
  let emptyToOne: [ObjectID?]
  /// To-many state of a new object (every relationship empty) and of a fault (none loaded).
  let emptyToMany: [Set<ObjectID>?]
  let unloadedToMany: [Set<ObjectID>?]
  /// Whether the entity has to-many relationships at all.
  let hasToMany: Bool
  /// Whether any to-many relationship is ordered (the save then lists their new orders).
  let hasOrderedToMany: Bool
  /// What saving checks of each attribute the app sets (derived ones excluded), worked out once.
  let validatedAttributes: [ValidatedAttribute]
  /// Whether any validated attribute has rules (range, length, pattern). Without, and without a class
  /// that checks single values, saving an object only looks for nil in `requiredIndices`.
  let hasAttributeRules: Bool
  /// The positions of the validated attributes that must not be nil, ascending.
  let requiredIndices: [Int]
  /// Whether saving an object checks nothing of the model's but `requiredIndices`: no attribute rules,
  /// no single-value checks of the class, no relationship rules.
  let checksRequiredOnly: Bool
  /// A temporary ID of the entity, from which new objects take theirs.
  let temporaryID: ObjectID
  /// Whether any to-one is required or any to-many has a count rule.
  let hasRelationshipRules: Bool
  /// Whether the class checks single values (adopts ``ValueValidating``).
  let validatesValues: Bool
  /// The attributes whose stored values may fail to decode as their Swift type (Codable and enum
  /// attributes): a fetch checks them (see `ObjectContext.checkStoredValues`).
  let valueChecks: [(index: Int, name: String, type: any AttributeValue.Type)]
  /// By attribute position: whether the attribute allows external storage, so that an object may hold
  /// the reference of its value until it is first read (see `ManagedObject.loadExternalValue(at:)`).
  let isExternal: [Bool]
  /// Whether any attribute allows external storage.
  let hasExternalAttributes: Bool

  struct ValidatedAttribute {
    let index: Int
    let name: String
    let isOptional: Bool
    let isTransient: Bool
    /// Whether `rules` is set: tested first, since binding `rules` copies the whole struct (and its
    /// pattern string) for every attribute of every saved object.
    let hasRules: Bool
    let rules: AttributeValidation?
  }

  init(entity: EntityDescription, objectClass: ManagedObject.Type) {
    self.entity = entity
    isExternal = entity.attributes.map { $0.allowsExternalBinaryDataStorage && $0.isPersistent }
    hasExternalAttributes = isExternal.contains(true)
    temporaryID = ObjectID.makeTemporary(entityName: entity.name)
    hasTransientAttributes = entity.attributes.contains(where: \.isTransient)
    transientIndices = entity.attributes.indices.filter { entity.attributes[$0].isTransient }
    // An empty string or data is the literal one (which holds no reference, as one emptied in place might).
    let initialValues = entity.attributes.map { attribute -> Value in
      switch attribute.initialValue {
      case .string(let s) where s.isEmpty: .string("")
      case .data(let d) where d.isEmpty: .data(Data())
      case let value: value
      }
    }
    self.initialValues = AttributeValues(initialValues, layout: entity.valueLayout)
    initialValuesAreBitwise = self.initialValues.isBitwiseCopyable
    validatedAttributes = entity.attributes.enumerated().compactMap { index, attribute in
      guard attribute.derivation == nil else { return nil }
      return ValidatedAttribute(
        index: index, name: attribute.name, isOptional: attribute.isOptional, isTransient: attribute.isTransient,
        hasRules: !attribute.validation.isEmpty, rules: attribute.validation.isEmpty ? nil : attribute.validation)
    }
    hasAttributeRules = validatedAttributes.contains(where: \.hasRules)
    requiredIndices = validatedAttributes.filter { !$0.isOptional }.map(\.index)
    let hasRelationshipRules =
      entity.toOneRelationships.contains { !$0.isOptional }
      || entity.toManyRelationships.contains { $0.minCount > 0 || $0.maxCount > 0 }
    self.hasRelationshipRules = hasRelationshipRules
    checksRequiredOnly = !hasAttributeRules && !hasRelationshipRules && !(objectClass is any ValueValidating.Type)
    emptyToOne = Array(repeating: nil, count: entity.toOneRelationships.count)
    emptyToMany = Array(repeating: [], count: entity.toManyRelationships.count)
    unloadedToMany = Array(repeating: nil, count: entity.toManyRelationships.count)
    hasToMany = !entity.toManyRelationships.isEmpty
    hasOrderedToMany = entity.toManyRelationships.contains(where: \.isOrdered)
    self.objectClass = objectClass
    validatesValues = objectClass is any ValueValidating.Type
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
    attributeIndexBySlot = slotTargets.map { target in
      if case .attribute(let index) = target { index } else { -1 }
    }
    valueChecks = layout.valueChecks.compactMap { name, check in
      guard case .attribute(let attribute, let index)? = entity.property(named: name), !attribute.isTransient else {
        return nil
      }
      return (index, name, check)
    }
  }
}

/// Records the property names read from a prototype, to turn a Swift key path into a model key path.
///
/// Each attribute read returns a sentinel value distinct for its slot. A key path that reads an attribute
/// directly returns that sentinel; a computed property (`var decade: Int { year / 10 * 10 }`) returns
/// something else, or reads more than one attribute, and is rejected rather than misread as `year`.
final class KeyPathRecorder {
  var names: [String] = []
  var failed = false
  /// The sentinel the last attribute read returned; `nil` when the path ends at a relationship.
  var sentinel: Value?
  private var attributeReads = 0

  func record(_ name: String?) {
    if let name { names.append(name) } else { failed = true }
  }

  func recordRelationship(_ name: String?) {
    if attributeReads > 0 { failed = true }
    record(name)
  }

  func recordAttribute(_ name: String?, type: AttributeType, slot: Int32) -> Value {
    attributeReads += 1
    if attributeReads > 1 { failed = true }
    record(name)
    let value = Self.sentinel(type, slot)
    sentinel = value
    return value
  }

  /// Whether `result`, the key path's value on the prototype, is the sentinel of the attribute it read.
  func isDirectRead(of result: Any) -> Bool {
    guard let sentinel else { return true }
    guard let value = result as? any AttributeValue else { return false }
    // An enum or Codable value cannot hold the sentinel: one attribute read is taken as the key path.
    if type(of: value).checksStoredValues { return true }
    return value.storedValue == sentinel
  }

  private static func sentinel(_ type: AttributeType, _ slot: Int32) -> Value {
    let n = 1000 + Int64(slot)
    switch type {
    case .int16, .int32, .int64: return .int(n)
    case .double, .float: return .double(Double(n) + 0.5)
    case .decimal: return .decimal(Decimal(n))
    case .string: return .string("\u{1}strata-sentinel-\(slot)")
    case .json: return .string("\"\u{1}strata-sentinel-\(slot)\"")
    case .bool: return .bool(true)
    case .date: return .date(Date(timeIntervalSinceReferenceDate: Double(n)))
    case .data: return .data(Data([0x53, 0x54, UInt8(truncatingIfNeeded: slot)]))
    case .uuid:
      let b = UInt8(truncatingIfNeeded: slot)
      return .uuid(UUID(uuid: (0x53, 0x54, 0x52, 0x41, 0x54, 0x41, 0, 0, 0, 0, 0, 0, 0, 0, 0, b)))
    case .url: return .url(URL(fileURLWithPath: "/strata-sentinel/\(slot)"))
    }
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
    let result = root[keyPath: keyPath]
    let name =
      recorder.failed || recorder.names.isEmpty || !recorder.isDirectRead(of: result)
      ? "<key path \(keyPath) is not a chain of @Attribute / @Relationship properties>"
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
