import ArgumentParser
import Foundation
import Strata
import StrataCore
import StrataLMDB
import StrataMemory
import StrataPostgres
import StrataSQLite

/// The flags every app CLI shares: which backend and where its store lives.
public struct StoreFlags: ParsableArguments, Sendable {
  /// Every backend this build of the CLIs offers. The registry is made here, in the apps' composition
  /// root, and handed to containers and previews: the libraries keep no registry of their own.
  public static let backends = StoreRegistry([
    SQLiteStoreFactory(), LMDBStoreFactory(), MemoryStoreFactory(), PostgresStoreFactory(),
  ])

  /// Where a postgres store lives when `--path` is not given: the database `strata` on the local socket.
  public static let defaultPostgresURI = "postgresql:///strata"

  @Option(
    name: .long,
    help: ArgumentHelp(
      "The store backend: sqlite (default), lmdb (a directory), postgres (a schema on a PostgreSQL server), or memory (starts from the preview data and keeps nothing).",
      valueName: "type"),
    completion: .list(["sqlite", "lmdb", "postgres", "memory"]))
  public var store: StoreType = .sqlite

  @Option(
    name: .long,
    help: ArgumentHelp(
      "The store file (a directory for lmdb; a libpq URI such as postgresql://user@host/db?schema=app for postgres). Default: a file under $XDG_DATA_HOME/<app>/, else ~/.local/share/<app>/; for postgres postgresql:///strata (the local socket). A URI naming no schema uses the app's own (e.g. faveflicks).",
      valueName: "path"))
  public var path: String?

  public init() {}

  /// The backends a container opened from these flags may use.
  public var registry: StoreRegistry { Self.backends }

  /// Refuses a store type no backend is registered under, as a usage error.
  public func validate() throws {
    if let path, path.isEmpty { throw ValidationError("--path must not be empty (leave it out for the default store)") }
    do {
      _ = try registry.backend(for: store)
    } catch let error as StoreError {
      throw ValidationError(error.message)
    }
  }

  /// The store description the flags select for `app`. For a command that only reads
  /// (`forReadingOnly`), a location where no store exists yet (nothing, or an empty directory) gives an
  /// empty memory store instead, so that reading creates nothing.
  ///
  /// - Throws: `.unknownStoreType` listing the valid names; `.corrupted` or `.io` (``StorePath``) when
  ///   the path is a FIFO, a socket, a device or a symbolic-link loop.
  ///
  /// A PostgreSQL URI that names no schema gets the app's own, its file name in lower case (`faveflicks`),
  /// so that two apps given one URI never share a schema. A store that an app wrote before, in the schema
  /// every app shared then (`strata`), is recognised by `entity` (one only this app's model has) and keeps
  /// opening there.
  public func storeDescription(
    app: String, fileName: String, entity: String, forReadingOnly: Bool = false
  ) throws -> StoreDescription {
    let backend = try registry.backend(for: store)
    guard backend.requiresLocation else { return StoreDescription(type: store) }
    if store == .postgres {
      let uri = path.flatMap { $0.isEmpty ? nil : $0 } ?? Self.defaultPostgresURI
      guard let url = URL(string: uri), url.scheme == "postgresql" || url.scheme == "postgres" else {
        throw StoreError(
          .io, "malformed PostgreSQL URI '\(uri)': expected postgresql://user@host:port/database or postgresql:///database")
      }
      return StoreDescription(type: store, url: Self.schemaOfItsOwn(url, fileName: fileName, entity: entity))
    }
    let url: URL
    if let path, !path.isEmpty {
      url = URL(fileURLWithPath: (path as NSString).expandingTildeInPath)
    } else {
      // The default name's extension is the store type: FaveFlicks.sqlite, FaveFlicks.lmdb.
      let name = (fileName as NSString).deletingPathExtension + "." + store.rawValue
      url = PersistentContainer.defaultDirectoryURL().appending(path: app, directoryHint: .isDirectory)
        .appending(path: name)
    }
    // Looked at with stat alone: a FIFO, a socket or a symbolic-link loop is refused before anything opens it.
    let exists = try StorePath.checkUsable(url.path)
    let isEmptyDirectory = exists && (try? FileManager.default.contentsOfDirectory(atPath: url.path).isEmpty) == true
    if forReadingOnly && (!exists || isEmptyDirectory) { return StoreDescription(type: .memory) }
    var description = StoreDescription(type: store, url: url)
    if exists && ReadOnlyMedia.cannotWrite(url.path) {
      guard forReadingOnly else {
        let place = ReadOnlyMedia.contains(url.path) ? "on a read-only file system" : "in a directory this user cannot write"
        throw StoreError(.readOnly, "the store \(url.path) is \(place): it can be read but not changed")
      }
      description.options.isReadOnly = true
    } else if ReadOnlyMedia.contains(url.path) {
      throw StoreError(.readOnly, "the store \(url.path) is on a read-only file system: it can be read but not changed")
    }
    return description
  }

