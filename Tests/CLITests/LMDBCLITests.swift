import Foundation
import Testing

@Suite("CLIs on the lmdb store")
struct LMDBCLITests {
  @Test func twoProcessesAddToOneEnvironmentAndStrataDescribesIt() throws {
    let root = FileManager.default.temporaryDirectory.appending(path: "fave-flicks-lmdb-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: root) }
    let store = root.appending(path: "FaveFlicks.lmdb").path
    let first = try faveFlicks(
      "add", "--title", "Heat", "--genre", "Crime", "--release-date", "1995-12-15", "--store", "lmdb", "--path", store)
    #expect(first.status == 0, "\(first.stderr)")

    // Two processes add at the same time.
    let movies = (0..<2).map { process in (0..<5).map { ("Movie \(process)-\($0)", "199\($0)-01-0\(process + 1)") } }
    let groups = movies.map { movies in
      Thread.detachedResults {
        movies.map { title, date in
          (try? faveFlicks(
            "add", "--title", title, "--genre", "Drama", "--release-date", date, "--store", "lmdb", "--path", store))?.status
        }
      }
    }
    for group in groups { #expect(group.wait() == Array(repeating: 0, count: 5)) }

    let list = try faveFlicks("list", "--json", "--store", "lmdb", "--path", store)
    #expect(list.status == 0, "\(list.stderr)")
    let rows = try #require(try JSONSerialization.jsonObject(with: Data(list.stdout.utf8)) as? [[String: Any]])
    #expect(rows.count == 11)
    #expect(Set(rows.compactMap { $0["title"] as? String }) == Set(["Heat"] + movies.joined().map(\.0)))

    let info = try Executables.run("strata", ["info", "--store", "lmdb", store])
    #expect(info.status == 0, "\(info.stderr)")
    #expect(info.stdout.contains("Store type:         lmdb"), "\(info.stdout)")
    #expect(info.stdout.contains("Movie — 11 rows"), "\(info.stdout)")
    let fetched = try Executables.run(
      "strata", ["fetch", "--store", "lmdb", store, "--entity", "Movie", "--where", "title == 'Heat'", "--json"])
    #expect(fetched.stdout.contains("\"genre\" : \"Crime\""), "\(fetched.stdout)")

    let detected = try Executables.run("strata", ["info", store])
    #expect(detected.status == 0, "\(detected.stderr)")
    #expect(detected.stdout == info.stdout)
    let wrongBackend = try Executables.run("strata", ["info", "--store", "sqlite", store])
    #expect(wrongBackend.status == 1)
    #expect(wrongBackend.stderr.contains("not a Strata SQLite store"), "\(wrongBackend.stderr)")
  }
}

@Suite("A damaged lmdb store on the command line")
struct LMDBDamagedStoreCLITests {
  @Test func strataRefusesATruncatedStoreWithOneLine() throws {
    let root = FileManager.default.temporaryDirectory.appending(path: "strata-truncated-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: root) }
    let store = root.appending(path: "FaveFlicks.lmdb").path
    let added = try faveFlicks(
      "add", "--title", "Heat", "--genre", "Crime", "--release-date", "1995-12-15", "--store", "lmdb", "--path", store)
    #expect(added.status == 0, "\(added.stderr)")
    let data = (store as NSString).appendingPathComponent("data.mdb")
    #expect(truncate(data, 8192) == 0)

    let info = try Executables.run("strata", ["info", store, "--store", "lmdb"])
    #expect(info.status == 1, "\(info.stderr)")
    #expect(info.stderr.split(separator: "\n").count == 1, "\(info.stderr)")
    #expect(info.stderr.contains("is shorter than its environment says: 8192 bytes"), "\(info.stderr)")
    let list = try faveFlicks("list", "--store", "lmdb", "--path", store)
    #expect(list.status == 1, "\(list.stderr)")
    #expect(try FileManager.default.attributesOfItem(atPath: data)[.size] as? Int == 8192)
  }
}

extension Thread {
  /// Runs `body` on a new thread; `wait()` returns its result.
  static func detachedResults<T: Sendable>(_ body: @escaping @Sendable () -> T) -> ThreadResult<T> {
    let result = ThreadResult<T>()
    Thread { result.set(body()) }.start()
    return result
  }
}

final class ThreadResult<T: Sendable>: @unchecked Sendable {
  private let condition = NSCondition()
  private var value: T?

  func set(_ value: T) {
    condition.lock()
    self.value = value
    condition.broadcast()
    condition.unlock()
  }

  func wait() -> T {
    condition.lock()
    defer { condition.unlock() }
    while true {
      if let value { return value }
      condition.wait()
    }
  }
}
