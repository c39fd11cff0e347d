package tunecache

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/convgen/convgen/kernels/launch"
)

// Environment of the helper process started by TestPutManyProcesses.
const (
	helperEnv     = "TUNECACHE_TEST_HELPER" // child index; helper mode when set
	helperPathEnv = "TUNECACHE_TEST_PATH"   // cache file to write
	helperRecords = 10                      // records each child puts
)

func testKey(shape, device string) Key {
	return Key{
		Shape:             shape,
		Precision:         "fp32",
		Layout:            "nchw",
		NVRTCVersion:      "13.0",
		Device:            device,
		ComputeCapability: "9.0",
		SMCount:           132,
		Driver:            "13000",
	}
}

// testRecord makes a valid record; its winner's median is ms+0.125 (a
// time must be positive).
func testRecord(shape, device string, ms float64) Record {
	ms += 0.125
	return Record{
		Key:            testKey(shape, device),
		ConvgenVersion: "v0.1.0",
		KernelSHA256:   strings.Repeat("ab", 32),
		Winner: Timing{
			Family:   "direct",
			Config:   map[string]int{"tile_k": 32, "tile_p": 4, "threads": 128},
			MedianMS: ms,
			SpreadMS: ms / 100,
			RelError: 1.5e-7,
		},
		Kernel: "conv_direct_k32",
		Launch: launch.Launch{Grid: [3]int{64, 8, 1}, Block: [3]int{128, 1, 1}, SharedBytes: 4096},
		Arch:   "sm_90",
		Fallback: &Fallback{
			Timing:       Timing{Family: "mma", Config: map[string]int{"TileK": 32}, MedianMS: ms * 2, SpreadMS: 0.002, RelError: 3e-7},
			KernelSHA256: strings.Repeat("cd", 32),
			Kernel:       "conv_mma_k32",
			Launch:       launch.Launch{Grid: [3]int{32, 3, 1}, Block: [3]int{256, 1, 1}, SharedBytes: 65536},
			Arch:         "compute_80",
			PTX:          Gzip([]byte(".version 7.0\n.target sm_80\n")),
		},
		// Bytes that are not valid UTF-8, including NUL, to check the
		// base64 round trip.
		CUBIN:   Gzip([]byte{0x7f, 'E', 'L', 'F', 0x00, 0xff, 0xfe, byte(len(shape))}),
		PTX:     Gzip([]byte(".version 8.0\n.target sm_90\n// a < b && c > d\n")),
		Command: "convgen tune --shape '" + shape + "'",
		Summary: Summary{DeviceArch: "sm_90", ClockMHz: 1980, MemoryGBps: 4000,
			Counts: []Count{{"ok", 2}, {"rejected", 5}},
			Top: []Measured{{ID: "direct/tile_k=32", MedianMS: ms, P10MS: ms, P90MS: ms, Runs: 10, RelError: 1.5e-7},
				{ID: "mma/TileK=32", MedianMS: ms * 2, P10MS: ms, P90MS: ms * 3, Runs: 10, RelError: 3e-7}},
			BestPerFamily: []Measured{{ID: "direct/tile_k=32", MedianMS: ms, P10MS: ms, P90MS: ms, Runs: 10, RelError: 1.5e-7}},
			TieNote:       "a < b && c > d"},
	}
}

func mustPut(t testing.TB, path string, rec Record) {
	t.Helper()
	if err := Put(path, rec); err != nil {
		t.Fatalf("Put(%s): %v", rec.Key.Shape, err)
	}
}

func mustLoad(t testing.TB, path string) *Cache {
	t.Helper()
	c, err := Load(path)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return c
}

func shapeOf(i int) string { return fmt.Sprintf("N=%d,C=3,H=224,W=224,K=64,R=7,S=7", i) }

func TestRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tune.json")
	recs := []Record{
		testRecord(shapeOf(1), "NVIDIA H200", 0.5),
		testRecord(shapeOf(2), "NVIDIA H100 80GB HBM3", 0.25),
	}
	for _, r := range recs {
		mustPut(t, path, r)
	}
	c := mustLoad(t, path)
	if n := len(c.Records()); n != len(recs) {
		t.Fatalf("Records: %d records, want %d", n, len(recs))
	}
	for _, want := range recs {
		got, ok := c.Lookup(want.Key)
		if !ok {
			t.Fatalf("Lookup(%+v): not found", want.Key)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Lookup(%+v):\n got %+v\nwant %+v", want.Key, got, want)
		}
		if !bytes.Equal(got.CUBIN, want.CUBIN) {
			t.Errorf("CUBIN = %x, want %x", got.CUBIN, want.CUBIN)
		}

		// A key differing from want.Key in any single field must not match.
		kv := reflect.ValueOf(want.Key)
		if kv.NumField() != 11 {
			t.Fatalf("Key has %d fields; update this test", kv.NumField())
		}
		for i := range kv.NumField() {
			k := want.Key
			f := reflect.ValueOf(&k).Elem().Field(i)
			switch f.Kind() {
			case reflect.String:
				f.SetString(f.String() + "x")
			case reflect.Int:
				f.SetInt(f.Int() + 1)
			default:
				t.Fatalf("Key.%s: unhandled kind %s", kv.Type().Field(i).Name, f.Kind())
			}
			if r, ok := c.Lookup(k); ok {
				t.Errorf("Lookup with Key.%s changed matched %+v", kv.Type().Field(i).Name, r.Key)
			}
		}
	}

	// What Lookup returns is a copy: changing it does not change the cache.
	got, _ := c.Lookup(recs[0].Key)
	got.CUBIN[0] = 0
	got.Winner.Config["tile_k"] = 0
	got.Fallback.Timing.Config["TileK"] = 0
	got.Fallback.Kernel = "changed"
	again, _ := c.Lookup(recs[0].Key)
	if !reflect.DeepEqual(again, recs[0]) {
		t.Errorf("Lookup result shares memory with the cache")
	}
}

func TestPutReplaces(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tune.json")
	old := testRecord(shapeOf(1), "NVIDIA H200", 0.5)
	mustPut(t, path, old)
	mustPut(t, path, testRecord(shapeOf(2), "NVIDIA H200", 0.7))
	repl := testRecord(shapeOf(1), "NVIDIA H200", 0.25)
	repl.Kernel = "conv_igemm_64x64"
	mustPut(t, path, repl)

	c := mustLoad(t, path)
	var same []Record
	for _, r := range c.Records() {
		if r.Key == old.Key {
			same = append(same, r)
		}
	}
	if len(same) != 1 {
		t.Fatalf("%d records with the key, want 1", len(same))
	}
	if !reflect.DeepEqual(same[0], repl) {
		t.Errorf("record = %+v, want the replacement %+v", same[0], repl)
	}
	if n := len(c.Records()); n != 2 {
		t.Errorf("%d records, want 2", n)
	}
}

// TestPutSupersedes: a record tuned with other templates (or another
// convgen) for the same problem and device model is dropped by the newer
// one; records of another device or precision stay.
func TestPutSupersedes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tune.json")
	stale := testRecord(shapeOf(1), "NVIDIA H200", 0.5)
	otherDevice := testRecord(shapeOf(1), "NVIDIA H100 80GB HBM3", 0.6)
	otherPrec := testRecord(shapeOf(1), "NVIDIA H200", 0.2)
	otherPrec.Key.Precision = "tf32"
	otherCC := testRecord(shapeOf(1), "NVIDIA H200", 0.2)
	otherCC.Key.ComputeCapability, otherCC.Arch = "10.0", "sm_100a"
	for _, r := range []Record{stale, otherDevice, otherPrec, otherCC} {
		mustPut(t, path, r)
	}
	fresh := testRecord(shapeOf(1), "NVIDIA H200", 0.3)
	fresh.Key.Driver, fresh.ConvgenVersion, fresh.KernelSHA256 = "13010", "v0.2.0", strings.Repeat("ef", 32)
	mustPut(t, path, fresh)

	got := map[Key]bool{}
	for _, r := range mustLoad(t, path).Records() {
		got[r.Key] = true
	}
	want := map[Key]bool{fresh.Key: true, otherDevice.Key: true, otherPrec.Key: true, otherCC.Key: true}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("keys after the re-tune:\n got %v\nwant %v", got, want)
	}
	if !fresh.Key.Supersedes(stale.Key) || fresh.Key.Supersedes(otherDevice.Key) || stale.Key.Supersedes(otherPrec.Key) {
		t.Error("Supersedes: wrong verdicts")
	}
}