  /// The schema every app shared when a URI named none.
  static let sharedLegacySchema = "strata"

  /// `url` with the app's own schema when it names none (`?schema=` or a second path component), unless
  /// the schema every app shared before holds this app's store (one with `entity`).
  static func schemaOfItsOwn(_ url: URL, fileName: String, entity: String) -> URL {
    guard let components = URLComponents(url: url, resolvingAgainstBaseURL: false),
      !(components.queryItems ?? []).contains(where: { $0.name == "schema" }),
      components.path.split(separator: "/").count < 2
    else { return url }
    func withSchema(_ schema: String) -> URL {
      var copy = components
      copy.queryItems = (components.queryItems ?? []) + [URLQueryItem(name: "schema", value: schema)]
      return copy.url ?? url
    }
    let legacy = withSchema(sharedLegacySchema)
    var readOnly = StoreOptions()
    readOnly.isReadOnly = true
    if let store = try? PostgresStore(url: legacy, model: nil, options: readOnly) {
      defer { store.close() }
      if store.model.entity(named: entity) != nil { return legacy }
    }
    return withSchema((fileName as NSString).deletingPathExtension.lowercased())
  }

  /// How messages name the store of `description`: its file's path, or its URI (without a password).
  ///
  /// ```swift
  /// print("Migrating \(StoreFlags.displayLocation(of: description)):")
  /// ```
  public static func displayLocation(of description: StoreDescription) -> String {
    guard let url = description.url else { return description.type.rawValue }
    return displayLocation(of: url)
  }

  /// How messages name a store location: a file's path, or a URI without its password.
  ///
  /// ```swift
  /// if let url = URL(string: "postgresql://app:secret@db/strata") {
  ///   print(StoreFlags.displayLocation(of: url))   // postgresql://app:***@db/strata
  /// }
  /// ```
  public static func displayLocation(of url: URL) -> String {
    if url.isFileURL { return url.path }
    guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return url.absoluteString }
    if components.password != nil { components.password = "***" }
    return components.string ?? url.absoluteString
  }

  /// The shared flags that take a value, which may stand before the subcommand.
  static let valueOptions = ["--store", "--path"]

  /// Whether the selected store has no location and keeps nothing between runs, so that the app starts
  /// it from its preview data.
  public var startsFromPreview: Bool { (try? registry.backend(for: store).requiresLocation) == false }
}

extension StoreType: ExpressibleByArgument {
  public init?(argument: String) { self.init(argument) }
}

/// A bad flag value found while a command runs (a sort key the store's model lacks, say): reported like
/// the parser's usage errors, naming where help is, with exit code 64.
public struct UsageError: Error, CustomStringConvertible {
  public var description: String
  public init(_ description: String) { self.description = description }
}

/// Runs a command body, turning any error into one line on standard error and exit code 1 (64 for a
/// ``UsageError``).
/// A store the failed command created and left empty (``StoreFlags/noteOpening(_:)``) is removed again.
public func runReportingErrors(tool: String, _ body: () throws -> Void) throws {
  do {
    try body()
  } catch let error as StoreError {
    StoreFlags.removeEmptyNewStores()
    printError(tool: tool, error.message)
    throw ExitCode.failure
  } catch let exit as ExitCode {
    StoreFlags.removeEmptyNewStores()
    throw exit
  } catch let usage as UsageError {
    StoreFlags.removeEmptyNewStores()
    printError(tool: tool, "\(usage.description) (see '\(tool) --help')")
    throw ExitCode(64)
  } catch {
    StoreFlags.removeEmptyNewStores()
    printError(tool: tool, "\(error)")
    throw ExitCode.failure
  }
}

/// Prints `tool: error: message` on standard error.
public func printError(tool: String, _ message: String) {
  let line = "\(tool): error: \(message.replacingOccurrences(of: "\n", with: " "))\n"
  FileHandle.standardError.write(Data(line.utf8))
}

/// Encodes `value` as pretty, key-sorted JSON with a trailing newline.
public func jsonString<T: Encodable>(_ value: T) throws -> String {
  let encoder = JSONEncoder()
  encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
  let text = String(decoding: try encoder.encode(value), as: UTF8.self)
  // Foundation prints an empty array as "[\n\n]".
  return text.filter { !$0.isWhitespace } == "[]" ? "[]" : text
}

/// The most characters a table cell shows; a longer value is cut, saying how long it is (JSON output
/// gives it whole).
public let tableCellLimit = 200

