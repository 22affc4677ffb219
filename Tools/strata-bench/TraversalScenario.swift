import CLMDB
import CSQLite
import Foundation
import Strata

/// Movies per director in the traversal scenario; `rows` movies make `rows / 10` directors.
let moviesPerDirector = 10

func movieTitle(_ director: Int, _ movie: Int) -> String { "Movie \(director)-\(movie)" }

/// Inserts `movies / 10` directors with ten movies each through a context (untimed set-up).
func strataInsertDirectors(movies: Int, store: StoreDescription) throws {
  let container = try benchContainer(store)
  defer { container.close() }
  let context = container.newBackgroundContext()
  try context.performAndWait {
    for d in 0..<(movies / moviesPerDirector) {
      let director = BenchDirector(context: context)
      director.name = "Director \(d)"
      for m in 0..<moviesPerDirector {
        let movie = BenchMovie(context: context)
        movie.title = movieTitle(d, m)
        movie.year = Int64(1950 + (d + m) % 70)
        movie.director = director
      }
    }
    try context.save()
  }
}

/// Fetches every director, then walks each one's movies reading their titles and years, with the movies
/// prefetched by the fetch or loaded by each director's relationship fault.
func strataTraversal(movies: Int, prefetching: Bool, store: StoreDescription) throws -> Double {
  let container = try benchContainer(store)
  defer { container.close() }
  let context = container.newBackgroundContext()
  return try context.performAndWait {
    var request = FetchRequest<BenchDirector>()
    if prefetching { request.relationshipKeyPathsForPrefetching = ["movies"] }
    var directors: [BenchDirector] = []
    var walked = 0
    var checksum = 0
    let time = try milliseconds {
      directors = try context.fetch(request)
      for director in directors {
        checksum &+= director.name.utf8.count
        for movie in director.movies {
          checksum &+= movie.title.utf8.count &+ Int(movie.year)
          walked += 1
        }
      }
    }
    guard walked == movies, checksum != 0 else { throw BenchError.store("walked \(walked) movies, expected \(movies)") }
    return time
  }
}

/// A director and its movies as the raw loops keep them: with their keys, as the object graph keeps each
/// object's identity (a raw loop that dropped them would do less than any app that edits what it reads).
struct RawDirector {
  var key: Int64
  var name: String
  var movies: [(key: Int64, title: String, year: Int64)] = []
}

/// Creates the raw SQLite traversal tables (movies point at their director, indexed) and fills them.
func rawSQLiteInsertDirectors(movies: Int, at url: URL) throws {
  let raw = try RawSQLite(url)
  try raw.exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;")
  try raw.exec(
    """
    CREATE TABLE Director (_pk INTEGER PRIMARY KEY, name TEXT NOT NULL);
    CREATE TABLE Movie (_pk INTEGER PRIMARY KEY, title TEXT NOT NULL, year INTEGER NOT NULL, director INTEGER);
    CREATE INDEX Movie_director ON Movie (director);
    BEGIN IMMEDIATE
    """)
  try raw.withStatement("INSERT INTO Director (_pk, name) VALUES (?, ?)") { directorInsert in
    try raw.withStatement("INSERT INTO Movie (title, year, director) VALUES (?, ?, ?)") { movieInsert in
      for d in 0..<(movies / moviesPerDirector) {
        sqlite3_bind_int64(directorInsert, 1, Int64(d + 1))
        sqlite3_bind_text(directorInsert, 2, "Director \(d)", -1, strata_sqlite_transient())
        guard sqlite3_step(directorInsert) == SQLITE_DONE else { throw raw.error() }
        sqlite3_reset(directorInsert)
        for m in 0..<moviesPerDirector {
          sqlite3_bind_text(movieInsert, 1, movieTitle(d, m), -1, strata_sqlite_transient())
          sqlite3_bind_int64(movieInsert, 2, Int64(1950 + (d + m) % 70))
          sqlite3_bind_int64(movieInsert, 3, Int64(d + 1))
          guard sqlite3_step(movieInsert) == SQLITE_DONE else { throw raw.error() }
          sqlite3_reset(movieInsert)
        }
      }
    }
  }
  try raw.exec("COMMIT")
}

