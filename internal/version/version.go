// Package version holds convgen's version, part of every tuning cache key.
package version

// Convgen is the version of convgen; bump it when generated code changes.
const Convgen = "0.1.0"
