package gen

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// FilesPrefix starts the name of every file convgen writes into a
// directory of the user's own package (-o . from go:generate, WriteInto):
// convgen_doc.go, convgen_kernel.go, convgen_kernel.ptx, ...
const FilesPrefix = "convgen_"

// intoLock is the lock file WriteInto takes inside the directory, and
// intoPending the manifest of the files a run is writing, until its
// ManifestFile lists them; both match the git-ignore pattern `.*.convgen-*`.
const (
	intoLock    = ".files.convgen-lock"
	intoPending = ".files.convgen-pending"
)

// WriteInto writes files into dir, a directory that also holds files that
// are not convgen's (the user's package), file by file, each atomically
// (written to a temporary file beside it and renamed). It owns only the
// files its ManifestFile in dir lists: every name must start with prefix
// (FilesPrefix), an existing file of that name must be listed and
// unchanged, and the files listed before but not written now are removed
// when unchanged. Otherwise it refuses with a *ForeignError naming them,
// before writing anything; the user's other files are never touched.
// Writers of one dir are serialised by an flock on a lock file inside it.
//
// Before it replaces a file it lists the new files in a pending manifest
// beside ManifestFile, which it removes once ManifestFile lists them, so
// that a run killed in between leaves only files the next run owns: a
// file counts as unchanged when it matches either manifest.
func WriteInto(dir, prefix string, files map[string][]byte) error {
	wrap := func(err error) error { return fmt.Errorf("gen: write into %s: %w", dir, err) }
	names, err := intoNames(prefix, files)
	if err != nil {
		return wrap(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return wrap(err)
	}
	unlock, err := lockFile(filepath.Join(dir, intoLock))
	if err != nil && !errors.Is(err, errors.ErrUnsupported) {
		return wrap(fmt.Errorf("lock: %w", err))
	}
	if err == nil {
		defer unlock()
		// Holding the lock, no running writer owns a temporary file here.
		if err := removeIntoTemps(dir, prefix); err != nil {
			return wrap(err)
		}
	}
	old, err := ownedFiles(dir, prefix)
	if err != nil {
		return wrap(err)
	}
	var foreign []Foreign
	for _, name := range names {
		if why, ok := old.foreign(dir, name); ok {
			foreign = append(foreign, Foreign{name, why})
		}
	}
	var stale []string
	for name := range old.names() {
		if _, kept := files[name]; !kept {
			if why, bad := old.foreign(dir, name); bad && why != NotWritten {
				foreign = append(foreign, Foreign{name, why})
			} else if !bad {
				stale = append(stale, name)
			}
		}
	}
	if len(foreign) > 0 {
		slices.SortFunc(foreign, func(a, b Foreign) int { return strings.Compare(a.Name, b.Name) })
		return wrap(&ForeignError{Manifest: old.sums != nil, Entries: foreign})
	}
	// The pending manifest vouches for the new files until the manifest
	// does; stale files go before the manifest stops listing them.
	manifest := makeManifest(names, files)
	if err := replaceFile(dir, intoPending, manifest); err != nil {
		return wrap(err)
	}
	for _, name := range names {
		if err := replaceFile(dir, name, files[name]); err != nil {
			return wrap(err)
		}
	}
	for _, name := range stale {
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return wrap(err)
		}
	}
	if err := replaceFile(dir, ManifestFile, manifest); err != nil {
		return wrap(err)
	}
	if err := os.Remove(filepath.Join(dir, intoPending)); err != nil {
		return wrap(err)
	}
	return nil
}

// CheckInto returns the error WriteInto would return for files of these
// names' kind: any file in dir whose name starts with prefix and that the
// directory's ManifestFile does not vouch for. Callers check it before
// tuning.
func CheckInto(dir, prefix string) error {
	wrap := func(err error) error { return fmt.Errorf("gen: write into %s: %w", dir, err) }
	old, err := ownedFiles(dir, prefix)
	if err != nil {
		return wrap(err)
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return wrap(err)
	}
	var foreign []Foreign
	for _, e := range entries {
		if name := e.Name(); strings.HasPrefix(name, prefix) {
			if why, bad := old.foreign(dir, name); bad {
				foreign = append(foreign, Foreign{name, why})
			}
		}
	}
	if len(foreign) > 0 {
		return wrap(&ForeignError{Manifest: old.sums != nil, Entries: foreign})
	}
	return nil
}

