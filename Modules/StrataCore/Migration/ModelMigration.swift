import Foundation

/// One difference between two versions of a model, as a migration reports it (a dry run lists them).
///
/// ```swift
/// let migration = try ModelMigration(from: v1, to: v2)
/// for change in migration.changes { print(change) }   // "Movie.rating: added, filled with 0"
/// ```
public struct SchemaChange: Sendable, Hashable, CustomStringConvertible {
  /// What changed.
  public enum Kind: Sendable, Hashable {
    /// A new entity; it starts empty.
    case entityAdded
    /// An entity that is gone; its objects are deleted.
    case entityRemoved
    /// An entity renamed from `from`; its objects keep their keys.
    case entityRenamed(from: String)
    /// A new attribute; existing objects get `filledWith`.
    case attributeAdded(filledWith: Value)
    /// An attribute that is gone; its values are dropped.
    case attributeRemoved
    /// An attribute renamed from `from`; its values move over.
    case attributeRenamed(from: String)
    /// Stored values are converted to the wider type (see ``AttributeMapping/convert(_:)``).
    case typeWidened(from: AttributeType, to: AttributeType)
    /// A required attribute that was optional: stored nils become `default`.
    case madeRequired(default: Value)
    /// A required attribute that became optional: stored values stay.
    case madeOptional
    /// A transient attribute became stored (filled with its initial value) or the reverse (dropped).
    case madeStored(filledWith: Value)
    /// A stored attribute that became transient: its values are dropped.
    case madeTransient
    /// A derived attribute added: every object's value is computed in the migration.
    case derivedAttributeAdded(derivation: String)
    /// An attribute's derivation changed (or was added to, or removed from, a stored attribute); with a new
    /// derivation every object's value is computed in the migration, without one the values stay.
    case derivationChanged(from: String?, to: String?)
    /// The attribute is now indexed.
    case indexAdded
    /// The attribute is no longer indexed.
    case indexRemoved
    /// A new relationship; it starts empty.
    case relationshipAdded
    /// A relationship that is gone; its links are dropped.
    case relationshipRemoved
    /// A relationship renamed from `from`; its links move over.
    case relationshipRenamed(from: String)
    /// A to-one relationship became to-many: each object keeps its one target.
    case madeToMany
    /// A to-many relationship became ordered (`true`: each list starts in its targets' primary-key order,
    /// which is their creation order) or unordered (`false`: the positions are dropped).
    case orderingChanged(isOrdered: Bool)
    /// The relationship's delete rule changed: nothing stored changes.
    case deleteRuleChanged(from: DeleteRule, to: DeleteRule)
    /// A uniqueness constraint over these attributes was added; the migration fails if stored values clash.
    case uniquenessConstraintAdded([String])
    /// A uniqueness constraint over these attributes was removed.
    case uniquenessConstraintRemoved([String])
    /// A compound index over these attributes was added.
    case compoundIndexAdded([String])
    /// A compound index over these attributes was removed.
    case compoundIndexRemoved([String])
    /// Rules checked on save only (validation, default value, counts, history options): nothing stored
    /// changes.
    case rulesChanged
  }

  /// The entity, by its name in the new model (the old one for a removed entity).
  public let entity: String
  /// The attribute or relationship, by its name in the new model (the old one when removed); `nil` for
  /// changes of the entity itself.
  public let key: String?
  /// What changed.
  public let kind: Kind

  /// A change of `entity` (and of `key` within it, when given).
  public init(entity: String, key: String? = nil, _ kind: Kind) {
    self.entity = entity
    self.key = key
    self.kind = kind
  }

  /// Whether stored rows change (values written, columns or records added or dropped), as opposed to a
  /// change of rules or indexes only.
  public var rewritesData: Bool {
    switch kind {
    case .entityAdded, .entityRenamed, .indexAdded, .indexRemoved, .uniquenessConstraintAdded,
      .uniquenessConstraintRemoved, .compoundIndexAdded, .compoundIndexRemoved, .rulesChanged, .deleteRuleChanged,
      .madeOptional, .relationshipAdded:
      return false
    case .entityRemoved, .attributeAdded, .attributeRemoved, .attributeRenamed, .typeWidened, .madeRequired,
      .madeStored, .madeTransient, .relationshipRemoved, .relationshipRenamed, .madeToMany, .derivedAttributeAdded,
      .orderingChanged:
      return true
    case .derivationChanged(_, let to):
      return to != nil
    }
  }

