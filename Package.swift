// swift-tools-version: 6.0
import PackageDescription

let swiftSettings: [SwiftSetting] = [
  .swiftLanguageMode(.v6),
  .enableUpcomingFeature("ExistentialAny"),
]

let package = Package(
  name: "Strata",
  platforms: [.macOS(.v15)],
  products: [
    .library(name: "StrataCore", targets: ["StrataCore"]),
    .library(name: "StrataStoreKit", targets: ["StrataStoreKit"]),
    .library(name: "Strata", targets: ["Strata"]),
    .library(name: "StrataSQL", targets: ["StrataSQL"]),
    .library(name: "StrataSQLite", targets: ["StrataSQLite"]),
    .library(name: "StrataMemory", targets: ["StrataMemory"]),
    .library(name: "StrataLMDB", targets: ["StrataLMDB"]),
    .library(name: "StrataPostgres", targets: ["StrataPostgres"]),
    .library(name: "StrataMirroring", targets: ["StrataMirroring"]),
    .library(name: "StrataPostgresHub", targets: ["StrataPostgresHub"]),
    .library(name: "StrataConformance", targets: ["StrataConformance"]),
    .library(name: "StrataConformanceWorker", targets: ["StrataConformanceWorker"]),
    .library(name: "FaveFlicks", targets: ["FaveFlicks"]),
    .executable(name: "fave-flicks", targets: ["fave-flicks"]),
    .library(name: "BubbleTeaFinder", targets: ["BubbleTeaFinder"]),
    .executable(name: "bubble-tea-finder", targets: ["bubble-tea-finder"]),
    .library(name: "TaterRater", targets: ["TaterRater"]),
    .executable(name: "tater-rater", targets: ["tater-rater"]),
    .library(name: "FireballWatch", targets: ["FireballWatch"]),
    .executable(name: "fireball-watch", targets: ["fireball-watch"]),
    .executable(name: "strata-bench", targets: ["strata-bench"]),
    .executable(name: "strata", targets: ["strata"]),
  ],
  dependencies: [
    .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
    // Statement and fetch logging (STRATA_SQL_DEBUG) through the server ecosystem's logging API, so an app's
    // own log handler receives it; replaces a logging layer of our own.
    .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    // API reference (scripts/docs): DocC catalogs built with the toolchain's docc.
    .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
  ],
  targets: [
    // MARK: Core
    .target(name: "StrataCore", path: "Modules/StrataCore", swiftSettings: swiftSettings),
    // What backend authors touch: the store contract, snapshots, change sets, the shared evaluator and
    // the batch, history, uniqueness and locking helpers.
    .target(
      name: "StrataStoreKit", dependencies: ["StrataCore", .product(name: "Logging", package: "swift-log")],
      path: "Modules/StrataStoreKit", swiftSettings: swiftSettings),
    .target(
      name: "Strata", dependencies: ["StrataCore", "StrataStoreKit", "CStrataSlots"], path: "Modules/Strata",
      swiftSettings: swiftSettings),
    // The property wrappers' per-thread slot counter: a C11 thread-local (Swift has none of its own).
    .target(name: "CStrataSlots", path: "Modules/CStrataSlots"),

    // MARK: Backends
    // What the SQL backends share: the table layout, the query compiler over a dialect, the save, schema,
    // migration, batch and hierarchy code, and the compiler corpus their characterization tests compile.
    .target(name: "StrataSQL", dependencies: ["StrataStoreKit"], path: "Modules/StrataSQL", swiftSettings: swiftSettings),
    .systemLibrary(name: "CSQLite", path: "Modules/CSQLite", providers: [.apt(["libsqlite3-dev"])]),
    .target(
      name: "StrataSQLite", dependencies: ["StrataStoreKit", "StrataSQL", "CSQLite"], path: "Modules/StrataSQLite",
      swiftSettings: swiftSettings),
    .target(name: "StrataMemory", dependencies: ["StrataStoreKit"], path: "Modules/StrataMemory", swiftSettings: swiftSettings),
    .systemLibrary(name: "CLMDB", path: "Modules/CLMDB", providers: [.apt(["liblmdb-dev"])]),
    .target(
      name: "StrataLMDB", dependencies: ["StrataStoreKit", "CLMDB"], path: "Modules/StrataLMDB",
      swiftSettings: swiftSettings),
    .systemLibrary(name: "CLibPQ", path: "Modules/CLibPQ", providers: [.apt(["libpq-dev"])]),
    .target(
      name: "StrataPostgres", dependencies: ["StrataStoreKit", "StrataSQL", "CLibPQ"], path: "Modules/StrataPostgres",
      swiftSettings: swiftSettings),
    .target(
      name: "StrataConformance",
      dependencies: ["Strata", "StrataStoreKit", "StrataConformanceWorker", "StrataTestSupport", "StrataMirroring"],
      path: "Modules/StrataConformance",
      swiftSettings: swiftSettings),
    // Test helpers any test target may use, above StrataCore only (so the core's tests need nothing more):
    // error expectations (`expectStoreError`), predicate-format helpers. The suite re-exports it.
    .target(
      name: "StrataTestSupport", dependencies: ["StrataCore"], path: "Modules/StrataTestSupport", swiftSettings: swiftSettings),
    // The second process of the suite's multi-process areas; a backend package supplies it in one line.
    .target(
      name: "StrataConformanceWorker", dependencies: ["StrataStoreKit"], path: "Modules/StrataConformanceWorker",
      swiftSettings: swiftSettings),

    // MARK: Mirroring
    // A local store synced both ways with a hub through persistent history; above the store contract, beside
    // the object graph. It imports no backend: composition roots and tests pass it the hub.
    .target(
      name: "StrataMirroring", dependencies: ["Strata", "StrataCore"], path: "Modules/StrataMirroring",
      swiftSettings: swiftSettings),
    // The PostgreSQL hub: the mirror tables in a schema, each push one PostgreSQL transaction (libpq directly).
    .target(
      name: "StrataPostgresHub", dependencies: ["StrataMirroring", "Strata", "StrataCore", "CLibPQ"],
      path: "Modules/StrataPostgresHub",
      swiftSettings: swiftSettings),

    // MARK: Features
    .target(
      name: "FaveFlicks", dependencies: ["Strata"], path: "Modules/FaveFlicks",
      resources: [.copy("Resources/default-movies.json")], swiftSettings: swiftSettings),
    .target(
      name: "BubbleTeaFinder", dependencies: ["Strata"], path: "Modules/BubbleTeaFinder",
      resources: [.copy("Resources/seed.json"), .copy("Resources/attribution.txt")], swiftSettings: swiftSettings),
    .target(
      name: "TaterRater", dependencies: ["Strata", "StrataMirroring"], path: "Modules/TaterRater",
      resources: [.copy("Resources/Potatoes.txt")], swiftSettings: swiftSettings),
    .target(
      name: "FireballWatch", dependencies: ["Strata"], path: "Modules/FireballWatch",
      resources: [.copy("Resources/fireball-api-default-2024-03-21.json")], swiftSettings: swiftSettings),

    // MARK: Apps
    .target(
      name: "StrataCLI",
      dependencies: [
        "Strata", "StrataCore", "StrataSQLite", "StrataMemory", "StrataLMDB", "StrataPostgres",
        .product(name: "ArgumentParser", package: "swift-argument-parser"),
      ],
      path: "Apps/StrataCLI", swiftSettings: swiftSettings),
    .executableTarget(
      name: "fave-flicks",
      dependencies: [
        "FaveFlicks", "Strata", "StrataCore", "StrataCLI",
        .product(name: "ArgumentParser", package: "swift-argument-parser"),
      ],
      path: "Apps/FaveFlicks", swiftSettings: swiftSettings),
    .executableTarget(
      name: "bubble-tea-finder",
      dependencies: [
        "BubbleTeaFinder", "Strata", "StrataCLI",
        .product(name: "ArgumentParser", package: "swift-argument-parser"),
      ],
      path: "Apps/BubbleTeaFinder", swiftSettings: swiftSettings),
    .executableTarget(
      name: "tater-rater",
      dependencies: [
        "TaterRater", "Strata", "StrataCLI", "StrataMirroring", "StrataPostgresHub",
        .product(name: "ArgumentParser", package: "swift-argument-parser"),
      ],
      path: "Apps/TaterRater", swiftSettings: swiftSettings),
    .executableTarget(
      name: "fireball-watch",
      dependencies: [
        "FireballWatch", "Strata", "StrataCLI",
        .product(name: "ArgumentParser", package: "swift-argument-parser"),
      ],
      path: "Apps/FireballWatch", swiftSettings: swiftSettings),

    // MARK: Tools
    .executableTarget(
      name: "strata-bench",
      dependencies: [
        "Strata", "StrataSQLite", "StrataMemory", "StrataLMDB", "StrataPostgres", "CSQLite", "CLMDB", "CLibPQ", "StrataCLI",
        "StrataMirroring", "StrataPostgresHub", .product(name: "ArgumentParser", package: "swift-argument-parser"),
      ],
      path: "Tools/strata-bench", swiftSettings: swiftSettings),
    .executableTarget(
      name: "strata",
      dependencies: [
        "StrataStoreKit", "StrataCLI", .product(name: "ArgumentParser", package: "swift-argument-parser"),
      ],
      path: "Tools/strata", swiftSettings: swiftSettings),

    // MARK: Tests
    // One test target per module: the core's (nothing above StrataCore), the kit's (the shared evaluator), the
    // object graph's (over the memory store and the suite's sample model), then each backend's.
    .testTarget(name: "StrataCoreTests", dependencies: ["StrataCore", "StrataTestSupport"], swiftSettings: swiftSettings),
    .testTarget(
      name: "StrataStoreKitTests", dependencies: ["StrataStoreKit", "StrataTestSupport"], swiftSettings: swiftSettings),
    .testTarget(
      name: "StrataTests",
      dependencies: ["Strata", "StrataStoreKit", "StrataMemory", "StrataConformance", "StrataTestSupport"],
      swiftSettings: swiftSettings),
    .testTarget(
      name: "StrataMirroringTests",
      dependencies: [
        "StrataMirroring", "StrataPostgresHub", "Strata", "StrataMemory", "StrataSQLite", "StrataLMDB", "StrataPostgres",
        "mirror-worker",
      ],
      swiftSettings: swiftSettings),
    .testTarget(
      name: "StrataSQLiteTests",
      dependencies: [
        "StrataConformance", "StrataConformanceWorker", "StrataSQLite", "Strata", "StrataStoreKit", "CSQLite", "strata-worker",
      ],
      swiftSettings: swiftSettings),
    .testTarget(
      name: "StrataMemoryTests", dependencies: ["StrataConformance", "StrataMemory", "Strata", "StrataStoreKit"],
      swiftSettings: swiftSettings),
    .testTarget(
      name: "StrataLMDBTests",
      dependencies: [
        "StrataConformance", "StrataConformanceWorker", "StrataLMDB", "Strata", "StrataStoreKit", "CLMDB", "lmdb-worker",
        "strata-worker",
      ],
      swiftSettings: swiftSettings),
    .testTarget(
      name: "StrataPostgresTests",
      dependencies: [
        "StrataConformance", "StrataConformanceWorker", "StrataPostgres", "StrataMemory", "Strata", "StrataStoreKit",
        "postgres-worker",
      ],
      swiftSettings: swiftSettings),
    // The conformance worker of the PostgreSQL backend (a second process for the multi-process areas).
    .executableTarget(
      name: "postgres-worker", dependencies: ["StrataConformanceWorker", "StrataPostgres"], path: "Tests/PostgresWorker",
      swiftSettings: swiftSettings),
    // A replica in a process of its own for the mirror's kill tests: saves, syncs, and stops or pauses at the
    // durable step STRATA_MIRROR_FAILPOINT names.
    .executableTarget(
      name: "mirror-worker",
      dependencies: ["StrataMirroring", "StrataPostgresHub", "Strata", "StrataSQLite", "StrataLMDB"],
      path: "Tests/MirrorWorker", swiftSettings: swiftSettings),
    // A second process for the LMDB tests: writes, reads, or holds a lock until it is killed.
    .executableTarget(
      name: "lmdb-worker", dependencies: ["StrataLMDB", "StrataStoreKit", "CLMDB"], path: "Tests/LMDBWorker",
      swiftSettings: swiftSettings),
    // The conformance worker of the SQLite and LMDB backends (a second process for the multi-process areas).
    .executableTarget(
      name: "strata-worker", dependencies: ["StrataConformanceWorker", "StrataSQLite", "StrataLMDB"], path: "Tests/StrataWorker",
      swiftSettings: swiftSettings),
    // The parser's libFuzzer target: `scripts/torture fuzz` builds it with `--sanitize fuzzer` in a scratch path
    // of its own; an ordinary build replays the inputs named on its command line.
    .executableTarget(
      name: "fuzz-parser", dependencies: ["StrataCore"], path: "Tests/FuzzParser", swiftSettings: swiftSettings),
    .testTarget(
      name: "FaveFlicksTests",
      dependencies: [
        "StrataConformance", "FaveFlicks", "Strata", "StrataStoreKit", "StrataSQLite", "StrataLMDB", "StrataMemory",
      ],
      resources: [.copy("Resources/v1"), .copy("Resources/v2")], swiftSettings: swiftSettings),
    .testTarget(
      name: "BubbleTeaFinderTests",
      dependencies: ["StrataConformance", "BubbleTeaFinder", "Strata", "StrataStoreKit", "StrataSQLite", "StrataMemory"],
      swiftSettings: swiftSettings),
    .testTarget(
      name: "TaterRaterTests",
      dependencies: ["TaterRater", "Strata", "StrataStoreKit", "StrataSQLite", "StrataLMDB", "StrataMemory"],
      resources: [.copy("Resources/v1")], swiftSettings: swiftSettings),
    .testTarget(
      name: "FireballWatchTests",
      dependencies: ["FireballWatch", "Strata", "StrataStoreKit", "StrataSQLite", "StrataMemory"],
      resources: [.copy("Resources/fireballs-api-v1.2-2026-05.json")], swiftSettings: swiftSettings),
    // A new user's first hour with the library, as an async executable on the public API alone (CLITests runs it).
    .executableTarget(
      name: "library-hour", dependencies: ["Strata", "StrataSQLite", "StrataMemory"], path: "Tests/LibraryHour",
      swiftSettings: swiftSettings),
    // Uses a context's objects on and off their queue, for the concurrency debug mode's tests (CLITests).
    .executableTarget(
      name: "isolation-check", dependencies: ["Strata", "StrataMemory"], path: "Tests/IsolationCheck",
      swiftSettings: swiftSettings),
    // The apps' CLIs are not dependencies: `swift build --build-tests` and `swift test` build every product, and
    // scripts/sanitize builds only this bundle and the test programs with a sanitizer, the CLIs plainly.
    .testTarget(name: "CLITests", dependencies: ["library-hour", "isolation-check"], swiftSettings: swiftSettings),
  ]
)
