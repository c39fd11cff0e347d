package gen

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	hexenc "encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// ManifestFile is the file in every directory Write makes that lists the
// files convgen wrote there, one line each as sha256sum prints them (the
// SHA-256 in hex, two spaces, the name), sorted by name, so that
// `sha256sum -c .convgen-manifest` checks them. Write replaces a directory
// only while it holds nothing but those files, unchanged. The leading dot
// keeps the go tool from looking at it.
const ManifestFile = ".convgen-manifest"

// Names Write uses beside the output directory NAME, in its parent; all
// match the git-ignore pattern `.*.convgen-*`:
//
//	.NAME.convgen-lock            lock file that serialises writers of NAME (removed after use)
//	.NAME.convgen-new-PID-RANDOM  the new package while it is written (after the swap, the old one while it is removed)
//	.NAME.convgen-old-PID-RANDOM  the old package on its way out, where the atomic swap is not available
//
// Temporaries left by a killed run are removed by the next one.
const (
	lockSuffix = ".convgen-lock"
	newKind    = "new"
	oldKind    = "old"
)

// maxListed caps how many foreign entries an error names.
const maxListed = 20

// Write puts files into dir atomically and returns when they are all on
// disk. Everything is written into a fresh temporary directory next to dir
// (with a ManifestFile listing the files), and only when every file
// succeeded does it take dir's place: on Linux in one step (renameat2 with
// RENAME_EXCHANGE), so that dir never goes missing and a reader sees either
// the old package or the new one, never a mixture. Where that is not
// available (other systems, file systems without RENAME_EXCHANGE) the old
// directory is renamed away and the new one in, two steps between which dir
// is briefly missing; a run killed there leaves the old package in a
// .NAME.convgen-old-* directory, from which the next run restores it.
//
// Writers of one dir are serialised by an flock on .NAME.convgen-lock
// beside it (on systems without flock they are not). The lock holder first
// removes the temporaries of earlier runs that were killed.
//
// Write replaces an existing directory only if it is empty or convgen
// generated it: it holds nothing but the files its ManifestFile lists,
// unchanged, or (directories generated before manifests) it has no
// manifest, a doc.go whose first line is Header, and nothing but regular
// files with the names convgen generates. Otherwise it refuses with a
// *ForeignError naming the entries it would have deleted: files convgen did
// not write, files changed since, subdirectories, symbolic links. It
// refuses files without a doc.go starting with Header. On any failure dir
// is left as it was and the temporary directory is removed.
func Write(dir string, files map[string][]byte) error {
	return write(dir, files, true)
}

// WriteReports writes a directory of reports (REPORT.md, report.json, ...)
// as Write writes a package, atomically, with its ManifestFile, replacing
// only a directory convgen wrote, but without a doc.go: the manifest alone
// vouches for it. It never replaces a generated package (HoldsPackage).
func WriteReports(dir string, files map[string][]byte) error {
	return write(dir, files, false)
}

// WriteDir writes any directory of files that is not a Go package (the
// PyTorch module of gen/torchmod) as WriteReports does: atomically, with
// its ManifestFile, replacing only a directory convgen wrote, no doc.go.
func WriteDir(dir string, files map[string][]byte) error {
	return write(dir, files, false)
}

