import Foundation
internal import StrataStoreKit

/// How a ``ManagedObject`` is being created. Only the framework makes these; a subclass that declares
/// its own designated initializer must also provide `required init(_ construction: ObjectConstruction)`
/// calling `super.init(construction)`.
public struct ObjectConstruction {
  // The framework holds the binding (and through it the entity info and the context's signals) and the
  // layout for as long as an initializer runs, so these references are not counted: passing the
  // construction through a subclass's initializer is a copy of plain words, and the object retains the
  // binding it keeps exactly once. The object never touches the context itself while it is made: a
  // context is weakly referenced, so counting a reference to it takes the slow path.
  // With `binding` and `id` it makes a managed object; without, a prototype.
  let layout: Unretained<ClassLayout>?
  let binding: Unretained<EntityBinding>?
  let id: ObjectID?
  let isInserted: Bool

  /// A prototype (`layout` to record key paths read from it).
  static func prototype(_ layout: ClassLayout?) -> ObjectConstruction {
    ObjectConstruction(layout: layout.map(Unretained.init), binding: nil, id: nil, isInserted: false)
  }

  /// An object of `info`'s entity in `context`: a fault to load, or a new object.
  static func managed(_ info: EntityInfo, _ context: ObjectContext, _ id: ObjectID, isInserted: Bool) -> ObjectConstruction {
    managed(Unretained(context.binding(for: info)), id, isInserted: isInserted)
  }

  /// An object of `binding`'s entity in its context: a fault to load, or a new object.
  static func managed(_ binding: Unretained<EntityBinding>, _ id: ObjectID, isInserted: Bool) -> ObjectConstruction {
    ObjectConstruction(layout: nil, binding: binding, id: id, isInserted: isInserted)
  }

  /// A new object of `binding`'s entity, under the entity's next temporary ID: how `init(context:)` and
  /// the context's `insert` make one, then register it as inserted and awake it.
  @inline(__always)
  static func inserted(_ binding: Unretained<EntityBinding>) -> ObjectConstruction {
    managed(binding, binding.withObject { $0.info.temporaryID.nextTemporary() }, isInserted: true)
  }
}

/// An object of the object graph: a row of an entity, tracked by one ``ObjectContext``.
///
/// Subclass it and declare one line per property; no accessors, no code generation:
///
/// ```swift
/// final class Movie: ManagedObject {
///   @Attribute var title: String
///   @Attribute var genre: String
///   @Attribute var releaseDate: Date
/// }
///
/// let movie = Movie(context: container.viewContext)
/// movie.title = "Heat"
/// try container.viewContext.save()
/// ```
///
/// An object fetched from a store, or reached through a relationship, may be a *fault*: it knows its
/// ``objectID`` but loads its values the first time one is read. Objects are not `Sendable`: use them on
/// their context's queue, and pass ``objectID`` between contexts.
open class ManagedObject: Hashable, CustomStringConvertible {
  // The object's state here is read and written for every property access. An object is confined to its
  // context's queue and the framework never holds an access to one of these across a call that could
  // reach it again, so the run-time exclusivity check would only cost time: it is off for them.

  /// The object's identity; temporary until its context saves it.
  @exclusivity(unchecked) public internal(set) var objectID: ObjectID
  /// The context that owns the object (`nil` once the context is gone or the object was removed).
  public internal(set) var managedObjectContext: ObjectContext? {
    get { isDetached ? nil : binding?.signals.context }
    set {
      if let newValue {
        if let binding, binding.signals !== newValue.changeLog.signals {
          self.binding = newValue.binding(for: binding.info)
        }
        isDetached = false
      } else {
        isDetached = true
      }
    }
  }
  // Stored properties are laid out in the order written: three flags and the slot base fill the padding
  // after `objectID`, the last flag comes before the subclass's slots, the entity info and the context's
  // signals are one reference (``EntityBinding``, shared by the context's objects of the entity), and
  // what only some objects use (a prototype's state, ordered relationships, changed keys, a fault batch)
  // shares one reference. A fetch makes objects by the hundred thousand, and each byte less is memory it
  // does not write: BenchItem's nine attributes take 152 bytes, a 160-byte malloc chunk.

  // What the inlined attribute accessors read is `final` and `@usableFromInline`: read from the app's
  // module, a non-final stored property of an open class goes through its getter in the vtable.

  /// Whether the object was taken out of its context (deleted and saved, reset, replaced).
  @exclusivity(unchecked) private(set) var isDetached = false
  @usableFromInline @exclusivity(unchecked) final var isFaultStorage = true
  @usableFromInline @exclusivity(unchecked) final var isInsertedStorage = false
  @usableFromInline @exclusivity(unchecked) final var slotBase: Int32 = 0

  /// The entity info and the context's signals; `nil` for a prototype.
  @usableFromInline @exclusivity(unchecked) final private(set) var binding: EntityBinding?

  /// Current attribute values, aligned with the entity's attributes (empty while a fault).
  @usableFromInline @exclusivity(unchecked) final var values = AttributeValues()
  /// Current to-one targets, aligned with the entity's to-one relationships (empty while a fault).
  @exclusivity(unchecked) var toOne: [ObjectID?] = []
  /// Current to-many targets by to-many index; `nil` until loaded.
  @exclusivity(unchecked) var toMany: [Set<ObjectID>?] = []
  /// The to-many targets as last loaded or saved, for link diffs of join-table relationships.
  @exclusivity(unchecked) var committedToMany: [Set<ObjectID>?] = []
  /// ``snapshot`` without the object ID, which is the object's own: the last state read from or written
  /// to the store; `nil` for a new object.
  @exclusivity(unchecked) var storedState: StoredState?
  /// What only some objects use: a fault batch alone, or the side allocation (``ObjectExtras``).
  @exclusivity(unchecked) private var sideState: SideState?
  @exclusivity(unchecked) var isDeletedStorage = false
  /// Whether the object's fault fired after the object had left the store: its values are defaults.
  @exclusivity(unchecked) var isInaccessibleStorage = false
  /// Whether a tracking (`withObservationTracking`) read the object: its changes are announced to it. Here,
  /// in the padding before the subclass's slots (after `objectID` there is room for three flags only).
  @usableFromInline @exclusivity(unchecked) final var isObservedStorage = false