// TestPutSupersedesUpgrade (issue 22, item 2): re-tuning on the same GPU
// model after a driver or NVRTC upgrade replaces the record instead of
// adding a second one that replay could not tell apart; only the newest
// stays, and replay with -device and -arch finds exactly it.
func TestPutSupersedesUpgrade(t *testing.T) {
	for _, upgrade := range []struct {
		name string
		edit func(*Key)
	}{
		{"driver", func(k *Key) { k.Driver = "13010" }},
		{"nvrtc", func(k *Key) { k.NVRTCVersion = "13.1" }},
		{"both", func(k *Key) { k.Driver, k.NVRTCVersion = "12080", "12.8" }}, // a downgrade is newest too
	} {
		t.Run(upgrade.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "tune.json")
			old := testRecord(shapeOf(1), "NVIDIA H200", 0.5)
			other := testRecord(shapeOf(1), "NVIDIA H100 80GB HBM3", 0.6)
			mustPut(t, path, old)
			mustPut(t, path, other)
			fresh := cloneRecord(old)
			upgrade.edit(&fresh.Key)
			fresh.Winner.MedianMS = 0.4
			mustPut(t, path, fresh)

			c := mustLoad(t, path)
			keys := map[Key]bool{}
			for _, r := range c.Records() {
				keys[r.Key] = true
			}
			if want := map[Key]bool{other.Key: true, fresh.Key: true}; !reflect.DeepEqual(keys, want) {
				t.Errorf("keys after the re-tune:\n got %v\nwant %v", keys, want)
			}
			q := Query{Shape: old.Key.Shape, Precision: "fp32", Layout: "nchw", Arch: "sm_90", Device: "NVIDIA H200"}
			got := c.Replay(q)
			if len(got) != 1 || got[0].Key != fresh.Key {
				t.Errorf("Replay(-device %q -arch sm_90) = %d records, want exactly the re-tuned one", q.Device, len(got))
			}
		})
	}
}

// TestReplayNewest: a file written before Put superseded by device model
// may hold several records of one device that differ only in driver,
// NVRTC or SM count; Replay picks the newest of them, whatever their
// order in the file.
func TestReplayNewest(t *testing.T) {
	base := testRecord(shapeOf(1), "NVIDIA H200", 0.5)
	var recs []Record
	for _, v := range []struct {
		driver, nvrtc string
		sms           int
	}{{"13.0", "13.0", 132}, {"12.8", "13.1", 132}, {"9.2", "13.0", 132}, {"13.0", "12.9", 132}, {"13.0", "13.0", 114}} {
		r := cloneRecord(base)
		r.Key.Driver, r.Key.NVRTCVersion, r.Key.SMCount = v.driver, v.nvrtc, v.sms
		recs = append(recs, r)
	}
	h100 := testRecord(shapeOf(1), "NVIDIA H100 80GB HBM3", 0.6)
	q := Query{Shape: base.Key.Shape, Precision: "fp32", Layout: "nchw", Arch: "sm_90"}
	for _, order := range [][]int{{0, 1, 2, 3, 4}, {4, 3, 2, 1, 0}, {2, 4, 1, 0, 3}} {
		var in []Record
		for _, i := range order {
			in = append(in, recs[i])
		}
		c := newCache("x", append(in, h100))
		got := c.Replay(q)
		if len(got) != 2 || got[0].Key != h100.Key || got[1].Key != recs[0].Key {
			var keys []Key
			for _, r := range got {
				keys = append(keys, r.Key)
			}
			t.Errorf("order %v: Replay = %v, want the H100 record and the one with driver 13.0, NVRTC 13.0 and 132 SMs", order, keys)
		}
		q1 := q
		q1.Device = "NVIDIA H200"
		if got := c.Replay(q1); len(got) != 1 || got[0].Key != recs[0].Key {
			t.Errorf("order %v: Replay with -device picks %d records, want the newest H200 one", order, len(got))
		}
	}
}

