// The suite's users (a backend's tests) get the shared test helpers, `expectStoreError` among them, with it.
@_exported import StrataTestSupport
