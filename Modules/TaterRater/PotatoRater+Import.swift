import Foundation
import Strata

extension PotatoRater {
  /// What ``importPotatoes(delay:seed:progress:)`` did.
  public enum ImportOutcome: Sendable, Hashable {
    case imported(count: Int)
    /// The store already had potatoes, so nothing was imported.
    case alreadyImported(potatoCount: Int)
  }

  /// Imports one potato per bundled variety, with a crowd rating from 0.0 to 4.9, when the store has
  /// no potatoes yet — on a background context, after `delay` (a simulated network fetch).
  ///
  /// - Parameters:
  ///   - seed: makes the crowd ratings repeat; without one they differ from run to run.
  ///   - progress: hears (done, total) on the background context's queue as potatoes are made.
  /// - Throws: a `StoreError` when the save fails (nothing is imported then); `CancellationError`.
  @discardableResult
  public func importPotatoes(
    delay: Duration = .zero, seed: UInt64? = nil, progress: (@Sendable (Int, Int) -> Void)? = nil
  ) async throws -> ImportOutcome {
    let existing = try await container.performBackgroundTask { try $0.count(for: FetchRequest<Potato>()) }
    guard existing == 0 else { return .alreadyImported(potatoCount: existing) }
    if delay > .zero { try await Task.sleep(for: delay) }
    let varieties = try Self.varieties(in: try Self.bundledVarietiesURL())
    return try await container.performBackgroundTask { context in
      let existing = try context.count(for: FetchRequest<Potato>())
      guard existing == 0 else { return .alreadyImported(potatoCount: existing) }
      var ratings = CrowdRatings(seed: seed)
      for (index, variety) in varieties.enumerated() {
        insert(PotatoRecord(variety: variety, crowdRating: ratings.next()), into: context)
        progress?(index + 1, varieties.count)
      }
      do {
        // Decided by the store inside the write: another process importing at the same time cannot double it.
        guard try context.save(ifStoreHasNo: Potato.self) else {
          context.rollback()
          return .alreadyImported(potatoCount: try context.count(for: FetchRequest<Potato>()))
        }
      } catch {
        context.rollback()
        throw error
      }
      return .imported(count: varieties.count)
    }
  }
}
