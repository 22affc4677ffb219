// swift-tools-version: 6.0
import PackageDescription

// A backend written outside Strata: it depends on Strata like any other package would, builds its store
// on StrataStoreKit alone, and proves itself with the whole conformance suite.
let package = Package(
  name: "ThirdPartyBackend",
  platforms: [.macOS(.v15)],
  products: [
    .library(name: "LoggingStore", targets: ["LoggingStore"])
  ],
  dependencies: [
    .package(name: "Strata", path: "../..")
  ],
  targets: [
    .target(
      name: "LoggingStore", dependencies: [.product(name: "StrataStoreKit", package: "Strata")],
      swiftSettings: [.swiftLanguageMode(.v6)]),
    .executableTarget(
      name: "logging-store-worker",
      dependencies: [
        "LoggingStore",
        .product(name: "StrataConformanceWorker", package: "Strata"),
        .product(name: "StrataSQLite", package: "Strata"),
      ],
      swiftSettings: [.swiftLanguageMode(.v6)]),
    .testTarget(
      name: "LoggingStoreTests",
      dependencies: [
        "LoggingStore", "logging-store-worker",
        .product(name: "StrataConformance", package: "Strata"),
        .product(name: "StrataSQLite", package: "Strata"),
      ],
      swiftSettings: [.swiftLanguageMode(.v6)]),
  ]
)