/// Reads every director with its movies: one join (`joining`), or every director then a prepared select
/// of each one's movies.
func rawSQLiteTraversal(movies: Int, joining: Bool, at url: URL) throws -> Double {
  let raw = try RawSQLite(url)
  var directors: [RawDirector] = []
  var walked = 0
  let time = try milliseconds {
    if joining {
      let sql =
        "SELECT d._pk, d.name, m._pk, m.title, m.year FROM Director d JOIN Movie m ON m.director = d._pk ORDER BY d._pk"
      try raw.withStatement(sql) { statement in
        var current: Int64 = -1
        while sqlite3_step(statement) == SQLITE_ROW {
          let key = sqlite3_column_int64(statement, 0)
          if key != current {
            directors.append(RawDirector(key: key, name: sqliteText(statement, 1)))
            current = key
          }
          directors[directors.count - 1].movies.append(
            (sqlite3_column_int64(statement, 2), sqliteText(statement, 3), sqlite3_column_int64(statement, 4)))
          walked += 1
        }
      }
    } else {
      var keys: [Int64] = []
      try raw.withStatement("SELECT _pk, name FROM Director ORDER BY _pk") { statement in
        while sqlite3_step(statement) == SQLITE_ROW {
          let key = sqlite3_column_int64(statement, 0)
          keys.append(key)
          directors.append(RawDirector(key: key, name: sqliteText(statement, 1)))
        }
      }
      try raw.withStatement("SELECT _pk, title, year FROM Movie WHERE director = ?") { statement in
        for (index, key) in keys.enumerated() {
          sqlite3_bind_int64(statement, 1, key)
          while sqlite3_step(statement) == SQLITE_ROW {
            directors[index].movies.append(
              (sqlite3_column_int64(statement, 0), sqliteText(statement, 1), sqlite3_column_int64(statement, 2)))
            walked += 1
          }
          sqlite3_reset(statement)
        }
      }
    }
  }
  guard walked == movies else { throw BenchError.sqlite("walked \(walked) movies, expected \(movies)") }
  return time
}

/// Raw LMDB traversal data: `Director` (key → name), `Movie` (key → director key, year, title) and
/// `MovieByDirector` (director key → movie keys, sorted duplicates).
func rawLMDBInsertDirectors(movies: Int, at url: URL) throws {
  let raw = try RawLMDB(path: url)
  try raw.transaction(readOnly: false) { txn in
    var directorDB: MDB_dbi = 0
    var movieDB: MDB_dbi = 0
    var indexDB: MDB_dbi = 0
    try RawLMDB.check(mdb_dbi_open(txn, "Director", UInt32(MDB_CREATE), &directorDB), "mdb_dbi_open")
    try RawLMDB.check(mdb_dbi_open(txn, "Movie", UInt32(MDB_CREATE), &movieDB), "mdb_dbi_open")
    try RawLMDB.check(
      mdb_dbi_open(txn, "MovieByDirector", UInt32(MDB_CREATE | MDB_DUPSORT | MDB_DUPFIXED), &indexDB), "mdb_dbi_open")
    var movieKey: UInt64 = 0
    for d in 0..<(movies / moviesPerDirector) {
      var directorKey = UInt64(d + 1).bigEndian
      try rawPut(txn, directorDB, key: &directorKey, value: Array("Director \(d)".utf8), flags: UInt32(MDB_APPEND))
      for m in 0..<moviesPerDirector {
        movieKey += 1
        var key = movieKey.bigEndian
        var record: [UInt8] = []
        withUnsafeBytes(of: directorKey) { record.append(contentsOf: $0) }
        withUnsafeBytes(of: Int64(1950 + (d + m) % 70).littleEndian) { record.append(contentsOf: $0) }
        record.append(contentsOf: movieTitle(d, m).utf8)
        try rawPut(txn, movieDB, key: &key, value: record, flags: UInt32(MDB_APPEND))
        try withUnsafeBytes(of: key) { try rawPut(txn, indexDB, key: &directorKey, value: Array($0), flags: 0) }
      }
    }
  }
}

