// Package data embeds the demo's input in the runnel binary, so that
// `runnel demo` runs from any directory: flights-3m.parquet, 3,000,000 US
// domestic flights of January to June 2001 (U.S. Bureau of Transportation
// Statistics; schema, source and licence in data/README.md). Package
// demo/flights reads it when given no path.
package data

import _ "embed" // for go:embed

// FlightsName is the embedded file's name in this directory.
const FlightsName = "flights-3m.parquet"

// Flights is the content of flights-3m.parquet: 13,493,022 bytes of
// parquet (11 row groups, ZSTD), sha1
// e02e6d99a8c2c0e71e515b1d66403aaf9d3a2172. Read it; do not modify it.
//
//go:embed flights-3m.parquet
var Flights []byte
