// Package atomicfile replaces a file's contents so that a reader never sees
// a half-written file: the new contents go to a temporary file in the same
// directory, which is renamed over the old one only once it is whole. On
// error the old file is left as it was and no temporary file stays behind.
package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
)

// Replace replaces path with data (mode 0644), creating it if missing.
func Replace(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
