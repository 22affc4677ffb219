import CSQLite
import Foundation
import Testing

@testable import StrataSQLite

/// The connection's statement cache, which finds the statement of the SQL string run last without hashing
/// it: the right statement for the same string, for an equal string made apart, after the statement was
/// evicted, and for a nested call of the same SQL.
@Suite struct SQLiteStatementCacheTests {
  static func connection() throws -> SQLiteConnection {
    let connection = try SQLiteConnection(path: ":memory:", flags: SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)
    try connection.run("CREATE TABLE item (name TEXT)")
    for i in 1...20 { try connection.run("INSERT INTO item (name) VALUES (?)", [.text("item \(i)")]) }
    return connection
  }

  @Test func aRepeatedStringFindsItsOwnStatement() throws {
    let connection = try Self.connection()
    defer { connection.close() }
    let byKey = "SELECT name FROM item WHERE rowid = ?"
    let byName = "SELECT rowid FROM item WHERE name = ?"
    // As long as `byKey`, another statement.
    let below = "SELECT name FROM item WHERE rowid < ?"
    #expect(below.utf8.count == byKey.utf8.count)
    for i in 1...20 {
      #expect(try connection.query(byKey, [.integer(Int64(i))]) { $0.text(0) } == ["item \(i)"])
      #expect(try connection.query(byName, [.text("item \(i)")]) { $0.int64(0) } == [Int64(i)])
      #expect(try connection.query(byKey, [.integer(Int64(21 - i))]) { $0.text(0) } == ["item \(21 - i)"])
      #expect(try connection.query(below, [.integer(Int64(i))]) { $0.text(0) }.count == i - 1)
      #expect(try connection.query(byKey, [.integer(Int64(i))]) { $0.text(0) } == ["item \(i)"])
    }
    // An equal text in another string.
    let rebuilt = ["SELECT name FROM item", "WHERE rowid = ?"].joined(separator: " ")
    #expect(try connection.query(rebuilt, [.integer(3)]) { $0.text(0) } == ["item 3"])
    // Evicted: more statements than the cache holds, the last one run among them.
    for i in 0..<200 {
      #expect(try connection.query("SELECT count(*) + \(i) FROM item", []) { $0.int64(0) } == [Int64(20 + i)])
    }
    #expect(try connection.query(byKey, [.integer(7)]) { $0.text(0) } == ["item 7"])
    // A nested call of the same SQL runs a statement of its own.
    let nested = try connection.query(byKey, [.integer(1)]) { row in
      try connection.query(byKey, [.integer(2)]) { $0.text(0) }.first.map { row.text(0) + "/" + $0 }
    }
    #expect(nested == ["item 1/item 2"])
  }
}