private func rawPut(_ txn: OpaquePointer, _ dbi: MDB_dbi, key: inout UInt64, value: [UInt8], flags: UInt32) throws {
  var value = value
  try withUnsafeMutableBytes(of: &key) { k in
    try value.withUnsafeMutableBytes { v in
      var kv = MDB_val(mv_size: k.count, mv_data: k.baseAddress)
      var vv = MDB_val(mv_size: v.count, mv_data: v.baseAddress)
      try RawLMDB.check(mdb_put(txn, dbi, &kv, &vv, flags), "mdb_put")
    }
  }
}

/// Reads every director, then per director its movie keys from the index and each movie with `mdb_get`.
func rawLMDBTraversal(movies: Int, at url: URL) throws -> Double {
  let raw = try RawLMDB(path: url)
  var directors: [RawDirector] = []
  var walked = 0
  let time = try milliseconds {
    try raw.transaction(readOnly: true) { txn in
      var directorDB: MDB_dbi = 0
      var movieDB: MDB_dbi = 0
      var indexDB: MDB_dbi = 0
      try RawLMDB.check(mdb_dbi_open(txn, "Director", 0, &directorDB), "mdb_dbi_open")
      try RawLMDB.check(mdb_dbi_open(txn, "Movie", 0, &movieDB), "mdb_dbi_open")
      try RawLMDB.check(mdb_dbi_open(txn, "MovieByDirector", 0, &indexDB), "mdb_dbi_open")
      var cursor: OpaquePointer?
      var index: OpaquePointer?
      try RawLMDB.check(mdb_cursor_open(txn, directorDB, &cursor), "mdb_cursor_open")
      try RawLMDB.check(mdb_cursor_open(txn, indexDB, &index), "mdb_cursor_open")
      defer {
        mdb_cursor_close(cursor)
        mdb_cursor_close(index)
      }
      var key = MDB_val()
      var value = MDB_val()
      var op = MDB_FIRST
      while mdb_cursor_get(cursor, &key, &value, op) == MDB_SUCCESS {
        op = MDB_NEXT
        var director = RawDirector(
          key: Int64(bigEndian: UnsafeRawBufferPointer(start: key.mv_data, count: key.mv_size).loadUnaligned(as: Int64.self)),
          name: String(decoding: UnsafeRawBufferPointer(start: value.mv_data, count: value.mv_size), as: UTF8.self))
        var movieKey = MDB_val()
        var indexOp = MDB_SET
        var directorKey = key
        while mdb_cursor_get(index, &directorKey, &movieKey, indexOp) == MDB_SUCCESS {
          indexOp = MDB_NEXT_DUP
          var record = MDB_val()
          try RawLMDB.check(mdb_get(txn, movieDB, &movieKey, &record), "mdb_get")
          let bytes = UnsafeRawBufferPointer(start: record.mv_data, count: record.mv_size)
          let year = Int64(littleEndian: bytes.loadUnaligned(fromByteOffset: 8, as: Int64.self))
          let movie = Int64(
            bigEndian: UnsafeRawBufferPointer(start: movieKey.mv_data, count: movieKey.mv_size).loadUnaligned(as: Int64.self))
          director.movies.append((movie, String(decoding: bytes[16...], as: UTF8.self), year))
          walked += 1
        }
        directors.append(director)
      }
    }
  }
  guard walked == movies else { throw BenchError.lmdb("walked \(walked) movies, expected \(movies)") }
  return time
}