// write is Write; needDoc asks for the package's doc.go.
func write(dir string, files map[string][]byte, needDoc bool) error {
	dir, err := cleanDir(dir)
	if err != nil {
		return err
	}
	wrap := func(err error) error { return fmt.Errorf("gen: write %s: %w", dir, err) }
	names, err := checkFiles(files, needDoc)
	if err != nil {
		return wrap(err)
	}
	manifest := makeManifest(names, files)
	parent, base := filepath.Split(dir)
	if parent == "" {
		parent = "."
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return wrap(err)
	}
	unlock, err := lockTarget(parent, base)
	if err != nil {
		return wrap(err)
	}
	defer unlock()
	mode, exists, err := replaceable(dir)
	if err != nil {
		return wrap(err)
	}
	if exists && !needDoc && HoldsPackage(dir) {
		return wrap(errors.New("it holds a generated Go package (its doc.go); reports and modules need a directory of their own"))
	}

	tmp, err := os.MkdirTemp(parent, tempPrefix(base, newKind))
	if err != nil {
		return wrap(err)
	}
	// tmp is gone once renamed to dir, and holds the old package once
	// exchanged with it; either way removing it is right.
	removeTmp := true
	defer func() {
		if removeTmp {
			os.RemoveAll(tmp)
		}
	}()
	for _, name := range names {
		if err := writeFile(filepath.Join(tmp, name), files[name]); err != nil {
			return wrap(err)
		}
	}
	if err := writeFile(filepath.Join(tmp, ManifestFile), manifest); err != nil {
		return wrap(err)
	}
	// The old directory's mode, once the files are in (a read-only
	// directory could not take them).
	if err := os.Chmod(tmp, mode); err != nil {
		return wrap(err)
	}

	if !exists {
		if err := renameNew(tmp, dir); err != nil {
			return wrap(err)
		}
		return nil
	}
	err = swapIn(tmp, dir)
	if err == nil {
		removeTmp = false
		if err := os.RemoveAll(tmp); err != nil {
			return wrap(fmt.Errorf("the new files are in place, but removing the old ones from %s failed: %w", tmp, err))
		}
		return nil
	}
	var back *swapBackError
	if errors.As(err, &back) {
		removeTmp = false // it holds the old package
		return wrap(err)
	}
	if !errors.Is(err, errors.ErrUnsupported) {
		return wrap(err)
	}
	return wrap(replaceInTwoSteps(tmp, dir, parent, base))
}

// swapIn exchanges the new package in tmp with the old one in dir
// atomically. The lock keeps other convgen runs out, not the user, so it
// then looks at the old package again, out of place in tmp, and exchanges
// the two back, returning the *ForeignError, if something foreign appeared
// in it since it was checked. It returns an error wrapping
// errors.ErrUnsupported where the exchange is not possible, and a
// *swapBackError when the exchange back failed (the old package is in
// tmp then).
func swapIn(tmp, dir string) error {
	if err := exchange(tmp, dir); err != nil {
		return err
	}
	if _, _, ferr := replaceable(tmp); ferr != nil {
		if berr := exchange(tmp, dir); berr != nil {
			return &swapBackError{err: ferr, back: berr, old: tmp}
		}
		return ferr
	}
	return nil
}

// swapBackError is a refusal found after the exchange whose undoing failed.
type swapBackError struct {
	err, back error
	old       string // where the old package is
}

func (e *swapBackError) Error() string {
	return fmt.Sprintf("%v; putting the old directory back failed too, it is in %s: %v", e.err, e.old, e.back)
}

func (e *swapBackError) Unwrap() error { return e.err }

