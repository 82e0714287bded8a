package indexers

// Internals exposed to the external tests of this package (which import
// internal/testchain, itself an importer of this package).

// RowPrefix starts every key of the index.
var RowPrefix = rowPrefix

// VersionKey is the key of the schema version.
var VersionKey = versionKey