// intoNames checks the names of files for WriteInto and returns them sorted.
func intoNames(prefix string, files map[string][]byte) ([]string, error) {
	if prefix == "" {
		return nil, errors.New("no file prefix")
	}
	names := make([]string, 0, len(files))
	for name := range files {
		if err := checkFileName(name); err != nil {
			return nil, err
		}
		if !strings.HasPrefix(name, prefix) {
			return nil, fmt.Errorf("file name %q: does not start with %q, so it could be the user's", name, prefix)
		}
		names = append(names, name)
	}
	slices.Sort(names)
	return names, nil
}

// owned is what a directory's ManifestFile, and the pending manifest of
// a run killed before it replaced the ManifestFile, say convgen wrote
// there.
type owned struct {
	sums    map[string][sha256.Size]byte // nil without a manifest
	pending map[string][sha256.Size]byte // nil without a pending manifest
}

// names are the files either manifest lists.
func (o owned) names() map[string]bool {
	out := map[string]bool{}
	for name := range o.sums {
		out[name] = true
	}
	for name := range o.pending {
		out[name] = true
	}
	return out
}

// ownedFiles reads dir's ManifestFile and pending manifest; every name
// listed must start with prefix (a manifest of a whole package directory
// is no manifest of files among the user's).
func ownedFiles(dir, prefix string) (owned, error) {
	sums, err := readIntoManifest(dir, ManifestFile, prefix)
	if err != nil {
		return owned{}, err
	}
	pending, err := readIntoManifest(dir, intoPending, prefix)
	if err != nil {
		return owned{}, err
	}
	return owned{sums, pending}, nil
}

// readIntoManifest reads the manifest dir/name for ownedFiles; nil when
// there is none.
func readIntoManifest(dir, name, prefix string) (map[string][sha256.Size]byte, error) {
	path := filepath.Join(dir, name)
	info, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("its %s is not a regular file", name)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	sums, err := parseManifest(data)
	if err != nil {
		return nil, fmt.Errorf("its %s is damaged: %w", name, err)
	}
	for listed := range sums {
		if !strings.HasPrefix(listed, prefix) {
			return nil, fmt.Errorf("its %s lists %q, which does not start with %q: it is the manifest of a whole generated package, not of convgen's files among the package's own", name, listed, prefix)
		}
	}
	return sums, nil
}

// foreign says whether the file name in dir may not be replaced, and
// why: it exists and is not listed, or changed since, or is not a regular
// file. A missing file is not foreign.
func (o owned) foreign(dir, name string) (Reason, bool) {
	path := filepath.Join(dir, name)
	info, err := os.Lstat(path)
	if err != nil {
		return 0, false // missing (or unreadable: writing will say)
	}
	if !info.Mode().IsRegular() {
		return NotRegular, true
	}
	want, listed := o.sums[name]
	wantPending, listedPending := o.pending[name]
	if !listed && !listedPending {
		return NotWritten, true
	}
	if got, err := fileSum(path); err != nil || !(listed && got == want || listedPending && got == wantPending) {
		return Changed, true
	}
	return 0, false
}

// removeIntoTemps removes the temporary files of replaceFile that killed
// runs left in dir: .NAME.convgen-new-DIGITS, for a NAME that starts with
// prefix or is ManifestFile or intoPending.
func removeIntoTemps(dir, prefix string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), ".")
		if !ok || !e.Type().IsRegular() {
			continue
		}
		i := strings.LastIndex(rest, tempInfix)
		if i < 0 {
			continue
		}
		name, tail := rest[:i], rest[i+len(tempInfix):]
		if tail == "" || strings.ContainsFunc(tail, func(r rune) bool { return r < '0' || r > '9' }) ||
			!(strings.HasPrefix(name, prefix) || name == ManifestFile || name == intoPending) {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove %s, left by an interrupted run: %w", e.Name(), err)
		}
	}
	return nil
}

// tempInfix comes between the name of the file replaceFile replaces and
// os.CreateTemp's random number in the temporary file's name.
const tempInfix = ".convgen-new-"

// replaceFile writes data to dir/name atomically: a temporary file beside
// it, flushed, then renamed over it.
func replaceFile(dir, name string, data []byte) error {
	f, err := os.CreateTemp(dir, "."+name+tempInfix+"*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	f.Close()
	if err := os.Remove(tmp); err != nil {
		return err
	}
	if err := writeFile(tmp, data); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}
