// Package units formats quantities for people: one place, so the CLI and
// the notes the engine writes say sizes the same way.
package units

import "fmt"

// Bytes prints n in base-1024 units: "512 B", "1.5 KiB", "3.0 GiB".
func Bytes(n int64) string {
	if n < 1024 && n > -1024 {
		return fmt.Sprintf("%d B", n)
	}
	v := float64(n)
	for _, u := range []string{"KiB", "MiB", "GiB", "TiB"} {
		v /= 1024
		if v < 1024 && v > -1024 {
			return fmt.Sprintf("%.1f %s", v, u)
		}
	}
	return fmt.Sprintf("%.1f PiB", v/1024)
}