  public var description: String {
    let subject = key.map { "\(entity).\($0)" } ?? entity
    let what: String
    switch kind {
    case .entityAdded: what = "entity added"
    case .entityRemoved: what = "entity removed with its objects"
    case .entityRenamed(let from): what = "entity renamed from \(from)"
    case .attributeAdded(let value): what = "added, filled with \(value)"
    case .attributeRemoved: what = "removed with its values"
    case .attributeRenamed(let from): what = "renamed from \(from)"
    case .typeWidened(let from, let to): what = "type widened from \(from) to \(to)"
    case .madeRequired(let value): what = "made required, nil values become \(value)"
    case .madeOptional: what = "made optional"
    case .madeStored(let value): what = "made stored (was transient), filled with \(value)"
    case .madeTransient: what = "made transient, stored values dropped"
    case .derivedAttributeAdded(let derivation): what = "added, derived as '\(derivation)' (computed for every object)"
    case .derivationChanged(let from, let to):
      let before = from.map { "'\($0)'" } ?? "none"
      what =
        to.map { "derivation changed from \(before) to '\($0)' (computed again for every object)" }
        ?? "derivation \(before) removed, values kept"
    case .indexAdded: what = "index added"
    case .indexRemoved: what = "index removed"
    case .relationshipAdded: what = "relationship added, empty"
    case .relationshipRemoved: what = "relationship removed with its links"
    case .relationshipRenamed(let from): what = "relationship renamed from \(from)"
    case .madeToMany: what = "made to-many, each object keeps its target"
    case .orderingChanged(true): what = "made ordered, each list in its targets' creation order"
    case .orderingChanged(false): what = "made unordered, positions dropped"
    case .deleteRuleChanged(let from, let to): what = "delete rule changed from \(from) to \(to)"
    case .uniquenessConstraintAdded(let keys): what = "uniqueness constraint (\(keys.joined(separator: ", "))) added"
    case .uniquenessConstraintRemoved(let keys): what = "uniqueness constraint (\(keys.joined(separator: ", "))) removed"
    case .compoundIndexAdded(let keys): what = "index (\(keys.joined(separator: ", "))) added"
    case .compoundIndexRemoved(let keys): what = "index (\(keys.joined(separator: ", "))) removed"
    case .rulesChanged: what = "rules changed (checked on save; nothing stored changes)"
    }
    return "\(subject): \(what)"
  }
}

/// Where one stored attribute of the new model takes its values from in a store written with the old
/// model, and how each value is converted. Every backend converts through ``convert(_:)``, so a migrated
/// store holds the same values whichever backend ran it.
public struct AttributeMapping: Sendable, Hashable {
  /// The attribute in the new model.
  public let attribute: AttributeDescription
  /// The stored attribute of the old entity whose values it takes; `nil` when it starts from
  /// ``fill`` in every object.
  public let source: String?
  /// The type of the source attribute in the old model.
  public let sourceType: AttributeType?
  /// The value of objects without a source, and of nil source values when the attribute became required.
  public let fill: Value
  /// In a migration over several versions, the mappings of the earlier steps, oldest first: a value goes
  /// through each of them before this one.
  let earlier: [AttributeMapping]

  init(
    attribute: AttributeDescription, source: String?, sourceType: AttributeType?, fill: Value, earlier: [AttributeMapping] = []
  ) {
    self.attribute = attribute
    self.source = source
    self.sourceType = sourceType
    self.fill = fill
    self.earlier = earlier
  }