  /// Creates an object; called by the framework. Use `init(context:)` to insert a new object.
  public required init(_ construction: ObjectConstruction) {
    let wrapperCount = SlotState.take()
    if let binding = construction.binding, let id = construction.id {
      // One retain, handed to the stored property (bound as a strong local first, it would be retained
      // once more and released again).
      self.binding = binding.retained()
      objectID = id
      isInsertedStorage = construction.isInserted
      binding.withObject { binding in
        let info = binding.info
        slotBase = wrapperCount - info.layout.wrapperCount
        if construction.isInserted {
          values = info.initialValuesAreBitwise ? info.initialValues.bitwiseCopy() : info.initialValues
          // The relationship arrays start empty: set only for an entity that has relationships (assigning
          // an empty array still counts a reference to it).
          if !info.emptyToOne.isEmpty { toOne = info.emptyToOne }
          if info.hasToMany {
            toMany = info.emptyToMany
            committedToMany = info.emptyToMany
          }
          isFaultStorage = false
        } else if info.hasToMany {
          toMany = info.unloadedToMany
          committedToMany = info.unloadedToMany
        }
      }
    } else {
      binding = nil
      sideState = .extras(ObjectExtras(prototypeLayout: construction.layout?.object))
      objectID = ObjectID.makeTemporary(entityName: String(describing: type(of: self)))
    }
  }

  /// Creates a new object of this class and inserts it into `context`.
  ///
  /// The class must be part of the context's model.
  public convenience init(context: borrowing ObjectContext) {
    // Borrowed, and its binding unretained: a context is weakly referenced, so counting a reference to it
    // takes the slow path, and the context keeps its bindings.
    self.init(.inserted(context.unretainedEntityBinding(for: Self.self)))
    context.registerInserted(self)
    awakeFromInsert()
  }

  // MARK: Entity

  /// The entity name a subclass maps to; the class name unless overridden.
  open class var entityName: String { String(describing: self) }

  /// The entity's name in the previous model version, when the class was renamed: migration moves its
  /// objects over (Core Data's `renamingIdentifier`).
  ///
  /// ```swift
  /// final class Film: ManagedObject {
  ///   override class var originalEntityName: String? { "Movie" }
  /// }
  /// ```
  open class var originalEntityName: String? { nil }

  /// Whether the entity is abstract: it has no objects of its own, only those of its sub-entities (the
  /// subclasses of this class in the model). Inserting an object of an abstract entity is an error.
  ///
  /// The override declares the class that makes it abstract, not its subclasses: a subclass that
  /// inherits `true` from its superclass is concrete. (An abstract entity below another abstract entity
  /// is described with `EntityDescription` instead.)
  ///
  /// ```swift
  /// class Media: ManagedObject {
  ///   override class var isAbstract: Bool { true }
  ///   @Attribute var title: String
  /// }
  /// final class Film: Media {
  ///   @Attribute var runtime: Int
  /// }
  /// let model = try ObjectModel(Media.self, Film.self)   // Film's parent entity is Media
  /// ```
  open class var isAbstract: Bool { false }

  /// Extra uniqueness constraints (sets of attribute names) beyond attributes declared `.unique`.
  open class var uniquenessConstraints: [[String]] { [] }

  /// Extra compound indexes beyond attributes declared `.indexed`.
  open class var indexes: [[String]] { [] }

  /// The object's entity.
  public var entity: EntityDescription {
    info?.entity ?? EntityDescription(name: String(describing: type(of: self)))
  }

  // MARK: State

  /// Whether the object's values have not been loaded yet.
  public var isFault: Bool { isFaultStorage && !isInsertedStorage }
  /// Whether the object was inserted and not saved yet.
  public var isInserted: Bool { isInsertedStorage && !isDeletedStorage }
  /// Whether the object has unsaved changes and is neither inserted nor deleted.
  public var isUpdated: Bool { !isInsertedStorage && !isDeletedStorage && hasChangedKeys }
  /// Whether the object was deleted and the deletion is not saved yet.
  public var isDeleted: Bool { isDeletedStorage }
  /// Whether the object is inserted, updated or deleted.
  public var hasChanges: Bool { isInserted || isUpdated || isDeleted }
  /// Whether the object has changes the store would see: like ``hasChanges``, but changes of transient
  /// attributes alone do not count.
  public var hasPersistentChangedValues: Bool {
    if isInserted || isDeleted { return true }
    guard isUpdated, let info else { return false }
    guard info.hasTransientAttributes else { return true }
    return changedKeys.contains { info.entity.attribute(named: $0)?.isTransient != true }
  }

