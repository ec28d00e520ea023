package flights

import (
	"testing"
)

// The embedded copy of data/flights-3m.parquet is read from any working
// directory: `runnel demo` does not need the repository.
func TestEmbeddedFlightsReadFromAnyDirectory(t *testing.T) {
	t.Chdir(t.TempDir())
	n, err := Count(EmbeddedPath)
	if err != nil || n != 3_000_000 {
		t.Fatalf("Count(embedded) = %d, %v; want 3000000", n, err)
	}
	var got []Flight
	err = Read(EmbeddedPath, 5, func(batch []Flight) error {
		got = append(got, batch...)
		return nil
	})
	if err != nil || len(got) != 5 {
		t.Fatalf("Read(embedded, 5): %d rows, %v", len(got), err)
	}
	for _, f := range got {
		if len(f.Origin) != 3 || len(f.Destination) != 3 || f.Distance <= 0 || f.Time().Year() != 2001 {
			t.Fatalf("row %+v does not look like a 2001 flight", f)
		}
	}
}
