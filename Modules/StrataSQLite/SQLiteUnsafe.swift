import Foundation

// The SQLite store's departures from Swift's checked memory model, each stating the invariant it relies
// on. The `sqlite3_*` calls over Swift buffers are ordinary FFI and stay with their callers; objects kept
// in SQLite's aggregate contexts go through StrataCore's `RetainedPointer`.

/// An array a C callback appends to through its context pointer: a plain pointer, so each call is an
/// append without an exclusivity check or a retain (`sqlite3_update_hook` calls once per written row).
///
/// Invariant: the context pointer ``collect(_:)`` passes is used only while its body runs — the body
/// removes the callback before it returns — and from the thread running it.
enum HookCollector<Element> {
  /// Runs `body` with the context pointer of a new empty array, and returns what was appended to it.
  static func collect(_ body: (UnsafeMutableRawPointer) throws -> Void) throws -> [Element] {
    let elements = UnsafeMutablePointer<[Element]>.allocate(capacity: 1)
    elements.initialize(to: [])
    defer { elements.deallocate() }
    do {
      try body(UnsafeMutableRawPointer(elements))
    } catch {
      elements.deinitialize(count: 1)
      throw error
    }
    return elements.move()
  }

  /// Appends `element` to the array behind a context pointer from ``collect(_:)``.
  @inline(__always)
  static func append(_ element: Element, at context: UnsafeMutableRawPointer) {
    context.assumingMemoryBound(to: [Element].self).pointee.append(element)
  }
}
