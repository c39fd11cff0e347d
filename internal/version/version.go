// Package version holds convgen's version, recorded in every tuning record.
package version

// Convgen is the version of convgen, bumped on every release. Tuning
// records carry the version that tuned them for information; whether a
// record still replays is decided by its kernel hashes, not by it.
const Convgen = "0.2.0"
