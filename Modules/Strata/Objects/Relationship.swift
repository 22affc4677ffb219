import Foundation
internal import StrataStoreKit

/// A Swift type a `@Relationship` can hold: `T?` for a to-one relationship, `Set<T>` for a to-many one,
/// `[T]` for an ordered to-many one, where `T` is a ``ManagedObject`` subclass.
public protocol RelationshipValue {
  /// The class at the other end.
  static var destinationType: ManagedObject.Type { get }
  /// Whether the relationship is to-many.
  static var isToMany: Bool { get }
  /// Whether the relationship is an ordered to-many (`[T]`); `false` unless the type says otherwise.
  static var isOrdered: Bool { get }
  /// Builds the property value from the related objects.
  static func make(from objects: [ManagedObject]) -> Self
  /// The related objects the value holds.
  var relatedObjects: [ManagedObject] { get }
}

extension RelationshipValue {
  /// `false`: relationships are unordered unless their type is an `Array`.
  public static var isOrdered: Bool { false }
}

extension Optional: RelationshipValue where Wrapped: ManagedObject {
  public static var destinationType: ManagedObject.Type { Wrapped.self }
  public static var isToMany: Bool { false }
  @inlinable
  public static func make(from objects: [ManagedObject]) -> Wrapped? { objects.first as? Wrapped }
  public var relatedObjects: [ManagedObject] { self.map { [$0] } ?? [] }
}

extension Set: RelationshipValue where Element: ManagedObject {
  public static var destinationType: ManagedObject.Type { Element.self }
  public static var isToMany: Bool { true }
  // Inlinable, so the app's module builds the set specialised for its element type; a loop over the
  // concrete `[ManagedObject]`, not `compactMap`, which unspecialised looked metadata up per element.
  @inlinable
  public static func make(from objects: [ManagedObject]) -> Set<Element> {
    var related = Set<Element>(minimumCapacity: objects.count)
    for object in objects {
      if let element = object as? Element { related.insert(element) }
    }
    return related
  }
  public var relatedObjects: [ManagedObject] { Array(self) }
}

/// An ordered to-many relationship (Core Data's `isOrdered`): the targets keep the order they are given.
///
/// An object appears once, as in an `NSOrderedSet`: assigning an array with repeats keeps each object's
/// first occurrence. Setting the inverse to-one (`track.playlist = p`) appends the object at the end.
///
/// ```swift
/// final class Playlist: ManagedObject {
///   @Relationship(inverse: "playlist") var tracks: [Track]
/// }
/// final class Track: ManagedObject {
///   @Relationship(inverse: "tracks") var playlist: Playlist?
/// }
///
/// let playlist = Playlist(context: context)
/// let track = Track(context: context)
/// playlist.tracks.insert(track, at: 0)
/// ```
extension Array: RelationshipValue where Element: ManagedObject {
  public static var destinationType: ManagedObject.Type { Element.self }
  public static var isToMany: Bool { true }
  public static var isOrdered: Bool { true }
  @inlinable
  public static func make(from objects: [ManagedObject]) -> [Element] {
    var related: [Element] = []
    related.reserveCapacity(objects.count)
    for object in objects {
      if let element = object as? Element { related.append(element) }
    }
    return related
  }
  public var relatedObjects: [ManagedObject] { self }
}

/// Declares a relationship of a ``ManagedObject`` subclass: `T?` for to-one, `Set<T>` for to-many,
/// `[T]` for an ordered to-many.
///
/// Name the inverse so both sides stay in step: setting `movie.director` adds the movie to
/// `director.movies`, and the reverse.
///
/// ```swift
/// final class Director: ManagedObject {
///   @Attribute var name: String
///   @Relationship(inverse: "director", deleteRule: .cascade) var movies: Set<Movie>
/// }
/// final class Movie: ManagedObject {
///   @Relationship(inverse: "movies") var director: Director?
/// }
/// ```
@propertyWrapper
public struct Relationship<Value: RelationshipValue> {
  @usableFromInline let slot: Int32

  /// - Parameters:
  ///   - inverse: the relationship on the destination that points back.
  ///   - deleteRule: what deleting this object does to the related ones.
  ///   - isOptional: for to-one relationships, whether `nil` is allowed on save.
  ///   - minCount: for to-many relationships, the fewest targets allowed on save.
  ///   - maxCount: for to-many relationships, the most targets allowed on save (0 = no limit).
  ///   - originalName: the relationship's name in the previous model version, when it was renamed.
  @inlinable
  public init(
    inverse: String? = nil, deleteRule: DeleteRule = .nullify, isOptional: Bool = true, minCount: Int = 0,
    maxCount: Int = 0, originalName: String? = nil
  ) {
    slot = SlotState.takeSlot()
    if _slowPath(SlotState.isCollecting) {
      Self.declare(
        slot: slot, inverse: inverse, deleteRule: deleteRule, isOptional: isOptional, minCount: minCount, maxCount: maxCount,
        originalName: originalName)
    }
  }

  @usableFromInline
  static func declare(
    slot: Int32, inverse: String?, deleteRule: DeleteRule, isOptional: Bool, minCount: Int, maxCount: Int,
    originalName: String?
  ) {
    SlotState.declare(
      slot,
      .relationship(
        destination: Value.destinationType, isToMany: Value.isToMany, inverse: inverse, deleteRule: deleteRule,
        isOptional: isOptional, minCount: minCount, maxCount: maxCount, originalName: originalName,
        isOrdered: Value.isOrdered))
  }

  @available(*, unavailable, message: "@Relationship is only available on ManagedObject subclasses")
  public var wrappedValue: Value {
    get { fatalError("unreachable") }
    set { fatalError("unreachable") }
  }

  @inlinable
  public static subscript<Object: ManagedObject>(
    _enclosingInstance object: Object,
    wrapped wrappedKeyPath: ReferenceWritableKeyPath<Object, Value>,
    storage storageKeyPath: ReferenceWritableKeyPath<Object, Self>
  ) -> Value {
    get {
      let slot = object[keyPath: storageKeyPath].slot
      object.checkContextQueue(slot: slot)
      object.noteAccess(slot: slot)
      return Value.make(from: object.relatedObjects(slot: slot))
    }
    set {
      let slot = object[keyPath: storageKeyPath].slot
      object.checkContextQueue(slot: slot)
      object.setRelatedObjects(newValue.relatedObjects, slot: slot)
    }
  }
}
