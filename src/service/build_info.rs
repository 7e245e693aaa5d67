//! The engine's version and build, compiled in by `build.rs` (the binary never runs git):
//! reported by `GetRules` and as the `reddog_build_info` metric.

/// The version: the crate's (`0.1.0`), or `REDDOG_VERSION` at build time (the image's
/// `VERSION` build argument, e.g. `0.1.0-3-gabc1234`).
pub(crate) const VERSION: &str = env!("REDDOG_VERSION");
/// The git commit the binary was built from (40 hex), or `unknown` when built outside a
/// repository without `REDDOG_GIT_COMMIT`.
pub(crate) const GIT_COMMIT: &str = env!("REDDOG_GIT_COMMIT");
/// When it was built, RFC 3339 UTC (`SOURCE_DATE_EPOCH` when set).
pub(crate) const BUILD_DATE: &str = env!("REDDOG_BUILD_DATE");