  /// The properties whose values differ from the last saved state, with their new values.
  public func changedValues() -> [String: Value] {
    checkContextQueue()
    guard let info, !isFaultStorage else { return [:] }
    var result: [String: Value] = [:]
    let entity = info.entity
    let stored = storedState
    for (i, attribute) in entity.attributes.enumerated() {
      let old = stored?.attributes[i] ?? attribute.initialValue
      if stored == nil || values[i] != old { result[attribute.name] = values[i] }
    }
    for (i, rel) in entity.toOneRelationships.enumerated() {
      let old = stored?.toOne[i] ?? nil
      if stored == nil ? toOne[i] != nil : toOne[i] != old {
        result[rel.name] = toOne[i].map(Value.objectID) ?? .null
      }
    }
    for (i, rel) in entity.toManyRelationships.enumerated()
    where toMany[i] != committedToMany[i] || (rel.isOrdered && toManyOrder[i] != committedToManyOrder[i]) {
      if rel.isOrdered, let ordered = orderedTargets(toManyIndex: i) {
        result[rel.name] = .array(ordered.map(Value.objectID))
      } else if let targets = toMany[i] {
        result[rel.name] = .array(targets.map(Value.objectID))
      }
    }
    if isInsertedStorage { return result }
    return result.filter { changedKeys.contains($0.key) }
  }

  // MARK: Key-value access

  /// The value of the attribute or relationship called `key`: an attribute's Swift value
  /// (`String`, `Int64`, `Double`, `Date`, …, or `nil`), a to-one target object, or a `Set` of targets.
  public func value(forKey key: String) -> Any? {
    checkContextQueue()
    guard let info else { return nil }
    switch info.entity.property(named: key) {
    case .attribute(_, let index):
      fireFault()
      if info.hasExternalAttributes, !loadExternalValue(at: index) { return nil }
      return values[index].swiftValue
    case .toOne(_, let index):
      fireFault()
      return toOne[index].flatMap { id in withContext { $0.object(with: id) } }
    case .toMany(let rel):
      guard let index = info.toManyIndex[rel.name] else { return nil }
      return rel.isOrdered ? relatedObjects(toManyIndex: index) : Set(relatedObjects(toManyIndex: index))
    case nil:
      return nil
    }
  }

  /// Sets the attribute or relationship called `key`.
  ///
  /// - Throws: `.invalidQuery` for an unknown key, `.validation` for a value of the wrong type, `.misuse`
  ///   for a derived attribute (the store computes it).
  public func setValue(_ value: Any?, forKey key: String) throws {
    checkContextQueue()
    guard let info else { return }
    switch info.entity.property(named: key) {
    case .attribute(let attribute, let index):
      if let derivation = attribute.derivation {
        throw StoreError(
          .misuse,
          "\(info.entity.name).\(key) is derived from '\(derivation)'; the store computes it on save and it cannot be set",
          entity: info.entity.name, key: key)
      }
      let stored = try Value(swiftValue: value, for: attribute, entity: info.entity.name)
      setAttribute(stored, index: index)
    case .toOne(let rel, _):
      let target = value as? ManagedObject
      if value != nil && target == nil {
        throw StoreError(
          .validation, "\(info.entity.name).\(key) takes a \(rel.destination) object", entity: info.entity.name, key: key)
      }
      managedObjectContext?.undoGrouping {
        managedObjectContext?.setRelationship(self, rel, targets: target.map { [$0] } ?? [])
      }
    case .toMany(let rel):
      let targets: [ManagedObject]
      if let set = value as? Set<ManagedObject> {
        targets = Array(set)
      } else if let array = value as? [ManagedObject] {
        targets = array
      } else if value == nil {
        targets = []
      } else {
        throw StoreError(
          .validation, "\(info.entity.name).\(key) takes a set of \(rel.destination) objects", entity: info.entity.name, key: key)
      }
      managedObjectContext?.undoGrouping { managedObjectContext?.setRelationship(self, rel, targets: targets) }
    case nil:
      throw StoreError(
        .invalidQuery, "\(info.entity.name) has no attribute or relationship '\(key)'", entity: info.entity.name, key: key)
    }
  }

  /// The stored form of an attribute, without Swift conversion; `nil` for an unknown key.
  public func primitiveValue(forKey key: String) -> Value? {
    checkContextQueue()
    guard let info, let index = info.entity.attributeIndex(named: key) else { return nil }
    fireFault()
    if info.hasExternalAttributes, !loadExternalValue(at: index) { return .null }
    return values[index]
  }

  /// ``value(forKey:)``, throwing where it would read a default: for a fault whose object is gone from
  /// the store (as ``fulfill()``), and for a value kept in external storage that cannot be read. The
  /// value of an attribute that allows external storage is read from the store's external storage the
  /// first time it is read; the getter of such an attribute logs a failure and reads nil, this throws it.
  ///
  /// ```swift
  /// let poster = try movie.fulfilledValue(forKey: "poster") as? Data
  /// ```
  ///
  /// - Throws: `.notFound` when the object no longer exists in the store and its values were never
  ///   loaded; `.corrupted` naming the entity and key when a value kept in external storage is missing;
  ///   `.io` when it cannot be read; `.invalidQuery` for an unknown key.
  public func fulfilledValue(forKey key: String) throws -> Any? {
    checkContextQueue()
    guard let info else { return nil }
    guard let property = info.entity.property(named: key) else {
      throw StoreError(
        .invalidQuery, "\(info.entity.name) has no attribute or relationship '\(key)'", entity: info.entity.name, key: key)
    }
    try fulfill()
    if case .attribute(_, let index) = property {
      try loadExternalValueNow(at: index)
      return values[index].swiftValue
    }
    return value(forKey: key)
  }