  /// The new value for a stored old value `value` (ignored when there is no source).
  ///
  /// - Integers widen exactly; integers become doubles as `Double(value)` (the nearest double).
  /// - Integers become decimals exactly; Floats (stored as the nearest double) become doubles as they are.
  /// - Any scalar but data becomes a string in its canonical text: integers and decimals in decimal
  ///   digits, doubles as Swift prints them (`0.1`, `1e+20`, `inf`), booleans `true`/`false`, dates in
  ///   ISO 8601 with milliseconds in UTC, UUIDs uppercase, URLs absolute.
  /// - Any scalar but data becomes a Codable (``AttributeType/json``) attribute's one-element array, as
  ///   `JSONEncoder` writes it (`"x"` → `["x"]`, a date → `[seconds since 2001]`): a `String` that becomes
  ///   `[String]` keeps its value as the only element. (A struct cannot be inferred from a scalar: its
  ///   objects then fail to decode, and a custom stage is needed.)
  /// - `nil` stays `nil` in an optional attribute and becomes ``fill`` in a required one.
  ///
  /// Over several versions, a value goes through each version step's conversion in turn.
  public func convert(_ value: Value) -> Value {
    guard source != nil else { return fill }
    return step(earlier.reduce(value) { value, mapping in mapping.step(value) })
  }

  /// This version step's conversion of a value of the previous version.
  private func step(_ value: Value) -> Value {
    if case .null = value { return attribute.isOptional ? .null : attribute.initialValue }
    guard let sourceType, sourceType != attribute.type else { return value }
    switch attribute.type {
    case .decimal:
      if case .int(let n) = value { return .decimal(Decimal(n)) }
      return value
    case .double:
      if case .int(let n) = value { return .double(Double(n)) }
      return value
    case .string: return .string(Self.canonicalText(value))
    case .json: return .string(JSONText.text(of: .array([JSONText.node(from: value)])))
    default: return value
    }
  }

  /// The text a scalar value becomes when its attribute widens to a string.
  public static func canonicalText(_ value: Value) -> String {
    switch value {
    case .int(let n): return String(n)
    case .double(let d): return "\(d)"
    case .decimal(let d): return d.description
    case .string(let s): return s
    case .bool(let b): return b ? "true" : "false"
    case .date(let date):
      let format = Date.ISO8601FormatStyle(includingFractionalSeconds: true, timeZone: .gmt)
      return date.formatted(format)
    case .data(let data): return data.base64EncodedString()
    case .uuid(let uuid): return uuid.uuidString.uppercased()
    case .url(let url): return url.absoluteString
    case .objectID(let id): return id.description
    case .array(let items): return "{" + items.map(canonicalText).joined(separator: ", ") + "}"
    case .null: return ""
    }
  }
}

/// How one entity of the new model is filled from a store written with the old model.
public struct EntityMapping: Sendable, Hashable {
  /// The entity in the new model.
  public let entity: EntityDescription
  /// The old entity its objects come from (its old name); `nil` for a new entity, which starts empty.
  public let source: String?
  /// One mapping per stored attribute of the new entity, in the entity's attribute order.
  public let attributes: [AttributeMapping]
  /// For each relationship of the new entity (in declaration order), the old relationship its links
  /// come from; `nil` for a new relationship, which starts empty.
  public let relationshipSources: [String: String]
}

/// A migration inferred from two versions of a model alone (Core Data's lightweight migration): every
/// change it can make without the app's code, and how each entity of the new model is filled.
///
/// What it infers: entities added, removed or renamed (``EntityDescription/renamingIdentifier``);
/// attributes added (optional, or with a default value), removed, renamed
/// (``AttributeDescription/renamingIdentifier``), made required with a default value (stored nils take
/// it) or optional, widened (integer 16 → 32 → 64, integer → double or decimal, float → double, any
/// scalar but data → string, any scalar but data → a Codable attribute's one-element array), made
/// transient or stored; relationships added (optional to-one, or to-many), removed, renamed,
/// made to-many, given another delete rule or count rules; indexes and uniqueness constraints added or
/// removed; rule changes that store nothing; derived attributes added or given another derivation (the
/// migration computes their values for every object: see ``entitiesRecomputingDerivedAttributes``).
/// Anything else — a narrowing or unrelated type change, a required attribute added without a default, a
/// relationship made to-one or pointed elsewhere — is refused, every such difference named.
///
/// ```swift
/// let migration = try ModelMigration(from: storedModel, to: appModel)
/// migration.changes.map(\.description)   // ["Movie.rating: added, filled with 0", …]
/// ```
public struct ModelMigration: Sendable {
  /// The model the stored data has.
  public let source: ObjectModel
  /// The model the data is migrated to.
  public let destination: ObjectModel
  /// Every difference, entity by entity in the new model's order, removed entities last.
  public let changes: [SchemaChange]
  /// How each entity of the new model is filled, in the new model's order.
  public let entities: [EntityMapping]
  /// The old entities whose objects are dropped.
  public let removedEntities: [String]

