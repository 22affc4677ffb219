import Foundation

/// Options a store is opened with, whatever its backend. What only one backend understands (an LMDB
/// map size, an SQLite busy timeout) is configured on that backend's factory instead.
public struct StoreOptions: Sendable, Hashable, Codable {
  /// Open the store for reading only; every write fails with `.readOnly`.
  public var isReadOnly: Bool
  /// Record a history transaction for every save and batch request.
  public var tracksHistory: Bool
  /// Yield a ``StoreChange`` after commits made by other processes as well as this one.
  public var postsRemoteChangeNotifications: Bool
  /// When a container opens a store written with another model: migrate it to the container's model when
  /// a migration can be inferred from the two models (see ``ModelMigration``), as Core Data's
  /// `shouldMigrateStoreAutomatically` and `shouldInferMappingModelAutomatically` do. Off, such a store
  /// fails to open with `.schemaMismatch`.
  public var migratesAutomatically: Bool

  /// Options; the defaults open for writing, without history or remote notifications, migrating automatically.
  public init(
    isReadOnly: Bool = false, tracksHistory: Bool = false, postsRemoteChangeNotifications: Bool = false,
    migratesAutomatically: Bool = true
  ) {
    self.isReadOnly = isReadOnly
    self.tracksHistory = tracksHistory
    self.postsRemoteChangeNotifications = postsRemoteChangeNotifications
    self.migratesAutomatically = migratesAutomatically
  }
}

/// Announces a committed transaction, from this process or (with remote notifications on) another one.
public struct StoreChange: Sendable, Hashable {
  /// The identifier of the store that committed.
  public var storeIdentifier: String
  /// The history token of the transaction, when history tracking is on.
  public var historyToken: HistoryToken?
  /// Whether another process made the commit.
  public var isRemote: Bool
  /// The objects the transaction inserted, updated and deleted, when the store knows them.
  public var inserted: [ObjectID]
  /// See ``inserted``.
  public var updated: [ObjectID]
  /// See ``inserted``.
  public var deleted: [ObjectID]

  /// An announcement of a commit to the store `storeIdentifier`.
  public init(
    storeIdentifier: String, historyToken: HistoryToken? = nil, isRemote: Bool = false, inserted: [ObjectID] = [],
    updated: [ObjectID] = [], deleted: [ObjectID] = []
  ) {
    self.storeIdentifier = storeIdentifier
    self.historyToken = historyToken
    self.isRemote = isRemote
    self.inserted = inserted
    self.updated = updated
    self.deleted = deleted
  }
}
