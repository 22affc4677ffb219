import Foundation

/// An actor that owns a background ``ObjectContext`` and runs on the context's queue: code isolated to
/// the actor uses the context and its objects where they belong, and the compiler checks it — objects
/// are not `Sendable`, so they cannot leave the actor; pass their `ObjectID`s out instead.
///
/// Strata's counterpart of SwiftData's `ModelActor`. Declare the actor with the executor as a
/// `nonisolated let`; the protocol supplies the actor's `unownedExecutor` and its ``context``:
///
/// ```swift
/// actor MovieRenamer: ContextActor {
///   nonisolated let contextExecutor: ContextExecutor
///
///   init(container: PersistentContainer) {
///     contextExecutor = ContextExecutor(context: container.newBackgroundContext())
///   }
///
///   func rename(_ id: ObjectID, to title: String) throws {
///     guard let movie = try context.existingObject(with: id) as? Movie else { return }
///     movie.title = title
///     try context.save()
///   }
/// }
///
/// try await MovieRenamer(container: container).rename(movie.objectID, to: "Heat (1995)")
/// ```
///
/// For one-off work, ``BackgroundActor`` is a ready-made one (``PersistentContainer/newBackgroundActor()``).
public protocol ContextActor: Actor {
  /// The executor the actor runs on: its context's queue. Declare it as a `nonisolated let`.
  nonisolated var contextExecutor: ContextExecutor { get }
}

extension ContextActor {
  /// The actor's executor: its context's queue (the requirement of `Actor`, supplied here).
  public nonisolated var unownedExecutor: UnownedSerialExecutor { contextExecutor.asUnownedSerialExecutor() }

  /// The context the actor owns. Use it, and its objects, in the actor's methods.
  ///
  /// ```swift
  /// extension BackgroundActor {
  ///   func movieCount() throws -> Int { try context.count(for: FetchRequest<Movie>()) }
  /// }
  /// ```
  public var context: ObjectContext { contextExecutor.context }
}

/// A serial executor that runs each job on an ``ObjectContext``'s queue, as the context's work (as
/// ``ObjectContext/perform(_:)`` runs its block): the executor of a ``ContextActor``. Strata's
/// counterpart of SwiftData's `DefaultSerialModelExecutor`.
///
/// ```swift
/// let executor = ContextExecutor(context: container.newBackgroundContext())
/// ```
public final class ContextExecutor: SerialExecutor {
  /// The context on whose queue jobs run.
  public let context: ObjectContext

  /// An executor for `context`. Give each actor a context of its own: two actors on one context would
  /// share its queue, each blocking the other.
  ///
  /// ```swift
  /// let executor = ContextExecutor(context: container.newBackgroundContext())
  /// ```
  public init(context: ObjectContext) {
    self.context = context
  }

  /// Queues `job` on the context's queue.
  public func enqueue(_ job: consuming ExecutorJob) {
    let job = UnownedJob(job)
    let executor = asUnownedSerialExecutor()
    context.enqueue { job.runSynchronously(on: executor) }
  }

  /// The executor as an actor's `unownedExecutor` names it.
  public func asUnownedSerialExecutor() -> UnownedSerialExecutor {
    UnownedSerialExecutor(ordinary: self)
  }

  /// Stops the process unless the calling thread runs the context's queue: what
  /// `assumeIsolated` asks of an actor on this executor, for code that reached the queue another way
  /// (inside ``ObjectContext/perform(_:)``, say).
  public func checkIsolated() {
    precondition(context.isOnOwnQueue, "not on the queue of \(context.contextDescription)")
  }
}

/// A ready-made ``ContextActor``: a background context and an actor on its queue, for work that needs no
/// actor of its own. Made by ``PersistentContainer/newBackgroundActor()``.
///
/// ```swift
/// let worker = container.newBackgroundActor()
/// let id = try await worker.perform { context in
///   let movie = Movie(context: context)
///   movie.title = "Heat"
///   try context.save()
///   return movie.objectID
/// }
/// ```
public actor BackgroundActor: ContextActor {
  /// The executor the actor runs on: its context's queue.
  public nonisolated let contextExecutor: ContextExecutor

  /// An actor on a new background context of `container`.
  ///
  /// ```swift
  /// let worker = BackgroundActor(container: container)
  /// ```
  public init(container: PersistentContainer) {
    contextExecutor = ContextExecutor(context: container.newBackgroundContext())
  }

  /// Runs `body` with the actor's context on the context's queue, as the actor's work. `body` is
  /// `@Sendable` and what it returns `Sendable` (an `ObjectID`, a count, a value): no object goes in or
  /// out.
  ///
  /// ```swift
  /// let worker = container.newBackgroundActor()
  /// let count = try await worker.perform { context in try context.count(for: FetchRequest<Movie>()) }
  /// ```
  public func perform<T: Sendable>(_ body: @Sendable (ObjectContext) throws -> T) rethrows -> T {
    try body(context)
  }
}

extension PersistentContainer {
  /// A ``BackgroundActor``: an actor on a new background context, whose work the compiler keeps on the
  /// context's queue.
  ///
  /// ```swift
  /// let worker = container.newBackgroundActor()
  /// let titles = try await worker.perform { context in try context.fetch(FetchRequest<Movie>()).map(\.title) }
  /// ```
  public func newBackgroundActor() -> BackgroundActor {
    BackgroundActor(container: self)
  }
}
