import Foundation
import Testing

@Suite("The concurrency debug mode (STRATA_CONCURRENCY_DEBUG)")
struct ConcurrencyDebugTests {
  static let debugOn = ["STRATA_CONCURRENCY_DEBUG": "1"]
  static let debugOff = ["STRATA_CONCURRENCY_DEBUG": "0"]

  @Test func anObjectReadOffItsContextsQueueStopsTheProcess() throws {
    let off = try Executables.run("isolation-check", ["object-off-queue"], environment: Self.debugOff)
    #expect(off.status == 0, "\(off.stdout)\(off.stderr)")
    #expect(off.stdout.contains("read Heat"), "without the debug mode the misuse goes unnoticed: \(off.stdout)")

    let on = try Executables.run("isolation-check", ["object-off-queue"], environment: Self.debugOn)
    #expect(on.status != 0, "the misuse was not stopped: \(on.stdout)\(on.stderr)")
    #expect(!on.stdout.contains("read Heat"), "the misuse ran to its end: \(on.stdout)")
    #expect(on.stderr.contains("Strata concurrency violation"), "\(on.stderr)")
    #expect(on.stderr.contains("property 'title' of Film strata://"), "the message names the object: \(on.stderr)")
    #expect(on.stderr.contains("context 'background' (private queue"), "the message names the context: \(on.stderr)")
    #expect(on.stderr.contains("used on main thread"), "the message names the thread: \(on.stderr)")
  }

  @Test func aContextCalledOffItsQueueStopsTheProcess() throws {
    let on = try Executables.run("isolation-check", ["context-off-queue"], environment: Self.debugOn)
    #expect(on.status != 0, "the misuse was not stopped: \(on.stdout)\(on.stderr)")
    #expect(on.stderr.contains("count(for:) on context 'background'"), "\(on.stderr)")
  }

  @Test func theViewContextCalledOffTheMainQueueStopsTheProcess() throws {
    let off = try Executables.run("isolation-check", ["view-off-main"], environment: Self.debugOff)
    #expect(off.status == 0, "\(off.stdout)\(off.stderr)")

    let on = try Executables.run("isolation-check", ["view-off-main"], environment: Self.debugOn)
    #expect(on.status != 0, "the misuse was not stopped: \(on.stdout)\(on.stderr)")
    #expect(on.stderr.contains("count(for:) on context 'view' (main queue"), "\(on.stderr)")
    #expect(!on.stderr.contains("used on main thread"), "a detached task does not run on the main thread: \(on.stderr)")
  }

  @Test(arguments: [debugOff, debugOn])
  func actorsTheMainActorAndPerformPassTheChecks(_ environment: [String: String]) throws {
    let result = try Executables.run("isolation-check", ["correct"], environment: environment)
    #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
    #expect(result.stdout.hasPrefix("ok "), "\(result.stdout)")
    #expect(result.stdout.contains("[\"Heat\", \"Ronin\"] 2"), "\(result.stdout)")
    #expect(result.stdout.contains("Regency"), "the studio reached through a relationship: \(result.stdout)")
    #expect(result.stdout.contains("Heat (1995)"), "\(result.stdout)")
  }

  @Test func aNewUsersFirstHourPassesTheChecks() throws {
    let result = try Executables.run("library-hour", ["memory"], environment: Self.debugOn)
    #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
    #expect(!result.stderr.contains("Strata concurrency violation"), "\(result.stderr)")
  }
}