// replaceInTwoSteps puts tmp in dir's place where the two cannot be
// exchanged atomically: it moves dir into a fresh .NAME.convgen-old-*
// directory, tmp to dir, and removes the old one. It returns nil on
// success.
func replaceInTwoSteps(tmp, dir, parent, base string) error {
	trash, err := os.MkdirTemp(parent, tempPrefix(base, oldKind))
	if err != nil {
		return err
	}
	old := filepath.Join(trash, base)
	if err := os.Rename(dir, old); err != nil {
		os.Remove(trash)
		return fmt.Errorf("move the old directory away: %w", err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		if rerr := os.Rename(old, dir); rerr != nil {
			return fmt.Errorf("%w; restoring the old directory failed too, it is in %s: %v", err, old, rerr)
		}
		os.Remove(trash)
		return err
	}
	if err := os.RemoveAll(trash); err != nil {
		return fmt.Errorf("the new files are in place, but removing the old ones from %s failed: %w", trash, err)
	}
	return nil
}

// CheckTarget returns an error when Write could not write dir: dir is
// not a subdirectory, or holds files convgen did not write, or its parent
// cannot be made or written (a temporary directory made and renamed there,
// the lock file taken), or an existing dir's old files could not be
// removed. Callers check it before long work such as tuning, so that a bad
// output directory costs none. It makes dir's parent when missing, and
// removes the temporaries of killed runs as Write does.
func CheckTarget(dir string) error {
	dir, err := cleanDir(dir)
	if err != nil {
		return err
	}
	wrap := func(err error) error { return fmt.Errorf("gen: write %s: %w", dir, err) }
	parent, base := filepath.Split(dir)
	if parent == "" {
		parent = "."
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return wrap(err)
	}
	unlock, err := lockTarget(parent, base)
	if err != nil {
		return wrap(err)
	}
	defer unlock()
	_, exists, err := replaceable(dir)
	if err != nil {
		return wrap(err)
	}
	tmp, err := os.MkdirTemp(parent, tempPrefix(base, newKind))
	if err != nil {
		return wrap(fmt.Errorf("cannot create the new directory beside it: %w", err))
	}
	moved := tmp + "-0" // still a name cleanStale recognises
	err = os.Rename(tmp, moved)
	os.RemoveAll(tmp)
	os.RemoveAll(moved)
	if err != nil {
		return wrap(fmt.Errorf("cannot rename in its parent: %w", err))
	}
	if exists {
		if err := checkRemovable(dir); err != nil {
			return wrap(fmt.Errorf("the old files could not be removed: %w", err))
		}
	}
	return nil
}

// cleanDir cleans dir and checks that it names a subdirectory.
func cleanDir(dir string) (string, error) {
	if dir == "" {
		return "", errors.New("gen: write: no directory given")
	}
	dir = filepath.Clean(dir)
	if b := filepath.Base(dir); b == "." || b == ".." || b == string(filepath.Separator) {
		return "", fmt.Errorf("gen: write %s: cannot replace this directory; name a subdirectory", dir)
	}
	return dir, nil
}

// checkFiles checks the names and (needDoc) doc.go of the files to write
// and returns the names, sorted.
func checkFiles(files map[string][]byte, needDoc bool) ([]string, error) {
	names := make([]string, 0, len(files))
	for name := range files {
		if err := checkFileName(name); err != nil {
			return nil, err
		}
		if name == ManifestFile {
			return nil, fmt.Errorf("file name %q: reserved for the list of the files convgen wrote", name)
		}
		names = append(names, name)
	}
	slices.Sort(names)
	if needDoc && !isGenerated(files[docFile]) {
		return nil, fmt.Errorf("the files have no %s starting with %q, so the directory could not be regenerated later", docFile, Header)
	}
	return names, nil
}

// checkFileName accepts plain file names only: no directories, no paths,
// no control characters (which the manifest could not list).
func checkFileName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, `/\`) || filepath.Base(name) != name ||
		strings.ContainsFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return fmt.Errorf("file name %q: must be a plain name without path separators or control characters", name)
	}
	return nil
}

// makeManifest renders the ManifestFile for files.
func makeManifest(names []string, files map[string][]byte) []byte {
	var b bytes.Buffer
	for _, name := range names {
		sum := sha256.Sum256(files[name])
		fmt.Fprintf(&b, "%x  %s\n", sum, name)
	}
	return b.Bytes()
}

// parseManifest reads a ManifestFile: name → SHA-256.
func parseManifest(data []byte) (map[string][sha256.Size]byte, error) {
	sums := map[string][sha256.Size]byte{}
	for i, line := range strings.SplitAfter(string(data), "\n") {
		if line == "" {
			continue // after the last newline
		}
		hexSum, name, ok := strings.Cut(strings.TrimSuffix(line, "\n"), "  ")
		var sum [sha256.Size]byte
		if n, err := hexenc.Decode(sum[:], []byte(hexSum)); !ok || err != nil || n != sha256.Size || len(hexSum) != 2*sha256.Size {
			return nil, fmt.Errorf("line %d: want a SHA-256 in hex, two spaces and a file name", i+1)
		}
		if err := checkFileName(name); err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		if _, dup := sums[name]; dup {
			return nil, fmt.Errorf("line %d: %s listed twice", i+1, name)
		}
		sums[name] = sum
	}
	return sums, nil
}

// Reason says why an entry of a directory is foreign to convgen.
type Reason int

// Why an entry is foreign.
const (
	NotWritten Reason = iota // a file convgen did not write
	Changed                  // a file convgen wrote whose content changed since
	NotRegular               // a directory, symbolic link or other non-regular file
)

func (r Reason) String() string {
	switch r {
	case NotWritten:
		return "not written by convgen"
	case Changed:
		return "changed since convgen wrote it"
	case NotRegular:
		return "not a regular file"
	}
	return "Reason(" + strconv.Itoa(int(r)) + ")"
}

// Foreign is an entry of a directory that convgen did not write.
type Foreign struct {
	Name string
	Why  Reason
}

// ForeignError is Write's refusal to replace a directory that holds
// entries convgen did not write, which replacing it would delete.
type ForeignError struct {
	Manifest bool      // the directory has a ManifestFile (else: generated before manifests)
	Entries  []Foreign // sorted by name
}

func (e *ForeignError) Error() string {
	var b strings.Builder
	b.WriteString("refusing to replace a directory that holds entries convgen did not write (")
	if e.Manifest {
		b.WriteString("its " + ManifestFile + " lists the files it wrote")
	} else {
		b.WriteString("it has no " + ManifestFile + ", so only the names convgen generates count as its own")
	}
	b.WriteString("), which replacing it would delete: ")
	for i, f := range e.Entries {
		if i == maxListed {
			fmt.Fprintf(&b, " and %d more", len(e.Entries)-i)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q (%s)", f.Name, f.Why)
	}
	b.WriteString("; move them out or write the package elsewhere")
	return b.String()
}

// replaceable checks that dir is absent, empty or generated by convgen, and
// returns the permissions for the new directory and whether dir exists.
func replaceable(dir string) (mode fs.FileMode, exists bool, err error) {
	info, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0o755, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	if !info.IsDir() {
		return 0, false, errors.New("exists and is not a directory")
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, false, err
	}
	if len(entries) == 0 {
		return info.Mode().Perm(), true, nil
	}
	var foreign []Foreign
	hasManifest := slices.ContainsFunc(entries, func(e fs.DirEntry) bool { return e.Name() == ManifestFile })
	if hasManifest {
		foreign, err = foreignByManifest(dir, entries)
	} else {
		foreign, err = foreignByName(dir, entries)
	}
	if err != nil {
		return 0, false, err
	}
	if len(foreign) > 0 {
		return 0, false, &ForeignError{Manifest: hasManifest, Entries: foreign}
	}
	return info.Mode().Perm(), true, nil
}

// foreignByManifest returns the entries of dir that its ManifestFile does
// not vouch for.
func foreignByManifest(dir string, entries []fs.DirEntry) ([]Foreign, error) {
	path := filepath.Join(dir, ManifestFile)
	if info, err := os.Lstat(path); err != nil {
		return nil, err
	} else if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("refusing to replace the directory: its %s is not a regular file", ManifestFile)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	sums, err := parseManifest(data)
	if err != nil {
		return nil, fmt.Errorf("refusing to replace the directory: its %s is damaged: %w", ManifestFile, err)
	}
	var foreign []Foreign
	for _, e := range entries {
		name := e.Name()
		want, listed := sums[name]
		switch {
		case name == ManifestFile:
		case !e.Type().IsRegular():
			foreign = append(foreign, Foreign{name, NotRegular})
		case !listed:
			foreign = append(foreign, Foreign{name, NotWritten})
		default:
			got, err := fileSum(filepath.Join(dir, name))
			if err != nil {
				return nil, err
			}
			if got != want {
				foreign = append(foreign, Foreign{name, Changed})
			}
		}
	}
	return foreign, nil
}

// foreignByName judges a directory without a ManifestFile, as convgen wrote
// them before it had one: it must have a doc.go whose first line is Header,
// and every other entry must be a regular file with a name convgen
// generated then, every Go file starting with Header.
func foreignByName(dir string, entries []fs.DirEntry) ([]Foreign, error) {
	doc := slices.IndexFunc(entries, func(e fs.DirEntry) bool { return e.Name() == docFile })
	if doc < 0 || !entries[doc].Type().IsRegular() {
		return nil, fmt.Errorf("refusing to replace a non-empty directory that convgen did not generate (no %s, and no %s whose first line is %q)", ManifestFile, docFile, Header)
	}
	var foreign []Foreign
	for _, e := range entries {
		name := e.Name()
		switch {
		case !e.Type().IsRegular():
			foreign = append(foreign, Foreign{name, NotRegular})
		case !legacyName(name):
			foreign = append(foreign, Foreign{name, NotWritten})
		case strings.HasSuffix(name, ".go"):
			first, err := firstLine(filepath.Join(dir, name))
			if err != nil {
				return nil, err
			}
			if first != Header {
				if name == docFile {
					return nil, fmt.Errorf("refusing to replace a non-empty directory that convgen did not generate (no %s, and no %s whose first line is %q)", ManifestFile, docFile, Header)
				}
				foreign = append(foreign, Foreign{name, Changed})
			}
		}
	}
	return foreign, nil
}

// legacyName says whether convgen generated files of this name before it
// wrote a ManifestFile: the package's files, the report the command adds,
// and a CUBIN per architecture.
func legacyName(name string) bool {
	switch name { // a frozen list: not the constants, which may change
	case "doc.go", "shape.go", "shape_test.go", "kernel.go", "kernel_cuda.go", "funcattr_cuda.go",
		"kernel_nocuda.go", "kernel_cuda_test.go", "kernel.ptx", "REPORT.md", "report.json":
		return true
	}
	arch, ok := strings.CutPrefix(name, "kernel_")
	if arch, ok = strings.CutSuffix(arch, ".cubin"); !ok {
		return false
	}
	_, ok = parseArch(arch)
	return ok
}

// fileSum returns the SHA-256 of the file at path.
func fileSum(path string) ([sha256.Size]byte, error) {
	var sum [sha256.Size]byte
	f, err := os.Open(path)
	if err != nil {
		return sum, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return sum, fmt.Errorf("read %s: %w", path, err)
	}
	h.Sum(sum[:0])
	return sum, nil
}

// tempPrefix is the prefix of the temporaries of kind newKind or oldKind
// for the directory base, with this process's id.
func tempPrefix(base, kind string) string {
	return "." + base + ".convgen-" + kind + "-" + strconv.Itoa(os.Getpid()) + "-"
}

// isTemp says whether name is a temporary Write makes for the directory
// base: .BASE.convgen-new-... or .BASE.convgen-old-... followed by digits
// and dashes only (a process id and os.MkdirTemp's random number; older
// versions wrote the random number alone), and which kind.
func isTemp(name, base string) (kind string, ok bool) {
	rest, ok := strings.CutPrefix(name, "."+base+".convgen-")
	if !ok {
		return "", false
	}
	for _, k := range []string{newKind, oldKind} {
		if tail, ok := strings.CutPrefix(rest, k+"-"); ok && tail != "" &&
			!strings.ContainsFunc(tail, func(r rune) bool { return r != '-' && (r < '0' || r > '9') }) {
			return k, true
		}
	}
	return "", false
}

// cleanStale removes the temporaries that killed runs left beside dir
// (parent/base). Its caller holds the lock, so no running writer owns one.
// If dir itself is missing, because a run was killed between the two steps
// of replaceInTwoSteps, the old package is first moved back into place.
func cleanStale(parent, base string) error {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return err
	}
	var stale []string
	restore, restoreTime := "", int64(0)
	for _, e := range entries {
		kind, ok := isTemp(e.Name(), base)
		if !ok {
			continue
		}
		path := filepath.Join(parent, e.Name())
		stale = append(stale, path)
		if kind != oldKind {
			continue
		}
		// Of several old packages, the last one moved away is the newest.
		if info, err := os.Lstat(filepath.Join(path, base)); err == nil && info.IsDir() {
			if t, err := os.Lstat(path); err == nil && (restore == "" || t.ModTime().UnixNano() > restoreTime) {
				restore, restoreTime = filepath.Join(path, base), t.ModTime().UnixNano()
			}
		}
	}
	dir := filepath.Join(parent, base)
	if _, err := os.Lstat(dir); restore != "" && errors.Is(err, fs.ErrNotExist) {
		if err := os.Rename(restore, dir); err != nil {
			return fmt.Errorf("restore the package an interrupted run left in %s: %w", restore, err)
		}
	}
	for _, path := range stale {
		if err := os.RemoveAll(path); err != nil {
			return fmt.Errorf("remove %s, left by an interrupted run: %w", path, err)
		}
	}
	return nil
}

// lockTarget serialises the writers of parent/base: it takes the lock
// file beside it and removes the temporaries of killed runs. Where there
// is no file locking, it does neither and returns a no-op.
func lockTarget(parent, base string) (unlock func(), err error) {
	unlock, err = lockFile(filepath.Join(parent, "."+base+lockSuffix))
	if errors.Is(err, errors.ErrUnsupported) {
		return func() {}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("lock: %w", err)
	}
	if err := cleanStale(parent, base); err != nil {
		unlock()
		return nil, err
	}
	return unlock, nil
}

// isGenerated says whether src starts with the generated header line.
func isGenerated(src []byte) bool {
	line, _, _ := strings.Cut(string(src), "\n")
	return strings.TrimSuffix(line, "\r") == Header
}

// firstLine reads the first line of a file, without its line ending.
func firstLine(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	return strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r"), nil
}

// writeFile writes data to a new file and flushes it to disk.
func writeFile(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// HoldsPackage says whether dir holds a generated Go package: a doc.go
// whose first line is Header. WriteReports and WriteDir never replace one.
func HoldsPackage(dir string) bool {
	data, err := os.ReadFile(filepath.Join(dir, "doc.go"))
	return err == nil && bytes.HasPrefix(data, []byte(Header))
}
