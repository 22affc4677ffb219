import Foundation
import Strata
import StrataStoreKit
import Testing

/// Asynchronous fetches: the completion gets what a synchronous fetch gets (unsaved changes included),
/// progress counts every object, `cancel()` and task cancellation end the fetch with `.cancelled`, and
/// a bad predicate ends it with the error naming the key.
enum AsynchronousFetchCases {
  /// A background context on the sample store, and a fetch of every film by title.
  static func sampleContext(_ backend: ConformanceBackend) throws -> (ObjectContext, FetchRequest<Film>) {
    let (container, _) = try backend.sampleContainer()
    let byTitle = FetchRequest<Film>(sortDescriptors: [QuerySort("title", comparator: .localizedStandard)])
    return (container.newBackgroundContext(), byTitle)
  }

  /// The completion and an awaited fetch get what a synchronous fetch gets; progress counts every object.
  static func completionGetsWhatAFetchGets(_ backend: ConformanceBackend) async throws {
    let (context, byTitle) = try sampleContext(backend)
    let expected = try context.performAndWait { try context.fetch(byTitle).map(\.title) }
    let finished = await withCheckedContinuation { (done: CheckedContinuation<FetchOutcome, Never>) in
      let request = AsynchronousFetchRequest(fetchRequest: byTitle, chunkSize: 3) { result in
        done.resume(returning: FetchOutcome(result))
      }
      context.performAndWait { _ = context.execute(request) }
    }
    #expect(finished.titles == expected)
    #expect(finished.error == nil)
    #expect(finished.total == 10)
    #expect(finished.completed == 10)

    let awaited = try await context.fetch(AsynchronousFetchRequest(fetchRequest: byTitle))
    #expect(context.performAndWait { awaited.map(\.title) } == expected)
  }

  /// Unsaved changes show, as in a synchronous fetch.
  static func unsavedChangesShow(_ backend: ConformanceBackend) async throws {
    let (context, _) = try sampleContext(backend)
    try context.performAndWait {
      let extra = Film(context: context)
      extra.title = "Zulu"
      extra.genre = "Crime"
      extra.uuid = UUID()
      context.delete(try #require(try context.fetch(FetchRequest<Film>(format: "title == 'Heat'")).first))
    }
    let crime = try await context.fetch(
      AsynchronousFetchRequest(
        fetchRequest: try FetchRequest<Film>(format: "genre == 'Crime'", sortDescriptors: [QuerySort("title")])))
    #expect(context.performAndWait { crime.map(\.title) } == ["Memories of Murder", "Zulu"])
    context.performAndWait { context.rollback() }
  }

  /// cancel() before the first chunk: the fetch reads its IDs only once the context's queue is free.
  static func cancelBeforeTheFirstChunk(_ backend: ConformanceBackend) async throws {
    let (context, byTitle) = try sampleContext(backend)
    let cancelled = await withCheckedContinuation { (done: CheckedContinuation<FetchOutcome, Never>) in
      let request = AsynchronousFetchRequest(fetchRequest: byTitle, chunkSize: 1) { result in
        done.resume(returning: FetchOutcome(result))
      }
      context.performAndWait { context.execute(request).cancel() }
    }
    #expect(cancelled.titles == nil)
    #expect(cancelled.error == .cancelled)
  }

  /// Cancelling the awaiting task cancels the fetch.
  static func cancellingTheTaskCancelsTheFetch(_ backend: ConformanceBackend) async throws {
    let (context, byTitle) = try sampleContext(backend)
    let gate = DispatchSemaphore(value: 0)
    let entered = DispatchSemaphore(value: 0)
    DispatchQueue.global().async {
      context.performAndWait {
        entered.signal()
        gate.wait()
      }
    }
    entered.wait()
    let task = Task { try await context.fetch(AsynchronousFetchRequest(fetchRequest: byTitle, chunkSize: 1)).count }
    task.cancel()
    gate.signal()
    do {
      _ = try await task.value
      Issue.record("a cancelled task's fetch should throw")
    } catch let error as StoreError {
      #expect(error.code == .cancelled)
    }
  }

  /// A bad predicate ends the fetch with the error, naming the key.
  static func badPredicatesEndTheFetch(_ backend: ConformanceBackend) async throws {
    let (context, _) = try sampleContext(backend)
    do {
      _ = try await context.fetch(AsynchronousFetchRequest(fetchRequest: try FetchRequest<Film>(format: "nosuchkey == 1")))
      Issue.record("a bad predicate should fail")
    } catch let error as StoreError {
      #expect(error.code == .invalidQuery)
      #expect(error.message.contains("nosuchkey"))
    }
  }
}

/// What an asynchronous fetch ended with, in `Sendable` form.
struct FetchOutcome: Sendable {
  var titles: [String]?
  var error: StoreError.Code?
  var total: Int64
  var completed: Int64

  init(_ result: AsynchronousFetchResult<Film>) {
    titles = result.finalResult?.map(\.title)
    error = result.operationError?.code
    total = result.progress.totalUnitCount
    completed = result.progress.completedUnitCount
  }
}