func TestDeterministic(t *testing.T) {
	dir := t.TempDir()
	var recs []Record
	for i := range 6 {
		dev := "NVIDIA H200"
		if i%2 == 1 {
			dev = "NVIDIA H100"
		}
		recs = append(recs, testRecord(shapeOf(i%3), dev, float64(i)))
	}
	orders := [][]int{{0, 1, 2, 3, 4, 5}, {5, 4, 3, 2, 1, 0}, {3, 0, 5, 1, 4, 2}}
	var files [][]byte
	for n, order := range orders {
		path := filepath.Join(dir, fmt.Sprintf("tune%d.json", n))
		for _, i := range order {
			mustPut(t, path, recs[i])
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, data)
	}
	for n := 1; n < len(files); n++ {
		if !bytes.Equal(files[0], files[n]) {
			t.Errorf("order %v gives a different file from order %v:\n%s\n----\n%s", orders[n], orders[0], files[n], files[0])
		}
	}
	data := files[0]
	if !bytes.HasPrefix(data, []byte("{\n  \"format\": 2,\n  \"records\": [\n    {\n")) {
		t.Errorf("file does not start with the 2-space indented header:\n%.80s", data)
	}
	if !bytes.HasSuffix(data, []byte("}\n")) || bytes.HasSuffix(data, []byte("\n\n")) {
		t.Errorf("file does not end in exactly one newline: %q", data[len(data)-10:])
	}
	if !bytes.Contains(data, []byte("a < b && c > d")) {
		t.Errorf("PTX is HTML-escaped in the file")
	}

	// The file holds the records sorted by key.
	var f File
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	if len(f.Records) != len(recs) {
		t.Fatalf("file has %d records, want %d", len(f.Records), len(recs))
	}
	if !slices.IsSortedFunc(f.Records, func(a, b FileRecord) int { return compareKeys(a.Key, b.Key) }) {
		t.Errorf("records are not sorted by key")
	}
	for i, r := range f.Records {
		if sum, err := r.Record.Checksum(); err != nil || r.Checksum != sum {
			t.Errorf("record %d: checksum %q, want %q (%v)", i, r.Checksum, sum, err)
		}
	}
}

func TestCorrupt(t *testing.T) {
	for _, tc := range []struct {
		name, content, detail string
	}{
		{"garbage", "this is not json {", "invalid character 'h' in literal true (expecting 'r') at offset 2"},
		{"truncated", `{"format": 2, "records": [`, "unexpected end of JSON input"},
		{"trailing", `{"format": 2, "records": []} x`, "after top-level value"},
		{"empty", "", "unexpected end of JSON input"},
		{"wrong type", `{"format": "1", "records": []}`, "cannot unmarshal"},
		{"future format", `{"format": 3, "records": []}`, "unknown format 3"},
		{"format 1", `{"format": 1, "records": []}`, "format 1, written by convgen 0.1"},
		{"no format", `{"records": []}`, "unknown format 0"},
		{"bad number", `{"format": 2, "records": [{"summary": {"clock_mhz": 1e}}]}`, "invalid character"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "tune.json")
			if err := os.WriteFile(path, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Load(path)
			if err == nil {
				t.Fatal("Load: no error")
			}
			msg := err.Error()
			for _, want := range []string{path, "is corrupt", tc.detail, "will not overwrite"} {
				if !strings.Contains(msg, want) {
					t.Errorf("Load error %q does not contain %q", msg, want)
				}
			}
			if !errors.As(err, new(*CorruptError)) {
				t.Errorf("Load error %T is not a *CorruptError", err)
			}

			err = Put(path, testRecord(shapeOf(1), "NVIDIA H200", 1))
			if err == nil || !strings.Contains(err.Error(), "corrupt") {
				t.Errorf("Put error = %v, want one saying the cache is corrupt", err)
			}
			data, rerr := os.ReadFile(path)
			if rerr != nil {
				t.Fatal(rerr)
			}
			if string(data) != tc.content {
				t.Errorf("Put changed the corrupt file to %q", data)
			}
			if tmps, _ := filepath.Glob(path + ".tmp-*"); len(tmps) != 0 {
				t.Errorf("temporary files left behind: %v", tmps)
			}
		})
	}
}

func TestMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "no", "such", "tune.json")
	c, err := Load(path)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if n := len(c.Records()); n != 0 {
		t.Errorf("%d records, want 0", n)
	}
	if _, ok := c.Lookup(testKey(shapeOf(1), "NVIDIA H200")); ok {
		t.Errorf("Lookup found a record in an empty cache")
	}
	// Put creates the directories and the file.
	rec := testRecord(shapeOf(1), "NVIDIA H200", 1)
	mustPut(t, path, rec)
	if _, ok := mustLoad(t, path).Lookup(rec.Key); !ok {
		t.Errorf("record put into a new file not found")
	}
}

// checkAll loads path and checks that it holds exactly the records of
// shapes 0..n-1 on device, and no stray temporary files.
func checkAll(t *testing.T, path, device string, n int) {
	t.Helper()
	c := mustLoad(t, path)
	if got := len(c.Records()); got != n {
		t.Errorf("%d records, want %d", got, n)
	}
	for i := range n {
		want := testRecord(shapeOf(i), device, float64(i))
		got, ok := c.Lookup(want.Key)
		if !ok {
			t.Errorf("record %d missing", i)
		} else if !reflect.DeepEqual(got, want) {
			t.Errorf("record %d = %+v, want %+v", i, got, want)
		}
	}
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if name := e.Name(); name != filepath.Base(path) && name != filepath.Base(path)+".lock" {
			t.Errorf("stray file %s", name)
		}
	}
}

func TestPutManyGoroutines(t *testing.T) {
	const n = 16
	path := filepath.Join(t.TempDir(), "tune.json")
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			if err := Put(path, testRecord(shapeOf(i), "NVIDIA H200", float64(i))); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	checkAll(t, path, "NVIDIA H200", n)
}

func TestPutManyProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	const children = 4
	path := filepath.Join(t.TempDir(), "tune.json")
	cmds := make([]*exec.Cmd, children)
	outs := make([]bytes.Buffer, children)
	for i := range children {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), helperEnv+"="+strconv.Itoa(i), helperPathEnv+"="+path)
		cmd.Stdout = &outs[i]
		cmd.Stderr = &outs[i]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[i] = cmd
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("child %d: %v\n%s", i, err, outs[i].String())
		}
	}
	checkAll(t, path, "NVIDIA H200", children*helperRecords)
}

// TestHelperProcess is not a test: it is the child process of
// TestPutManyProcesses, and does nothing unless started by it.
func TestHelperProcess(t *testing.T) {
	idx := os.Getenv(helperEnv)
	if idx == "" {
		t.Skip("helper process for TestPutManyProcesses")
	}
	child, err := strconv.Atoi(idx)
	if err != nil {
		t.Fatal(err)
	}
	path := os.Getenv(helperPathEnv)
	for j := range helperRecords {
		i := child*helperRecords + j
		mustPut(t, path, testRecord(shapeOf(i), "NVIDIA H200", float64(i)))
	}
}