  /// Sets an attribute without marking a change: the object does not become updated and no undo is
  /// recorded. For values a subclass maintains itself — a timestamp set in ``willSave()`` (a normal
  /// setter there would mark the object again), a default computed in ``awakeFromInsert()``. The value
  /// is saved with the object's other changes.
  ///
  /// ```swift
  /// final class Note: ManagedObject {
  ///   @Attribute var updatedAt: Date?
  ///
  ///   override func willSave() {
  ///     try? setPrimitiveValue(Date.now, forKey: "updatedAt")
  ///   }
  /// }
  /// ```
  ///
  /// - Throws: `.invalidQuery` for an unknown key, `.validation` for a value the attribute cannot hold.
  public func setPrimitiveValue(_ value: Any?, forKey key: String) throws {
    checkContextQueue()
    guard let info else { return }
    guard let index = info.entity.attributeIndex(named: key) else {
      throw StoreError(.invalidQuery, "\(info.entity.name) has no attribute '\(key)'", entity: info.entity.name, key: key)
    }
    let attribute = info.entity.attributes[index]
    let stored = try Value(swiftValue: value, for: attribute, entity: info.entity.name)
    fireFault()
    replaceAttribute(stored, at: index)
  }

  // MARK: Lifecycle hooks

  /// Called once after the object is inserted into a context.
  open func awakeFromInsert() {}
  /// Called after the object's values are loaded from the store.
  open func awakeFromFetch() {}
  /// Called just before the object is saved.
  open func willSave() {}
  /// Called just after the object was saved.
  open func didSave() {}
  /// Called when the object is deleted, before delete rules are applied.
  open func prepareForDeletion() {}
  /// Called after the object's values were replaced by a refresh, a rollback, a merge policy resolving a
  /// conflict, or an undo or redo.
  open func awake(fromSnapshotEvents events: SnapshotEvents) {}

  // MARK: Validation

  // Checks of single values are opted into with ``ValueValidating``.

  /// Checks the whole object before it is first saved; throw to refuse the save.
  open func validateForInsert() throws {}
  /// Checks the whole object before its changes are saved; throw to refuse the save.
  open func validateForUpdate() throws {}
  /// Checks that the object may be deleted; throw to refuse the save.
  open func validateForDelete() throws {}

  // MARK: Hashable

  public static func == (a: ManagedObject, b: ManagedObject) -> Bool { a === b }
  public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }

  open var description: String {
    let name = info?.entity.name ?? String(describing: type(of: self))
    if isFaultStorage && !isInsertedStorage { return "<\(name) \(objectID) fault>" }
    let fields = (info?.entity.attributes ?? []).enumerated().map { "\($1.name)=\(values[$0])" }
    return "<\(name) \(objectID) \(fields.joined(separator: " "))>"
  }
}

/// A ``ManagedObject`` subclass that checks single attribute values when its objects are saved.
///
/// As in Core Data, where a class validates a property by declaring a `validate<Key>` method and
/// classes that declare none cost nothing, validation of single values is opted into: by adopting this
/// protocol. The context then calls ``validateValue(_:forKey:)`` for every stored attribute of each
/// inserted or updated object of the class, after the model's own rules (required values, bounds,
/// lengths, patterns); a class that does not adopt it is never asked. Every failure of one save is
/// reported together.
///
/// ```swift
/// final class Movie: ManagedObject, ValueValidating {
///   @Attribute var title: String
///
///   func validateValue(_ value: Any?, forKey key: String) throws {
///     if key == "title", (value as? String)?.hasPrefix(" ") == true { throw TitleError.leadingSpace }
///   }
/// }
/// ```
public protocol ValueValidating: ManagedObject {
  /// Checks the value of the attribute `key` (its Swift value: `String`, `Int64`, `Double`, `Date`, …,
  /// or `nil`) when the object is saved; throw to refuse it.
  func validateValue(_ value: Any?, forKey key: String) throws
}

/// What replaced an object's values, for ``ManagedObject/awake(fromSnapshotEvents:)``.
public struct SnapshotEvents: OptionSet, Sendable, Hashable {
  public let rawValue: UInt8
  public init(rawValue: UInt8) { self.rawValue = rawValue }

  /// An insert was undone.
  public static let undoInsertion = SnapshotEvents(rawValue: 1)
  /// A delete was undone.
  public static let undoDeletion = SnapshotEvents(rawValue: 2)
  /// A change was undone.
  public static let undoUpdate = SnapshotEvents(rawValue: 4)
  /// The context rolled back.
  public static let rollback = SnapshotEvents(rawValue: 8)
  /// The object was refreshed from the store.
  public static let refresh = SnapshotEvents(rawValue: 16)
  /// A merge policy settled a conflict with the stored values.
  public static let mergePolicy = SnapshotEvents(rawValue: 32)
}

/// The part of a ``Snapshot`` an object keeps (``ManagedObject/storedState``): the snapshot's object ID
/// is the object's own.
struct StoredState {
  var version: Int64
  var attributes: AttributeValues
  var toOne: [ObjectID?]
}

/// What only some objects use, apart from the object so that the others do not carry it: a fault of a
/// batched fetch refers to its batch alone; a prototype, an object with ordered relationships, or a
/// batched fault that needs either refers to an ``ObjectExtras``. (An enum of two class references: one
/// word, like the optional that holds it.)
enum SideState {
  case faultBatch(FaultBatch)
  case extras(ObjectExtras)
}

/// The side allocation of an object that needs more than a fault batch
/// (``ManagedObject/sideState``): made when first needed, kept while the object lives.
final class ObjectExtras {
  /// For a prototype: the layout it reads its declarations from (`nil` for a managed object).
  let prototypeLayout: ClassLayout?
  /// For a prototype: the recorder of the key paths read from it.
  @exclusivity(unchecked) var recorder: KeyPathRecorder?
  @exclusivity(unchecked) var faultBatch: FaultBatch?
  @exclusivity(unchecked) var toManyOrder = [Int: [ObjectID]]()
  @exclusivity(unchecked) var committedToManyOrder = [Int: [ObjectID]]()
  /// ``ManagedObject/changedKeys``.
  @exclusivity(unchecked) var changedKeys: Set<String> = []
  /// ``ManagedObject/observation``.
  @exclusivity(unchecked) var observation: ObjectObservation?