  /// Infers the migration from `source` to `destination`.
  ///
  /// - Throws: `.schemaMismatch` naming every difference it cannot infer as `Entity.key: what changed`,
  ///   and every renaming identifier that names nothing in `source`.
  public init(from source: ObjectModel, to destination: ObjectModel) throws {
    self.source = source
    self.destination = destination
    var inference = Inference(source: source, destination: destination)
    inference.run()
    if !inference.refusals.isEmpty {
      throw StoreError(
        .schemaMismatch,
        "cannot infer a migration between the two models: " + inference.refusals.joined(separator: "; "))
    }
    changes = inference.changes
    entities = inference.mappings
    removedEntities = inference.removedEntities
  }

  /// Whether the two models store the same thing the same way (nothing to migrate).
  public var isEmpty: Bool { changes.isEmpty }

  /// The entities of the destination model whose derived attributes a migration computes for every
  /// object: those with a derived attribute that is new, or whose derivation differs from the one its
  /// values come from.
  public var entitiesRecomputingDerivedAttributes: [String] {
    entities.compactMap { mapping -> String? in
      guard let sourceName = mapping.source, let old = source.entity(named: sourceName) else { return nil }
      let recomputes = mapping.attributes.contains { attribute in
        guard let derivation = attribute.attribute.derivation else { return false }
        guard let from = attribute.source else { return true }
        return old.attributes.first { $0.name == from }?.derivation != derivation
      }
      return recomputes ? mapping.entity.name : nil
    }
  }

  /// One migration over several version steps, applied in one transaction: `steps[0].source` to
  /// `steps.last.destination`, each value converted by every step in turn, objects of an entity added
  /// in a later step starting from that step's values, renames followed through every step. Its changes
  /// are each step's, in order.
  ///
  /// ```swift
  /// let migration = try ModelMigration(composing: [try ModelMigration(from: v1, to: v2), try ModelMigration(from: v2, to: v3)])
  /// ```
  ///
  /// - Throws: `.misuse` when `steps` is empty or a step does not start where the one before it ends.
  public init(composing steps: [ModelMigration]) throws {
    guard var composed = steps.first else { throw StoreError(.misuse, "a migration needs at least one step") }
    for next in steps.dropFirst() {
      guard next.source == composed.destination else {
        throw StoreError(.misuse, "a migration step does not start from the model the step before it ends with")
      }
      composed = ModelMigration(composed, then: next)
    }
    self = composed
  }

  private init(_ first: ModelMigration, then second: ModelMigration) {
    source = first.source
    destination = second.destination
    changes = first.changes + second.changes
    let firstByName = Dictionary(first.entities.map { ($0.entity.name, $0) }, uniquingKeysWith: { a, _ in a })
    entities = second.entities.map { mapping in
      guard let middle = mapping.source.flatMap({ firstByName[$0] }), let origin = middle.source else {
        return EntityMapping(
          entity: mapping.entity, source: nil,
          attributes: mapping.entity.attributes.filter(\.isPersistent).map {
            AttributeMapping(attribute: $0, source: nil, sourceType: nil, fill: $0.initialValue)
          },
          relationshipSources: [:])
      }
      let middleByName = Dictionary(middle.attributes.map { ($0.attribute.name, $0) }, uniquingKeysWith: { a, _ in a })
      let attributes = mapping.attributes.map { later -> AttributeMapping in
        guard let name = later.source else { return later }
        guard let earlier = middleByName[name], earlier.source != nil else {
          let start = middleByName[name]?.fill ?? later.fill
          return AttributeMapping(attribute: later.attribute, source: nil, sourceType: nil, fill: later.convert(start))
        }
        return AttributeMapping(
          attribute: later.attribute, source: earlier.source, sourceType: earlier.sourceType, fill: later.fill,
          earlier: earlier.earlier + [earlier] + later.earlier)
      }
      var relationshipSources: [String: String] = [:]
      for (name, middleName) in mapping.relationshipSources {
        if let originName = middle.relationshipSources[middleName] { relationshipSources[name] = originName }
      }
      return EntityMapping(
        entity: mapping.entity, source: origin, attributes: attributes, relationshipSources: relationshipSources)
    }
    let reached = Set(entities.compactMap(\.source))
    removedEntities = first.source.entities.map(\.name).filter { !reached.contains($0) }
  }
}

