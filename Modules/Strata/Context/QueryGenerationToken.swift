internal import StrataStoreKit

/// Names a snapshot of the store that contexts can read from: a query generation.
///
/// Pass ``current`` to ``ObjectContext/setQueryGenerationFrom(_:)`` to pin a context to the store as it
/// is now; read the context's ``ObjectContext/queryGenerationToken`` to pin another context to the same
/// snapshot. The snapshot stays pinned in the store while any context holds a token for it.
///
/// ```swift
/// try context.setQueryGenerationFrom(.current)
/// let report = container.newBackgroundContext()
/// let pinned = context.queryGenerationToken          // a token for that snapshot
/// try report.setQueryGenerationFrom(pinned)           // a second context reads the same snapshot
/// ```
public final class QueryGenerationToken: Sendable, Hashable, CustomStringConvertible {
  /// Asks for the store's current generation: each context given it pins the store as it is then.
  public static let current = QueryGenerationToken(pin: nil)

  let pin: GenerationPin?

  init(pin: GenerationPin?) {
    self.pin = pin
  }

  public static func == (a: QueryGenerationToken, b: QueryGenerationToken) -> Bool {
    a.pin?.generation == b.pin?.generation
  }

  public func hash(into hasher: inout Hasher) {
    hasher.combine(pin?.generation)
  }

  public var description: String {
    guard let generation = pin?.generation else { return "current" }
    return "\(generation.storeIdentifier)#\(generation.id)"
  }
}

/// A pinned generation of a store, released when the last token holding it goes away.
final class GenerationPin: Sendable {
  let store: any PersistentStore
  let generation: QueryGeneration

  init(store: any PersistentStore) throws {
    self.store = store
    self.generation = try store.pinGeneration()
  }

  deinit { store.unpin(generation) }
}

extension ObjectContext {
  /// The generation this context reads, or `nil` when it reads the newest committed state.
  public var queryGenerationToken: QueryGenerationToken? { pinnedGeneration }

  /// Pins this context to a snapshot of the store, on every backend: its fetches, counts, faults and
  /// relationship loads read that snapshot, whatever other contexts or processes commit meanwhile.
  ///
  /// - ``QueryGenerationToken/current`` pins the store as it is now.
  /// - A token read from another context's ``queryGenerationToken`` pins the same snapshot.
  /// - `nil` unpins: reads see the newest committed state again.
  ///
  /// A pinned context moves to the newest generation (and stays pinned) when it saves, merges changes,
  /// calls ``refreshAllObjects()`` or ``reset()``. Saves still check against the newest stored state: an
  /// object changed elsewhere since the snapshot is an optimistic-lock conflict, as without pinning.
  ///
  /// ```swift
  /// try context.setQueryGenerationFrom(.current)
  /// let before = try context.count(for: FetchRequest<Fireball>())
  /// // … another process imports more fireballs …
  /// try context.count(for: FetchRequest<Fireball>()) == before   // still the pinned snapshot
  /// context.refreshAllObjects()                                   // now the newest one
  /// ```
  ///
  /// - Throws: `.misuse` for a token of another store or when no store is loaded; store errors when
  ///   the snapshot cannot be pinned.
  public func setQueryGenerationFrom(_ token: QueryGenerationToken?) throws {
    checkQueue()
    guard let token else {
      pinnedGeneration = nil
      return
    }
    let store = try requireStore()
    guard let pin = token.pin else {
      pinnedGeneration = QueryGenerationToken(pin: try GenerationPin(store: store))
      return
    }
    guard pin.generation.storeIdentifier == store.identifier else {
      throw StoreError(
        .misuse, "query generation \(token) belongs to another store than this context's (\(store.identifier))")
    }
    pinnedGeneration = token
  }

  /// The generation reads go to: the pinned one, or `nil` for the newest.
  var readGeneration: QueryGeneration? { pinnedGeneration?.pin?.generation }

  /// Moves a pinned context to the store's newest generation; an unpinned one stays unpinned.
  func advanceQueryGeneration() {
    guard pinnedGeneration != nil, let store = try? requireStore() else { return }
    pinnedGeneration = (try? GenerationPin(store: store)).map { QueryGenerationToken(pin: $0) }
  }
}
