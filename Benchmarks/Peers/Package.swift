// swift-tools-version: 6.0
import PackageDescription

// A measuring tool, not part of the Strata package (which never depends on GRDB): Strata beside GRDB on
// the same SQLite in one process. Build and run with `swift run -c release strata-peers` from this folder.
let package = Package(
  name: "Peers",
  platforms: [.macOS(.v15)],
  dependencies: [
    .package(name: "Strata", path: "../.."),
    .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
  ],
  targets: [
    .executableTarget(
      name: "strata-peers",
      dependencies: [
        .product(name: "Strata", package: "Strata"), .product(name: "StrataSQLite", package: "Strata"),
        .product(name: "GRDB", package: "GRDB.swift"),
      ],
      path: "Sources/strata-peers", swiftSettings: [.swiftLanguageMode(.v6)])
  ]
)