  init(prototypeLayout: ClassLayout? = nil) {
    self.prototypeLayout = prototypeLayout
  }
}

/// What every object of one entity in one context shares (``ManagedObject/binding``): the entity info and
/// the context's ``ChangeSignals``, behind one reference instead of two per object. The context makes one
/// per entity when it first makes an object of it and keeps it; objects keep theirs, so an object that
/// outlives its context still reaches its entity (and finds no context through the signals).
@usableFromInline
final class EntityBinding {
  @usableFromInline let info: EntityInfo
  @usableFromInline let signals: ChangeSignals
  /// `info.attributeIndexBySlot`, here so that an inlined attribute getter loads it through one
  /// reference fewer.
  @usableFromInline let attributeIndexBySlot: [Int]
  /// Asked by every getter of the objects whether a tracking is recording (see `ManagedObject+Observation.swift`).
  @usableFromInline let observationProbe = ObservationProbe()
  /// `info.hasExternalAttributes`: whether an attribute getter may find a reference to load.
  @usableFromInline let hasExternalAttributes: Bool

  init(info: EntityInfo, signals: ChangeSignals) {
    self.info = info
    self.signals = signals
    attributeIndexBySlot = info.attributeIndexBySlot
    hasExternalAttributes = info.hasExternalAttributes
  }
}

// MARK: - Framework internals

extension ManagedObject {
  /// The object's entity info; `nil` for a prototype.
  @usableFromInline final var info: EntityInfo? { binding?.info }

  /// The context's ``ChangeSignals``, through which the object also reaches its context.
  @usableFromInline final var signals: ChangeSignals? { binding?.signals }

  /// The properties changed since the last save (only tracked for saved objects). Kept in the side
  /// allocation, made when an object first changes: most objects never do.
  var changedKeys: Set<String> {
    get { extras?.changedKeys ?? [] }
    set { if !newValue.isEmpty || extras != nil { madeExtras.changedKeys = newValue } }
    _modify { yield &madeExtras.changedKeys }
  }

  /// The registrar and observed properties of an object read under tracking (in the side allocation).
  var observation: ObjectObservation? {
    get { extras?.observation }
    set { if newValue != nil || extras != nil { madeExtras.observation = newValue } }
  }

  /// Whether ``changedKeys`` is not empty (tested without copying the set).
  var hasChangedKeys: Bool { extras.map { !$0.changedKeys.isEmpty } ?? false }

  /// The last state read from or written to the store (``storedState`` with the object's ID); `nil` for
  /// a new object. Setting it keeps all but the ID, which must be the object's.
  var snapshot: Snapshot? {
    get {
      guard case .some(let state) = storedState else { return nil }
      return Snapshot(objectID: objectID, version: state.version, attributes: state.attributes, toOne: state.toOne)
    }
    set {
      guard let newValue else {
        storedState = nil
        return
      }
      keep(newValue)
    }
  }

  /// Keeps `snapshot` (of this object) as ``storedState``.
  func keep(_ snapshot: consuming Snapshot) {
    assert(snapshot.objectID == objectID, "the snapshot of \(snapshot.objectID) kept by \(objectID)")
    // The arrays are moved out of the snapshot, not copied: a copy and the snapshot's release are calls the
    // optimizer cannot pair up (the values' copy goes through their type's value witness).
    var attributes = AttributeValues()
    var toOne: [ObjectID?] = []
    swap(&attributes, &snapshot.attributes)
    swap(&toOne, &snapshot.toOne)
    storedState = StoredState(version: snapshot.version, attributes: attributes, toOne: toOne)
  }

  /// The row version of ``snapshot`` (without copying its arrays), `nil` for a new object.
  var snapshotVersion: Int64? {
    guard case .some(let state) = storedState else { return nil }
    return state.version
  }

  /// Whether ``snapshot`` is set (tested without copying it, as `!= nil` would).
  var hasSnapshot: Bool {
    if case .some = storedState { return true }
    return false
  }

  func load(_ snapshot: consuming Snapshot) {
    keep(consume snapshot)
    loadValuesOfSnapshot()
  }

  /// Takes the values of the object's own `storedState`, which must be set.
  private func loadValuesOfSnapshot() {
    values = storedState.unsafelyUnwrapped.attributes
    if let info, info.hasTransientAttributes {
      for i in info.transientIndices { values[i] = info.initialValues[i] }
    }
    // An entity without to-one relationships has empty arrays on both sides: assigning one would still
    // count a reference to the shared empty array and drop one.
    if !toOne.isEmpty || !storedState.unsafelyUnwrapped.toOne.isEmpty { toOne = storedState.unsafelyUnwrapped.toOne }
    isFaultStorage = false
  }

  // MARK: Side state

  /// For a prototype: its layout.
  var prototypeLayout: ClassLayout? { extras?.prototypeLayout }

  /// For a prototype: the recorder of the key paths read from it.
  var recorder: KeyPathRecorder? {
    get { extras?.recorder }
    set { extras?.recorder = newValue }
  }