/// The work of ``ModelMigration/init(from:to:)``: matches entities and properties, records changes and
/// refusals.
private struct Inference {
  let source: ObjectModel
  let destination: ObjectModel
  var changes: [SchemaChange] = []
  var refusals: [String] = []
  var mappings: [EntityMapping] = []
  var removedEntities: [String] = []
  /// Old entity name → the new entities it feeds (more than one when a renamed entity's old name is
  /// taken by a new entity, which is matched by name too).
  var entityNames: [String: Set<String>] = [:]

  init(source: ObjectModel, destination: ObjectModel) {
    self.source = source
    self.destination = destination
  }

  mutating func run() {
    var matched: [(old: EntityDescription?, new: EntityDescription)] = []
    for entity in destination.entities {
      let old = match(entity.name, entity.renamingIdentifier, in: source.entities, named: \.name, renamed: \.renamingIdentifier)
      switch old {
      case .found(let old):
        entityNames[old.name, default: []].insert(entity.name)
        matched.append((old, entity))
      case .none:
        matched.append((nil, entity))
      case .missing(let identifier):
        refusals.append("\(entity.name): renames '\(identifier)', which the old model does not have")
        matched.append((nil, entity))
      }
    }
    let carried = Set(matched.compactMap { $0.old?.name })
    for (old, entity) in matched {
      guard let old else {
        changes.append(SchemaChange(entity: entity.name, .entityAdded))
        mappings.append(
          EntityMapping(
            entity: entity, source: nil,
            attributes: entity.attributes.filter(\.isPersistent).map {
              AttributeMapping(attribute: $0, source: nil, sourceType: nil, fill: $0.initialValue)
            },
            relationshipSources: [:]))
        continue
      }
      if old.name != entity.name { changes.append(SchemaChange(entity: entity.name, .entityRenamed(from: old.name))) }
      compare(old, entity)
    }
    for old in source.entities where !carried.contains(old.name) {
      removedEntities.append(old.name)
      changes.append(SchemaChange(entity: old.name, .entityRemoved))
    }
  }

  enum Match<T> {
    case found(T)
    case none
    case missing(String)
  }

  /// The old element a new one called `name` (renamed from `identifier`) stands for: same name first,
  /// then an old element named `identifier` or carrying the same identifier.
  func match<T>(
    _ name: String, _ identifier: String?, in old: [T], named: KeyPath<T, String>, renamed: KeyPath<T, String?>
  ) -> Match<T> {
    if let same = old.first(where: { $0[keyPath: named] == name }) { return .found(same) }
    guard let identifier else { return .none }
    if let renamed = old.first(where: { $0[keyPath: named] == identifier || $0[keyPath: renamed] == identifier }) {
      return .found(renamed)
    }
    return .missing(identifier)
  }

