import StrataCore
import Testing

/// Expects `body` to throw a `StoreError` with `code`, and returns it. Any other error, or a
/// `StoreError` of another code, is recorded as an issue that names what was thrown: a test never
/// passes because something unrelated failed first.
///
/// ```swift
/// let error = expectStoreError(.invalidQuery) { try context.fetch(FetchRequest<Film>(format: "nope == 1")) }
/// #expect(error?.key == "nope")
/// ```
@discardableResult
public func expectStoreError<R>(
  _ code: StoreError.Code, _ comment: Comment? = nil, sourceLocation: SourceLocation = #_sourceLocation,
  _ body: () throws -> R
) -> StoreError? {
  let error = #expect(throws: StoreError.self, comment, sourceLocation: sourceLocation) { _ = try body() }
  if let error, error.code != code {
    Issue.record(
      "expected a StoreError of code \(code), got \(error.code): \(error.message)\(comment.map { " (\($0))" } ?? "")",
      sourceLocation: sourceLocation)
  }
  return error
}