  /// For a fault fetched with `fetchBatchSize`: the batch whose snapshots load together when any of them
  /// fires.
  var faultBatch: FaultBatch? {
    get {
      switch sideState {
      case .faultBatch(let batch)?: batch
      case .extras(let extras)?: extras.faultBatch
      case nil: nil
      }
    }
    set {
      if case .extras(let extras)? = sideState {
        extras.faultBatch = newValue
      } else if let newValue {
        sideState = .faultBatch(newValue)
      } else if case .some = sideState {
        sideState = nil
      }
    }
  }

  /// For ordered to-many relationships, by to-many index: the targets in order. It may lag behind
  /// `toMany` (targets removed or added by code that only keeps the sets); ``orderedTargets(toManyIndex:)``
  /// reconciles it. Empty for objects without ordered relationships (and then not allocated).
  var toManyOrder: [Int: [ObjectID]] {
    get { extras?.toManyOrder ?? Dictionary() }
    set { if !newValue.isEmpty || extras != nil { madeExtras.toManyOrder = newValue } }
    _modify { yield &madeExtras.toManyOrder }
  }

  /// `toManyOrder` as last loaded or saved.
  var committedToManyOrder: [Int: [ObjectID]] {
    get { extras?.committedToManyOrder ?? Dictionary() }
    set { if !newValue.isEmpty || extras != nil { madeExtras.committedToManyOrder = newValue } }
    _modify { yield &madeExtras.committedToManyOrder }
  }

  /// The side allocation, if made.
  private var extras: ObjectExtras? {
    if case .extras(let extras)? = sideState { return extras }
    return nil
  }

  /// The side allocation, made now (keeping the fault batch) if it was not.
  private var madeExtras: ObjectExtras {
    if case .extras(let extras)? = sideState { return extras }
    let extras = ObjectExtras()
    if case .faultBatch(let batch)? = sideState { extras.faultBatch = batch }
    sideState = .extras(extras)
    return extras
  }

  /// Loads the object's values now, and throws when the store no longer has them.
  ///
  /// Reading an attribute of a fault loads the fault with no way to fail: when the object is gone from
  /// the store (another context or process deleted it and this context has not merged that yet), the
  /// object is marked deleted, a warning is logged, and its attributes read as their defaults — Core
  /// Data's behaviour with `shouldDeleteInaccessibleFaults`. A settable Swift property cannot throw, so
  /// code for which a default must never pass for a value asks first:
  ///
  /// ```swift
  /// for film in movie.director?.movies ?? [] {
  ///   try film.fulfill()
  ///   print(film.title)
  /// }
  /// ```
  ///
  /// An object whose values are loaded, or one inserted in its context, returns at once. An object
  /// deleted in its context and not saved yet keeps its values and returns too.
  /// - Throws: `StoreError` `.notFound` when the object no longer exists in the store and its values
  ///   were never loaded (the same error ``ObjectContext/existingObject(with:)`` throws for it).
  public func fulfill() throws {
    checkContextQueue()
    fireFault()
    guard isInaccessibleStorage else { return }
    throw StoreError(
      .notFound,
      "\(objectID) no longer exists in the store: its values cannot be loaded",
      entity: objectID.entityName
    )
  }

  /// Loads the values of a fault. An object that no longer exists in the store is marked deleted and
  /// keeps default values (it never crashes the app).
  /// A fault fetched with its values (`returnsObjectsAsFaults`, prefetching, a loaded fault batch) keeps
  /// them in `snapshot` and loads from there without asking the store.
  @inlinable @inline(__always)
  func fireFault() {
    if isFaultStorage { fireFaultNow() }
  }

  @usableFromInline
  func fireFaultNow() {
    // `binding` is tested, not bound: a fault that loads from its snapshot never reads it here.
    guard !isInsertedStorage, binding != nil else { return }
    if let batch = faultBatch {
      if !hasSnapshot { withContext { $0.loadFaultBatch(batch) } }
      faultBatch = nil
    }
    if hasSnapshot {
      loadValuesOfSnapshot()
      awakeFromFetch()
    } else if let snapshot = withContext({ $0.fetchSnapshot(for: objectID) }) ?? nil {
      if StrataLog.level >= 2 { contextLog.debug("fault fired: \(objectID)") }
      load(snapshot)
      awakeFromFetch()
    } else if let info {
      // Not silent: the values read next are defaults, not the object's. `existingObject(with:)` throws
      // `.notFound` for it, for code that must know.
      if managedObjectContext != nil {
        contextLog.warning(
          "the fault of \(objectID) cannot be fulfilled: the object was deleted from the store, so its attributes read as defaults (fulfill() and existingObject(with:) throw .notFound for it)"
        )
      }
      values = info.initialValues
      toOne = Array(repeating: nil, count: info.entity.toOneRelationships.count)
      toMany = Array(repeating: [], count: info.entity.toManyRelationships.count)
      committedToMany = toMany
      toManyOrder = [:]
      committedToManyOrder = [:]
      isFaultStorage = false
      isDeletedStorage = managedObjectContext != nil
      isInaccessibleStorage = true
    }
  }

  /// Turns the object back into a fault, dropping unsaved changes.
  func turnIntoFault() {
    guard let info, !isInsertedStorage else { return }
    values = []
    toOne = []
    toMany = Array(repeating: nil, count: info.entity.toManyRelationships.count)
    committedToMany = toMany
    toManyOrder = [:]
    committedToManyOrder = [:]
    storedState = nil
    faultBatch = nil
    changedKeys = []
    isFaultStorage = true
    isDeletedStorage = false
    isInaccessibleStorage = false
  }

  @inline(__always)
  func target(ofSlot slot: Int32) -> SlotTarget {
    guard let info else { return .none }
    let index = Int(slot - slotBase)
    guard index >= 0, index < info.slotTargets.count else { return .none }
    return info.slotTargets[index]
  }