/// Formats rows as a left-aligned text table with a header line. Control characters are escaped and a
/// cell longer than ``tableCellLimit`` is cut (`…` and its length), so one huge value cannot widen every line.
public func textTable(headers: [String], rows: [[String]]) -> String {
  let rows = rows.map { $0.map { truncatedCell(escapingControlCharacters($0)) } }
  var widths = headers.map(displayWidth)
  for row in rows {
    for (i, cell) in row.enumerated() where i < widths.count { widths[i] = max(widths[i], displayWidth(cell)) }
  }
  func line(_ cells: [String]) -> String {
    cells.enumerated().map { i, cell in
      i == cells.count - 1 ? cell : cell + String(repeating: " ", count: max(widths[i] - displayWidth(cell), 0))
    }.joined(separator: "  ")
  }
  return ([line(headers), line(widths.map { String(repeating: "-", count: $0) })] + rows.map(line)).joined(separator: "\n")
}

/// How many terminal columns `text` takes: two for a wide character (CJK, a fullwidth form, an emoji shown
/// as one), none for a combining mark alone, one otherwise.
public func displayWidth(_ text: String) -> Int {
  text.reduce(0) { width, character in
    let scalars = character.unicodeScalars
    if scalars.contains(where: { $0.properties.isEmojiPresentation || isWide($0.value) }) { return width + 2 }
    let zeroWidth = scalars.allSatisfy {
      [.nonspacingMark, .enclosingMark, .format].contains($0.properties.generalCategory)
    }
    return width + (zeroWidth ? 0 : 1)
  }
}

/// East Asian wide and fullwidth code points (Unicode's East_Asian_Width W and F, by block).
private func isWide(_ value: UInt32) -> Bool {
  switch value {
  case 0x1100...0x115F, 0x2E80...0x303E, 0x3041...0x33FF, 0x3400...0x4DBF, 0x4E00...0x9FFF, 0xA000...0xA4CF,
    0xAC00...0xD7A3, 0xF900...0xFAFF, 0xFE30...0xFE4F, 0xFF00...0xFF60, 0xFFE0...0xFFE6, 0x1F300...0x1F64F,
    0x1F900...0x1F9FF, 0x20000...0x3FFFD:
    true
  default: false
  }
}

/// `cell` cut to ``tableCellLimit`` characters, ending `… (N characters)` when it was longer.
func truncatedCell(_ cell: String) -> String {
  guard cell.utf8.count > tableCellLimit, cell.count > tableCellLimit else { return cell }
  return String(cell.prefix(tableCellLimit)) + "… (\(cell.count) characters)"
}

/// `text` with every control character (a tab, an escape, a bell, a newline) written as `\t`, `\u{1B}`…,
/// so that a value cannot break a table's layout or drive the terminal.
public func escapingControlCharacters(_ text: String) -> String {
  guard text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else { return text }
  var escaped = ""
  for scalar in text.unicodeScalars {
    guard scalar.properties.generalCategory == .control else {
      escaped.unicodeScalars.append(scalar)
      continue
    }
    switch scalar {
    case "\t": escaped += "\\t"
    case "\n": escaped += "\\n"
    case "\r": escaped += "\\r"
    default: escaped += "\\u{\(String(scalar.value, radix: 16, uppercase: true))}"
    }
  }
  return escaped
}

/// The version every Strata command-line tool reports with `--version`.
public let strataVersion = "0.6.0"

/// What every CLI's `--help` says about its exit status and shell completion.
public let exitStatusHelp = """
  Exit status: 0 on success; 1 when the command failed (one line on standard error says why); 64 for \
  a usage error (an unknown flag, a missing or bad value).

  Shell completion: --generate-completion-script bash|zsh|fish prints a script to source.
  """

extension ParsableCommand {
  /// Parses the command line and runs the command, as `main()` does, except that a usage error (a
  /// missing argument, a bad value, an unknown flag) is one line on standard error, naming the problem
  /// and where help is, with exit code 64. `--help` and `--version` print as usual. The store flags
  /// (`--store`, `--path`) may stand before the subcommand as well as after it.
  public static func mainReportingUsageErrors(_ arguments: [String]? = nil) {
    var command = parseReportingUsageErrors(arguments)
    do {
      try command.run()
    } catch {
      exit(withError: error)
    }
  }

  /// The command the arguments name, as ``mainReportingUsageErrors(_:)`` parses them; a usage error is one
  /// line on standard error and exit code 64.
  static func parseReportingUsageErrors(_ arguments: [String]?) -> any ParsableCommand {
    do {
      return try parseAsRoot(
        movingStoreFlagsAfterSubcommands(keepingNegativeNumbers(arguments ?? Array(CommandLine.arguments.dropFirst()))))
    } catch {
      guard exitCode(for: error) != .success else { exit(withError: error) }
      let tool = configuration.commandName ?? "command"
      printError(tool: tool, "\(message(for: error)) (see '\(tool) --help')")
      Foundation.exit(exitCode(for: error).rawValue)
    }
  }