func TestMatch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tune.json")
	h200 := testRecord(shapeOf(1), "NVIDIA H200", 0.5)
	h100 := testRecord(shapeOf(1), "NVIDIA H100 80GB HBM3", 0.6)
	h100.Key.SMCount = 114
	a100 := testRecord(shapeOf(1), "NVIDIA A100-SXM4-80GB", 0.9)
	a100.Key.ComputeCapability, a100.Arch = "8.0", "sm_80"
	otherShape := testRecord(shapeOf(2), "NVIDIA H200", 0.5)
	stale := testRecord(shapeOf(1), "NVIDIA H200", 0.5)
	stale.Key.Driver, stale.KernelSHA256 = "12000", strings.Repeat("00", 32)
	// Written directly: Put would let stale supersede h200, and Match must
	// still tell them apart in files that hold both.
	data, err := encode([]Record{h200, otherShape, a100, h100, stale})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	c := mustLoad(t, path)

	k := h200.Key
	q := Query{
		Shape:     k.Shape,
		Precision: k.Precision,
		Layout:    k.Layout,
		Arch:      "sm_90",
		Current: func(r Record) error {
			if r.KernelSHA256 != h200.KernelSHA256 {
				return errors.New("the winner's kernel source changed since it was tuned")
			}
			return nil
		},
	}
	keys := func(rs []Record) []Key {
		var ks []Key
		for _, r := range rs {
			ks = append(ks, r.Key)
		}
		return ks
	}
	check := func(q Query, want ...Record) {
		t.Helper()
		got := c.Match(q)
		if !reflect.DeepEqual(keys(got), keys(want)) {
			t.Errorf("Match(%+v) =\n %+v\nwant\n %+v", q, keys(got), keys(want))
		}
	}

	// Mismatches names what a record fails, with the record's values.
	for _, tc := range []struct {
		r    Record
		want []Mismatch
	}{
		{h200, nil},
		{a100, []Mismatch{{FieldArch, "sm_80"}}},
		{stale, []Mismatch{{FieldKernel, "the winner's kernel source changed since it was tuned"}}},
		{otherShape, []Mismatch{{FieldShape, otherShape.Key.Shape}}},
	} {
		if got := q.Mismatches(tc.r); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Mismatches(%s on %s) = %v, want %v", tc.r.Key.Shape, tc.r.Key.Device, got, tc.want)
		}
	}
	qd0 := q
	qd0.Device = "NVIDIA H200"
	got := qd0.Mismatches(h100)
	if want := []Mismatch{{FieldDevice, "NVIDIA H100 80GB HBM3"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("Mismatches(H100) with Device H200 = %v, want %v", got, want)
	}
	if s, want := fmt.Sprint(got), `[device "NVIDIA H100 80GB HBM3"]`; s != want {
		t.Errorf("Mismatch.String() = %s, want %s", s, want)
	}
	if s, want := (Mismatch{FieldKernel, "the kernel changed"}).String(), "the kernel changed"; s != want {
		t.Errorf("Mismatch.String() = %s, want %s", s, want)
	}

	// Empty Device: both sm_90 devices, sorted by key (H100 before H200).
	check(q, h100, h200)
	qd := q
	qd.Device = "NVIDIA H200"
	check(qd, h200)
	qa := q
	qa.Arch = ""
	check(qa, a100, h100, h200)
	qa.Arch = "sm_80"
	check(qa, a100)
	qv := q
	qv.Current = nil
	qv.Device = "NVIDIA H200"
	check(qv, stale, h200)
	qp := q
	qp.Precision = "tf32"
	check(qp)

	// A record built for sm_90a (wgmma) runs on an sm_90 device: -arch sm_90
	// and -arch sm_90a find it, sm_80 does not.
	path2 := filepath.Join(t.TempDir(), "tune.json")
	h200a := testRecord(shapeOf(1), "NVIDIA H200", 0.3)
	h200a.Arch = "sm_90a"
	mustPut(t, path2, h200a)
	mustPut(t, path2, a100)
	c = mustLoad(t, path2)
	check(q, h200a)
	q.Arch = "sm_90a"
	check(q, h200a)
	q.Arch = "sm_80"
	check(q, a100)
}

// TestCheckWritable: a cache path whose directory cannot be made is refused
// (before tuning); a fresh path in a new directory is fine.
func TestCheckWritable(t *testing.T) {
	dir := t.TempDir()
	if err := CheckWritable(filepath.Join(dir, "new", "cache.json")); err != nil {
		t.Errorf("fresh path: %v", err)
	}
	file := filepath.Join(dir, "afile")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := CheckWritable(filepath.Join(file, "cache.json")); err == nil || !strings.Contains(err.Error(), "create directory") {
		t.Errorf("cache under a regular file: %v, want a create-directory error", err)
	}
}