  mutating func compare(_ old: EntityDescription, _ new: EntityDescription) {
    var attributeMappings: [AttributeMapping] = []
    var usedOld = Set<String>()
    // Old property name → new, for constraints and indexes.
    var keyNames: [String: String] = [:]
    for attribute in new.attributes {
      let change = { (kind: SchemaChange.Kind) in SchemaChange(entity: new.name, key: attribute.name, kind) }
      let refuse = { (what: String) in "\(new.name).\(attribute.name): \(what)" }
      let oldAttribute: AttributeDescription?
      switch match(attribute.name, attribute.renamingIdentifier, in: old.attributes, named: \.name, renamed: \.renamingIdentifier)
      {
      case .found(let found): oldAttribute = found
      case .none: oldAttribute = nil
      case .missing(let identifier):
        refusals.append(refuse("renames '\(identifier)', which \(old.name) of the old model does not have"))
        continue
      }
      guard let oldAttribute else {
        if attribute.isPersistent {
          if let derivation = attribute.derivation {
            changes.append(change(.derivedAttributeAdded(derivation: derivation)))
            attributeMappings.append(
              AttributeMapping(attribute: attribute, source: nil, sourceType: nil, fill: attribute.initialValue))
            continue
          }
          if !attribute.isOptional && attribute.defaultValue == nil {
            refusals.append(refuse("added as a required attribute without a default value"))
            continue
          }
          changes.append(change(.attributeAdded(filledWith: attribute.initialValue)))
          attributeMappings.append(
            AttributeMapping(attribute: attribute, source: nil, sourceType: nil, fill: attribute.initialValue))
        }
        continue
      }
      usedOld.insert(oldAttribute.name)
      keyNames[oldAttribute.name] = attribute.name
      if oldAttribute.name != attribute.name { changes.append(change(.attributeRenamed(from: oldAttribute.name))) }
      switch (oldAttribute.isPersistent, attribute.isPersistent) {
      case (false, false): continue
      case (true, false):
        changes.append(change(.madeTransient))
        continue
      case (false, true):
        changes.append(change(.madeStored(filledWith: attribute.initialValue)))
        attributeMappings.append(
          AttributeMapping(attribute: attribute, source: nil, sourceType: nil, fill: attribute.initialValue))
        continue
      case (true, true): break
      }
      if oldAttribute.type != attribute.type {
        guard Self.widens(oldAttribute.type, to: attribute.type) else {
          refusals.append(refuse("type changed from \(oldAttribute.type) to \(attribute.type), which does not widen"))
          continue
        }
        changes.append(change(.typeWidened(from: oldAttribute.type, to: attribute.type)))
      }
      if oldAttribute.isOptional && !attribute.isOptional {
        guard attribute.defaultValue != nil else {
          refusals.append(refuse("made required without a default value for the objects that hold nil"))
          continue
        }
        changes.append(change(.madeRequired(default: attribute.initialValue)))
      } else if !oldAttribute.isOptional && attribute.isOptional {
        changes.append(change(.madeOptional))
      }
      if oldAttribute.derivation != attribute.derivation {
        changes.append(change(.derivationChanged(from: oldAttribute.derivation, to: attribute.derivation)))
      }
      if oldAttribute.isIndexed != attribute.isIndexed {
        changes.append(change(attribute.isIndexed ? .indexAdded : .indexRemoved))
      }
      if oldAttribute.defaultValue != attribute.defaultValue || oldAttribute.validation != attribute.validation
        || oldAttribute.preservesValueInHistoryOnDeletion != attribute.preservesValueInHistoryOnDeletion
      {
        changes.append(change(.rulesChanged))
      }
      attributeMappings.append(
        AttributeMapping(
          attribute: attribute, source: oldAttribute.name, sourceType: oldAttribute.type, fill: attribute.initialValue))
    }
    for attribute in old.attributes where !usedOld.contains(attribute.name) && attribute.isPersistent {
      changes.append(SchemaChange(entity: new.name, key: attribute.name, .attributeRemoved))
    }

    var relationshipSources: [String: String] = [:]
    var usedRelationships = Set<String>()
    for relationship in new.relationships {
      let change = { (kind: SchemaChange.Kind) in SchemaChange(entity: new.name, key: relationship.name, kind) }
      let refuse = { (what: String) in "\(new.name).\(relationship.name): \(what)" }
      let oldRelationship: RelationshipDescription?
      switch match(
        relationship.name, relationship.renamingIdentifier, in: old.relationships, named: \.name,
        renamed: \.renamingIdentifier)
      {
      case .found(let found): oldRelationship = found
      case .none: oldRelationship = nil
      case .missing(let identifier):
        refusals.append(refuse("renames '\(identifier)', which \(old.name) of the old model does not have"))
        continue
      }
      guard let oldRelationship else {
        if !relationship.isToMany && !relationship.isOptional {
          refusals.append(refuse("added as a required to-one relationship, which existing objects cannot fill"))
          continue
        }
        changes.append(change(.relationshipAdded))
        continue
      }
      usedRelationships.insert(oldRelationship.name)
      keyNames[oldRelationship.name] = relationship.name
      relationshipSources[relationship.name] = oldRelationship.name
      if oldRelationship.name != relationship.name {
        changes.append(change(.relationshipRenamed(from: oldRelationship.name)))
      }
      if !(entityNames[oldRelationship.destination]?.contains(relationship.destination) ?? false) {
        refusals.append(refuse("points to \(relationship.destination) instead of \(oldRelationship.destination)"))
        continue
      }
      if !sameInverse(oldRelationship, relationship, destination: relationship.destination) {
        refusals.append(
          refuse(
            "inverse changed from \(oldRelationship.inverse ?? "none") to \(relationship.inverse ?? "none")"))
        continue
      }
      switch (oldRelationship.isToMany, relationship.isToMany) {
      case (true, false):
        refusals.append(refuse("made to-one, which would drop all but one target of each object"))
        continue
      case (false, true): changes.append(change(.madeToMany))
      default:
        if !relationship.isToMany && oldRelationship.isOptional && !relationship.isOptional {
          refusals.append(refuse("made required, which objects without a target cannot satisfy"))
          continue
        }
      }
      if oldRelationship.isOrdered != relationship.isOrdered && relationship.isToMany {
        changes.append(change(.orderingChanged(isOrdered: relationship.isOrdered)))
      }
      if oldRelationship.deleteRule != relationship.deleteRule {
        changes.append(change(.deleteRuleChanged(from: oldRelationship.deleteRule, to: relationship.deleteRule)))
      }
      if oldRelationship.minCount != relationship.minCount || oldRelationship.maxCount != relationship.maxCount
        || (relationship.isToMany == oldRelationship.isToMany && oldRelationship.isOptional != relationship.isOptional)
      {
        changes.append(change(.rulesChanged))
      }
    }
    for relationship in old.relationships where !usedRelationships.contains(relationship.name) {
      changes.append(SchemaChange(entity: new.name, key: relationship.name, .relationshipRemoved))
    }

    func renamed(_ keys: [String]) -> [String] { keys.map { keyNames[$0] ?? $0 } }
    let oldConstraints = old.uniquenessConstraints.map(renamed)
    for keys in new.uniquenessConstraints where !oldConstraints.contains(keys) {
      changes.append(SchemaChange(entity: new.name, .uniquenessConstraintAdded(keys)))
    }
    for keys in oldConstraints where !new.uniquenessConstraints.contains(keys) {
      changes.append(SchemaChange(entity: new.name, .uniquenessConstraintRemoved(keys)))
    }
    let oldIndexes = old.indexes.map(renamed)
    for keys in new.indexes where !oldIndexes.contains(keys) {
      changes.append(SchemaChange(entity: new.name, .compoundIndexAdded(keys)))
    }
    for keys in oldIndexes where !new.indexes.contains(keys) {
      changes.append(SchemaChange(entity: new.name, .compoundIndexRemoved(keys)))
    }
    mappings.append(
      EntityMapping(entity: new, source: old.name, attributes: attributeMappings, relationshipSources: relationshipSources))
  }

  /// Whether a relationship's inverse is the same one in both models (through renames on the
  /// destination): the inverse decides how links are stored.
  func sameInverse(_ old: RelationshipDescription, _ new: RelationshipDescription, destination: String) -> Bool {
    guard let oldInverse = old.inverse else { return new.inverse == nil }
    guard let newInverse = new.inverse, let newDestination = self.destination.entity(named: destination),
      let newInverseRelationship = newDestination.relationship(named: newInverse)
    else { return false }
    return newInverse == oldInverse || newInverseRelationship.renamingIdentifier == oldInverse
  }

  /// Whether values of `old` convert to `new` without loss of meaning.
  static func widens(_ old: AttributeType, to new: AttributeType) -> Bool {
    switch (old, new) {
    case (.int16, .int32), (.int16, .int64), (.int32, .int64): return true
    case (.int16, .double), (.int32, .double), (.int64, .double): return true
    case (.int16, .decimal), (.int32, .decimal), (.int64, .decimal): return true
    case (.float, .double): return true
    case (_, .string): return old != .data
    case (_, .json): return old != .data
    default: return false
    }
  }
}