  /// `arguments` with negative numbers kept as values (the parser reads `-1` as a flag): `--stars -1` becomes
  /// `--stars=-1`, and a negative number among the last positional arguments (`rate Agria -1`) stands
  /// after `--`. The command's own checks then judge the value, as they do `--stars 6`.
  static func keepingNegativeNumbers(_ arguments: [String]) -> [String] {
    func isNegativeNumber(_ token: String) -> Bool {
      token.count > 1 && token.hasPrefix("-") && Double(token) != nil
    }
    guard arguments.contains(where: isNegativeNumber), !arguments.contains("--") else { return arguments }
    var result: [String] = []
    var index = 0
    while index < arguments.count {
      let token = arguments[index]
      if token.hasPrefix("--"), !token.contains("="), index + 1 < arguments.count, isNegativeNumber(arguments[index + 1]) {
        result.append(token + "=" + arguments[index + 1])
        index += 2
      } else if isNegativeNumber(token), let (options, positionals) = Self.splitTrailing(arguments[index...], isNegativeNumber) {
        return result + options + ["--"] + positionals
      } else {
        result.append(token)
        index += 1
      }
    }
    return result
  }

  /// The last arguments split into options and positional values, when that is certain: the options are
  /// the store flags with their values, `--name=value` and flags followed by another option or nothing.
  /// `nil` when an option might take the value after it.
  private static func splitTrailing(
    _ tail: ArraySlice<String>, _ isNegativeNumber: (String) -> Bool
  ) -> (options: [String], positionals: [String])? {
    var options: [String] = []
    var positionals: [String] = []
    var index = tail.startIndex
    while index < tail.endIndex {
      let token = tail[index]
      let next = index + 1 < tail.endIndex ? tail[index + 1] : nil
      if StoreFlags.valueOptions.contains(token), let next {
        options += [token, next]
        index += 2
        continue
      }
      if token.hasPrefix("-") && !isNegativeNumber(token) {
        guard token.contains("=") || next.map({ $0.hasPrefix("-") && !isNegativeNumber($0) }) ?? true else { return nil }
        options.append(token)
      } else {
        positionals.append(token)
      }
      index += 1
    }
    return (options, positionals)
  }

  /// `arguments` with the store flags written before a subcommand's name moved after it, level by level
  /// (`fave-flicks --store lmdb list` → `fave-flicks list --store lmdb`), so that the subcommand, which
  /// declares them, parses them. Anything else is left where it is.
  static func movingStoreFlagsAfterSubcommands(_ arguments: [String]) -> [String] {
    var index = 0
    while index < arguments.count {
      let token = arguments[index]
      if StoreFlags.valueOptions.contains(token) {
        index += 2
      } else if StoreFlags.valueOptions.contains(where: { token.hasPrefix($0 + "=") }) {
        index += 1
      } else {
        break
      }
    }
    guard index < arguments.count,
      let subcommand = configuration.subcommands.first(where: { $0._commandName == arguments[index] })
    else { return arguments }
    let flags = arguments[..<index]
    return [arguments[index]] + subcommand.movingStoreFlagsAfterSubcommands(Array(flags + arguments[(index + 1)...]))
  }
}

extension AsyncParsableCommand {
  /// As ``ParsableCommand/mainReportingUsageErrors(_:)``, awaiting the command's asynchronous `run()`:
  /// call it from an asynchronous `main`, so that no thread is blocked waiting for the command (work bound
  /// to the main queue, a view context's say, goes on while it runs).
  public static func asyncMainReportingUsageErrors(_ arguments: [String]? = nil) async {
    let parsed = parseReportingUsageErrors(arguments)
    do {
      if var command = parsed as? any AsyncParsableCommand {
        try await command.run()
      } else {
        var command = parsed
        try command.run()
      }
    } catch {
      exit(withError: error)
    }
  }
}

/// Runs `body` to completion from synchronous command code (off the main queue, which stays blocked).
public func waitFor<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
  let outcome = Locked<Result<T, any Error>?>(nil)
  let done = DispatchSemaphore(value: 0)
  Task.detached {
    do {
      let value = try await body()
      outcome.withLock { $0 = .success(value) }
    } catch {
      outcome.withLock { $0 = .failure(error) }
    }
    done.signal()
  }
  done.wait()
  guard let result = outcome.withLock({ $0 }) else { throw StoreError(.misuse, "the operation did not finish") }
  return try result.get()
}

/// Prints `line` and flushes it at once, for output read as it comes (a `watch` piped to another tool).
public func printFlushed(_ line: String) {
  print(line)
  fflush(nil)
}