  /// The position in `values` of the attribute declared at `slot`, its fault fired: `nil` for a
  /// prototype or a slot that declares no attribute of the entity.
  ///
  /// Inlined into every attribute getter, which then converts the value where it lies: a read costs a
  /// few loads and compares instead of a call that copies the whole `Value` out and back.
  ///
  /// For an entity with attributes allowing external storage, a value the object holds as a reference is
  /// read now (``loadExternalValue(at:)``); `nil` when that fails.
  @inlinable @inline(__always)
  func loadedAttributeIndex(slot: Int32) -> Int? {
    guard let index = attributeIndex(slot: slot) else { return nil }
    fireFault()
    if binding?.hasExternalAttributes == true, !loadExternalValue(at: index) { return nil }
    return index
  }

  /// The position in `values` of the attribute declared at `slot`, for an attribute setter that may store
  /// the value straight away: the object is new and nothing (undo, observers) wants to hear of changes.
  /// `nil` sends the setter the long way, through ``setAttributeValue(_:slot:)`` (also for an observed
  /// object, whose trackings hear of the change).
  @inlinable @inline(__always)
  func quietlySettableAttributeIndex(slot: Int32) -> Int? {
    guard isInsertedStorage, !isObservedStorage, signals?.wantsChanges != true else { return nil }
    return attributeIndex(slot: slot)
  }

  /// The position in `values` of the attribute declared at `slot`, or `nil` (a prototype, a slot that
  /// declares a relationship, a slot of another class).
  @inlinable @inline(__always)
  func attributeIndex(slot: Int32) -> Int? {
    guard let binding else { return nil }
    let position = Int(truncatingIfNeeded: slot &- slotBase)
    let indices = binding.attributeIndexBySlot
    guard position >= 0, position < indices.count else { return nil }
    let index = indices[position]
    return index >= 0 ? index : nil
  }

  /// The attribute declared at `slot` as the wrapper's Swift type: what every `@Attribute` and `@Derived`
  /// getter runs, inlined into the app's code (read in place when the slot is an attribute of a managed
  /// object, through ``attributeValue(slot:)`` otherwise).
  @inlinable @inline(__always)
  func attributeValue<T: AttributeValue>(slot: Int32, as type: T.Type) -> T {
    if let index = loadedAttributeIndex(slot: slot) { return T(storedValue: values[index]) ?? T.zero }
    // A managed object's slot that is no attribute, or a value kept in external storage that cannot be
    // read (logged): nil. A prototype records the read.
    return T(storedValue: binding == nil ? attributeValue(slot: slot) : .null) ?? T.zero
  }

  @usableFromInline
  func attributeValue(slot: Int32) -> Value {
    guard binding != nil else { return prototypeAttributeValue(slot: slot) }
    guard let index = loadedAttributeIndex(slot: slot) else { return .null }
    return values[index]
  }

  /// Reads the value at `index` from the store's external storage when the object holds its reference
  /// (an attribute that allows external storage, read through the context's store, keeps the reference
  /// until first read), and keeps it as the object's value and stored value: read once, cached like any
  /// value. Returns `false`, after logging a warning, when the value cannot be read (the caller reads
  /// nil); ``fulfilledValue(forKey:)`` throws instead.
  @usableFromInline
  func loadExternalValue(at index: Int) -> Bool {
    do {
      try loadExternalValueNow(at: index)
      return true
    } catch {
      contextLog.warning(
        "\(objectID): \(error) (the attribute reads as nil; fulfilledValue(forKey:) throws the error)")
      return false
    }
  }

  /// The value at `index` as an undo restores it: an external-storage value still held as its reference is
  /// read first, since the save that replaces it removes what the reference names.
  private func undoableValue(at index: Int, info: EntityInfo) -> Value {
    if info.hasExternalAttributes { _ = loadExternalValue(at: index) }
    return values[index]
  }

  /// ``loadExternalValue(at:)``, throwing what reading the value throws.
  func loadExternalValueNow(at index: Int) throws {
    guard let info, index < info.isExternal.count, info.isExternal[index], index < values.count,
      case .data(let stored) = values[index], stored.count == ExternalDataReference.size
    else { return }
    let key = info.entity.attributes[index].name
    guard let store = withContext({ $0.coordinator.externalValues }) ?? nil else {
      guard ExternalDataReference.decode(stored) != nil, managedObjectContext == nil else { return }
      throw StoreError(
        .misuse,
        "the value of \(info.entity.name).\(key) is kept in external storage and \(objectID) has no context to read it through",
        entity: info.entity.name, key: key)
    }
    guard let bytes = try store.externalValue(stored, entity: info.entity.name, key: key) else { return }
    values[index] = .data(bytes)
    if let state = storedState, index < state.attributes.count, state.attributes[index] == .data(stored) {
      storedState?.attributes[index] = .data(bytes)
    }
  }

  /// What a prototype's attribute reads: the attribute is recorded as read (out of line, so that every
  /// read of a managed object does not carry this path's stack frame).
  @inline(never)
  private func prototypeAttributeValue(slot: Int32) -> Value {
    guard let recorder else { return .null }
    guard case .attribute(let type, _, _, _, _, _, _)? = prototypeLayout?.declaration(ofSlot: slot) else {
      recorder.record(nil)
      return .null
    }
    return recorder.recordAttribute(prototypeLayout?.name(ofSlot: slot), type: type, slot: slot)
  }

  @usableFromInline
  func setAttributeValue(_ value: Value, slot: Int32) {
    guard let index = attributeIndex(slot: slot) else { return }
    setAttribute(value, index: index)
  }

