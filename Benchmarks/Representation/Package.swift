// swift-tools-version: 6.0
import PackageDescription

// A measuring tool, not part of the Strata package: what holding an object's attributes as one `Value` per
// attribute in an array costs to make and fill, beside the same attributes as typed stored properties.
// Build and run with `swift run -c release representation` from this folder.
let package = Package(
  name: "Representation",
  targets: [
    .executableTarget(
      name: "representation", path: "Sources/representation",
      swiftSettings: [.swiftLanguageMode(.v6), .unsafeFlags(["-enforce-exclusivity=unchecked"])])
  ]
)
