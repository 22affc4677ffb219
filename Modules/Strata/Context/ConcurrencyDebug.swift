import CStrataSlots
import Foundation

// The concurrency debug mode, Strata's `-com.apple.CoreData.ConcurrencyDebug 1`: with
// `STRATA_CONCURRENCY_DEBUG=1` in the environment when the process starts, every entry point of a context
// and every attribute and relationship access of its objects checks that the calling thread runs the
// context's queue, and stops the process on the first one that does not, naming the object, the context
// and the thread. Off (the default), each check is one load of a process-wide flag and one branch that
// is never taken: the flag is read once, before `main` (CStrataSlots.c).

extension ObjectContext {
  /// Stops the process if the concurrency debug mode is on and the calling thread does not run this
  /// context's queue: what every entry point of a context runs first.
  @inline(__always)
  func checkQueue(_ function: StaticString = #function) {
    if _slowPath(strata_concurrency_debug_enabled() != 0) { checkQueueSlowly(object: nil, access: "\(function)") }
  }

  /// The check itself (debug mode on): passes on the context's queue, stops the process elsewhere.
  /// `access` names what was used: a property of `object`, or an entry point of the context.
  @inline(never)
  func checkQueueSlowly(object: ManagedObject?, access: String) {
    guard !isOnOwnQueue else { return }
    reportViolation(object: object, access: access)
  }

  /// Writes what was used where to standard error, then stops the process.
  private func reportViolation(object: ManagedObject?, access: String) -> Never {
    var message = "Strata concurrency violation: "
    if let object {
      message += "\(access) of \(object.entity.name) \(object.objectID) in "
    } else {
      message += "\(access) on "
    }
    message += "\(contextDescription) used on \(Self.currentThreadDescription), off the context's queue."
    message += " Use the context inside perform { } or performAndWait { } (the view context: on the main actor)."
    FileHandle.standardError.write(Data((message + "\n").utf8))
    preconditionFailure(message)
  }

  /// The context as the violation message names it: its name, its queue and its address.
  var contextDescription: String {
    let label = name.map { "context '\($0)'" } ?? "unnamed context"
    let queue = concurrencyType == .mainQueue ? "main queue" : "private queue"
    return "\(label) (\(queue), \(ObjectIdentifier(self)))"
  }

  /// The calling thread: main or not, its name and its kernel thread ID.
  static var currentThreadDescription: String {
    let main = Thread.isMainThread ? "main thread" : "thread"
    let threadName = Thread.current.name.flatMap { $0.isEmpty ? nil : " '\($0)'" } ?? ""
    return "\(main)\(threadName) (tid \(strata_thread_id()))"
  }
}

extension ManagedObject {
  /// Stops the process if the concurrency debug mode is on and the calling thread does not run the queue
  /// of the object's context: what every `@Attribute`, `@Derived` and `@Relationship` accessor runs first,
  /// with its slot (the message names the property). An object without a context (a prototype, a
  /// detached object) passes.
  @inlinable @inline(__always)
  final func checkContextQueue(slot: Int32) {
    if _slowPath(strata_concurrency_debug_enabled() != 0) { checkContextQueueSlowly(slot: slot) }
  }

  /// What the key-value accessors and other entry points of an object run first (see
  /// ``checkContextQueue(slot:)``).
  @inline(__always)
  final func checkContextQueue(_ function: StaticString = #function) {
    if _slowPath(strata_concurrency_debug_enabled() != 0) { checkContextQueueSlowly(access: "\(function)") }
  }

  @usableFromInline @inline(never)
  final func checkContextQueueSlowly(slot: Int32) {
    checkContextQueueSlowly(access: propertyName(ofSlot: slot).map { "property '\($0)'" } ?? "slot \(slot)")
  }

  final func checkContextQueueSlowly(access: String) {
    guard let context = managedObjectContext else { return }
    context.checkQueueSlowly(object: self, access: access)
  }
}