  func setAttribute(_ value: Value, index: Int) {
    if isInsertedStorage {
      if signals?.wantsChanges == true, values[index] != value {
        withContext { context in
          context.recordUndo(.attribute(self, index: index, value: values[index]))
          context.noteChange(self, .updated)
        }
      }
      replaceAttribute(value, at: index)
      return
    }
    fireFault()
    guard values[index] != value, let info else { return }
    withContext { context in
      context.recordUndo(.attribute(self, index: index, value: undoableValue(at: index, info: info)))
      context.noteChange(self, .updated)
    }
    replaceAttribute(value, at: index)
    changedKeys.insert(info.entity.attributes[index].name)
    withContext { $0.registerUpdated(self) }
  }

  @usableFromInline
  func relatedObjects(slot: Int32) -> [ManagedObject] {
    if let recorder {
      recorder.recordRelationship(prototypeLayout?.name(ofSlot: slot))
      if let layout = prototypeLayout,
        case .relationship(let destination, false, _, _, _, _, _, _, _)? = layout.declaration(ofSlot: slot)
      {
        let next = ClassLayout.prototype(of: destination)
        next.recorder = recorder
        return [next]
      }
      return []
    }
    switch target(ofSlot: slot) {
    case .toOne(let index):
      fireFault()
      guard let id = toOne[index] else { return [] }
      return withContext { [$0.object(with: id)] } ?? []
    case .toMany(let index):
      return relatedObjects(toManyIndex: index)
    default:
      return []
    }
  }

  func relatedObjects(toManyIndex index: Int) -> [ManagedObject] {
    guard let context = managedObjectContext else { return [] }
    let set = context.loadToMany(self, index: index)
    let ids =
      info?.hasOrderedToMany == true && info?.entity.toManyRelationships[index].isOrdered == true
      ? (orderedTargets(toManyIndex: index) ?? Array(set)) : Array(set)
    // One fault batch: reading any target loads those still unloaded in one store call, instead of
    // one call per target (a director's ten movies: ten calls).
    guard ids.count > 1 else { return ids.map { context.object(with: $0) } }
    return context.faults(for: ids, batchSize: ids.count)
  }

  /// The targets of the ordered to-many relationship at `index` in order, or `nil` while not loaded:
  /// `toManyOrder` without the targets the set no longer holds, then the set's targets it lacks (added
  /// by a path that keeps only sets, such as a merge), saved ones by key, then new ones in creation order.
  /// Stores the reconciled list.
  func orderedTargets(toManyIndex index: Int) -> [ObjectID]? {
    guard index < toMany.count, let set = toMany[index] else { return nil }
    let order = toManyOrder[index] ?? []
    if order.count == set.count, Set(order) == set { return order }
    var seen = Set<ObjectID>()
    var result = order.filter { set.contains($0) && seen.insert($0).inserted }
    if result.count < set.count {
      // Saved objects by key, then new ones in the order they were made (their temporary numbers).
      func rank(_ id: ObjectID) -> (Int, Int64, UInt64) {
        switch id.key {
        case .permanent(let key): (0, key, 0)
        case .temporary(let number): (1, 0, number)
        }
      }
      result += set.subtracting(seen).sorted { rank($0) < rank($1) }
    }
    toManyOrder[index] = result
    return result
  }

  @usableFromInline
  func setRelatedObjects(_ objects: [ManagedObject], slot: Int32) {
    guard let info, let context = managedObjectContext else { return }
    switch target(ofSlot: slot) {
    case .toOne(let index):
      context.undoGrouping { context.setRelationship(self, info.entity.toOneRelationships[index], targets: objects) }
    case .toMany(let index):
      context.undoGrouping { context.setRelationship(self, info.entity.toManyRelationships[index], targets: objects) }
    default:
      return
    }
  }
}

extension Value {
  /// The value as a plain Swift value (`String`, `Int64`, `Double`, `Decimal`, `Bool`, `Date`, `Data`,
  /// `UUID`, `URL`, `ObjectID`, `[Any?]`), or `nil` for `.null`.
  @inlinable
  public var swiftValue: Any? {
    switch self {
    case .null: nil
    case .int(let i): i
    case .double(let d): d
    case .decimal(let d): d
    case .string(let s): s
    case .bool(let b): b
    case .date(let d): d
    case .data(let d): d
    case .uuid(let u): u
    case .url(let u): u
    case .objectID(let id): id
    case .array(let items): items.map(\.swiftValue)
    }
  }

  init(swiftValue: Any?, for attribute: AttributeDescription, entity: String) throws {
    let raw: Value
    switch swiftValue {
    case nil: raw = .null
    case let v as Value: raw = v
    case let v as any AttributeValue: raw = v.storedValue
    case let v as Int8: raw = .int(Int64(v))
    case let v as UInt8: raw = .int(Int64(v))
    case let v as UInt16: raw = .int(Int64(v))
    case let v as UInt32: raw = .int(Int64(v))
    default:
      throw StoreError(
        .validation,
        "\(entity).\(attribute.name) takes a \(attribute.type.rawValue), not \(String(describing: swiftValue ?? "nil"))",
        entity: entity, key: attribute.name)
    }
    if raw.isNull && !attribute.isOptional {
      throw StoreError(
        .validation, "\(entity).\(attribute.name) is required and cannot be nil", entity: entity, key: attribute.name,
        value: .null)
    }
    guard let coerced = attribute.type.coerce(raw) else {
      throw StoreError(
        .validation, "\(entity).\(attribute.name) takes a \(attribute.type.rawValue), not the \(raw.kindName) \(raw)",
        entity: entity, key: attribute.name, value: raw)
    }
    self = coerced
  }
}
