import Foundation
import Testing

@Suite("A new user's first hour")
struct NewUserHourTests {
  @Test(arguments: ["sqlite", "memory"])
  func theLibraryWorksFromAnAsyncMain(_ backend: String) throws {
    let result = try Executables.run("library-hour", [backend])
    #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
    #expect(!result.stdout.contains("FAIL"), "\(result.stdout)")
    #expect(result.stdout.components(separatedBy: "\nok ").count >= 5, "\(result.stdout)")
    #expect(
      result.stderr.contains("cannot be fulfilled: the object was deleted from the store"),
      "reading a dead fault is not silent: \(result.stderr)")
  }
}
