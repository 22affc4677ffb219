import Observation
import Testing

@testable import Strata

/// How getters learn that a tracking records: Observation's thread-local read in place, or the probe.
@Suite struct ObservationThreadLocalTests {
  #if os(Linux)
    @Test func observationsThreadLocalIsFoundOnLinux() {
      #expect(ObservationThreadLocal.location != nil)
    }
  #endif

  @Test func theLocatedThreadLocalIsSetOnlyWhileATrackingRecords() throws {
    try #require(ObservationThreadLocal.location != nil || !ObservationThreadLocal.locateOnThisThread())
    guard ObservationThreadLocal.locateOnThisThread() else { return }
    #expect(!ObservationThreadLocal.isRecording)
    var inside = false
    withObservationTracking {
      inside = ObservationThreadLocal.isRecording
    } onChange: {
    }
    #expect(inside)
    #expect(!ObservationThreadLocal.isRecording)
  }

  @Test func theProbeSeesATrackingRecord() {
    let probe = ObservationProbe()
    #expect(!probe.isRecording())
    var inside = false
    withObservationTracking {
      inside = probe.isRecording()
    } onChange: {
    }
    #expect(inside)
    #expect(!probe.isRecording())
  }
}
